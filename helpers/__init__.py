"""Shared code for "The original Transformer, step by step".

One module per concept, named as in the paper: ``positions``, ``attention``, ``layers``,
``model``, ... Each notebook builds a piece in the open, shows it equals the version here
(or PyTorch's), and later notebooks import it from here.
"""

import random

import torch


def seed_all(seed=0):
    """Seed Python's and PyTorch's random generators, for repeatable runs."""
    random.seed(seed)
    torch.manual_seed(seed)
