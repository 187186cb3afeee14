"""What every check of notebook 03 shares: the tiny model's sizes, the errors that have a usual cause
(each with one line saying what to write instead), and running a learner's function with them."""

import re

import torch

from helpers.checks import Hint, _sentence, call, close

D_MODEL, H, D_FF, N = 64, 4, 256, 7


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
