"""Checks for notebook 03 (encoder layer): shapes, the feed-forward layer, the pre-norm layer.

The function checkers build their own small layer (d_model 64, 4 heads, d_ff 256, one
sequence of 7 tokens) whose weights are moved off their initial values, so that a forgotten
γ, β or bias shows; they compare the learner's function with PyTorch and with the usual
mistakes, and name the one it matches.
"""

import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import Hint, checker, close, shape, tensor

D_MODEL, H, D_FF, N = 64, 4, 256, 7


# --- Your turn: the shapes for a 7-letter source -------------------------------------------

WEIGHT_HINTS = {
    (1, 7, 4, 7): "heads and tokens are swapped: after splitting, the head axis comes right "
                  "after the batch, (batch, h, queries, keys)",
    (1, 7, 7, 4): "the head axis comes right after the batch: (batch, h, queries, keys)",
    (1, 4, 7, 16): "(1, 4, 7, 16) is Q, K or V split into heads (d_k = 16 columns); the weights "
                   "hold one score per query and key, so their last two axes are n × n",
    (1, 4, 16, 16): "the weights compare tokens with tokens (n × n), not columns with columns",
    (1, 7, 7): "every head has its own table of weights: keep the head axis, (1, h, n, n)",
    (4, 7, 7): "keep the batch axis in front: (batch, h, n, n)",
    (1, 4, 5, 5): "that is the 5-letter example from the text: this source has 7 letters",
    (1, 8, 7, 7): "the small model has h = 4 heads (8 is the paper's base model)",
    (1, 4, 7, 64): "the weights hold one score per query and key: their last two axes are n × n",
    (1, 7, 64): "that is the shape of the attention's output after W_O; the weights are one "
                "n × n table per head",
}

HIDDEN_HINTS = {
    (1, 7, 64): "you used d_model instead of d_ff: the first linear layer widens every "
                "position to d_ff = 256 numbers",
    (1, 4, 7, 256): "the feed-forward layer works on whole positions, after the heads are "
                    "concatenated: no head axis",
    (1, 4, 7, 64): "the feed-forward layer works on whole positions after the heads are "
                   "concatenated (no head axis), and widens them to d_ff = 256",
    (1, 7, 2048): "2048 is the paper's d_ff; the small model has d_ff = 256",
    (1, 5, 256): "that is the 5-letter example from the text: this source has 7 letters",
    (7, 256): "keep the batch axis in front: (batch, n, d_ff)",
    (1, 256, 7): "tokens come before features: (batch, n, d_ff)",
    (1, 7, 7): "the hidden layer has d_ff numbers per position, not one per token",
}

MEMORY_HINTS = {
    (1, 7, 256): "you used d_ff instead of d_model: the second linear layer brings every "
                 "position back to d_model = 64, so that layers can be stacked",
    (1, 4, 7, 16): "the heads are concatenated and W_O maps them back: the layer's output has "
                   "d_model = 64 numbers per position and no head axis",
    (1, 4, 7, 7): "those are the attention weights; the memory has one vector of d_model "
                  "numbers per source token",
    (1, 7, 7): "the memory has one vector of d_model = 64 numbers per token, not one number "
               "per pair of tokens",
    (1, 7, 512): "512 is the paper's d_model; the small model has d_model = 64",
    (1, 5, 64): "that is the 5-letter example from the text: this source has 7 letters",
    (7, 64): "keep the batch axis in front: (batch, n, d_model)",
    (1, 64, 7): "tokens come before features: (batch, n, d_model)",
}


def _sentence(text):
    """text with a capital first letter (an ASCII one only: γ must stay γ)."""
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


def _check_shape(answer, name, expected, hints):
    got = shape(answer, name)
    if got == expected:
        return
    name = _sentence(name)
    if got in hints:
        raise Hint(f"{name}: {hints[got]}.")
    raise Hint(f"{name} should be {len(expected)}-dimensional {expected}, not {got}: write out "
               "the axes step by step with n = 7, h = 4, d_k = 16, d_ff = 256.")


@checker
def check_shapes(weights_shape=None, hidden_shape=None, memory_shape=None):
    """The shapes for one 7-letter source in the small model (d_model 64, h 4, d_ff 256)."""
    _check_shape(weights_shape, "the attention weights", (1, H, N, N), WEIGHT_HINTS)
    _check_shape(hidden_shape, "the FFN's hidden layer", (1, N, D_FF), HIDDEN_HINTS)
    _check_shape(memory_shape, "the memory", (1, N, D_MODEL), MEMORY_HINTS)


# --- The test layer and its pieces -----------------------------------------------------------

def _test_layer(norm_first):
    """A seeded layer with every parameter moved off its initial value, and an input x."""
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(2017)
        layer = nn.TransformerEncoderLayer(D_MODEL, H, D_FF, dropout=0.1, activation="relu",
                                           batch_first=True, norm_first=norm_first)
        with torch.no_grad():
            for p in layer.parameters():
                p.add_(0.2 * torch.randn_like(p))
        x = torch.randn(1, N, D_MODEL)
    return layer.eval(), x


def _attn(x, L):
    return L.self_attn(x, x, x, need_weights=False)[0]


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


def _callable(fn, name):
    if fn is None or fn is Ellipsis:
        raise Hint(f"Not answered yet: define {name} in the cell above and run it.")
    if not callable(fn) or isinstance(fn, (bool, str, torch.Tensor)):
        raise Hint(f"Pass the function itself, {name} (without parentheses), "
                   f"not a {type(fn).__name__}.")


def _run(fn, name, x, L):
    """Call the learner's fn(x, L) and return its output as a float tensor, or raise Hint."""
    try:
        with torch.no_grad():
            out = fn(x.clone(), L)
    except Exception as e:  # the learner's code may fail in any way: say how, in one line
        message = " ".join(str(e).split())[:160]
        if "shapes cannot be multiplied" in message or "size of tensor" in message:
            raise Hint(f"{name} failed with a shape error ({message}): PyTorch stores a "
                       "linear layer's weight as (out, in), so multiply by weight.T.") from None
        raise Hint(f"{name} raised {type(e).__name__}: {message}") from None
    if out is None:
        raise Hint(f"{name} returned None: end it with `return` and the result.")
    if isinstance(out, (tuple, list)):
        raise Hint(f"{name} should return one tensor, got a {type(out).__name__}.")
    out = tensor(out, f"the output of {name}")
    if tuple(out.shape) != (1, N, D_MODEL):
        if tuple(out.shape) == (1, N, D_FF):
            raise Hint(f"{name} returned the hidden layer (1, 7, 256): multiply by W_2 and add "
                       "b_2 to come back to d_model = 64.")
        raise Hint(f"{name} should keep the input's shape (1, 7, 64), got {tuple(out.shape)}.")
    return out


def _match(out, candidates, tol=1e-4):
    """The hint of the first candidate output that out equals, else None."""
    for candidate, hint in candidates:
        with torch.no_grad():
            if close(out, candidate(), tol):
                return _sentence(hint)
    return None


# --- Your turn: the feed-forward layer --------------------------------------------------------

@checker
def check_ffn(ffn=None):
    """ffn(x, L) = max(0, x W1 + b1) W2 + b2 with the weights of L.linear1 and L.linear2."""
    _callable(ffn, "ffn")
    L, x = _test_layer(norm_first=False)
    out = _run(ffn, "ffn", x, L)
    with torch.no_grad():
        expected = L.linear2(F.relu(L.linear1(x)))
    if close(out, expected, 1e-4):
        return None
    hint = _match(out, [
        (lambda: _ffn(x, L, act=_identity),
         "ReLU is missing: take max(0, ·) of x W_1 + b_1 before multiplying by W_2."),
        (lambda: _ffn(x, L, act=F.gelu),
         "that is GELU (GPT-2's FFN); the paper's FFN uses ReLU, max(0, ·)."),
        (lambda: _ffn(x, L, act=lambda t: F.gelu(t, approximate="tanh")),
         "that is GELU (GPT-2's FFN); the paper's FFN uses ReLU, max(0, ·)."),
        (lambda: F.relu(_ffn(x, L)),
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
    ])
    if hint:
        return hint
    return ("Your FFN differs from PyTorch's: compute relu(x @ L.linear1.weight.T + "
            "L.linear1.bias) @ L.linear2.weight.T + L.linear2.bias.")


# --- Your turn: the pre-norm layer ------------------------------------------------------------

@checker
def check_pre_norm(pre_norm_layer=None):
    """pre_norm_layer(x, L) equals nn.TransformerEncoderLayer(..., norm_first=True) in eval mode."""
    _callable(pre_norm_layer, "pre_norm_layer")
    L, x = _test_layer(norm_first=True)
    out = _run(pre_norm_layer, "pre_norm_layer", x, L)
    with torch.no_grad():
        expected = L(x)
    if close(out, expected, 1e-4):
        return None
    n1, n2 = L.norm1, L.norm2

    def pre(norm=_norm, a=n1, b=n2, ffn=_ffn, shortcut=True, normed_shortcut=False):
        y = norm(x, a)
        y = (y if normed_shortcut else x if shortcut else 0) + _attn(y, L)
        z = norm(y, b)
        return (z if normed_shortcut else y if shortcut else 0) + ffn(z, L)

    def post():
        y = _norm(x + _attn(x, L), n1)
        return _norm(y + _ffn(y, L), n2)

    hint = _match(out, [
        (post,
         ("you normalised after the addition: that is post-norm, the paper's layer. Pre-norm "
          "normalises the sublayer's input: x + Sublayer(LayerNorm(x)).")),
        (lambda: pre(normed_shortcut=True),
         ("the shortcut should carry x itself: normalise only the sublayer's input, "
          "x + Sublayer(LayerNorm(x)); do not replace x by LayerNorm(x).")),
        (lambda: _norm(pre(), n2),
         ("a pre-norm layer ends on the addition: no LayerNorm at the end (a pre-norm stack "
          "adds one final norm after its last layer).")),
        (lambda: _norm(pre(), n1),
         "a pre-norm layer ends on the addition: no LayerNorm at the end."),
        (lambda: pre(shortcut=False),
         "the shortcuts are missing: add x back after each sublayer."),
        (lambda: pre(a=n2, b=n1),
         "norm1 and norm2 are swapped: norm1 goes before the attention, norm2 before the FFN."),
        (lambda: pre(b=n1),
         "the feed-forward sublayer has its own norm: use L.norm2 there."),
        (lambda: x + _attn(_norm(x, n1), L),
         ("you stopped after the attention sublayer: the feed-forward sublayer follows, with "
          "norm2 and its own shortcut.")),
        (lambda: pre(ffn=lambda t, L: _ffn(t, L, act=_identity)),
         "ReLU is missing in the feed-forward layer."),
        (lambda: pre(norm=lambda t, m: _norm(t, m, affine=False)),
         "γ and β are missing: multiply by L.norm1.weight (or norm2's) and add its bias."),
        (lambda: pre(norm=lambda t, m: _norm(t, m, unbiased=True)),
         "your LayerNorm divides by d − 1: LayerNorm uses the biased variance (divide by d)."),
    ])
    if hint:
        return hint
    return ("Your layer differs from nn.TransformerEncoderLayer(norm_first=True): compute "
            "x = x + attention(LayerNorm1(x)), then x + FFN(LayerNorm2(x)).")
