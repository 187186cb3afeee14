"""Decoding as the paper does it (§6.1): greedy decoding, beam search with GNMT's length penalty,
and the key/value cache that makes each new token cost one position instead of all of them.

- ``length_penalty(n, alpha)``: lp(Y) = ((5 + |Y|) / 6)^α; a hypothesis scores log P(Y) / lp(Y).
- ``beam_step(...)``: one step of beam search for a batch: which k candidates survive.
- ``search(next_log_probs, ...)``: batched beam search over any next-token function (a toy table
  or the model); ``beam_search(model, src, k=4, alpha=0.6)``: the paper's settings on the model,
  with the maximum output length input + 50 and early termination.
- ``search_apart`` / ``beam_search_apart``: the same search with the finished hypotheses kept
  apart from k alive ones, as tensor2tensor (the paper's code) does.
- ``KVCache`` and ``decode_step(model, token, cache)``: incremental decoding that keeps each
  decoder layer's keys and values; ``greedy_decode(model, src, cache=True)`` uses it.
- ``write(next_logits, rows, max_len, pick)``: the left-to-right loop greedy and sampled decoding
  share, here and in helpers.decoder_only (one step function per model).
- ``sampling_probs``, ``draw`` and ``sample_decode``: sampling with a temperature and top-k, the
  way chat models write, reproducible with a seeded ``torch.Generator``.

The decoder's input always starts with ``<s>``; |Y| counts the tokens written after it,
``</s>`` included. A finished hypothesis (one that wrote ``</s>``) is never extended: it stays
in the beam with its final score, written as ``pad`` from then on.
"""

import math

import torch
import torch.nn.functional as F

from helpers.attention import merge_heads, split_heads
from helpers.vocabulary import BOS, EOS, PAD


# --- the length penalty and one step of beam search -------------------------------------------

def length_penalty(length, alpha=0.6):
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^α (a number or a tensor of lengths); 1 for |Y| = 1."""
    return ((5 + length) / 6) ** alpha


def penalised_score(log_p, length, alpha=0.6):
    """score(Y) = log P(Y) / lp(Y): the number beam search ranks hypotheses by."""
    return log_p / length_penalty(length, alpha)


def beam_step(log_p, lengths, finished, next_log_probs, alpha=0.6, pad=PAD):
    """One step of beam search for a batch of k beams: which k candidates survive.

    log_p (batch, k): log P of each beam's hypothesis so far; lengths (batch, k): its number of
    tokens; finished (batch, k): True once it wrote </s>; next_log_probs (batch, k, vocab):
    log p(next token | hypothesis). The candidates are every alive beam followed by every token
    (log P adds, the length grows by 1) and every finished beam as it is (once, token ``pad``).
    All of them are ranked together by log P / lp(length); the k best survive, best first.
    Returns (beam, token, new_log_p), each (batch, k): the beam each survivor extends, the token
    it appends and its log P.
    """
    batch, k, vocab = next_log_probs.shape
    extended = log_p[..., None] + next_log_probs                   # (batch, k, vocab)
    kept = torch.full_like(extended, float("-inf"))
    kept[..., pad] = log_p                                         # a finished beam, unchanged
    total = torch.where(finished[..., None], kept, extended)
    length = torch.where(finished, lengths, lengths + 1)[..., None]
    score = penalised_score(total, length, alpha)
    best = score.flatten(1).topk(k, dim=1).indices                 # over all k · vocab candidates
    return best // vocab, best % vocab, total.flatten(1).gather(1, best)


# --- batched beam search ----------------------------------------------------------------------

def search(next_log_probs, batch, k, max_lens, alpha=0.6, reorder=None, bos=BOS, eos=EOS, pad=PAD):
    """Beam search for `batch` inputs with k beams each.

    next_log_probs(ys) -> (batch · k, vocab): the log-probabilities of the next token after each
    row of ys (batch · k, t), the hypotheses so far (starting with bos; rows b·k ... b·k + k - 1
    belong to input b). reorder(parents), if given, is called after each step with the row each
    new hypothesis comes from (a model's cache follows its hypotheses). max_lens (batch,): the
    most tokens a hypothesis of each input may write; one that reaches it is finished.
    An input is done when no alive hypothesis can still beat its best finished one (its log P
    can only fall, and lp is at most lp(max_len)); the search stops when every input is done.

    Returns a dict of tensors, hypotheses best first: "tokens" (batch, k, 1 + steps) starting
    with bos, padded with pad after eos; "log_p", "lengths", "scores", "finished" (batch, k).
    """
    max_lens = torch.as_tensor(max_lens).reshape(batch)
    ys = torch.full((batch * k, 1), bos)
    log_p = torch.zeros(batch, k)
    log_p[:, 1:] = float("-inf")                  # at the start the k beams are the same <s>: keep one
    lengths = torch.zeros(batch, k, dtype=torch.long)
    finished = torch.zeros(batch, k, dtype=torch.bool)
    done = torch.zeros(batch, dtype=torch.bool)
    rows = torch.arange(batch)[:, None] * k
    for _ in range(int(max_lens.max())):
        logits = next_log_probs(ys)
        beam, token, log_p = beam_step(log_p, lengths, finished | done[:, None],
                                       logits.view(batch, k, -1), alpha, pad)
        parents = (rows + beam).flatten()
        ys = torch.cat([ys[parents], token.reshape(-1, 1)], dim=1)
        was_finished = (finished | done[:, None]).gather(1, beam)
        lengths = lengths.gather(1, beam) + (~was_finished).long()
        finished = finished.gather(1, beam) | (~was_finished & (token == eos))
        finished |= lengths >= max_lens[:, None]                   # the maximum length is reached
        if reorder is not None:
            reorder(parents)
        score = penalised_score(log_p, lengths, alpha)
        best_finished = score.masked_fill(~finished, float("-inf")).max(1).values
        bound = penalised_score(log_p, max_lens[:, None], alpha).masked_fill(finished, float("-inf"))
        done = done | (finished.any(1) & (best_finished >= bound.max(1).values))
        if done.all():
            break
    score = penalised_score(log_p, lengths.clamp(min=1), alpha)
    score = score.masked_fill(~finished, float("-inf")).where(finished.any(1, keepdim=True), score)
    order = score.argsort(dim=1, descending=True, stable=True)
    tokens = ys.view(batch, k, -1).gather(1, order[..., None].expand(-1, -1, ys.shape[1]))
    return {"tokens": tokens, "log_p": log_p.gather(1, order), "lengths": lengths.gather(1, order),
            "scores": score.gather(1, order), "finished": finished.gather(1, order)}


@torch.no_grad()
def beam_search(model, src, k=4, alpha=0.6, extra=50, max_len=None, use_cache=True):
    """The paper's beam search (§6.1): beam size k = 4, length penalty α = 0.6, at most
    input length + extra (50) tokens, stopping early when possible.

    src (batch, n) -> the best hypothesis of each input, (batch, 1 + steps) ids starting with
    <s>, padded with PAD after </s>. beam_search(..., k=1) is greedy decoding.
    With max_len, every input may write at most max_len tokens instead.
    """
    result = beam_search_all(model, src, k, alpha, extra, max_len, use_cache)
    return result["tokens"][:, 0]


@torch.no_grad()
def beam_search_all(model, src, k=4, alpha=0.6, extra=50, max_len=None, use_cache=True):
    """beam_search, returning all k hypotheses of each input with their numbers (see search)."""
    return _on_model(search, model, src, k, alpha, extra, max_len, use_cache)


@torch.no_grad()
def beam_search_apart(model, src, k=4, alpha=0.6, extra=50, max_len=None, use_cache=True):
    """beam_search_all with finished hypotheses kept apart from the k alive ones (search_apart),
    as tensor2tensor's beam search does."""
    return _on_model(search_apart, model, src, k, alpha, extra, max_len, use_cache)


def _on_model(searcher, model, src, k, alpha, extra, max_len, use_cache):
    """Run searcher (search or search_apart) on the model: the encoder once, its memory repeated
    for the k beams, the decoder (with or without the cache) as next_log_probs."""
    was_training = model.training
    model.eval()
    batch = src.shape[0]
    mask = model.memory_mask(src)
    memory = model.encode(src, mask)
    memory, mask = memory.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)
    if max_len is None:
        max_lens = (src != model.pad).sum(1) + extra
    else:
        max_lens = torch.full((batch,), max_len)
    if use_cache:
        cache = KVCache(model, memory, mask)

        def next_log_probs(ys):
            return decode_step(model, ys[:, -1], cache).log_softmax(-1)

        reorder = cache.reorder
    else:
        def next_log_probs(ys):
            return model.decode(ys, memory, memory_mask=mask)[:, -1].log_softmax(-1)

        reorder = None
    result = searcher(next_log_probs, batch, k, max_lens, alpha, reorder, eos=EOS, pad=model.pad)
    model.train(was_training)
    return result


def search_apart(next_log_probs, batch, k, max_lens, alpha=0.6, reorder=None, bos=BOS, eos=EOS, pad=PAD):
    """Beam search that keeps k alive and k finished hypotheses apart, as tensor2tensor does
    (search keeps finished hypotheses in the k beams instead, so that each one takes a slot).

    At each step the alive hypotheses' 2k best extensions are drawn (so that k alive ones remain
    even if k of them end); those that end (</s>, or the maximum length) join the finished ones,
    of which the k best by log P / lp stay; the k best of the others stay alive. The same
    arguments, early termination and result as search.
    """
    max_lens = torch.as_tensor(max_lens).reshape(batch)
    ys = torch.full((batch * k, 1), bos)
    log_p = torch.zeros(batch, k)
    log_p[:, 1:] = float("-inf")                  # at the start the k beams are the same <s>: keep one
    fin_tokens = torch.full((batch, k, 1), pad)
    fin_log_p = torch.full((batch, k), float("-inf"))
    fin_scores = torch.full((batch, k), float("-inf"))
    fin_lengths = torch.zeros(batch, k, dtype=torch.long)
    done = torch.zeros(batch, dtype=torch.bool)
    rows = torch.arange(batch)[:, None] * k
    for step in range(int(max_lens.max())):
        length = step + 1                                          # every alive hypothesis, after this step
        logits = next_log_probs(ys).view(batch, k, -1)
        vocab = logits.shape[-1]
        total = (log_p[..., None] + logits).flatten(1)             # (batch, k · vocab); one length: no lp
        top_log_p, best = total.topk(2 * k, dim=1)
        parents = rows + best // vocab                             # (batch, 2k) rows of ys
        token = best % vocab
        candidates = torch.cat([ys[parents.flatten()], token.reshape(-1, 1)], dim=1).view(batch, 2 * k, -1)
        ends = (token == eos) | (length >= max_lens[:, None])
        # finished: the k best of those kept so far and those ending now (a done input keeps its own)
        new_scores = penalised_score(top_log_p, length, alpha).masked_fill(~ends | done[:, None],
                                                                           float("-inf"))
        fin_tokens = torch.cat([fin_tokens, torch.full((batch, k, 1), pad)], dim=2)
        pool_scores = torch.cat([fin_scores, new_scores], dim=1)
        keep = pool_scores.topk(k, dim=1).indices
        fin_scores = pool_scores.gather(1, keep)
        fin_log_p = torch.cat([fin_log_p, top_log_p], dim=1).gather(1, keep)
        ended_lengths = torch.full_like(top_log_p, length, dtype=torch.long)
        fin_lengths = torch.cat([fin_lengths, ended_lengths], dim=1).gather(1, keep)
        pool_tokens = torch.cat([fin_tokens, candidates], dim=1)
        fin_tokens = pool_tokens.gather(1, keep[..., None].expand(-1, -1, pool_tokens.shape[2]))
        # the alive ones: the k best of those that did not end
        alive = top_log_p.masked_fill(ends, float("-inf")).topk(k, dim=1)
        log_p = alive.values
        chosen = alive.indices
        ys = candidates.gather(1, chosen[..., None].expand(-1, -1, candidates.shape[2])).view(batch * k, -1)
        if reorder is not None:
            reorder(parents.gather(1, chosen).flatten())
        bound = penalised_score(log_p.max(1).values, max_lens, alpha)
        done = done | (fin_scores.max(1).values >= bound)
        if done.all():
            break
    finished = fin_scores > float("-inf")
    return {"tokens": fin_tokens, "log_p": fin_log_p, "lengths": fin_lengths, "scores": fin_scores,
            "finished": finished}


# --- the key/value cache --------------------------------------------------------------------

class KVCache:
    """What incremental decoding keeps, for a batch of rows being decoded.

    keys[i], values[i]: decoder layer i's self-attention keys and values of every position
    written so far, (rows, h, t, d_k), one position more after each decode_step.
    cross[i]: its cross-attention keys and values of the memory, (rows, h, n_src, d_k),
    computed once. memory_mask: the source's padding mask, (rows, 1, 1, n_src).
    """

    def __init__(self, model, memory, memory_mask=None):
        self.length = 0
        self.keys = [None] * len(model.decoder_layers)
        self.values = [None] * len(model.decoder_layers)
        self.cross = []
        for layer in model.decoder_layers:
            attn, d = layer.cross_attn, layer.cross_attn.d_model
            k, v = F.linear(memory, attn.in_proj_weight[d:], attn.in_proj_bias[d:]).chunk(2, dim=-1)
            self.cross.append((split_heads(k, attn.h), split_heads(v, attn.h)))
        self.memory_mask = memory_mask

    def reorder(self, rows):
        """Keep the rows listed (beam search: each new hypothesis takes its parent's cache)."""
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.cross = [(k[rows], v[rows]) for k, v in self.cross]
        if self.memory_mask is not None:
            self.memory_mask = self.memory_mask[rows]

    def self_attention_numbers(self):
        """How many numbers the self-attention keys and values hold now (all rows, all layers)."""
        return sum(t.numel() for t in (*self.keys, *self.values) if t is not None)


def cached_self_attention(attn, y, cache, i):
    """Self-attention of one new position y (rows, 1, d) on every position so far: its key and
    value are appended to layer i's cache (on the position axis, dim 2); no mask is needed, the
    newest position may read all the earlier ones and itself."""
    q, k, v = (split_heads(t, attn.h) for t in F.linear(y, attn.in_proj_weight, attn.in_proj_bias)
               .chunk(3, dim=-1))
    if cache.keys[i] is not None:
        k = torch.cat([cache.keys[i], k], dim=2)
        v = torch.cat([cache.values[i], v], dim=2)
    cache.keys[i], cache.values[i] = k, v
    return attn.out_proj(merge_heads(F.scaled_dot_product_attention(q, k, v)))


def cached_cross_attention(attn, y, cache, i):
    """Cross-attention of one new position on the memory's cached keys and values."""
    d = attn.d_model
    q = split_heads(F.linear(y, attn.in_proj_weight[:d], attn.in_proj_bias[:d]), attn.h)
    k, v = cache.cross[i]
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=cache.memory_mask)
    return attn.out_proj(merge_heads(heads))


@torch.no_grad()
def decode_step(model, token, cache):
    """The decoder on one new token per row, token (rows,) at position cache.length, reading the
    cache instead of recomputing the earlier positions -> logits (rows, vocab) of the next token.
    The same numbers as model.decode on the whole prefix, last position (in evaluation mode)."""
    y = model.embedding(token[:, None]) * math.sqrt(model.d) + model.pe[cache.length]
    y = model.dropout(y)
    for i, layer in enumerate(model.decoder_layers):
        drop = layer.dropout
        if layer.norm_first:
            y = y + drop(cached_self_attention(layer.self_attn, layer.norm1(y), cache, i))
            y = y + drop(cached_cross_attention(layer.cross_attn, layer.norm2(y), cache, i))
            y = y + drop(layer.ffn(layer.norm3(y)))
        else:
            y = layer.norm1(y + drop(cached_self_attention(layer.self_attn, y, cache, i)))
            y = layer.norm2(y + drop(cached_cross_attention(layer.cross_attn, y, cache, i)))
            y = layer.norm3(y + drop(layer.ffn(y)))
    cache.length += 1
    return (y @ model.embedding.weight.T)[:, 0]


@torch.no_grad()
def greedy_decode(model, src, max_len=None, use_cache=True, stop=True):
    """Greedy decoding, with the cache (one position per step) or without (the whole prefix).

    src (batch, n) -> ids (batch, 1 + steps) starting with <s>. Writes at most max_len tokens
    (by default n + 1) and, with stop=True, stops when every row has written </s>. Tokens after a
    row's </s> are whatever the model writes next: helpers.tasks.reversal.pad_after_eos blanks them.
    """
    return _write(model, src, lambda logits: logits.argmax(-1), max_len, use_cache, stop)


def _write(model, src, pick, max_len=None, use_cache=True, stop=True):
    """The decoding loop that greedy_decode and sample_decode share: pick(logits (rows, vocab))
    chooses each row's next token."""
    was_training = model.training
    model.eval()
    max_len = src.shape[1] + 1 if max_len is None else max_len
    mask = model.memory_mask(src)
    memory = model.encode(src, mask)
    cache = KVCache(model, memory, mask) if use_cache else None

    def next_logits(ys):
        if use_cache:
            return decode_step(model, ys[:, -1], cache)
        return model.decode(ys, memory, memory_mask=mask)[:, -1]

    ys = write(next_logits, src.shape[0], max_len, pick, stop)
    model.train(was_training)
    return ys


def write(next_logits, rows, max_len, pick, stop=True):
    """The loop every left-to-right decoder shares: next_logits(ys) gives the logits (rows, vocab)
    of the token after ys (rows, 1 + t), pick(logits) each row's next token; at most max_len
    tokens, stopping when every row has written </s> (with stop). -> ys (rows, 1 + steps), <s> first."""
    ys = torch.full((rows, 1), BOS)
    done = torch.zeros(rows, dtype=torch.bool)
    for _ in range(max_len):
        nxt = pick(next_logits(ys))
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if stop and done.all():
            break
    return ys


@torch.no_grad()
def time_per_token(model, src, steps, use_cache=True, repeats=3):
    """Milliseconds each greedy step takes, for `steps` tokens written without stopping at </s>
    (position 1 first), with or without the cache: the fastest of `repeats` runs at each position,
    the least disturbed by other programs."""
    import time

    model.eval()
    best = [math.inf] * steps
    for _ in range(repeats):
        mask = model.memory_mask(src)
        memory = model.encode(src, mask)
        cache = KVCache(model, memory, mask)
        ys = torch.full((src.shape[0], 1), BOS)
        for t in range(steps):
            start = time.perf_counter()
            if use_cache:
                logits = decode_step(model, ys[:, -1], cache)
            else:
                logits = model.decode(ys, memory, memory_mask=mask)[:, -1]
            ys = torch.cat([ys, logits.argmax(-1)[:, None]], dim=1)
            best[t] = min(best[t], (time.perf_counter() - start) * 1e3)
    return best


# --- sampling: temperature and top-k --------------------------------------------------------

def sampling_probs(logits, temperature=1.0, top_k=None):
    """The distribution a sampler draws the next token from: softmax(logits / T) over the last
    axis; with top_k, only the top_k largest logits of each row keep a probability (the others 0)."""
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return (logits / temperature).softmax(-1)


def draw(probs, generator=None):
    """One token per row of probs (rows, n_vocab), at random with those probabilities: a uniform u
    in [0, 1), then the first token whose cumulative probability exceeds u. It uses only
    torch.rand, so a seeded generator gives the same tokens on any computer."""
    probs = probs.double()
    cumulative = probs.cumsum(-1)
    u = torch.rand(probs.shape[:-1] + (1,), generator=generator, dtype=torch.float64) * cumulative[..., -1:]
    token = (cumulative <= u).sum(-1)
    last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).long().argmax(-1)     # the last possible token
    return torch.minimum(token, last)


@torch.no_grad()
def sample_decode(model, src, temperature=1.0, top_k=None, generator=None, max_len=None):
    """Decoding by sampling: at each step every row draws its next token from
    sampling_probs(logits, temperature, top_k) instead of taking the most likely one (with the KV
    cache). src (batch, n) -> ids (batch, 1 + steps) starting with <s>; at most max_len tokens (by
    default n + 1), stopping when every row has written </s> (what follows a row's </s> is ignored
    by up_to_eos and exact_matches)."""
    def pick(logits):
        return draw(sampling_probs(logits, temperature, top_k), generator)

    return _write(model, src, pick, max_len)


# --- comparing outputs ------------------------------------------------------------------------

@torch.no_grad()
def sequence_log_prob(model, src, ys):
    """log P(Y | src) of given outputs ys (batch, 1 + T), starting with <s>: the sum of the
    log-probabilities of each token up to its first </s> (what follows it does not count), read
    in one teacher-forced pass. Returns (log_p, lengths), each (batch,)."""
    was_training = model.training
    model.eval()
    logp = model(src, ys[:, :-1]).log_softmax(-1).gather(2, ys[:, 1:, None])[..., 0]
    model.train(was_training)
    written = ys[:, 1:]
    after_eos = ((written == EOS).long().cumsum(1) - (written == EOS).long()) > 0
    lengths = (~after_eos).sum(1)
    return logp.masked_fill(after_eos, 0.0).sum(1), lengths


def up_to_eos(ids):
    """A row of ids (without <s>) cut after its first </s>, as a list."""
    ids = [int(i) for i in ids]
    return ids[: ids.index(EOS) + 1] if EOS in ids else ids


def exact_matches(outputs, tgt_out):
    """(batch,) booleans: each output (batch, 1 + steps, starting with <s>) equals its target
    (batch, n) up to and including </s>."""
    return torch.tensor([up_to_eos(out[1:]) == up_to_eos(want)
                         for out, want in zip(outputs.tolist(), tgt_out.tolist(), strict=True)])
