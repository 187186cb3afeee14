"""A GPT-2-style decoder-only model built from the course's pieces (notebook 06).

Token and learned position embeddings, n_layers pre-norm blocks with a causal mask (a block is
``EncoderLayer(norm_first=True, activation="gelu")``: self-attention and FFN, each after its
LayerNorm), a final LayerNorm, and an output layer tied to the token embedding.
"""

import torch
from torch import nn

from helpers.attention import additive_mask, causal_mask
from helpers.layers import EncoderLayer


class GPT2(nn.Module):
    """GPT2(vocab, context, d_model, h, n_layers): ids (batch, n) -> next-token logits (batch, n, vocab).

    d_ff defaults to 4 · d_model; p_drop is the dropout rate P_drop (on the embeddings and every
    sublayer's output)."""

    def __init__(self, vocab, context, d_model, h, n_layers, d_ff=None, p_drop=0.1):
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.token = nn.Embedding(vocab, d_model)          # also the output layer (tied)
        self.position = nn.Embedding(context, d_model)     # learned, one row per position
        nn.init.normal_(self.token.weight, std=0.02)
        nn.init.normal_(self.position.weight, std=0.01)
        self.blocks = nn.ModuleList(
            EncoderLayer(d_model, h, d_ff, p_drop, norm_first=True, activation="gelu")
            for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)                  # pre-norm needs a final norm
        self.dropout = nn.Dropout(p_drop)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.dropout(self.token(ids) + self.position(torch.arange(n, device=ids.device)))
        mask = additive_mask(causal=causal_mask(n)).to(x.device)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) @ self.token.weight.T          # tied output layer
