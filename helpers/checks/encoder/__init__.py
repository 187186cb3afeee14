"""Checks for notebook 03 (encoder layer), one module per exercise: splitting and merging the heads
(``heads``), multi-head self-attention (``self_attention``), the feed-forward layer (``ffn``), the shapes
for a batch of 7-letter sources (``shapes``), the pre-norm layer (``pre_norm``), and the "Check your
understanding" questions (``questions``); ``common`` holds the sizes and the errors every check names,
``layers`` the test layers of the layer checks.

The function checkers run the learner's function through :func:`helpers.checks.call` on two
seeded random batches (batch > 1, two seeds, two sizes), compare it with PyTorch, and when it
differs compute what each usual mistake returns and name the one it matches. The layers they
build have every weight moved off its initial value, so that a forgotten γ, β or bias shows.
"""

from helpers.checks.encoder.ffn import check_ffn
from helpers.checks.encoder.heads import check_split_merge
from helpers.checks.encoder.pre_norm import check_pre_norm
from helpers.checks.encoder.questions import check_more_heads, check_path_length, check_per_position
from helpers.checks.encoder.self_attention import check_self_attention
from helpers.checks.encoder.shapes import check_shapes

__all__ = ["check_ffn", "check_more_heads", "check_path_length", "check_per_position", "check_pre_norm",
           "check_self_attention", "check_shapes", "check_split_merge"]
