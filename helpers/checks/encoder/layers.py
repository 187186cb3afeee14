"""The test layers of the feed-forward, pre-norm and shapes checks, and the runner of a layer function."""

import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import Hint, close, tensor
from helpers.checks.encoder.common import D_FF, D_MODEL, H, N, _full_precision, _match, _run


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
