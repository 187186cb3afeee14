"""Checks for notebook 07, masks and the shuffle test."""

import torch

from helpers.attention import additive_mask, causal_mask, padding_mask
from helpers.checks import Hint, Passed, call, checker, choice, shape

# A finite score at or below this hides a key as well as -inf does: e^(-1e4) is 0 in float32.
LARGE_NEGATIVE = -1e4
LARGE_NEGATIVE_WORKS = (
    "You used a large negative number instead of -inf: that works in practice (e^(-1e9) is exactly "
    "0 in float32, so hidden keys get weight 0). -inf is PyTorch's convention "
    "(generate_square_subsequent_mask); the two differ only on a row whose keys are all hidden, "
    "which gets equal weights instead of nan.")


def plus_inf_hint(name):
    return (f"{name} holds +inf: a hidden cell gets -inf. The mask is added to the scores, and "
            "e^(+inf) is infinite, so softmax gives nan instead of hiding the cell.")


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
        "shuffles the outputs, Attention(X_π) = Attention(X)_π, and the mean does not see the order.",
        {"b": "Attention weights come from the query and key vectors, not from where a key stands: "
              "after the shuffle every token scores the same set of keys again (section 1: 'use' "
              "got the same output at position 6 and at position 2).",
         "c": "Training changes W_Q, W_K and W_V, but without positions no input carries the order, "
              "so no weight can learn it: section 5 zeroed the trained model's position table and "
              "the ticket and its shuffled words got the same scores."})


PADDING_SHAPE_HINTS = {
    (2, 120, 120): "(2, 120, 120) has one value per (query, key) pair: the key padding mask has one "
                   "value per token of each ticket, and the same row serves every query (section 6).",
    (120, 120): "(120, 120) is the causal mask's shape (attn_mask, one row per query, notebook 04): the "
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
              "past (the causal mask, section 8); the router has the whole ticket, and a 'not' near "
              "the end may change how earlier words are read (section 8).",
         "c": "An encoder lets every token read the tokens after it: trained like that, the writer "
              "would read the next word of the reply instead of predicting it, and fail when it has "
              "to write new text (section 8)."})
