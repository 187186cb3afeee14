"""One stack instead of two: a decoder-only Transformer that reads the source and writes the
target in one sequence, as GPT does.

The sequence of a pair is ``source pieces, <s>, target pieces, </s>``: the separator is ``<s>``
(id BOS), so the vocabulary is the encoder–decoder's. Positions continue from the source into the
target (one sequence, 0, 1, 2, ...). Two masks decide what each position reads:

- ``causal_lm_mask(n, padding)``: every position sees only its past (GPT, a causal LM);
- ``prefix_lm_mask(src_lengths, n, padding)``: the source and the separator see all of the source
  and the separator (the encoder's view, kept inside one stack); each target position sees the
  source, the separator and its own past (a prefix LM, T5's "prefix LM").

Masks follow helpers.attention: a boolean mask is True where a key is *hidden*; ``padding``
(batch, n), True on padding (helpers.attention.padding_mask), hides those keys as well.

``DecoderOnly(vocab, d, h, d_ff, n_layers, p, prefix)``: n_layers of the course's post-norm block
(helpers.layers.EncoderLayer: self-attention, then the FFN, each in add & norm — the same
post-norm family as helpers.model.Transformer's layers, without cross-attention), one embedding
× √d_model + sinusoidal positions, dropout as helpers.model.Transformer, an output layer tied to
the embedding. ``greedy_decode`` and ``beam_search`` write a target after a batch of sources with a
key/value cache: the source and the separator go through the stack once and leave their keys and
values in it (``PrefixCache``), then each new piece costs one position.

``source_share(model, encoded)``: looking inside, the share of each target position's attention
that falls on the source's keys, block by block, along the output (teacher forced), against the
share a uniform reading of the visible keys would give.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import causal_mask, merge_heads, padding_mask, split_heads
from helpers.decoding import search, write
from helpers.layers import EncoderLayer
from helpers.model import keep_attention_weights
from helpers.positions import sinusoidal_positions
from helpers.vocabulary import BOS, EOS, PAD


# --- the two masks ------------------------------------------------------------------------------

def causal_lm_mask(n, padding=None):
    """The causal LM's mask, True where hidden: position i may not read j > i; with padding
    (batch, n), padding keys are hidden too. (n, n), or (batch, n, n) with padding."""
    hidden = causal_mask(n)
    if padding is not None:
        hidden = hidden | padding[:, None, :]
    return hidden


def prefix_lm_mask(src_lengths, n, padding=None):
    """The prefix LM's mask, (batch, n, n), True where hidden. Row b's prefix is its source and the
    separator, positions 0 .. src_lengths[b] (the separator sits at src_lengths[b]). Query i may
    read key j if j is in the prefix or j ≤ i: hidden = (j > i) and (j > src_length). With
    padding (batch, n), True on padding, padding keys are hidden too."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    src_lengths = torch.as_tensor(src_lengths)[:, None, None]
    hidden = (j > i) & (j > src_lengths)
    if padding is not None:
        hidden = hidden | padding[:, None, :]
    return hidden


# --- the model -----------------------------------------------------------------------------------

class DecoderOnly(nn.Module):
    """DecoderOnly(vocab, d, h, d_ff, n_layers, p, prefix): n_layers post-norm blocks on one sequence.

    ``forward(ids, src_lengths)``: ids (batch, n), each row ``source, <s>, target`` padded at the
    end; src_lengths (batch,) the source pieces of each row -> logits (batch, n, vocab); position
    i's logits predict the piece at i + 1. ``stack(ids, src_lengths)``: the same before the output
    layer, (batch, n, d). ``prefix`` True: the prefix LM's mask; False: causal.
    Initialised as helpers.model.Transformer: E ~ normal(0, d^-0.5), xavier_uniform on every other
    matrix; inputs are limited to ``max_len`` positions (256).
    """

    def __init__(self, vocab, d, h, d_ff, n_layers, p=0.1, prefix=True, pad=PAD, max_len=256):
        super().__init__()
        self.d, self.pad, self.prefix = d, pad, prefix
        self.embedding = nn.Embedding(vocab, d)            # E: input and (tied) output
        nn.init.normal_(self.embedding.weight, std=d ** -0.5)
        self.register_buffer("pe", sinusoidal_positions(max_len, d), persistent=False)
        self.layers = nn.ModuleList(EncoderLayer(d, h, d_ff, p) for _ in range(n_layers))
        self.dropout = nn.Dropout(p)
        for name, param in self.named_parameters():
            if param.dim() > 1 and not name.startswith("embedding"):
                nn.init.xavier_uniform_(param)

    def hidden_mask(self, ids, src_lengths):
        """The boolean mask of this model's kind (prefix or causal), with ids' padding hidden."""
        padding = padding_mask(ids, self.pad)
        if self.prefix:
            return prefix_lm_mask(src_lengths, ids.shape[1], padding)
        return causal_lm_mask(ids.shape[1], padding)

    def embed(self, ids, positions):
        """√d_model · E[token] + PE(position), then dropout; positions broadcast against ids."""
        return self.dropout(self.embedding(ids) * math.sqrt(self.d) + self.pe[positions])

    def stack(self, ids, src_lengths):
        """The last block's output (batch, n, d), before the output layer."""
        hidden = self.hidden_mask(ids, src_lengths)
        mask = torch.zeros(hidden.shape).masked_fill(hidden, float("-inf"))[:, None]   # a head axis
        x = self.embed(ids, torch.arange(ids.shape[1]))
        for layer in self.layers:
            x = layer(x, mask)
        return x

    def forward(self, ids, src_lengths):
        return self.stack(ids, src_lengths) @ self.embedding.weight.T     # tied output layer


# --- decoding with a key/value cache -------------------------------------------------------------

def prompts(src, pad=PAD):
    """src (batch, n) padded at the end -> (the prefixes ``source, <s>`` (batch, n + 1) padded at
    the end, the source lengths (batch,))."""
    src_lengths = (src != pad).sum(1)
    ids = torch.cat([src, torch.full((src.shape[0], 1), pad)], dim=1)
    ids[torch.arange(src.shape[0]), src_lengths] = BOS
    return ids, src_lengths


class PrefixCache:
    """What decoding keeps for a batch of rows: keys[i], values[i], block i's keys and values
    (rows, h, t, d_k) of the prefix (source and separator) and of every piece written since;
    mask (rows, 1, 1, t), additive, -inf on the prefix's padding; position (rows,), where each
    row's next piece goes (its positions continue the source's, padding is never counted)."""

    def __init__(self, n_layers):
        self.keys, self.values = [None] * n_layers, [None] * n_layers
        self.mask, self.position = None, None

    def reorder(self, rows):
        """Keep the rows listed (beam search: each new hypothesis takes its parent's cache)."""
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.mask, self.position = self.mask[rows], self.position[rows]

    def numbers(self):
        """How many numbers the keys and values hold now (all rows, all blocks)."""
        return sum(t.numel() for t in (*self.keys, *self.values))


def _block(layer, x, mask, cache, i):
    """A post-norm block (helpers.layers.EncoderLayer) on new positions x (rows, t, d) whose keys
    and values are appended to block i's cache; they attend to everything cached, under mask."""
    attn = layer.self_attn
    q, k, v = (split_heads(t, attn.h) for t in
               F.linear(x, attn.in_proj_weight, attn.in_proj_bias).split(attn.sizes, dim=-1))
    if cache.keys[i] is not None:
        k, v = torch.cat([cache.keys[i], k], dim=2), torch.cat([cache.values[i], v], dim=2)
    cache.keys[i], cache.values[i] = k, v
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype))
    x = layer.norm1(x + layer.dropout(attn.out_proj(merge_heads(heads))))
    return layer.norm2(x + layer.dropout(layer.ffn(x)))


@torch.no_grad()
def start(model, src):
    """Run the prefixes ``source, <s>`` through the stack once, under the model's mask.
    -> (logits (rows, vocab) of the first target piece, read at each row's separator, the cache)."""
    ids, src_lengths = prompts(src, model.pad)
    hidden = model.hidden_mask(ids, src_lengths)
    mask = torch.zeros(hidden.shape).masked_fill(hidden, float("-inf"))[:, None]
    cache = PrefixCache(len(model.layers))
    x = model.embed(ids, torch.arange(ids.shape[1]))
    for i, layer in enumerate(model.layers):
        x = _block(layer, x, mask, cache, i)
    # what a new piece may read of the prefix: all of it but its padding
    padding = padding_mask(ids, model.pad)
    cache.mask = torch.zeros(ids.shape).masked_fill(padding, float("-inf"))[:, None, None]
    cache.position = src_lengths + 1
    rows = torch.arange(src.shape[0])
    return x[rows, src_lengths] @ model.embedding.weight.T, cache


@torch.no_grad()
def step(model, token, cache):
    """One new piece per row, token (rows,), at each row's next position -> logits (rows, vocab)
    of the piece after it. Its key and value join the cache."""
    x = model.embed(token[:, None], cache.position[:, None])
    cache.mask = torch.cat([cache.mask, torch.zeros(cache.mask.shape[:-1] + (1,))], dim=-1)
    for i, layer in enumerate(model.layers):
        x = _block(layer, x, cache.mask, cache, i)
    cache.position = cache.position + 1
    return (x @ model.embedding.weight.T)[:, 0]


def joined(src, ys, pad=PAD):
    """src (batch, n) and the pieces written so far ys (batch, 1 + t), starting with <s> ->
    (ids, src_lengths): each row ``source, <s>, pieces`` padded at the end (no cache: the whole
    sequence again)."""
    src_lengths = (src != pad).sum(1)
    rows = [torch.cat([s[: int(m)], y]) for s, y, m in zip(src, ys, src_lengths, strict=True)]
    return nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad), src_lengths


@torch.no_grad()
def greedy_decode(model, src, max_len=None, use_cache=True, stop=True):
    """Greedy decoding after each source: src (batch, n) -> ids (batch, 1 + steps) starting with
    <s>, as helpers.decoding.greedy_decode: at most max_len pieces (by default n + 1), stopping when
    every row has written </s> (with stop). use_cache=False runs the whole sequence at each step."""
    was_training = model.training
    model.eval()
    max_len = src.shape[1] + 1 if max_len is None else max_len
    rows = torch.arange(src.shape[0])
    if use_cache:
        first, cache = start(model, src)

    def next_logits(ys):
        if not use_cache:
            ids, src_lengths = joined(src, ys, model.pad)
            return model(ids, src_lengths)[rows, src_lengths + ys.shape[1] - 1]
        if ys.shape[1] == 1:                      # only <s>: read at the separator already
            return first
        return step(model, ys[:, -1], cache)

    ys = write(next_logits, src.shape[0], max_len, lambda logits: logits.argmax(-1), stop)
    model.train(was_training)
    return ys


@torch.no_grad()
def cached_log_probs(model, src, k):
    """What helpers.decoding.search asks of a model, for k beams of each source with the cache:
    (next_log_probs(ys) -> (rows, vocab) log-probabilities of the piece after ys, reorder(rows)).
    The prefixes go through the stack once (start); the first piece is read at the separator."""
    first, cache = start(model, src)
    cache.reorder(torch.arange(src.shape[0]).repeat_interleave(k))       # each source's k beams
    first = first.repeat_interleave(k, 0).log_softmax(-1)

    def next_log_probs(ys):
        if ys.shape[1] == 1:                              # only <s>: read at the separator already
            return first
        return step(model, ys[:, -1], cache).log_softmax(-1)
    return next_log_probs, cache.reorder


@torch.no_grad()
def beam_search(model, src, k=4, alpha=0.6, extra=50, max_len=None):
    """The paper's beam search (§6.1, helpers.decoding.search) with the cache: k beams, length
    penalty α, at most input length + extra pieces (or max_len). src (batch, n) -> the best
    hypothesis of each source, (batch, 1 + steps) starting with <s>, PAD after </s>."""
    was_training = model.training
    model.eval()
    batch = src.shape[0]
    next_log_probs, reorder = cached_log_probs(model, src, k)
    if max_len is None:
        max_lens = (src != model.pad).sum(1) + extra
    else:
        max_lens = torch.full((batch,), max_len)
    result = search(next_log_probs, batch, k, max_lens, alpha, reorder, eos=EOS, pad=model.pad)
    model.train(was_training)
    return result["tokens"][:, 0]


# --- looking inside: how much of the attention goes to the source ---------------------------------

@torch.no_grad()
def attention_weights(model, ids, src_lengths):
    """Each block's attention weights in the model's own forward pass (keep_attention_weights:
    softmax(Q Kᵀ / √d_k + mask) step by step), eval mode -> [(batch, h, n, n)] one per block, and
    the last block's output (batch, n, d)."""
    model.eval()
    keep_attention_weights(model)
    try:
        out = model.stack(ids, src_lengths)
        weights = [layer.self_attn.weights for layer in model.layers]
    finally:
        keep_attention_weights(model, on=False)
    return weights, out


@torch.no_grad()
def source_share(model, encoded, chunk=64):
    """Teacher forced on each pair (source ids, target ids) as ``source, <s>, target``: for block
    i and target position t, the share of the query's attention (mean over the h heads) that falls
    on the source's keys (not the separator), averaged over the pairs that have position t.
    t = 0 is the separator's query (it predicts the first target piece), t = len(target) the last
    target piece's (it predicts </s>). Under either mask the query at t sees src_len + 1 + t keys:
    a uniform reading would give src_len / (src_len + 1 + t) to the source, whatever the weights.
    -> {"observed": [[share at t = 0, 1, ...] per block], "uniform": [...], "pairs": [how many
    pairs have position t]}."""
    observed = [[] for _ in model.layers]
    uniform, pairs = [], []
    for i in range(0, len(encoded), chunk):
        part = encoded[i: i + chunk]
        rows = [torch.tensor([*s, BOS, *t]) for s, t in part]
        ids = nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=PAD)
        m = torch.tensor([len(s) for s, _ in part])
        weights, _ = attention_weights(model, ids, m)
        on_source = (torch.arange(ids.shape[1])[None, :] < m[:, None]).float()       # (batch, keys)
        for b, (source, target) in enumerate(part):
            queries = torch.arange(len(source), len(source) + len(target) + 1)
            while len(pairs) < len(queries):
                pairs.append(0)
                uniform.append(0.0)
                for row in observed:
                    row.append(0.0)
            for t in range(len(queries)):
                pairs[t] += 1
                uniform[t] += len(source) / (len(source) + 1 + t)
            for row, w in zip(observed, weights, strict=True):
                share = (w[b].mean(0)[queries] * on_source[b]).sum(-1)                # (len(queries),)
                for t, value in enumerate(share.tolist()):
                    row[t] += value
    return {"observed": [[v / n for v, n in zip(row, pairs, strict=True)] for row in observed],
            "uniform": [v / n for v, n in zip(uniform, pairs, strict=True)], "pairs": pairs}
