"""Your turn 1: splitting the heads and merging them back (my_split_heads, my_merge_heads)."""

import torch

import helpers.attention
from helpers.checks import Hint, checker, close, exercise, tensor
from helpers.checks.encoder.common import SLIP_ERRORS, _full_precision, _run


HEADS_CASES = ((0, 2, 5, 12, 3), (1, 3, 6, 8, 4))   # seed, batch, tokens, d_model, heads: n ≠ d_k ≠ h
HEADS_REFERENCE = [(helpers.attention, "split_heads", "helpers.attention.split_heads"),
                   (helpers.attention, "merge_heads", "helpers.attention.merge_heads")]
HEADS_INSTEAD = "write the view, transpose and reshape yourself."

MERGE_NO_TRANSPOSE_HINT = ("you joined the heads with a reshape alone: (b, h, n, d_k) reshaped to "
                           "(b, n, d_model) mixes the tokens. Move the head axis back behind the "
                           "tokens first, transpose(1, 2), then reshape.")

INTERLEAVED_HINT = ("your heads take every h-th column: head i owns d_k consecutive columns, "
                    "i·d_k to (i+1)·d_k − 1, so cut the last axis as (h, d_k), not (d_k, h).")

SPLIT_MISTAKES = [
    ("no transpose",
     "you split with a view (or reshape) straight to (b, h, n, d_k): the shape is right, but each "
     "head then holds pieces of several tokens. Cut each token's d_model numbers into h groups, "
     "(b, n, h, d_k), then move the head axis in front of the tokens with transpose(1, 2)."),
    ("interleaved", INTERLEAVED_HINT),
    ("transpose first",
     "you transposed before cutting: transpose(1, 2) on (b, n, d_model) lines up the columns, not "
     "the tokens. Cut each token first, view(b, n, h, d_k), then transpose(1, 2)."),
]
MERGE_MISTAKES = [
    ("no transpose", MERGE_NO_TRANSPOSE_HINT),
    ("interleaved",
     "your heads' columns end up interleaved: head i's d_k numbers must sit side by side, in "
     "columns i·d_k to (i+1)·d_k − 1 of each token. Move the head axis behind the tokens, "
     "transpose(1, 2), then reshape."),
    ("last two swapped",
     "you swapped the last two axes (tokens and d_k) before the reshape: the axes to swap back are "
     "the heads and the tokens, transpose(1, 2)."),
]

SPLIT_SHAPE_HINTS = {   # (the wrong shape as a function of b, h, n, d_k) -> hint
    lambda b, h, n, d_k: (b, n, h, d_k):
        "you cut each token into h groups, (b, n, h, d_k), but the heads must come in front of "
        "the tokens, (b, h, n, d_k): swap axes 1 and 2 with transpose(1, 2)",
    lambda b, h, n, d_k: (b, n, d_k, h):
        "cut the last axis as (h, d_k), head first (head i owns d_k consecutive columns), then "
        "move the head axis in front of the tokens",
    lambda b, h, n, d_k: (h, b, n, d_k):
        "the batch axis stays first: move the heads in front of the tokens only, (b, h, n, d_k), "
        "with transpose(1, 2)",
    lambda b, h, n, d_k: (b, h, d_k, n):
        "tokens come before the d_k numbers: (b, h, n, d_k). Swap axes 1 and 2 (tokens and "
        "heads), not more",
    lambda b, h, n, d_k: (b, d_k, h, n):
        "you swapped axes 1 and 3 of (b, n, h, d_k): only the tokens and the heads trade places, "
        "transpose(1, 2)",
    lambda b, h, n, d_k: (b * h, n, d_k):
        "keep the batch and the heads on two axes: (b, h, n, d_k)",
    lambda b, h, n, d_k: (b, h, n * d_k):
        "each head holds one (n, d_k) table: (b, h, n, d_k)",
}
MERGE_SHAPE_HINTS = {
    lambda b, h, n, d_k: (b, n, h, d_k):
        "the tokens are back in front of the heads, (b, n, h, d_k): now glue each token's h "
        "groups into one row, reshape(b, n, h * d_k)",
    lambda b, h, n, d_k: (b, h * n, d_k):
        "glue the h groups of each token side by side, (b, n, h * d_k), not the heads' tokens "
        "one after another",
    lambda b, h, n, d_k: (b, n * h * d_k):
        "keep one row per token: (b, n, h * d_k)",
    lambda b, h, n, d_k: (b, d_k, h * n):
        "keep one row per token: move the head axis behind the tokens, transpose(1, 2), then "
        "reshape to (b, n, h * d_k)",
}


SPLIT_ERRORS = [
    ("is invalid for input of size",
     "a view or reshape asked for a shape that does not fit t of shape {shape}: read b, n and "
     "d_model from t.shape, and d_k = d_model // h from the h you are given."),
]
MERGE_ERRORS = [
    ("view size is not compatible",
     "view(...) after transpose(1, 2) fails because the numbers are no longer stored in row "
     "order: join the heads with .reshape(...) (or .contiguous().view(...))."),
    ("is invalid for input of size",
     "a view or reshape asked for a shape that does not fit t of shape {shape}: read b, h, n "
     "and d_k from t.shape; the result is (b, n, h * d_k)."),
]


def _heads_case(seed, b, n, d_model, h):
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(seed)
        return torch.randn(b, n, d_model)


def _heads_output(out, name, expected, given, sizes, shape_hints):
    """The learner's output as a float tensor of the expected shape, or raise Hint.

    given: the input tensor; sizes: (b, h, n, d_k), what shape_hints' keys are functions of."""
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        raise Hint(f"{name} returned a {type(out).__name__}: return one tensor of shape "
                   f"{tuple(expected.shape)}.")
    _full_precision(out, f"The output of {name}")
    out = tensor(out, f"the output of {name}", dtype=given.dtype)
    got = tuple(out.shape)
    if got != tuple(expected.shape):
        for wrong_shape, hint in shape_hints.items():
            if got == wrong_shape(*sizes):
                raise Hint(f"{name} returned {got}: {hint}.")
        raise Hint(f"{name} should return {tuple(expected.shape)} for an input of shape "
                   f"{tuple(given.shape)}, got {got}.")
    return out


def _one_heads_case(my_split_heads, my_merge_heads, case):
    """None when both are right on this case, else the hint."""
    _, b, n, d_model, h = case
    d_k = d_model // h
    x = _heads_case(*case)
    sizes = (b, h, n, d_k)
    right = _split(x, h, "right")
    out = _run(my_split_heads, "my_split_heads(t, h)", x, h, errors=SLIP_ERRORS + SPLIT_ERRORS,
               reference=HEADS_REFERENCE, instead=HEADS_INSTEAD)
    out = _heads_output(out, "my_split_heads", right, x, sizes, SPLIT_SHAPE_HINTS)
    if not close(out, right, 1e-6):
        for how, hint in SPLIT_MISTAKES:
            if close(out, _split(x, h, how), 1e-6):
                return f"my_split_heads: {hint}"
        if close(out[:, 0], right[:, 0], 1e-6):
            return ("my_split_heads: head 1 is right but not the others: head i holds columns "
                    "i·d_k to (i+1)·d_k − 1 of every token.")
        return ("my_split_heads: the shape is right but the numbers are not where they should be: "
                "head i must hold columns i·d_k to (i+1)·d_k − 1 of every token.")
    heads = right.contiguous()   # as the product weights @ V returns it: stored head by head
    out = _run(my_merge_heads, "my_merge_heads(t)", heads, errors=SLIP_ERRORS + MERGE_ERRORS,
               reference=HEADS_REFERENCE, instead=HEADS_INSTEAD)
    out = _heads_output(out, "my_merge_heads", x, heads, sizes, MERGE_SHAPE_HINTS)
    if not close(out, x, 1e-6):
        for how, hint in MERGE_MISTAKES:
            if close(out, _merge(heads, how), 1e-6):
                return f"my_merge_heads: {hint}"
        return ("my_merge_heads: the shape is right but the numbers are not where they should be: "
                "my_merge_heads(my_split_heads(t, h)) must give t back.")
    return None
def _split(t, h, how):
    """(b, n, d) -> (b, h, n, d_k), the right way or as a usual mistake does it."""
    b, n, d = t.shape
    if how == "one head":
        return t.unsqueeze(1)
    if how == "no transpose":
        return t.reshape(b, h, n, d // h)
    if how == "interleaved":
        return t.reshape(b, n, d // h, h).permute(0, 3, 1, 2)
    if how == "transpose first":
        return t.transpose(1, 2).reshape(b, h, n, d // h)
    return t.reshape(b, n, h, d // h).transpose(1, 2)


def _merge(t, how):
    """(b, h, n, d_k) -> (b, n, h·d_k), the right way or as a usual mistake does it."""
    b, h, n, d_k = t.shape
    if how == "no transpose":
        return t.reshape(b, n, h * d_k)
    if how == "interleaved":
        return t.permute(0, 2, 3, 1).reshape(b, n, h * d_k)
    if how == "last two swapped":
        return t.transpose(2, 3).reshape(b, n, h * d_k)
    return t.transpose(1, 2).reshape(b, n, h * d_k)


@checker
def check_split_merge(my_split_heads=None, my_merge_heads=None):
    """my_split_heads(t, h): (b, n, d_model) -> (b, h, n, d_k); my_merge_heads undoes it."""
    for i, case in enumerate(HEADS_CASES):
        try:
            hint = _one_heads_case(my_split_heads, my_merge_heads, case)
        except Hint as raised:
            if i == 0 or str(raised).startswith("Not answered yet"):
                raise
            hint = str(raised)
        if hint and i:
            _, b, n, d_model, h = case
            said = hint.rstrip(".")
            advice = "" if "t.shape" in said else ". Read every size from t.shape (and h)"
            return (f"Right on the first tensor, but on the second (t of shape {(b, n, d_model)}, "
                    f"h = {h}): {said}{advice}.")
        if hint:
            return hint
    return None


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_split_merge, helpers.attention.split_heads,
         lambda f: (lambda t, h: f(t, h), lambda t: t.transpose(1, 2).flatten(2)))
