"""Checks of notebook 00, the tour: the scaled dot-product (Your turn) and two questions."""

import math

import torch
import torch.nn.functional as F
from torch import nn

import helpers.attention
from helpers.checks import SCALED_DOT_PRODUCT, Hint, call, checker, choice, close, exercise, tensor

NAME = "my_attention(Q, K, V)"
# seed, leading axes (batch, heads or batch alone), queries, keys, d_k, d_v: other sizes than the text's
CASES = ((3, (2, 4), 5, 7, 16, 16), (4, (3,), 6, 9, 8, 12))
REFERENCE = [
    (helpers.attention, "attention", "helpers.attention.attention"),
    (helpers.attention.MultiHeadAttention, "forward", "helpers.attention.MultiHeadAttention"),
    (F, "scaled_dot_product_attention", "F.scaled_dot_product_attention"),
    (F, "multi_head_attention_forward", "F.multi_head_attention_forward"),
    (nn.MultiheadAttention, "forward", "nn.MultiheadAttention"),
    SCALED_DOT_PRODUCT,
]
INSTEAD = "write the line yourself with @, .transpose(-2, -1), math.sqrt and torch.softmax."


def _case(seed, lead, n_q, n_k, d_k, d_v):
    """(Q, K, V), float32, drawn without touching the notebook's random state."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*lead, n_q, d_k, generator=g), torch.randn(*lead, n_k, d_k, generator=g),
            torch.randn(*lead, n_k, d_v, generator=g))


def _attention(Q, K, V, scale="d_k", dim=-1, softmax=True, scale_after=False):
    """softmax(Q Kᵀ / √d_k) V, or what one usual mistake makes of it."""
    divide = {"d_k": math.sqrt(Q.shape[-1]), "none": 1.0, "d_k, no root": Q.shape[-1],
              "keys": math.sqrt(K.shape[-2])}[scale]
    scores = Q @ K.transpose(-2, -1)
    if scale_after:
        return torch.softmax(scores, dim=dim) / divide @ V
    scores = scores / divide
    return (torch.softmax(scores, dim=dim) if softmax else scores) @ V


MISTAKES = [
    ({"scale": "none"}, "you did not scale the scores: divide Q Kᵀ by √d_k before the softmax."),
    ({"scale": "d_k, no root"}, "you divided the scores by d_k: divide by its square root, √d_k."),
    ({"scale": "keys"},
     "you divided by the square root of the number of keys (K.shape[-2]): d_k is the width of a query "
     "or a key, the last axis, Q.shape[-1]."),
    ({"scale_after": True},
     "you divided by √d_k after the softmax: scale the scores, Q Kᵀ / √d_k, then take the softmax "
     "(dividing the weights afterwards makes each row sum to 1/√d_k instead of 1)."),
    ({"dim": -2},
     "your softmax runs over the queries (dim=-2): each query's weights over the keys must sum to 1, "
     "so take it over the last axis, the keys (dim=-1)."),
    ({"softmax": False}, "you forgot the softmax: the weights are softmax(Q Kᵀ / √d_k), over the keys."),
]


def _output(out, Q, K, V):
    """The learner's output as a float64 tensor of the right shape, or raise Hint."""
    right = (*Q.shape[:-1], V.shape[-1])
    weights = (*Q.shape[:-1], K.shape[-2])
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor) \
            and tuple(out[0].shape) == right:
        raise Hint("my_attention returned a tuple (the output and the weights, as "
                   "helpers.attention.attention does): return the output alone, one tensor.")
    out = tensor(out, "the output of my_attention", dtype=Q.dtype)
    if tuple(out.shape) == weights:
        raise Hint(f"You returned the attention weights, shape {weights}: multiply them by V.")
    if tuple(out.shape) != right:
        raise Hint(f"my_attention should return one row per query and V's width, shape {right} for Q "
                   f"{tuple(Q.shape)}, K {tuple(K.shape)} and V {tuple(V.shape)}; got {tuple(out.shape)}.")
    return out


@checker
def check_attention(my_attention=None):
    """my_attention(Q, K, V) computes softmax(Q Kᵀ / √d_k) V, for any sizes and leading axes."""
    for i, case in enumerate(CASES):
        Q, K, V = _case(*case)
        out = _output(call(my_attention, NAME, Q, K, V, reference=REFERENCE, instead=INSTEAD), Q, K, V)
        expected = _attention(Q.double(), K.double(), V.double())
        if close(out, expected, 1e-4):
            continue
        for kw, hint in MISTAKES:
            if close(out, _attention(Q.double(), K.double(), V.double(), **kw), 1e-4):
                return hint
        if i:
            return (f"Right for Q of shape {tuple(_case(*CASES[0])[0].shape)}, not for Q {tuple(Q.shape)}, "
                    f"K {tuple(K.shape)}: read d_k from Q.shape[-1] and write no fixed size.")
        return ("Not softmax(Q Kᵀ / √d_k) V yet: the scores Q Kᵀ (every query against every key), "
                "divided by √d_k, a softmax over the keys (the last axis), then times V.")
    return None


exercise(check_attention, helpers.attention.attention, lambda f: lambda Q, K, V: f(Q, K, V)[0])


# --- Check your understanding ------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_MEMORY_QUESTION = (
    "the encoder's output",
    "The queries come from the decoder, one per position it writes; the keys and values come from the "
    "encoder's output, one per source letter: that is why each row of section 5's pictures has one "
    "column per source letter.",
    {
        "the decoder's input": "The decoder's input gives the queries (after its masked self-attention), "
                               "one row per position written; the columns of section 5's pictures are "
                               "the source letters, read from the encoder's output.",
        "the source embeddings": "The encoder's output, not its input: the keys and values of every "
                                 "decoder layer come from the memory, the source after all N encoder "
                                 "layers (section 2's layer, stacked; section 3).",
    },
)


@checker
def check_memory_question(answer_1):
    """Where the cross-attention's keys and values come from."""
    return choice(answer_1, "answer_1", *_MEMORY_QUESTION)


_HEADS_QUESTION = (
    "the same",
    "The heads only split the d_model columns of W^Q, W^K and W^V among themselves: 8 heads of 8 or 4 "
    "heads of 16 are the same four d_model × d_model matrices, so the count does not change.",
    {
        "twice as many": "Each head gets d_model / h columns: twice the heads, each half as wide, the "
                         "same matrices in all (section 6's formula has no h in it).",
        "half as many": "The heads share the d_model columns; their number changes how they are cut, "
                        "not how many there are (section 6's formula has no h in it).",
    },
)


@checker
def check_heads_question(answer_2):
    """What 8 heads instead of 4 do to the tiny model's parameter count."""
    return choice(answer_2, "answer_2", *_HEADS_QUESTION)
