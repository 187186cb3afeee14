"""Multi-head attention (paper §3.2): softmax(Q Kᵀ / √d_k) V in h heads of d_k = d_model / h.

``MultiHeadAttention(d_model, h, d_k=..., d_v=...)`` gives other head sizes (the paper's Table 3,
rows A and B); by default d_k = d_v = d_model / h.

Masks follow PyTorch's convention: a boolean mask is True where a position is *hidden*.
``additive_scores`` is the other attention function of §3.2.1, which the paper did not choose.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x, h):
    """(batch, n, d_model) -> (batch, h, n, d_k): each head gets its own d_k columns
    (d_k = the last size / h: (batch, n, h·d_k) -> (batch, h, n, d_k) for any d_k)."""
    b, n, d_model = x.shape
    return x.view(b, n, h, d_model // h).transpose(1, 2)


def merge_heads(x):
    """(batch, h, n, d_k) -> (batch, n, h·d_k): concatenate the heads again."""
    b, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(b, n, h * d_k)


def attention(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k + mask) v and the weights; mask is additive (0 or -inf)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def additive_scores(q, k, W_q, W_k, v_a):
    """Additive attention's scores v_aᵀ tanh(W_q q + W_k k) for every query and key, in rows:
    q (..., n_q, d_k) and k (..., n_k, d_k), W_q and W_k (d_k, d_a), v_a (d_a,) -> (..., n_q, n_k).
    It builds the (..., n_q, n_k, d_a) tensor tanh(q W_q + k W_k) on the way."""
    hidden = torch.tanh((q @ W_q).unsqueeze(-2) + (k @ W_k).unsqueeze(-3))
    return hidden @ v_a


def causal_mask(n):
    """(n, n) boolean mask, True above the diagonal: position i may not read j > i."""
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def padding_mask(ids, pad):
    """(batch, n) boolean mask, True where the token is padding."""
    return ids == pad


def additive_mask(causal=None, padding=None):
    """Combine a (nq, nk) causal and a (batch, nk) padding mask into one additive float mask
    of shape broadcastable to (batch, h, nq, nk): 0 where visible, -inf where hidden."""
    hidden = None
    if causal is not None:
        hidden = causal
    if padding is not None:
        pad = padding[:, None, None, :]
        hidden = pad if hidden is None else hidden | pad
    if hidden is None:
        return None
    return torch.zeros(hidden.shape).masked_fill(hidden, float("-inf"))


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the parameter names of ``nn.MultiheadAttention``:
    ``in_proj_weight`` stacks W_Q, W_K, W_V (3·d_model × d_model); ``out_proj`` is W_O.

    With d_k or d_v given (default d_model / h each), W_Q and W_K have h·d_k rows, W_V h·d_v,
    and W_O reads the h·d_v numbers of the concatenated heads.
    """

    def __init__(self, d_model, h, d_k=None, d_v=None):
        super().__init__()
        self.d_model, self.h = d_model, h
        self.d_k = d_model // h if d_k is None else d_k
        self.d_v = d_model // h if d_v is None else d_v
        self.sizes = (h * self.d_k, h * self.d_k, h * self.d_v)     # rows of W_Q, W_K, W_V
        self.in_proj_weight = nn.Parameter(torch.empty(sum(self.sizes), d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(sum(self.sizes)))
        self.out_proj = nn.Linear(h * self.d_v, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)
        self.keep_weights = False   # set True to keep the last attention weights in .weights
        self.weights = None

    def forward(self, x, memory=None, mask=None):
        """Self-attention on x, or cross-attention (queries from x, keys and values from
        memory). mask: additive, broadcastable to (batch, h, n_queries, n_keys)."""
        w, b, q_rows = self.in_proj_weight, self.in_proj_bias, self.sizes[0]
        if memory is None:
            q, k, v = F.linear(x, w, b).split(self.sizes, dim=-1)
        else:
            q = F.linear(x, w[:q_rows], b[:q_rows])
            k, v = F.linear(memory, w[q_rows:], b[q_rows:]).split(self.sizes[1:], dim=-1)
        q, k, v = (split_heads(t, self.h) for t in (q, k, v))
        if self.keep_weights:
            heads, self.weights = attention(q, k, v, mask)
        else:
            # the mask in the scores' dtype: SDPA on the CPU mixes a float32 mask with float64
            # scores wrongly for some shapes (the future leaks)
            mask = None if mask is None else mask.to(q.dtype)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(merge_heads(heads))
