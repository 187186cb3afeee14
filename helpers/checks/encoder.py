"""Checks for notebook 03 (encoder layer): splitting and merging the heads, multi-head
self-attention, the feed-forward layer, the shapes for a batch of 7-letter sources, the pre-norm
layer, and the "Check your understanding" questions.

The function checkers run the learner's function through :func:`helpers.checks.call` on two
seeded random batches (batch > 1, two seeds, two sizes), compare it with PyTorch, and when it
differs compute what each usual mistake returns and name the one it matches. The layers they
build have every weight moved off its initial value, so that a forgotten γ, β or bias shows.
"""

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

import helpers.attention
from helpers.layers import EncoderLayer
from helpers.checks import Hint, Passed, _sentence, call, checker, choice, close, number, shape, tensor

D_MODEL, H, D_FF, N = 64, 4, 256, 7


# --- Errors that have a usual cause: one line saying what to write instead --------------------

RELU_ERRORS = [
    ("Boolean value of Tensor with more than one value is ambiguous",
     "Python's max(0, z) cannot compare a whole tensor with 0 (nor can an `if` on a tensor). "
     "The formula's max(0, ·) is taken number by number, which is ReLU: write torch.relu(z) or "
     "z.clamp(min=0)."),
    ("max() received an invalid combination of arguments",
     "torch.max(0, z) is not the formula's max(0, ·): torch.max wants a tensor first (with a "
     "number it reads an axis). Take the maximum number by number, which is ReLU: "
     "torch.relu(z) or z.clamp(min=0)."),
    ("torch.return_types.max",
     "torch.max(z, 0) returns the largest value along axis 0 and its index, not ReLU: write "
     "torch.relu(z) or z.clamp(min=0)."),
    ("maximum(): argument 'other'",
     "torch.maximum compares two tensors: torch.maximum(z, torch.zeros_like(z)), or simply "
     "torch.relu(z)."),
]

MHA_ERRORS = [
    ("missing 2 required positional arguments: 'key' and 'value'",
     "nn.MultiheadAttention takes query, key and value: for self-attention call "
     "L.self_attn(y, y, y), and take the output, item [0] of the pair it returns."),
    (re.compile(r"\btuple\b"),
     "L.self_attn(y, y, y) returns a pair (output, weights), not a tensor: take its first "
     "item, L.self_attn(y, y, y, need_weights=False)[0]."),
]

NORM_ERRORS = [
    ("missing 1 required positional argument: 'beta'",
     "helpers.norms.layer_norm takes x, γ and β (notebook 02): "
     "layer_norm(x, L.norm1.weight, L.norm1.bias), not the LayerNorm module itself."),
    ("missing 2 required positional arguments: 'gamma' and 'beta'",
     "helpers.norms.layer_norm takes x, γ and β (notebook 02): "
     "layer_norm(x, L.norm1.weight, L.norm1.bias)."),
]

VIEW_ERRORS = [
    ("view size is not compatible",
     "view(...) after transpose(1, 2) fails because the numbers are no longer stored in row "
     "order: join the heads with .reshape(...) (or .contiguous().view(...))."),
    ("is invalid for input of size",
     "a view or reshape asked for a fixed shape that does not fit x of shape {shape}: read b, n "
     "and d_model from x.shape, and d_k = d_model // h from the h you are given."),
    ("Expected size for first two dimensions of batch2 tensor",
     "two head tensors do not fit in a product: the scores are Q @ K.transpose(-2, -1), "
     "(b, h, n, d_k) @ (b, h, d_k, n), and the output is weights @ V."),
    ("shapes cannot be multiplied",
     "a matrix product got mismatched sizes: x @ W_Q needs x itself, (b, n, d_model), and the "
     "heads must be joined back to (b, n, d_model) before @ W_O."),
]

SLIP_ERRORS = [   # the most common slips of any function exercise of this notebook
    (re.compile(r"tuple of ints,\s*(but got|not) float|slice indices must be integers"),
     "a size is a float: d_model / h is a float even when it divides exactly (64 / 4 = 16.0, "
     "not 16), and a shape or a slice needs whole numbers. Write d_k = d_model // h (integer "
     "division)."),
    ("sqrt(): argument 'input' (position 1) must be Tensor, not",
     "torch.sqrt takes a tensor, not a number: write math.sqrt(d_k) (or d_k ** 0.5)."),
    ('softmax() missing 1 required positional arguments: "dim"',
     "torch.softmax needs the axis it normalises: dim=-1, the keys, so that each query's "
     "weights sum to 1."),
]

KT_ERRORS = [   # the first batch only: a function right there holds no K.T
    ("on tensors of dimension other than 2",
     "K.T reverses all the axes of a tensor; on the heads, (b, h, n, d_k), swap only the last two: "
     "the scores are Q @ K.transpose(-2, -1) (or K.mT)."),
    ("must match the size of tensor b",
     "two tensors whose shapes do not fit met in one operation. The usual cause: K.T, which on a "
     "4-D tensor reverses all four axes; swap only the last two, Q @ K.transpose(-2, -1) (or K.mT), "
     "(b, h, n, d_k) @ (b, h, d_k, n)."),
]


def _run(fn, name, *args, errors=(), reference=(), instead=""):
    """call(fn, name, *args, reference=..., instead=...), with the raw error of a usual mistake
    replaced by what to write. An advice may name {shape}, the shape of the first argument."""
    try:
        return call(fn, name, *args, reference=reference, instead=instead)
    except Hint as hint:
        text = str(hint)
        raised = re.match(r"^.*? raised (\w+): (.*)$", text)
        if raised:
            for pattern, advice in errors:
                found = (pattern.search(raised.group(2)) if isinstance(pattern, re.Pattern)
                         else pattern in raised.group(2))
                if found:
                    advice = advice.replace("{shape}", str(tuple(args[0].shape)))
                    raise Hint(f"{name.split('(')[0]} raised {raised.group(1)}: {advice}") from None
        raise


def _full_precision(out, name):
    """Raise Hint when out is a float16 or bfloat16 tensor: too few digits to compare."""
    if isinstance(out, torch.Tensor) and out.dtype in (torch.float16, torch.bfloat16):
        raise Hint(f"{name} is {str(out.dtype).removeprefix('torch.')}: compute in float32, the "
                   "dtype of the input (half precision keeps only about 3 significant digits, "
                   "too few to compare with PyTorch).")


def _match(out, candidates, tol=1e-4):
    """The hint of the first candidate output that out equals, else None."""
    for candidate, hint in candidates:
        with torch.no_grad():
            wrong = candidate()
        if wrong.shape == out.shape and close(out, wrong, tol):
            return _sentence(hint)
    return None


# --- Your turn 1: split and merge the heads ---------------------------------------------------

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


# --- Your turn 2: multi-head self-attention ------------------------------------------------------

SA_NAME = "my_self_attention(x, W_Q, W_K, W_V, W_O, h)"
SA_CASES = ((0, 3, 6, 64, 4), (1, 2, 5, 48, 6))   # seed, batch, tokens, d_model, heads


def _sa_case(seed, b, n, d_model, h):
    """(x, W_Q, W_K, W_V, W_O, h) in the paper's orientation, and nn.MultiheadAttention's output."""
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(seed)
        mha = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).eval()
        x = torch.randn(b, n, d_model)
    with torch.no_grad():
        expected = mha(x, x, x, need_weights=False)[0]
        W_Q, W_K, W_V = (w.T.contiguous() for w in mha.in_proj_weight.split(d_model))
        W_O = mha.out_proj.weight.T.contiguous()
    return (x, W_Q, W_K, W_V, W_O, h), expected


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


def _self_attention(x, W_Q, W_K, W_V, W_O, h, split="right", merge="right", scale="d_k",
                    dim=-1, swap=False, softmax=True, w_o=True, transposed="", scale_after=False,
                    weights_for="QKV"):
    """Multi-head self-attention, or what one (or two) usual mistakes make of it.
    weights_for: the matrix each of Q, K, V is made with ("QQV": W_Q for the keys too;
    "x" in a place: that one is x itself, no matrix)."""
    W = {"Q": W_Q, "K": W_K, "V": W_V, "O": W_O}
    W = {name: (w.T if name in transposed else w) for name, w in W.items()}
    q, k, v = (_split(x if which == "x" else x @ W[which], h, split) for which in weights_for)
    d_model = x.shape[-1]
    d_k = d_model // h
    divide = {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d_model), "none": 1.0, "d_k, no root": d_k}
    scores = k @ q.transpose(-2, -1) if swap else q @ k.transpose(-2, -1)
    if scale_after:
        weights = torch.softmax(scores, dim=dim) / divide[scale]
    else:
        scores = scores / divide[scale]
        weights = torch.softmax(scores, dim=dim) if softmax else scores
    concat = _merge(weights @ v, merge)
    return concat @ W["O"] if w_o else concat


SPLIT_HINT = ("you split the heads with a view (or reshape) straight to (b, h, n, d_k): the shape "
              "is right, but each head then holds pieces of several tokens. Cut each token's "
              "d_model numbers into h groups, (b, n, h, d_k), then move the head axis in front of "
              "the tokens with transpose(1, 2).")
TRANSPOSED_HINT = ("you multiplied by transposed matrices (x @ W.T, as for PyTorch's stored "
                   "weights): here W_Q, W_K, W_V and W_O are in the paper's orientation, "
                   "Q = x @ W_Q and the output is concat @ W_O.")
ONE_HEAD_HINT = ("you computed one attention over all d_model columns: split Q, K and V into h "
                 "heads of d_k = d_model / h numbers first, each with its own n × n weights.")

SA_MISTAKES = [
    ({"merge": "no transpose"},
     "you joined the heads with a reshape alone: (b, h, n, d_k) reshaped to (b, n, d_model) "
     "mixes the tokens. Move the head axis back behind the tokens first, transpose(1, 2), then "
     "reshape."),
    ({"split": "no transpose", "merge": "no transpose"}, SPLIT_HINT),
    ({"split": "no transpose"}, SPLIT_HINT),
    ({"split": "interleaved", "merge": "interleaved"}, INTERLEAVED_HINT),
    ({"split": "interleaved"}, INTERLEAVED_HINT),
    ({"scale": "d_model"},
     "you divided the scores by √d_model: each head's dot product adds up only d_k = d_model / h "
     "products, so divide by √d_k."),
    ({"scale": "none"}, "you did not scale the scores: divide Q Kᵀ by √d_k before the softmax."),
    ({"scale": "d_k, no root"}, "you divided the scores by d_k: divide by its square root, √d_k."),
    ({"scale_after": True},
     "you divided by √d_k after the softmax: scale the scores, Q Kᵀ / √d_k, then take the softmax "
     "(dividing the weights afterwards makes each row sum to 1/√d_k instead of 1)."),
    ({"dim": -2},
     "your softmax runs over the queries (dim=-2): each query's weights over the keys must sum "
     "to 1, so take the softmax over the last axis, the keys (dim=-1)."),
    ({"dim": 1},
     "your softmax runs over the heads (dim=1; F.softmax without dim= also picks axis 1 of a 4-D "
     "tensor): take it over the last axis, the keys (dim=-1)."),
    ({"swap": True},
     "your scores are K Qᵀ, keys against queries: row i must hold query i against every key, "
     "Q Kᵀ."),
    ({"w_o": False}, "you forgot W_O: multiply the joined heads by W_O at the end."),
    ({"softmax": False},
     "you forgot the softmax: the weights are softmax(Q Kᵀ / √d_k) over the keys."),
    ({"transposed": "QKVO"}, TRANSPOSED_HINT),
    ({"transposed": "QKV"}, TRANSPOSED_HINT),
    ({"transposed": "O"}, TRANSPOSED_HINT),
    ({"split": "one head"}, ONE_HEAD_HINT),
    ({"split": "one head", "scale": "d_model"}, ONE_HEAD_HINT),
    ({"weights_for": "QKx"},
     "your values are x itself: V = x @ W_V, made with its own matrix like Q and K, then split "
     "into heads."),
    ({"weights_for": "QQV"},
     "your keys are made with W_Q: K = x @ W_K (each of Q, K and V has its own matrix; with W_Q "
     "for both, every token's key equals its query)."),
    ({"weights_for": "KKV"},
     "your queries are made with W_K: Q = x @ W_Q (each of Q, K and V has its own matrix)."),
    ({"weights_for": "QVK"},
     "K and V are swapped: the keys are x @ W_K (compared with the queries), the values x @ W_V "
     "(averaged with the weights)."),
]


def _sa_output(out, args, expected):
    """The learner's output as a float tensor of the expected shape, or raise Hint."""
    x, h = args[0], args[5]
    b, n, d_model = x.shape
    if isinstance(out, (tuple, list)):
        first = out[0] if out else None
        if isinstance(first, torch.Tensor) and first.shape == expected.shape:
            raise Hint("my_self_attention returned a tuple: return the output alone, one tensor "
                       f"of shape (b, n, d_model) = {tuple(expected.shape)}.")
    _full_precision(out, "The output of my_self_attention")
    out = tensor(out, "the output of my_self_attention", dtype=x.dtype)
    got = tuple(out.shape)
    if got == (b, h, n, d_model // h):
        raise Hint(f"You returned the heads, (b, h, n, d_k) = {got}: join them back to "
                   "(b, n, d_model), then multiply by W_O.")
    if got == (b, h, n, n):
        raise Hint(f"You returned the attention weights, (b, h, n, n) = {got}: multiply them by "
                   "V, join the heads and multiply by W_O.")
    if got != tuple(expected.shape):
        raise Hint(f"my_self_attention should return the input's shape (b, n, d_model) = "
                   f"{tuple(expected.shape)} for x of shape {tuple(x.shape)}, got {got}.")
    return out


SA_REFERENCE = [
    (nn.MultiheadAttention, "forward", "nn.MultiheadAttention"),
    (F, "multi_head_attention_forward", "F.multi_head_attention_forward"),
    (helpers.attention.MultiHeadAttention, "forward", "helpers.attention.MultiHeadAttention"),
    (helpers.attention, "split_heads", "helpers.attention.split_heads"),
    (helpers.attention, "merge_heads", "helpers.attention.merge_heads"),
    (helpers.attention, "attention", "helpers.attention.attention"),
]
SA_INSTEAD = ("write the steps yourself with @, view or reshape, transpose and torch.softmax "
              "(your my_split_heads and my_merge_heads of Your turn 1 are welcome).")


@checker
def check_self_attention(my_self_attention=None):
    """my_self_attention(x, W_Q, W_K, W_V, W_O, h) equals nn.MultiheadAttention(bias=False)."""
    for i, case in enumerate(SA_CASES):
        args, expected = _sa_case(*case)
        try:
            out = _run(my_self_attention, SA_NAME, *args,
                       errors=SLIP_ERRORS + VIEW_ERRORS + (KT_ERRORS if i == 0 else []),
                       reference=SA_REFERENCE, instead=SA_INSTEAD)
            out = _sa_output(out, args, expected)
        except Hint as hint:
            if i == 0 or str(hint).startswith("Not answered yet"):
                raise
            said = str(hint).rstrip(".")
            advice = ("" if "x.shape" in said else
                      ". Read b, n and d_model from x.shape and use the h you are given")
            raise Hint(f"Right on the first batch, but on the second (x of shape "
                       f"{tuple(args[0].shape)}, h = {args[5]}): {said}{advice}.") from None
        if close(out, expected, 1e-4):
            continue
        hint = _match(out, [(lambda kw=kw, args=args: _self_attention(*args, **kw), hint)
                            for kw, hint in SA_MISTAKES])
        if hint:
            return hint
        again = _sa_output(_run(my_self_attention, SA_NAME, *args, errors=SLIP_ERRORS + VIEW_ERRORS,
                                reference=SA_REFERENCE, instead=SA_INSTEAD), args, expected)
        if not close(out, again, 1e-6):
            return ("my_self_attention gives another result each time it runs on the same x: dropout "
                    "is still on (F.dropout drops numbers unless you pass training=False). The "
                    "exercise is attention in evaluation mode: leave dropout out.")
        if i:
            _, b, n, d_model, h = SA_CASES[0]
            return (f"Right on the first batch (x of shape {(b, n, d_model)}, h = {h}) but not on "
                    f"the second ({tuple(args[0].shape)}, h = {args[5]}): read b, n and d_model "
                    "from x.shape, d_k = d_model // h, and write no fixed size in your function.")
        return ("Not equal to nn.MultiheadAttention yet: Q = x @ W_Q (and K, V), split into h "
                "heads (b, h, n, d_k), softmax(Q Kᵀ / √d_k) over the keys, times V, join the heads "
                "back to (b, n, d_model), times W_O.")
    return None



# --- Your turn 4: the shapes for a batch of 2 sources of 7 letters -----------------------------

B = 2   # sources in the batch

ONE_SOURCE = "that is one source: the batch holds 2, and the batch axis comes first"

WEIGHT_HINTS = {
    (B, N, H, N): "heads and tokens are swapped: after splitting, the head axis comes right "
                  "after the batch, (batch, h, queries, keys)",
    (B, N, N, H): "the head axis comes right after the batch: (batch, h, queries, keys)",
    (H, B, N, N): "the batch axis comes first, then the heads: (batch, h, queries, keys)",
    (B, H, N, 16): "(2, 4, 7, 16) is Q, K or V split into heads (d_k = 16 columns); the weights "
                   "hold one score per query and key, so their last two axes are n × n",
    (B, H, 16, 16): "the weights compare tokens with tokens (n × n), not columns with columns",
    (B, N, N): "every head has its own table of weights: keep the head axis, (batch, h, n, n)",
    (H, N, N): "keep the batch axis in front: (batch, h, n, n)",
    (B * H, N, N): "keep the batch and the heads on two axes: (batch, h, n, n)",
    (B, H, N * B, N * B): "each source has its own table: a token only reads the tokens of its "
                          "own source, so the last two axes are n × n with n = 7",
    (B, H, 5, 5): "that is the 5-letter example from the text: these sources have 7 letters",
    (B, 8, N, N): "the tiny model has h = 4 heads (8 is the paper's base model)",
    (B, H, N, 64): "the weights hold one score per query and key: their last two axes are n × n",
    (B, N, 64): "that is the shape of the attention's output after W_O; the weights are one "
                "n × n table per head",
    (1, H, N, N): ONE_SOURCE,
}

HIDDEN_HINTS = {
    (B, N, 64): "you used d_model instead of d_ff: the first linear layer widens every "
                "position to d_ff = 256 numbers",
    (B, H, N, 256): "the feed-forward layer works on whole positions, after the heads are "
                    "concatenated: no head axis",
    (B, H, N, 64): "the feed-forward layer works on whole positions after the heads are "
                   "concatenated (no head axis), and widens them to d_ff = 256",
    (B, N, 2048): "2048 is the paper's d_ff; the tiny model has d_ff = 256",
    (B, 5, 256): "that is the 5-letter example from the text: these sources have 7 letters",
    (N, 256): "keep the batch axis in front: (batch, n, d_ff)",
    (B * N, 256): "keep the batch and the tokens on two axes: (batch, n, d_ff)",
    (B, 256, N): "tokens come before features: (batch, n, d_ff)",
    (B, N, N): "the hidden layer has d_ff numbers per position, not one per token",
    (1, N, 256): ONE_SOURCE,
}

MEMORY_HINTS = {
    (B, N, 256): "you used d_ff instead of d_model: the second linear layer brings every "
                 "position back to d_model = 64, so that layers can be stacked",
    (B, H, N, 16): "the heads are concatenated and W_O maps them back: the layer's output has "
                   "d_model = 64 numbers per position and no head axis",
    (B, H, N, N): "those are the attention weights; the memory has one vector of d_model "
                  "numbers per source token",
    (B, N, N): "the memory has one vector of d_model = 64 numbers per token, not one number "
               "per pair of tokens",
    (B, N, 512): "512 is the paper's d_model; the tiny model has d_model = 64",
    (B, 5, 64): "that is the 5-letter example from the text: these sources have 7 letters",
    (N, 64): "keep the batch axis in front: (batch, n, d_model)",
    (B * N, 64): "keep the batch and the tokens on two axes: (batch, n, d_model)",
    (B, 64, N): "tokens come before features: (batch, n, d_model)",
    (1, N, 64): ONE_SOURCE,
}


def _check_shape(answer, name, expected, hints):
    got = shape(answer, name)
    if got == expected:
        return
    name = _sentence(name)
    if got in hints:
        raise Hint(f"{name}: {hints[got]}.")
    raise Hint(f"{name} should be {len(expected)}-dimensional, not {got}: write out the axes "
               "step by step with batch = 2, n = 7, h = 4, d_k = 16, d_ff = 256.")


def _layer_shapes():
    """The shapes PyTorch's layer gives for a batch of B sources of N tokens: its attention weights
    per head, its FFN's hidden layer and its output (the memory). The answers are measured, not
    written down."""
    L, x = _test_layer(False, 2017, B, N)
    with torch.no_grad():
        weights = L.self_attn(x, x, x, average_attn_weights=False)[1]
        hidden = F.relu(L.linear1(x))
        return [tuple(t.shape) for t in (weights, hidden, L(x))]


_SHAPES_WHY = ("PyTorch's layer run on 2 sources of 7 tokens gives {0}, {1} and {2}: the weights grow with "
               "the square of the length (7 × 7 per head and per source), the hidden tensor and the memory "
               "with the length only (7 rows per source).")


@checker
def check_shapes(weights_shape=None, hidden_shape=None, memory_shape=None):
    """The shapes for a batch of 2 sources of 7 letters in the tiny model (64, h 4, d_ff 256)."""
    measured = _layer_shapes()
    for answer, name, right, hints in zip(
            (weights_shape, hidden_shape, memory_shape),
            ("the attention weights", "the FFN's hidden layer", "the memory"),
            measured, (WEIGHT_HINTS, HIDDEN_HINTS, MEMORY_HINTS), strict=True):
        _check_shape(answer, name, right, hints)
    return Passed(_SHAPES_WHY.format(*measured))


# --- The test layers of the feed-forward and pre-norm checks ---------------------------------

# seed, batch, tokens (and d_model, h, d_ff): the notebook's sizes, another batch, and a layer of
# another width whose sizes a function cannot guess (d_model 24, d_ff 40, 5 sequences of 3 tokens)
LAYER_CASES = ((2017, 2, N), (2018, 3, 5), (2019, 5, 3, 24, 4, 40))


def _test_layer(norm_first, seed, b, n, d_model=D_MODEL, h=H, d_ff=D_FF):
    """A seeded layer with every parameter moved off its initial value, and an input x."""
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(seed)
        layer = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout=0.1, activation="relu",
                                           batch_first=True, norm_first=norm_first)
        with torch.no_grad():
            for p in layer.parameters():
                p.add_(0.2 * torch.randn_like(p))
        x = torch.randn(b, n, d_model)
    return layer.eval(), x


def _attn(x, L):
    return L.self_attn(x, x, x, need_weights=False)[0]


PRIVATE_SUBLAYERS = "L._sa_block or L._ff_block, nn.TransformerEncoderLayer's own sublayers"


def _ffn(x, L, act=F.relu, bias1=True, bias2=True):
    hidden = act(F.linear(x, L.linear1.weight, L.linear1.bias if bias1 else None))
    return F.linear(hidden, L.linear2.weight, L.linear2.bias if bias2 else None)


def _identity(t):
    return t


def _norm(x, norm, affine=True, unbiased=False):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=unbiased, keepdim=True)
    y = (x - mu) / torch.sqrt(var + norm.eps)
    return y * norm.weight + norm.bias if affine else y


def _layer_output(fn, name, x, L, errors, reference, instead, tuple_hint):
    """The learner's fn(x, L) as a float tensor of x's shape, or raise Hint.

    reference(L): the (owner, attribute, label) triples the function may not call."""
    out = _run(fn, f"{name}(x, L)", x, L, errors=errors, reference=reference(L), instead=instead)
    if isinstance(out, (tuple, list)):
        raise Hint(f"{name} should return one tensor, got a {type(out).__name__}"
                   + (f": {tuple_hint}." if tuple_hint and out and isinstance(out[0], torch.Tensor)
                      else "."))
    _full_precision(out, f"The output of {name}")
    out = tensor(out, f"the output of {name}", tuple_hint=tuple_hint, dtype=x.dtype)
    b, n, d_model = x.shape
    d_ff = L.linear1.out_features
    if tuple(out.shape) != tuple(x.shape):
        if tuple(out.shape) == (b, n, d_ff):
            raise Hint(f"{name} returned the hidden layer {(b, n, d_ff)}: multiply by W_2 and add "
                       f"b_2 to come back to d_model = {d_model}.")
        raise Hint(f"{name} should keep the input's shape {tuple(x.shape)}, got {tuple(out.shape)}.")
    return out


def _another(case):
    """How a hint names a test case after the first: another batch, or a layer of another width."""
    if len(case) > 3:
        return f"a layer of another width (d_model {case[3]}, d_ff {case[5]})"
    return "the second batch"


def _check_layer_function(fn, name, norm_first, expected, mistakes, generic, errors,
                          reference, instead, tuple_hint=None):
    """Run fn on both test cases; None when right, else the hint of the mistake it matches."""
    for i, case in enumerate(LAYER_CASES):
        L, x = _test_layer(norm_first, *case)
        try:
            out = _layer_output(fn, name, x, L, errors, reference, instead, tuple_hint)
        except Hint as hint:
            if i == 0 or str(hint).startswith("Not answered yet"):
                raise
            raise Hint(f"Right on the first batch, but on {_another(case)} (x of shape "
                       f"{tuple(x.shape)}): {str(hint).rstrip('.')}. Read the sizes from x.shape "
                       "and L.") from None
        with torch.no_grad():
            right = expected(x, L)
        if close(out, right, 1e-4):
            continue
        hint = _match(out, mistakes(x, L, right))
        if hint:
            return hint
        again = _layer_output(fn, name, x, L, errors, reference, instead, tuple_hint)
        if not close(out, again, 1e-6):
            return (f"{name} gives another result each time it runs on the same x: dropout is still "
                    "on (F.dropout drops numbers unless you pass training=False). The exercise is the "
                    "layer in evaluation mode: leave dropout out.")
        if i:
            return (f"Right on the first batch but not on {_another(case)} (x of shape "
                    f"{tuple(x.shape)}): read the sizes from x.shape (and L) and write no fixed size "
                    "in your function.")
        return generic
    return None


# --- Your turn 3: the feed-forward layer --------------------------------------------------------

def _ffn_mistakes(x, L, expected):
    return [
        (lambda: _ffn(x, L, act=_identity),
         "ReLU is missing: take max(0, ·) of x W_1 + b_1 before multiplying by W_2."),
        (lambda: _ffn(x, L, act=F.gelu),
         "that is GELU (GPT-2's FFN); the paper's FFN uses ReLU, max(0, ·)."),
        (lambda: _ffn(x, L, act=lambda t: F.gelu(t, approximate="tanh")),
         "that is GELU (GPT-2's FFN); the paper's FFN uses ReLU, max(0, ·)."),
        (lambda: F.relu(expected),
         "ReLU comes only between the two layers: the output (... W_2 + b_2) is not clipped at 0."),
        (lambda: F.relu(_ffn(x, L, act=_identity)),
         "ReLU belongs between the two layers, not after W_2."),
        (lambda: _ffn(x, L, bias1=False, bias2=False),
         "both biases b_1 and b_2 are missing."),
        (lambda: _ffn(x, L, bias1=False),
         "the bias b_1 (L.linear1.bias) is missing: add it before ReLU."),
        (lambda: _ffn(x, L, bias2=False),
         "the bias b_2 (L.linear2.bias) is missing."),
        (lambda: x + expected,
         "return the FFN alone: the shortcut x + ... and the norm come around it in the layer."),
        (lambda: _norm(x + expected, L.norm2),
         "return the FFN alone: add & norm come around it in the layer, not inside it."),
    ]


# A kernel-size-1 convolution loaded with the layer's weights is the FFN itself (section 5 shows it):
# nn.Conv1d and F.conv1d both end in torch's conv1d, which call() watches in torch's dispatch.
CONVOLUTION = ("nn.Conv1d / F.conv1d (a convolution of kernel size 1 with the layer's weights, "
               "section 5's form)")

# A product of mismatched sizes says which weight was not transposed: (tokens x d_model) @ W_1 as
# stored, (d_ff, d_model), or (tokens x d_ff) @ W_2 as stored, (d_model, d_ff).
FFN_ERRORS = [
    (re.compile(rf"shapes cannot be multiplied \(\d+x{D_FF} and"),
     "PyTorch stores a linear layer's weight as (out, in): W_2 is L.linear2.weight.T, (d_ff, d_model), "
     "so multiply the hidden layer by the transpose."),
    ("shapes cannot be multiplied",
     "PyTorch stores a linear layer's weight as (out, in): W_1 is L.linear1.weight.T, "
     "so multiply by the transpose."),
]


@checker
def check_ffn(ffn=None):
    """ffn(x, L) = max(0, x W1 + b1) W2 + b2 with the weights of L.linear1 and L.linear2."""
    return _check_layer_function(
        ffn, "ffn", False, lambda x, L: L.linear2(F.relu(L.linear1(x))), _ffn_mistakes,
        "Your FFN differs from PyTorch's: compute relu(x @ L.linear1.weight.T + L.linear1.bias) "
        "@ L.linear2.weight.T + L.linear2.bias.",
        errors=RELU_ERRORS + FFN_ERRORS,
        reference=lambda L: [(L.linear1, "forward", "L.linear1(...)"),
                             (L.linear2, "forward", "L.linear2(...)"),
                             (nn.Linear, "forward", "an nn.Linear layer"),
                             (F, "linear", "F.linear"),
                             (F, "conv1d", CONVOLUTION), (F, "conv2d", CONVOLUTION),
                             (torch, "convolution", CONVOLUTION), (torch, "_convolution", CONVOLUTION),
                             (nn.TransformerEncoderLayer, "_ff_block", PRIVATE_SUBLAYERS),
                             (EncoderLayer, "ffn", "helpers.layers.EncoderLayer.ffn")],
        instead="write the products yourself, x @ L.linear1.weight.T + L.linear1.bias, and the "
                "same with L.linear2.")


# --- Your turn 5: the pre-norm layer ------------------------------------------------------------

_GELU_HINT = ("your feed-forward layer uses GELU (GPT-2's); this layer's, as the paper's, is ReLU, "
              "max(0, ·): L.activation is relu.")


def _pre_norm_mistakes(x, L, expected):
    n1, n2 = L.norm1, L.norm2

    def pre(norm=_norm, a=n1, b=n2, ffn=_ffn, shortcut=True, normed_shortcut=False, query="normed",
            ffn_reads="stream"):
        y = x if a is None else norm(x, a)
        q = x if query == "raw" else y
        y = (y if normed_shortcut else x if shortcut else 0) + L.self_attn(q, y, y, need_weights=False)[0]
        stale = {"stream": y, "input": x, "first norm": None}[ffn_reads]
        z = (norm(x, a) if stale is None else stale if b is None else norm(stale, b))
        return (z if normed_shortcut else y if shortcut else 0) + ffn(z, L)

    def post():
        y = _norm(x + _attn(x, L), n1)
        return _norm(y + _ffn(y, L), n2)

    return [
        (post,
         "you normalised after the addition: that is post-norm, the paper's layer. Pre-norm "
         "normalises the sublayer's input: x + Sublayer(LayerNorm(x))."),
        (lambda: pre(normed_shortcut=True),
         "the shortcut should carry x itself: normalise only the sublayer's input, "
         "x + Sublayer(LayerNorm(x)); do not replace x by LayerNorm(x)."),
        (lambda: _norm(expected, n2),
         "a pre-norm layer ends on the addition: no LayerNorm at the end (a pre-norm stack "
         "adds one final norm after its last layer)."),
        (lambda: _norm(expected, n1),
         "a pre-norm layer ends on the addition: no LayerNorm at the end."),
        (lambda: pre(shortcut=False),
         "the shortcuts are missing: add x back after each sublayer."),
        (lambda: pre(a=n2, b=n1),
         "norm1 and norm2 are swapped: norm1 goes before the attention, norm2 before the FFN."),
        (lambda: pre(b=n1),
         "the feed-forward sublayer has its own norm: use L.norm2 there."),
        (lambda: pre(b=None),
         "the feed-forward sublayer reads the stream itself: pre-norm feeds it the stream's "
         "LayerNorm2, x + FFN(LayerNorm2(x))."),
        (lambda: pre(a=None),
         "the attention reads x itself: pre-norm feeds it LayerNorm1(x), as query, key and value, "
         "x + Attention(LayerNorm1(x))."),
        (lambda: x + _attn(_norm(x, n1), L),
         "you stopped after the attention sublayer: the feed-forward sublayer follows, with "
         "norm2 and its own shortcut."),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, act=_identity)),
         "ReLU is missing in the feed-forward layer."),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, act=F.gelu)),
         _GELU_HINT),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, act=lambda u: F.gelu(u, approximate="tanh"))),
         _GELU_HINT),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, bias2=False)),
         "the feed-forward layer's second bias b_2 (L.linear2.bias) is missing."),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, bias1=False)),
         "the feed-forward layer's first bias b_1 (L.linear1.bias) is missing: add it before ReLU."),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, bias1=False, bias2=False)),
         "both biases of the feed-forward layer, b_1 and b_2, are missing."),
        (lambda: pre(query="raw"),
         "your attention's queries come from x itself and only its keys and values from LayerNorm1(x): "
         "pre-norm feeds the same LayerNorm1(x) as query, key and value."),
        (lambda: pre(ffn_reads="input"),
         "the feed-forward sublayer reads a stale input: LayerNorm2 of x as it came in, before the "
         "attention's output was added. Normalise the stream after the first addition, "
         "y = x + Attention(...), then y + FFN(LayerNorm2(y))."),
        (lambda: pre(ffn_reads="first norm"),
         "the feed-forward sublayer reads a stale input: LayerNorm1(x), the first sublayer's input, "
         "computed before the attention's output was added. Normalise the new stream, "
         "y + FFN(LayerNorm2(y)) with y = x + Attention(LayerNorm1(x))."),
        (lambda: pre(norm=lambda t, m: _norm(t, m, affine=False)),
         "γ and β are missing: multiply by L.norm1.weight (or norm2's) and add its bias."),
        (lambda: pre(norm=lambda t, m: _norm(t, m, unbiased=True)),
         "your LayerNorm divides by d − 1: LayerNorm uses the biased variance (divide by d)."),
    ]


@checker
def check_pre_norm(pre_norm_layer=None):
    """pre_norm_layer(x, L) equals nn.TransformerEncoderLayer(..., norm_first=True) in eval mode."""
    return _check_layer_function(
        pre_norm_layer, "pre_norm_layer", True, lambda x, L: L(x), _pre_norm_mistakes,
        "Your layer differs from nn.TransformerEncoderLayer(norm_first=True): compute "
        "x = x + attention(LayerNorm1(x)), then x + FFN(LayerNorm2(x)).",
        errors=RELU_ERRORS + MHA_ERRORS + NORM_ERRORS,
        reference=lambda L: [(L, "forward", "L(x), the layer's own forward"),
                             (nn.TransformerEncoderLayer, "forward",
                              "nn.TransformerEncoderLayer's forward"),
                             (nn.TransformerEncoderLayer, "_sa_block", PRIVATE_SUBLAYERS),
                             (nn.TransformerEncoderLayer, "_ff_block", PRIVATE_SUBLAYERS),
                             (EncoderLayer, "forward", "the course's EncoderLayer (helpers.layers), "
                                                       "equal to nn.TransformerEncoderLayer"),
                             (EncoderLayer, "ffn", "helpers.layers.EncoderLayer.ffn")],
        instead="write the two sublayers yourself: x + attention of LayerNorm1(x), then the same "
                "with the FFN and LayerNorm2.",
        tuple_hint="nn.MultiheadAttention returns (output, weights): take [0]")


# --- Check your understanding ------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_MORE_HEADS = (
    "feed-forward",
    "More heads only cut d_model into thinner heads (d_k = 512 / 16 = 32): W_Q, W_K, W_V and "
    "W_O stay 512 × 512, so the attention keeps its 1,050,624 parameters and the FFN holds "
    "twice as many.",
    {"attention": "More heads do not add parameters: each head gets d_k = d_model / h columns, "
                  "so W_Q, W_K, W_V and W_O stay d_model × d_model whatever h (section 2), and "
                  "the FFN's W_1 and W_2 hold twice as much (section 7).",
     "the same": "The attention holds 4·d_model² weights whatever h; the FFN holds "
                 "2·d_model·d_ff = 8·d_model² since d_ff = 4·d_model: twice as many "
                 "(section 7)."},
)


@checker
def check_more_heads(answer_1=None):
    """Question 1: the paper's layer with h = 16: which part holds more parameters?"""
    return choice(answer_1, "answer_1", *_MORE_HEADS)


_PER_POSITION = (
    "layer only",
    "The FFN transforms each position on its own, so token 3's FFN output ignores token 1; "
    "in the layer the attention first mixes every token into every other, so token 3's "
    "output moves.",
    {"neither": "The attention sublayer mixes the tokens: token 3's query reads token 1's key "
                "and value, so the layer's output for token 3 moves when token 1 changes "
                "(section 2).",
     "both": "The FFN is applied to each position on its own: in section 5 token 3 fed alone "
             "gave exactly its row, so changing token 1 cannot move token 3's FFN output.",
     "ffn only": "It is the other way round: the FFN never looks at the other tokens "
                 "(section 5), the attention does (section 2)."},
)


@checker
def check_per_position(answer_2=None):
    """Question 2: what changing token 1 does to token 3's layer output and FFN output."""
    return choice(answer_2, "answer_2", *_PER_POSITION)


# The answer of question 3 lives here, out of the checker's own source (which ?? shows).
_PATH_N, _PATH_WIDTH = 101, 5
_PATH_LAYERS = (_PATH_N - 1) // ((_PATH_WIDTH - 1) // 2)
_PATH_WHY = (f"Each layer reaches (w − 1) / 2 = {(_PATH_WIDTH - 1) // 2} positions further, and from token 1 "
             f"to token {_PATH_N} there are {_PATH_N - 1} positions: {_PATH_N - 1} / "
             f"{(_PATH_WIDTH - 1) // 2} = {_PATH_LAYERS} layers, where one self-attention layer suffices.")


PATH_HINTS = {   # a wrong number of layers -> the idea it misses
    100: "that is one position per layer, the reach of a width-3 kernel (or the recurrent layer's "
         "n − 1 steps): a centred kernel of width 5 reads 2 positions on each side, so each layer "
         "reaches 2 positions further (section 3)",
    99: "a centred kernel of width 5 reaches 2 positions further per layer, not 1, and from token 1 "
        "to token 101 there are 100 positions to cross (section 3)",
    25: "a kernel of width 5 centred on its position reads 2 positions on each side, not 4 behind: "
        "each layer reaches 2 positions further (section 3)",
    20: "n / w is the rough order of growth section 3 gives for plain kernels, not the count: each "
        "layer reaches (w − 1) / 2 = 2 positions further, and there are n − 1 = 100 positions to cross",
    51: "count the positions to cross, n − 1 = 100 (from token 1 to token 101), not the tokens",
    3: "that is for dilated kernels, whose gaps grow 5-fold from layer to layer; a plain kernel "
       "reaches the same 2 positions further in every layer",
    1: "one layer links every pair in self-attention; a convolution layer reads only its window "
       "of 5 positions (section 3)",
}


@checker
def check_path_length(answer_3=None):
    """Question 3: how many layers of centred width-5 convolutions link the first and the last of
    n = 101 tokens."""
    value = number(answer_3, "answer_3")
    if value == _PATH_LAYERS:
        return Passed(_PATH_WHY)
    if value != round(value):
        return ("A number of layers is a whole number: count the positions to cross (n − 1 = 100) "
                "and how far one layer reaches (section 3).")
    if int(value) in PATH_HINTS:
        return _sentence(PATH_HINTS[int(value)]) + "."
    return ("Count the positions between the first and the last token (n − 1 = 100) and how far "
            "one layer of a centred width-5 kernel reaches (section 3's path lengths).")
