"""Encoder and decoder layers (paper §3.1, §3.3), post-norm by default:
each sublayer's output is LayerNorm(x + Dropout(Sublayer(x))).

Parameter names match ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``
(``linear1``, ``linear2``, ``norm1``...), except that the decoder's cross-attention is
called ``cross_attn`` where PyTorch says ``multihead_attn``. ``d_k``, ``d_v``: the head sizes of
every attention sublayer (default d_model / h, see helpers.attention).
"""

import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward layer, each wrapped in add & norm."""

    def __init__(self, d_model, h, d_ff, p=0.1, norm_first=False, activation="relu", d_k=None, d_v=None):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, d_k, d_v)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(p)
        self.norm_first = norm_first
        self.activation = {"relu": F.relu, "gelu": F.gelu}[activation]

    def ffn(self, x):
        """FFN(x) = max(0, x W1 + b1) W2 + b2 (ReLU; GELU in GPT-2), per position."""
        return self.linear2(self.activation(self.linear1(x)))

    def forward(self, x, mask=None):
        if self.norm_first:   # pre-norm: x + Sublayer(Norm(x))
            x = x + self.dropout(self.self_attn(self.norm1(x), mask=mask))
            return x + self.dropout(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, mask=mask)))   # post-norm
        return self.norm2(x + self.dropout(self.ffn(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention on the memory, feed-forward; each add & norm."""

    def __init__(self, d_model, h, d_ff, p=0.1, norm_first=False, activation="relu", d_k=None, d_v=None):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, d_k, d_v)
        self.cross_attn = MultiHeadAttention(d_model, h, d_k, d_v)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(p)
        self.norm_first = norm_first
        self.activation = {"relu": F.relu, "gelu": F.gelu}[activation]

    def ffn(self, x):
        """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to every position on its own."""
        return self.linear2(self.activation(self.linear1(x)))

    def forward(self, y, memory, self_mask=None, memory_mask=None):
        drop = self.dropout
        if self.norm_first:
            y = y + drop(self.self_attn(self.norm1(y), mask=self_mask))
            y = y + drop(self.cross_attn(self.norm2(y), memory, mask=memory_mask))
            return y + drop(self.ffn(self.norm3(y)))
        y = self.norm1(y + drop(self.self_attn(y, mask=self_mask)))
        y = self.norm2(y + drop(self.cross_attn(y, memory, mask=memory_mask)))
        return self.norm3(y + drop(self.ffn(y)))
