"""Checks for notebook 07, masks and the shuffle test."""

import torch

from helpers.attention import additive_mask, causal_mask, padding_mask
from helpers.checks import Hint, Passed, call, checker, choice, number, shape
from helpers.tickets import PAD

# A finite score at or below this hides a key as well as -inf does: e^(-1e4) is 0 in float32.
LARGE_NEGATIVE = -1e4
LARGE_NEGATIVE_WORKS = (
    "You used a large negative number instead of -inf: that works in practice (e^(-1e9) is exactly "
    "0 in float32, so hidden keys get weight 0). -inf is PyTorch's convention "
    "(generate_square_subsequent_mask); the two differ only on a row whose keys are all hidden, "
    "which gets equal weights instead of nan.")


def hidden_count_hint(count, n):
    """None when count is n(n-1)/2, else a hint naming what was counted instead."""
    if count != int(count):
        return f"A number of cells is a whole number, got {count}."
    count = int(count)
    if count == n * (n - 1) // 2:
        return None
    if count == n * (n + 1) // 2:
        return (f"{count} is the triangle with its diagonal: either the cells a token may read (the 0s), "
                f"or the hidden ones counted with the diagonal. A token may read itself, so only the "
                f"cells strictly above the diagonal are hidden (the -inf).")
    if count == n * n:
        return f"{count} is every cell of the {n} × {n} table: only the cells above the diagonal are hidden."
    if count == n * (n - 1):
        return (f"{count} = {n} × {n - 1} counts both triangles: the causal mask hides only the one "
                f"above the diagonal (the future), n(n − 1)/2 cells.")
    if count == n:
        return f"{count} is the number of tokens (or the diagonal): count the -inf cells above the diagonal."
    if count == (n - 1) * (n - 2) // 2:
        return f"Count the first row too: the first token hides all {n - 1} tokens after it."
    return (f"Not quite: count the -inf entries of the {n}-token causal mask, "
            "e.g. int(torch.isinf(causal).sum()).")


@checker
def check_hidden_cells(hidden_cells):
    """hidden_cells: how many cells the causal mask hides for 6 tokens (15)."""
    return hidden_count_hint(number(hidden_cells, "hidden_cells"), 6)


def plus_inf_hint(name):
    return (f"{name} holds +inf: a hidden cell gets -inf. The mask is added to the scores, and "
            "e^(+inf) is infinite, so softmax gives nan instead of hiding the cell.")


def hidden_cells_of(mask, name):
    """The boolean 'hidden' pattern of a boolean mask or of an additive (0 / -inf) float mask.

    A large negative number (at most -1e4, such as -1e9 or torch.finfo(dtype).min) hides a cell
    as well as -inf; +inf, NaN and other numbers raise a Hint.
    """
    if mask is None or mask is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if not isinstance(mask, torch.Tensor):
        raise Hint(f"{name} should be a torch tensor, got {type(mask).__name__}: "
                   "nn.Transformer.generate_square_subsequent_mask(4) makes one.")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex() or not mask.is_floating_point():
        raise Hint(f"{name} has dtype {mask.dtype}: a mask is boolean (True = hidden) or float "
                   "(0 = visible, -inf = hidden).")
    if torch.isnan(mask).any():
        raise Hint(f"{name} contains NaN: a float mask holds only 0 and -inf (0 × -inf gives nan: "
                   "use masked_fill or torch.where to place the -inf).")
    if (mask == float("inf")).any():
        raise Hint(plus_inf_hint(name))
    if ((mask != 0) & (mask > LARGE_NEGATIVE)).any():
        raise Hint(f"{name} is added to the scores before softmax: use -inf (not 1 or another "
                   "small number) for a hidden cell and 0 for a visible one.")
    return mask <= LARGE_NEGATIVE


@checker
def check_four_token_mask(four, hidden):
    """four: the causal mask for 4 tokens; hidden: how many cells it hides (6)."""
    cells = hidden_cells_of(four, "four")
    if tuple(cells.shape) != (4, 4):
        return (f"four should have shape (4, 4), one row per token that reads and one column per "
                f"token it reads; got {tuple(cells.shape)}.")
    future = torch.ones(4, 4, dtype=torch.bool).triu(1)
    if torch.equal(cells, future.T):
        return "Your mask hides the past (below the diagonal): the causal mask hides the future, above it."
    if torch.equal(cells, torch.ones(4, 4, dtype=torch.bool).triu(0)):
        return "Your mask also hides the diagonal: a token must be able to read itself."
    if torch.equal(cells, ~future):
        return "Your mask is inverted: it hides what a token may read and shows the future."
    if not torch.equal(cells, future):
        return "four should hide exactly the cells above the diagonal (token i reads tokens 0..i)."
    hint = hidden_count_hint(number(hidden, "hidden"), 4)
    if hint is None and four.is_floating_point() and not torch.isinf(four).any():
        return Passed(LARGE_NEGATIVE_WORKS)
    return hint


@checker
def check_padding_mask(mask, batch):
    """mask: the padding mask of batch, shape (batch, n), True where the token is PAD."""
    if mask is None or mask is Ellipsis:
        return "Not answered yet: mask is still the placeholder."
    if not isinstance(batch, torch.Tensor) or batch.dim() != 2 or batch.is_floating_point() \
            or batch.dtype == torch.bool:
        return "Give the batch of token ids too: check_padding_mask(mask, batch)."
    if not isinstance(mask, torch.Tensor):
        return f"mask should be a torch tensor, got {type(mask).__name__}: compare the batch with PAD."
    right = batch == PAD
    b, n = right.shape
    if tuple(mask.shape) != (b, n):
        if tuple(mask.shape) == (n, b):
            return f"mask is transposed: it needs one row per ticket, shape (batch, n) = {(b, n)}."
        if mask.numel() == b * n:
            return (f"mask should have shape (batch, n) = {(b, n)}, one value per token of each "
                    f"ticket, not {tuple(mask.shape)}.")
        return (f"A padding mask has one value per token of each ticket: shape (batch, n) = {(b, n)}, "
                f"got {tuple(mask.shape)}.")
    if mask.dtype != torch.bool:
        if mask.is_floating_point() and torch.equal(torch.isinf(mask) & (mask < 0), right) \
                and torch.equal(mask.isfinite(), ~right):
            return ("That is the additive form (0 / -inf) of the right mask; here build the boolean "
                    "one, True = hidden.")
        if not mask.is_complex() and torch.equal(mask == 1, ~right) and torch.equal(mask == 0, right):
            return ("Inverted, and not boolean: 1 marks the tokens to keep (the Hugging Face "
                    "convention). In PyTorch True means hidden: mark the padding tokens.")
        return (f"mask has dtype {mask.dtype}: use a boolean mask (compare with ==). A float mask is "
                "added to the scores, so a 1 would hide nothing.")
    if torch.equal(mask, right):
        return None
    if torch.equal(mask, ~right):
        return ("Inverted mask: True means hidden, and you marked the real tokens (ids != PAD). "
                "Every token would read only padding, and a ticket without padding gets nan.")
    if not mask.any():
        return "Your mask hides nothing: True must mark the padding tokens (id PAD = 0)."
    return "Some cells are wrong: the mask is True exactly where the token id is PAD (0)."


# --- The decoder's mask for a padded batch: causal + padding, additive ---------------------------

HEADS = 4   # the mask must broadcast to (batch, HEADS, n, n)


def padded_batch(seed, batch, n, pad):
    """(batch, n) random token ids, none equal to pad, padded at the end with pad: one row
    full, one with at least two padding tokens, the others of random lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (batch, n), generator=g)
    ids[ids == pad] = pad + 1
    lengths = torch.randint(2, n, (batch,), generator=g)
    lengths[0], lengths[1] = n, n - 2
    for row, length in zip(ids, lengths.tolist(), strict=True):
        row[length:] = pad
    return ids


def decoder_mask_mistakes(ids, pad):
    """(hint, the boolean 'hidden' pattern of shape (batch, 1, n, n) that mistake gives)."""
    n = ids.shape[1]
    future = causal_mask(n)
    keys = padding_mask(ids, pad)[:, None, None, :]
    queries = padding_mask(ids, pad)[:, None, :, None]
    right = future | keys
    yield ("Inverted mask: it hides what a query may read (its own past and the real tokens) and "
           "shows the future and the padding. True/-inf marks the cells to hide.", ~right)
    yield ("The padding part is inverted: ids != pad marks the real tokens, so they are hidden and "
           "the padding is read. Hide the keys where ids == pad.", future | ~keys)
    yield ("The triangle is on the wrong side: you hide the past (below the diagonal). Hide the "
           "future, the keys j > i: triu(1).", future.T | keys)
    yield ("The triangle is inverted: you hide the past and the diagonal and show the future. "
           "Hide the keys j > i: triu(1).", ~future | keys)
    yield ("The diagonal is hidden too: a token must be able to read itself (triu(1), not "
           "triu(0)); the first token would have nothing left to read.",
           torch.ones(n, n, dtype=torch.bool).triu(0) | keys)
    yield ("Padding applied to the queries instead of the keys: the mask must hide padding "
           "*columns* (keys), shape (batch, 1, 1, n); hiding the padding rows leaves each of them "
           "with no key at all (nan).", future | queries)
    yield ("Padding hidden on both axes: hide only the padding keys (columns, shape "
           "(batch, 1, 1, n)); a padding row with every key hidden gives nan.", future | queries | keys)
    yield ("The padding is missing: this is the causal mask alone. Also hide the keys where "
           "ids == pad, for every query.", future.expand_as(right))
    yield ("The causal part is missing: this is the padding mask alone. Also hide the future, "
           "the keys j > i (triu(1)).", keys.expand_as(right))


def _as_tensor(mask, name):
    if mask is None or mask is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if isinstance(mask, (tuple, list)):
        raise Hint(f"{name} should return one tensor, got a {type(mask).__name__}.")
    if not isinstance(mask, torch.Tensor):
        raise Hint(f"{name} should return a torch tensor, got {type(mask).__name__}.")
    if mask.is_complex():
        raise Hint(f"{name} returned complex numbers: an additive mask holds 0 and -inf.")
    return mask


@checker
def check_decoder_mask(fn):
    """my_decoder_mask(ids, pad) against helpers.attention's additive_mask(causal_mask(n),
    padding_mask(ids, pad)) on three random padded batches (one with pad = 7)."""
    name = "my_decoder_mask(ids, pad)"
    large_negative = False
    for seed, (batch, n, pad) in enumerate(((3, 6, 0), (5, 9, 0), (2, 7, 7))):
        ids = padded_batch(seed, batch, n, pad)
        got = _as_tensor(call(fn, name, ids, pad), "my_decoder_mask")
        target = (batch, HEADS, n, n)
        try:
            fits = torch.broadcast_shapes(tuple(got.shape), target) == target
        except RuntimeError:
            fits = False
        if not fits:
            if tuple(got.shape) == (batch, n, n):
                return (f"Shape (batch, n, n) = {(batch, n, n)} does not broadcast to (batch, heads, "
                        f"n, n): the batch axis would meet the heads axis. Add a head axis of "
                        f"size 1: (batch, 1, n, n).")
            return (f"The mask should broadcast to (batch, heads, n, n), e.g. shape (batch, 1, n, n) = "
                    f"{(batch, 1, n, n)}; got {tuple(got.shape)} for ids of shape {tuple(ids.shape)}.")
        got = got.expand(target)
        right = (causal_mask(n) | padding_mask(ids, pad)[:, None, None, :]).expand(target)
        if got.dtype == torch.bool:
            if torch.equal(got, right):
                return ("Right cells, but booleans: an additive mask holds numbers to add to the "
                        "scores, 0 where visible and -inf where hidden (masked_fill(hidden, "
                        "float('-inf')) on zeros).")
            return ("Booleans where an additive mask is asked: build it as floats, 0 where a query "
                    "may read a key and -inf where it may not.")
        if not got.is_floating_point():
            return (f"dtype {got.dtype}: an additive mask is a float tensor (0 and -inf); integers "
                    "cannot hold -inf.")
        if torch.isnan(got).any():
            return ("The mask contains nan: 0 × -inf and -inf − (-inf) give nan. Place the -inf with "
                    "masked_fill or torch.where, and combine the two masks as booleans first.")
        if (got == float("inf")).any():
            if torch.equal(got == float("inf"), right):
                return ("+inf instead of -inf: the mask is added to the scores, and e^(+inf) is "
                        "infinite, so softmax gives nan. Hidden cells get -inf.")
            return plus_inf_hint("The mask")
        hidden = got <= LARGE_NEGATIVE
        if ((got != 0) & ~hidden).any():
            if torch.equal(got != 0, right):
                return ("The right cells, but hidden with a small number (such as 1 or -1): the "
                        "mask is added to the scores, so a hidden cell needs -inf (e^(-inf) = 0).")
            return ("Every cell should be 0 (visible) or -inf (hidden): the mask is added to the "
                    "scores before softmax.")
        large_negative |= bool((hidden & ~torch.isinf(got)).any())
        if torch.equal(hidden, right):
            continue
        if pad != 0:
            return ("Right when the padding id is 0, wrong with pad = 7: compare ids with the "
                    "pad argument (ids == pad), not with PAD or 0.")
        for hint, wrong in decoder_mask_mistakes(ids, pad):
            if torch.equal(hidden, wrong.expand(target)):
                return hint
        return ("Not this mask yet: hide key j from query i when j > i (causal) or when key j is "
                "padding; -inf there, 0 elsewhere, shape (batch, 1, n, n).")
    if large_negative:
        return Passed(LARGE_NEGATIVE_WORKS)
    reference = additive_mask(causal_mask(n), padding_mask(ids, pad))
    return Passed(f"Your mask equals additive_mask(causal_mask(n), padding_mask(ids, pad)) on three "
                  f"padded batches; it has shape {tuple(reference.shape)} for a batch of "
                  f"{batch} × {n}, and broadcasts over the heads.")


# --- Check your understanding --------------------------------------------------------------------

@checker
def check_order_question(answer_1):
    """Attention without positions: the same summary for the same words in another order ("a")."""
    return choice(
        answer_1, "answer_1", "a",
        "Each output depends only on the set of tokens a query reads: shuffling the tokens "
        "shuffles the outputs, Attention(PX) = P Attention(X), and the mean does not see the order.",
        {"b": "Attention weights come from the query and key vectors, not from where a key stands: "
              "after the shuffle every token scores the same set of keys again (section 1: 'use' "
              "got the same output at position 6 and at position 2).",
         "c": "Training changes W_Q, W_K and W_V, but without positions no input carries the order, "
              "so no weight can learn it: section 5 zeroed the trained model's position table and "
              "the ticket and its shuffled words got the same scores."})


PADDING_SHAPE_HINTS = {
    (2, 120, 120): "(2, 120, 120) has one value per (query, key) pair: the key padding mask has one "
                   "value per token of each ticket, and the same row serves every query (section 6).",
    (120, 120): "(120, 120) is the causal mask's shape (attn_mask, one row per query, section 7): the "
                "padding mask has one row per ticket.",
    (2, 1, 1, 120): "(2, 1, 1, 120) is the additive form additive_mask builds to broadcast over heads "
                    "and queries; src_key_padding_mask itself is (batch, n) (section 6).",
    (120, 2): "(120, 2) is transposed: src_key_padding_mask is (batch, n), one row per ticket, even "
              "when the tokens themselves are passed sequence first (batch_first=False).",
}


@checker
def check_padding_question(answer_2, shape_2):
    """Padded without a mask, a short ticket's answer can change ("a"); the mask is (2, 120)."""
    picked = choice(
        answer_2, "answer_2", "a", "",
        {"b": "The mean leaves out the padding *rows*, but inside attention every real token has "
              "already read the padding *keys*, in both blocks: section 6 printed False for "
              "'padded without mask = alone'.",
         "c": "A padding key is not empty: it is the <pad> embedding plus a position vector, and it "
              "takes a share of every softmax row, since e^score > 0 for any finite score "
              "(section 6: 'padded without mask = alone' is False)."})
    if not isinstance(picked, Passed):
        return picked
    got = shape(shape_2, "shape_2")
    if got == (2, 120):
        return Passed("Without the mask each real token gives some weight to the 102 padding keys, "
                      "so its output and the scores can change; src_key_padding_mask holds one value "
                      "per token of each ticket, (batch, n) = (2, 120).")
    if got in PADDING_SHAPE_HINTS:
        return PADDING_SHAPE_HINTS[got]
    return ("shape_2: a key padding mask holds one True/False per token of each ticket: "
            "(number of tickets, number of tokens).")


@checker
def check_router_question(answer_3):
    """Router = encoder (padding mask), writer = decoder (causal + padding): "a"."""
    return choice(
        answer_3, "answer_3", "a",
        "The router has the whole ticket at once, so every token may read every other (padding mask "
        "only); the writer predicts the next word, which does not exist yet, so it reads only the "
        "past (causal mask, plus padding in batches).",
        {"b": "Swapped: the writer predicts the next word, so each of its tokens may read only the "
              "past (causal mask, section 7); the router has the whole ticket, and a 'not' near the "
              "end may change how earlier words are read (section 10).",
         "c": "An encoder lets every token read the tokens after it: trained like that, the writer "
              "would read the next word of the reply instead of predicting it, and fail when it has "
              "to write new text (section 7)."})
