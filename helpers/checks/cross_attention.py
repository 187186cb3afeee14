"""Checks for notebook 04 (cross-attention): the shapes of a 7-letter example through the whole
tiny model (d_model 64, 4 heads, d_ff 256, vocabulary 13), and which attention is not square.
"""

from helpers.checks import Hint, checker, number, shape

EXPECTED = {
    "source embedded": (1, 7, 64),
    "target embedded": (1, 8, 64),
    "encoder self-attention weights": (1, 4, 7, 7),
    "FFN hidden": (1, 7, 256),
    "memory": (1, 7, 64),
    "decoder self-attention weights": (1, 4, 8, 8),
    "cross-attention weights": (1, 4, 8, 7),
    "logits": (1, 8, 13),
}

SWAP = "the source has 7 letters; the decoder input has 8 tokens (<s> and the 7 reversed letters)"
HINTS = {
    "source embedded": {
        (1, 8, 64): SWAP,
        (1, 7): "that is the shape of the token ids; each id becomes a row of d_model = 64 numbers",
        (1, 7, 13): "the embedding gives d_model = 64 numbers per token, not one per vocabulary token",
    },
    "target embedded": {
        (1, 7, 64): "the decoder input starts with <s>: 1 + 7 = 8 tokens",
        (1, 6, 64): "that is the 5-letter example of the text; here <s> and 7 letters: 8 tokens",
    },
    "encoder self-attention weights": {
        (1, 4, 8, 8): "the encoder reads the source only: 7 letters, so 7 × 7 per head",
        (1, 7, 7): "keep the head axis: one 7 × 7 table per head, (1, 4, 7, 7)",
        (1, 4, 7, 16): "that is Q, K or V split into heads; the weights are one score per query and key",
    },
    "FFN hidden": {
        (1, 7, 64): "the first linear layer widens each position to d_ff = 256 numbers",
        (1, 8, 256): "this is the encoder's FFN: one row per source letter, 7",
        (1, 4, 7, 256): "the FFN works on whole positions, after the heads are concatenated: no head axis",
    },
    "memory": {
        (1, 7, 256): "the second linear layer brings each position back to d_model = 64",
        (1, 8, 64): "the memory is the encoder's output: one row per source letter, 7",
        (1, 4, 7, 7): "those are attention weights; the memory holds d_model = 64 numbers per source letter",
    },
    "decoder self-attention weights": {
        (1, 4, 7, 7): "the decoder's self-attention reads the 8 decoder tokens: 8 × 8 per head",
        (1, 4, 8, 7): "that is the cross-attention; the decoder's own self-attention compares its "
                      "8 tokens with each other",
    },
    "cross-attention weights": {
        (1, 4, 7, 8): "rows are the queries, from the decoder (8 positions); columns the keys, from "
                      "the memory (7 letters): (1, 4, 8, 7)",
        (1, 4, 8, 8): "the keys come from the memory, 7 source letters, not from the decoder",
        (1, 4, 7, 7): "the queries come from the decoder (8 positions), the keys from the memory (7)",
        (1, 8, 7): "keep the head axis: each of the 4 heads has its own 8 × 7 table",
    },
    "logits": {
        (1, 8, 64): "the output layer multiplies by Eᵀ (64 × 13): one score per vocabulary token",
        (1, 7, 13): "one prediction per decoder position: 8 of them",
        (1, 8, 37000): "the tiny model's vocabulary has 13 tokens",
        (1, 13): "the decoder predicts at every one of its 8 positions at once",
    },
}


def _check_dict(shapes):
    if shapes is None or shapes is Ellipsis:
        raise Hint("Not answered yet: fill in the shapes in the dictionary.")
    if not isinstance(shapes, dict):
        raise Hint(f"shapes should be the dictionary of the exercise, got {type(shapes).__name__}.")
    for name, expected in EXPECTED.items():
        if name not in shapes:
            raise Hint(f"The dictionary has no entry {name!r}: keep the names of the exercise.")
        value = shapes[name]
        if value is None:
            raise Hint(f"Not answered yet: the shape of the {name}.")
        got = shape(value, name)
        if got != expected:
            hint = HINTS[name].get(got, "write the axes step by step: batch 1, 7 source letters, "
                                        "8 decoder tokens, h = 4, d_model = 64, d_ff = 256, 13 tokens")
            raise Hint(f"The {name}: {got} is not right; {hint}.")


def _check_hidden(hidden_cells):
    n = number(hidden_cells, "hidden_cells")
    wrong = {36: "36 cells are visible (the diagonal and below); the mask hides those above the "
                 "diagonal: 8 · 7 / 2",
             56: "8 · 7 = 56 counts both triangles; the mask hides only the cells above the "
                 "diagonal: half of that",
             112: "that is all 4 heads together; count one head's 8 × 8 table",
             21: "the decoder reads 8 tokens (<s> and 7 letters), not 7",
             15: "15 is for 6 tokens; the decoder here reads 8",
             64: "64 is the whole 8 × 8 table; the mask hides only the cells above the diagonal"}
    if n != 28:
        raise Hint(wrong.get(n, "count the cells above the diagonal of one head's 8 × 8 table: "
                                "row i hides 8 − i of them, or n(n − 1)/2 in all") + ".")


def _check_not_square(not_square):
    if not_square is None or not_square is Ellipsis:
        raise Hint("Not answered yet: which attention is not square?")
    if not isinstance(not_square, str):
        raise Hint("not_square should be one of the strings 'encoder self', 'decoder self', 'cross'.")
    answer = not_square.lower()
    if "cross" in answer or "encoder-decoder" in answer:
        return
    if "encoder" in answer:
        raise Hint("The encoder's self-attention compares the 7 source letters with each other: "
                   "7 × 7, square.")
    if "decoder" in answer or "masked" in answer:
        raise Hint("The decoder's self-attention compares its 8 tokens with each other: 8 × 8, "
                   "square (with the upper triangle hidden).")
    raise Hint("Answer with one of 'encoder self', 'decoder self', 'cross'.")


@checker
def check_guided_shapes(shapes, hidden_cells, not_square):
    """The 7-letter example: every shape, the hidden cells of one head, the non-square one."""
    _check_dict(shapes)
    _check_hidden(hidden_cells)
    _check_not_square(not_square)
