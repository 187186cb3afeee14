"""Shared code for "The original Transformer, step by step". Three parts:

- ``helpers/*.py``: **the paper's concepts**, one module per concept, named as in the paper
  (``positions``, ``norms``, ``attention``, ``layers``, ``model``, ``recipe``, ``decoding``,
  ``bpe``, ``bleu``, ``distributed``, ...). Each notebook builds a piece in the open, shows it
  equals the version here (or PyTorch's), and later notebooks import it from here.
- ``helpers/tasks/``: **the course's small worlds**, the tasks the notebooks train on (letter
  reversal, support tickets, number words, real sentences), with their data and checkpoints.
- ``helpers/checks/``: the check cells' functions, one module per notebook.
- ``helpers/course/``: **the machinery** that builds the course (exercise copies, website,
  timing, notation table); no notebook imports it.

Imports run one way: concepts import concepts; tasks import concepts and tasks; checks import
concepts, tasks and checks; the machinery imports anything (``tests/test_layout.py``).
"""

import random

import torch


def seed_all(seed=0):
    """Seed Python's and PyTorch's random generators, for repeatable runs."""
    random.seed(seed)
    torch.manual_seed(seed)
