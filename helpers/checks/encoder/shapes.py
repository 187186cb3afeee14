"""Your turn 4: the shapes for a batch of 2 sources of 7 letters in the tiny model."""

import torch
import torch.nn.functional as F

from helpers.checks import Hint, Passed, _sentence, checker, shape
from helpers.checks.encoder.common import H, N
from helpers.checks.encoder.layers import _test_layer


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
