"""Your turn 3: the feed-forward layer, ffn(x, L)."""

import re
import types

import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import FUSED_LAYER, checker, exercise
from helpers.checks.encoder.common import D_FF, RELU_ERRORS
from helpers.checks.encoder.layers import PRIVATE_SUBLAYERS, _check_layer_function, _ffn, _identity, _norm
from helpers.layers import EncoderLayer


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
                             (EncoderLayer, "ffn", "helpers.layers.EncoderLayer.ffn"), FUSED_LAYER],
        instead="write the products yourself, x @ L.linear1.weight.T + L.linear1.bias, and the "
                "same with L.linear2.")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_ffn, EncoderLayer.ffn, lambda f: lambda x, L: f(types.SimpleNamespace(
    linear1=lambda t: t @ L.linear1.weight.T + L.linear1.bias, activation=torch.relu,
    linear2=lambda t: t @ L.linear2.weight.T + L.linear2.bias), x))
