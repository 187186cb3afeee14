"""The 2017 encoder–decoder (paper §3): shared embedding × √d_model, sinusoidal positions,
post-norm layers, dropout, and an output layer tied to the embedding.

Padding sits at the end of each sequence; token ``pad`` (0 by default) is padding.
Two options of the paper's Table 3 (default: the base model): ``d_k``, ``d_v`` (head sizes,
rows A and B) and ``positions="learned"`` (a learned position table instead of sinusoids, row E).
"""

import math

import torch
from torch import nn

from helpers.attention import MultiHeadAttention, additive_mask, causal_mask, padding_mask
from helpers.layers import DecoderLayer, EncoderLayer
from helpers.positions import sinusoidal_positions


class Transformer(nn.Module):
    """Transformer(vocab, d, h, d_ff, n_layers, p): n_layers encoder and n_layers decoder layers.

    ``encode(src)`` gives the memory, ``decode(tgt, memory, src)`` the logits (batch, n, vocab).
    With ``p`` the dropout on the embeddings and on every sublayer's output (paper §5.4).
    The position table is computed once, as a buffer of ``max_len`` rows, so inputs are limited to
    ``max_len`` positions (256); a larger ``max_len`` lifts the limit with nothing to train (the
    buffer is not saved with the weights, which load unchanged).
    ``positions``: "sinusoidal" (the paper's PE, a fixed buffer, not in the state dict) or
    "learned" (PE is a (max_len, d) parameter, state dict key ``pe``, initialised like E and
    trained with the rest).
    """

    def __init__(self, vocab, d, h, d_ff, n_layers, p=0.1, pad=0, max_len=256, norm_first=False,
                 d_k=None, d_v=None, positions="sinusoidal"):
        super().__init__()
        self.d, self.pad = d, pad
        self.embedding = nn.Embedding(vocab, d)            # E: one table for source, target, output
        nn.init.normal_(self.embedding.weight, std=d ** -0.5)
        if positions == "sinusoidal":
            self.register_buffer("pe", sinusoidal_positions(max_len, d), persistent=False)
        elif positions == "learned":
            self.pe = nn.Parameter(torch.randn(max_len, d) * d ** -0.5)   # like E
        else:
            raise ValueError(f'positions should be "sinusoidal" or "learned", got {positions!r}')
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(d, h, d_ff, p, norm_first, d_k=d_k, d_v=d_v) for _ in range(n_layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(d, h, d_ff, p, norm_first, d_k=d_k, d_v=d_v) for _ in range(n_layers))
        self.dropout = nn.Dropout(p)
        for name, param in self.named_parameters():
            if param.dim() > 1 and not name.startswith(("embedding", "pe")):
                nn.init.xavier_uniform_(param)

    def embed(self, ids):
        """√d_model · E[token] + PE(pos), then dropout."""
        x = self.embedding(ids) * math.sqrt(self.d) + self.pe[: ids.shape[1]]
        return self.dropout(x)

    def memory_mask(self, src):
        """The additive padding mask of the source, (batch, 1, 1, n_src): -inf on padding.
        Built once per batch; the encoder and every cross-attention use it."""
        return additive_mask(padding=padding_mask(src, self.pad))

    def encode(self, src, mask=None):
        """(batch, n_src) token ids -> memory (batch, n_src, d)."""
        mask = self.memory_mask(src) if mask is None else mask
        x = self.embed(src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return x

    def decode(self, tgt, memory, src=None, memory_mask=None):
        """(batch, n_tgt) decoder input -> logits (batch, n_tgt, vocab) = y Eᵀ.
        The cross-attention hides the source's padding: give src or its memory_mask."""
        self_mask = additive_mask(causal=causal_mask(tgt.shape[1]))
        memory_mask = self.memory_mask(src) if memory_mask is None else memory_mask
        y = self.embed(tgt)
        for layer in self.decoder_layers:
            y = layer(y, memory, self_mask, memory_mask)
        return y @ self.embedding.weight.T                  # tied output layer

    def forward(self, src, tgt):
        mask = self.memory_mask(src)
        return self.decode(tgt, self.encode(src, mask), memory_mask=mask)


def keep_attention_weights(model, on=True):
    """Make every attention module keep its last weights in ``.weights`` (or stop)."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.keep_weights = on
            module.weights = None


def pytorch_state_dict(model):
    """Our layers' weights under ``nn.Transformer``'s names (the embedding is not in it)."""
    renamed = {}
    for key, value in model.state_dict().items():
        if key.startswith(("encoder_layers.", "decoder_layers.")):
            key = key.replace("encoder_layers.", "encoder.layers.")
            key = key.replace("decoder_layers.", "decoder.layers.")
            renamed[key.replace("cross_attn.", "multihead_attn.")] = value
    return renamed
