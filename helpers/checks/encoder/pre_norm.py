"""Your turn 5: the pre-norm layer, pre_norm_layer(x, L)."""

import torch.nn.functional as F
from torch import nn

from helpers.checks import FUSED_LAYER, checker, exercise
from helpers.checks.encoder.common import MHA_ERRORS, NORM_ERRORS, RELU_ERRORS
from helpers.checks.encoder.layers import (
    PRIVATE_SUBLAYERS,
    _attn,
    _check_layer_function,
    _ffn,
    _identity,
    _norm,
)
from helpers.layers import EncoderLayer


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
                             (EncoderLayer, "ffn", "helpers.layers.EncoderLayer.ffn"),
                             FUSED_LAYER],           # torch._transformer_encoder_layer_fwd
        instead="write the two sublayers yourself: x + attention of LayerNorm1(x), then the same "
                "with the FFN and LayerNorm2.",
        tuple_hint="nn.MultiheadAttention returns (output, weights): take [0]")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_pre_norm, nn.TransformerEncoderLayer.forward, lambda f: lambda x, L: f(L, x))
