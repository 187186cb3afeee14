"""Stand-in models for tests whose verdict must not rest on a trained model's rounding.

A trained model's argmaxes move from one CPU to the next (training makes rounding differences
grow), so a test that asserts which hint a checker prints, or an exact token, must not run on one.
These models have the interface of ``helpers.model.Transformer`` (``encode``, ``decode``,
``forward``, ``memory_mask``, ``train``/``eval``) but their logits are written, not learned: every
argmax wins by a margin far above float rounding, on any CPU.
"""

import torch
from torch import nn

from helpers.attention import additive_mask, padding_mask
from helpers.tasks.reversal import BOS, EOS, LETTERS, PAD, STOI, VOCAB

MARGIN = 1.0        # the right token's lead over every other logit, in evaluation mode
TILT = 0.01         # each token's own small offset (no ties: the argmax never rests on tie-breaking)
POSITION_TILT = 0.001   # each position's own offset (no ties over the positions either)
NOISE = 2.0         # what dropout adds in training mode: enough to change answers
FIRST_LETTER, N_LETTERS = STOI[LETTERS[0]], len(LETTERS)


class ScriptedReverser(nn.Module):
    """Writes the reversal of its source, then </s> (then the first reversed letter again, as an
    untrained continuation), at every position of the decoder input; from a decoder input that does
    not start with <s> it writes other letters instead (a real model, unsure there, writes
    other tokens too).

    In training mode its dropout adds NOISE to random logits (its encoder draws random numbers
    too, as a real encoder's dropout does), so a decoder that forgets ``model.eval()`` writes other
    tokens. Ids of 13 or more raise the embedding's IndexError, as in the real model.
    """

    def __init__(self, p=0.5, position_tilt=POSITION_TILT):
        super().__init__()
        self.position_tilt = position_tilt      # its sign sets where an argmax over the positions lands
        self.embedding = nn.Embedding(VOCAB, 1)           # only for the real model's lookup errors
        self.dropout = nn.Dropout(p)
        self.pad = PAD

    def memory_mask(self, src):
        return additive_mask(padding=padding_mask(src, self.pad))

    def encode(self, src, mask=None):
        self.embedding(src)
        self.memory_mask(src) if mask is None else mask
        memory = nn.functional.one_hot(src, VOCAB).float()
        return memory + 0 * self.dropout(torch.ones_like(memory))    # the draws, not the content

    def decode(self, tgt, memory, src=None, memory_mask=None):
        self.embedding(tgt)
        self.memory_mask(src) if memory_mask is None else memory_mask   # src=None fails as in the model
        src = memory.argmax(-1)
        batch, steps = tgt.shape
        n = (src != PAD).sum(1, keepdim=True)                          # padding sits at the end
        p = torch.arange(steps)[None, :]
        reversed_letters = src.gather(1, (n - 1 - p).clamp(min=0, max=src.shape[1] - 1))
        after = src.gather(1, n - 1).expand(-1, steps)                   # the first reversed letter
        target = torch.where(p < n, reversed_letters, torch.where(p == n, EOS, after))
        # a decoder input that does not start from <s> is one the model never saw: other letters,
        # shifted by an amount that depends on the start token (1 to 9 places, never 0)
        shift = torch.where(tgt[:, :1] == BOS, 0, tgt[:, :1] % (N_LETTERS - 1) + 1)
        letters = target >= FIRST_LETTER
        target = torch.where(letters, (target - FIRST_LETTER + shift) % N_LETTERS + FIRST_LETTER, target)
        logits = MARGIN * nn.functional.one_hot(target, VOCAB).float()
        logits = logits + TILT * torch.arange(VOCAB).float() / VOCAB
        logits = logits + self.position_tilt * torch.arange(steps).float()[:, None]
        return logits + NOISE * self.dropout(torch.full_like(logits, 0.5))

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)
