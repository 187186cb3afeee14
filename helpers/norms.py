"""Normalisation of each token's vector: LayerNorm (the paper, §3.1) and RMSNorm (SmolLM2).

Both work on the last dimension only, so every token is normalised on its own, whatever else
is in the batch. They equal ``torch.nn.LayerNorm`` and ``torch.nn.RMSNorm`` (given the same eps).
"""

import torch


def layer_norm(x, gamma, beta, eps=1e-5):
    """γ ⊙ (x − μ) / √(σ² + ε) + β, with μ and σ² the mean and variance over the last dim.

    σ² divides by d (the biased variance), not by d − 1, as ``nn.LayerNorm`` does.
    """
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)      # divide by d, not d - 1
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def rms_norm(x, gamma, eps=1e-5):
    """γ ⊙ x / √(mean(x²) + ε): no mean subtracted, no shift β."""
    mean_square = (x ** 2).mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt(mean_square + eps)
