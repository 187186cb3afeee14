"""Sinusoidal positions (paper §3.5): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""

import math

import torch


def sinusoidal_positions(n, d):
    """The (n, d) table of the paper: one row per position 0..n-1, sine/cosine column pairs."""
    pos = torch.arange(n, dtype=torch.float).unsqueeze(1)    # (n, 1): positions 0, 1, 2, ...
    two_i = torch.arange(0, d, 2, dtype=torch.float)         # 2i = 0, 2, 4, ..., d - 2
    angle = pos / torch.pow(10000.0, two_i / d)              # (n, d/2): one angle per pair
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(angle)                           # even columns 2i: sine
    pe[:, 1::2] = torch.cos(angle)                           # odd columns 2i + 1: cosine
    return pe


def wavelength(column, d):
    """Positions per full turn of a column: 2π · 10000^(2i/d), where i = column // 2."""
    return 2 * math.pi * 10000 ** (2 * (column // 2) / d)
