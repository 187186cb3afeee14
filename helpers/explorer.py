"""The explorer: one input followed through a trained model, step by step.

- ``explore(model, "c a b e d")``: notebook 05's 14 steps (input, encoder, decoder, output) of an
  encoder–decoder on the letters' 13 tokens, or on another vocabulary (``vocab=``, ``tokenize=``).
- ``explore_translation(model, text, vocab, ...)``: a translation's steps. For an encoder–decoder
  (helpers.model.Transformer): its pieces, the memory, the cross-attention of every layer and head.
  For a decoder-only model (helpers.decoder_only.DecoderOnly): the one sequence (source, <s>,
  target, positions continuing), its mask (prefix or causal LM), the self-attention of every target
  position over the whole sequence in every block and head (the source's columns apart, their
  share printed), that share block by block. Then, for both, the next piece and its top candidates
  and, with ``beam=k``, the beam's choices.

Both decode as the model's own module does (``helpers.decoding``, or ``helpers.decoder_only`` with
its cache), run the model once on what it wrote (forward hooks keep what each step shows) and
return an ``Explorer``: ``.steps`` is the data (numbers rounded here), ``.tensors`` the unrounded
tensors, and Jupyter shows it as one self-contained HTML output: every step as plain HTML (what a
reader without JavaScript sees), the data as JSON, and a small script that turns it into a stepper
(Previous / Next, a slider, the four phases, the ← → keys, the step in the address:
``#ID-step-12``).
"""

import contextlib
import hashlib
import html
import itertools
import json
import math
from types import SimpleNamespace

import torch

from helpers import decoder_only
from helpers.bpe import END, Segmenter
from helpers.decoding import greedy_decode, search
from helpers.vocabulary import BOS, EOS, SPECIALS

LETTERS = [*SPECIALS, *"abcdefghij"]        # the 13 tokens of the letters' task (notebooks 04 to 08)
PHASES = ("input", "encoder", "decoder", "output")
_count = itertools.count(1)


# --- the data ---------------------------------------------------------------------------------

def _vocabulary(vocab, tokenize, detokenize=None):
    """(itos, stoi, tokenize, text of ids) from a token list, a helpers.vocabulary.Vocabulary or
    an object with .vocab, .pieces and .text (notebook 11's pieces)."""
    vocab = LETTERS if vocab is None else vocab
    itos = None
    if hasattr(vocab, "pieces") and hasattr(vocab, "vocab"):
        itos = list(vocab.vocab.itos)
        tokenize = tokenize or vocab.pieces
        if detokenize is None and hasattr(vocab, "text"):
            return itos, {t: i for i, t in enumerate(itos)}, tokenize, vocab.text
    itos = itos or list(vocab.itos if hasattr(vocab, "itos") else vocab)
    join = detokenize or _join
    return itos, {t: i for i, t in enumerate(itos)}, tokenize or str.split, \
        lambda ids: join([itos[i] for i in ids if i > EOS])


def _ids(source, itos, stoi, tokenize):
    tokens = tokenize(source) if isinstance(source, str) else list(source)
    unknown = [t for t in tokens if t not in stoi]
    if unknown and "<unk>" in stoi:
        tokens = [t if t in stoi else "<unk>" for t in tokens]
    elif unknown:
        raise ValueError(f"not in the model's vocabulary: {unknown}; it knows {' '.join(itos[3:])}")
    if not tokens:
        raise ValueError("the input has no token")
    return [stoi[t] for t in tokens]


def _show(token):
    """A token as the explorer writes it: a piece's end-of-word mark </w> becomes _."""
    return token[: -len(END)] + "_" if token.endswith(END) and token != END else token


def _round(t, digits):
    return [round(float(v), digits) for v in t.flatten().tolist()] if t.dim() == 1 else \
        [_round(row, digits) for row in t]


def _is_decoder_only(model):
    return isinstance(model, decoder_only.DecoderOnly)


def _written(model, src, beam, extra=50, alpha=0.6):
    """What the model writes for src (1, n), at most n + extra pieces: greedy, or the best of a
    beam search whose every step is kept (the k hypotheses). Each kind of model decodes with its
    own functions (a decoder-only model with helpers.decoder_only's cache)."""
    limit = src.shape[1] + extra
    one_stack = _is_decoder_only(model)
    if not beam:
        greedy = decoder_only.greedy_decode if one_stack else greedy_decode
        out = greedy(model, src, max_len=limit)[0].tolist()[1:]
        return out[: out.index(EOS) + 1] if EOS in out else out, None
    steps, reorder = [], None
    if one_stack:                  # as helpers.decoder_only.beam_search: the prefix once, then the cache
        log_probs, reorder = decoder_only.cached_log_probs(model, src, beam)
    else:
        memory = model.encode(src)

        def log_probs(ys):
            rows = ys.shape[0]
            return model.decode(ys, memory.expand(rows, -1, -1), src.expand(rows, -1))[:, -1].log_softmax(-1)

    def next_log_probs(ys):
        if ys.shape[1] > 1:
            steps.append(ys.clone())
        return log_probs(ys)

    result = search(next_log_probs, 1, beam, torch.tensor([limit]), alpha, reorder, pad=model.pad)
    steps.append(result["tokens"][0])
    best = result["tokens"][0, 0].tolist()[1:]
    best = best[: best.index(EOS) + 1] if EOS in best else best
    return best, {"steps": steps, "result": result}


def _teacher_forced(model, src, ys):
    """The logits (rows, t, vocab) of ys[:, 1:] after src, ys (rows, 1 + t) starting with <s>:
    one pass of the model on what it reads (the decoder's input, or the one sequence)."""
    rows, n = ys.shape[0], src.shape[1]
    if _is_decoder_only(model):
        ids = torch.cat([src.expand(rows, -1), ys[:, :-1]], dim=1)
        return model(ids, torch.full((rows,), n))[:, n:]
    return model(src.expand(rows, -1), ys[:, :-1])


@contextlib.contextmanager
def _evaluating(model):
    """The model in eval mode inside the block, and its mode given back after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _decoded(model, source, vocab, tokenize, detokenize=None, beam=None, extra=50):
    """What every explorer starts from (in eval mode): the vocabulary, the source's ids, what the
    model writes, what its decoder reads (tgt_in: <s> and the written pieces but the last) and,
    with beam, the log P of the hypotheses kept at each step."""
    itos, stoi, tokenize, text_of = _vocabulary(vocab, tokenize, detokenize)
    ids = _ids(source, itos, stoi, tokenize)
    src = torch.tensor([ids])
    written, beams = _written(model, src, beam, extra)
    if beams:
        beams["log_p"] = [_log_p(model, src, ys) for ys in beams["steps"]]
    return SimpleNamespace(itos=itos, text_of=text_of, ids=ids, src=src, written=written, beams=beams,
                           tgt_in=torch.tensor([[BOS, *written[:-1]]]))


class _Run:
    """One teacher-forced pass of the model on (src, tgt_in), with hooks keeping what the steps
    show: the embedded source, encoder layer 1's pieces, the memory, every attention's weights."""

    def __init__(self, model, src, tgt_in):
        enc1 = model.encoder_layers[0]
        kept, hooks = {}, []

        def keep(name, pre=False):
            def hook(module, inputs, output=None):
                kept.setdefault(name, (inputs[0] if pre else output).detach())
            return hook

        hooks.append(model.embedding.register_forward_hook(keep("embedding")))
        hooks.append(enc1.register_forward_pre_hook(keep("encoder input", pre=True)))
        hooks.append(enc1.self_attn.register_forward_hook(keep("attention")))
        hooks.append(enc1.norm1.register_forward_hook(keep("add & norm")))
        hooks.append(enc1.linear1.register_forward_hook(keep("hidden")))
        hooks.append(enc1.register_forward_hook(keep("layer 1")))
        hooks.append(model.encoder_layers[-1].register_forward_hook(keep("memory")))
        attn = [m for m in model.modules() if hasattr(m, "keep_weights")]
        for m in attn:
            m.keep_weights, m.weights = True, None
        try:
            self.logits = model(src, tgt_in)
            self.encoder = [layer.self_attn.weights for layer in model.encoder_layers]
            self.decoder = [layer.self_attn.weights for layer in model.decoder_layers]
            self.cross = [layer.cross_attn.weights for layer in model.decoder_layers]
        finally:
            for m in attn:
                m.keep_weights, m.weights = False, None
            for h in hooks:
                h.remove()
        self.kept = kept
        w, b = enc1.self_attn.in_proj_weight, enc1.self_attn.in_proj_bias
        qkv = torch.nn.functional.linear(kept["encoder input"], w, b).split(enc1.self_attn.sizes, dim=-1)
        h = enc1.self_attn.h
        self.q, self.k, self.v = (t.view(1, t.shape[1], h, -1).transpose(1, 2) for t in qkv)
        self.relu = enc1.activation(kept["hidden"])


def _table(rows, cols, cells, kind="numbers", label="", digits=3, click=False):
    table = {"label": label, "kind": kind, "rows": rows, "cols": cols, "cells": cells, "digits": digits}
    if click:
        table["click"] = True
    return table


def _weights(w, rows, cols, label, click=False, hidden=None):
    """An attention grid: weights rounded to 2 decimals, None where the mask hides a cell (hidden,
    True where hidden; by default where a weight is exactly 0)."""
    hidden = (w == 0) if hidden is None else hidden
    cells = [[None if m else round(float(v), 2) for v, m in zip(r, hm, strict=True)]
             for r, hm in zip(w.tolist(), hidden.tolist(), strict=True)]
    return _table(rows, cols, cells, "weights", label, 2, click)


def _positions(ids):
    return [[p + 1, i] for p, i in enumerate(ids)]


def _step(phase, title, shape, caption, *tables):
    return {"phase": phase, "title": title, "shape": list(shape), "caption": caption, "tables": list(tables)}


def _fmt(v, digits=3):
    return f"{v:.{digits}f}"


def _first(x, n=4, digits=3):
    return [_round(row[:n], digits) for row in x]


def _top(probs, itos, k=3):
    top = probs.topk(k)
    pairs = zip(top.values.tolist(), top.indices.tolist(), strict=True)
    return [f"{_show(itos[i])} {v:.3f}" for v, i in pairs]


@torch.no_grad()
def explore(model, source="c a b e d", vocab=None, tokenize=None, title=None):
    """Notebook 05's 14 steps for one input: source (text, or a list of tokens) through the model.

    vocab: the id -> token list (default: the letters' 13 tokens), or a Vocabulary; tokenize: text
    -> tokens (default: split at spaces). The decoder reads <s> and what greedy decoding writes."""
    with _evaluating(model):
        got = _decoded(model, source, vocab, tokenize)
        run = _Run(model, got.src, got.tgt_in)
    itos, ids, src, written, tgt_in = got.itos, got.ids, got.src, got.written, got.tgt_in
    d, n = model.d, len(ids)
    h, n_layers = model.encoder_layers[0].self_attn.h, len(model.encoder_layers)
    k = run.kept
    toks = [_show(itos[i]) for i in ids]
    reads = [_show(itos[i]) for i in tgt_in[0].tolist()]
    writes = [_show(itos[i]) for i in written]
    arrows = [f"{r} → {w}" for r, w in zip(reads, writes, strict=True)]
    first4 = [str(i) for i in range(1, 5)]
    emb, t0 = k["embedding"][0], toks[0]
    scaled = emb * math.sqrt(d)
    pe = model.pe[:n]
    x1, x2, memory = k["add & norm"][0], k["layer 1"][0], k["memory"][0]
    zeros = (run.relu[0] == 0).float().mean(-1)
    w_enc, w_self = run.encoder[0][0, 0], run.decoder[0][0, 0]
    w_cross = run.cross[-1][0].mean(0)
    logits, probs = run.logits[0], run.logits[0].softmax(-1)
    ranked = logits[0].sort(descending=True)
    best = probs.max(-1)
    text = " ".join(toks)
    steps = [
        _step("input", "source tokens", src.shape,
              f'The input "{text}" as token ids: '
              + ", ".join(f"{t} = {i}" for t, i in zip(toks, ids, strict=True))
              + f"; the vocabulary has {len(itos)} tokens.",
              _table(toks, ["position", "id"], _positions(ids), "text")),
        _step("input", "embedding lookup", emb[None].shape,
              f"Each token's row of the shared table E ({len(itos)} × {d}). The numbers are small: "
              f"the {d} of {t0} have a spread (standard deviation) of {emb[0].std():.3f}.",
              _table(toks, first4, _first(emb), label=f"first 4 of {d} numbers")),
        _step("input", f"times √d_model = {math.sqrt(d):g}", scaled[None].shape,
              f"The same rows times √{d} = {math.sqrt(d):g}, so that the positions do not drown them: "
              f"{t0}'s first number {emb[0, 0]:.3f} becomes {scaled[0, 0]:.3f}.",
              _table(toks, first4, _first(scaled), label=f"first 4 of {d} numbers")),
        _step("input", "plus the positional encoding", k["encoder input"].shape,
              f"Position 0's encoding starts {', '.join(_fmt(v) for v in pe[0, :4].tolist())}; position 1's "
              f"{', '.join(_fmt(v) for v in pe[min(1, n - 1), :4].tolist())}. "
              "The sum is the encoder's input.",
              _table([f"position {p}" for p in range(n)], first4, _first(pe), label="PE(position)"),
              _table(toks, first4, _first(k["encoder input"][0]), label="the sum: the encoder's input")),
        _step("encoder", f"queries, keys, values (layer 1, {h} heads of {run.q.shape[-1]})", run.q.shape,
              f"Three projections of the input, x W_Q, x W_K, x W_V, each split into {h} heads of "
              f"{run.q.shape[-1]} numbers. Head 1's query of {t0} starts "
              f"{', '.join(_fmt(v) for v in run.q[0, 0, 0, :2].tolist())}; "
              "keys and values have the same shape.",
              _table(toks, first4, _first(run.q[0, 0]), label="head 1's query, first 4 numbers")),
        _step("encoder", "encoder self-attention (layer 1, head 1)", run.encoder[0].shape,
              "softmax(Q Kᵀ / √d_k): row i gives how much token i reads each token; each row sums to 1. "
              f"The largest weight of head 1 is {w_enc.max():.2f}.",
              _weights(w_enc, toks, toks, "rows read, columns are read", click=True)),
        _step("encoder", "add & norm", x1[None].shape,
              f"LayerNorm(x + attention): {t0}'s first number goes from {k['encoder input'][0, 0, 0]:.3f} "
              f"to {x1[0, 0]:.3f}.",
              _table(toks, first4, _first(x1), label=f"first 4 of {d} numbers")),
        _step("encoder", f"feed-forward (hidden {tuple(run.relu.shape)}), then add & norm", x2[None].shape,
              f"max(0, x W₁ + b₁) W₂ + b₂ with {run.relu.shape[-1]} hidden numbers per token: ReLU zeroes "
              f"{zeros[0]:.1%} of {t0}'s. Then add & norm again: encoder layer 1's output.",
              _table(toks, [*first4, "ReLU zeroes"],
                     [[*row, f"{z:.1%}"] for row, z in zip(_first(x2), zeros.tolist(), strict=True)],
                     label=f"first 4 of {d} numbers")),
        _step("encoder", "the encoder's output: the memory", memory[None].shape,
              f"After {n_layers} encoder layers each token's {d} numbers also carry the others: the memory, "
              f"which every decoder layer reads (model.encode gives this tensor). {t0}'s starts "
              f"{', '.join(_fmt(v) for v in memory[0, :2].tolist())}.",
              _table(toks, first4, _first(memory), label=f"first 4 of {d} numbers")),
        _step("decoder", "decoder input, shifted right", tgt_in.shape,
              f"<s> and then what greedy decoding writes, {' '.join(writes)}, without the last: position i "
              "reads token i and must predict token i + 1.",
              _table(reads, ["position", "id"], _positions(tgt_in[0].tolist()), "text")),
        _step("decoder", "masked self-attention (decoder layer 1, head 1)", run.decoder[0].shape,
              "Each position reads itself and the positions before it; the cells above the diagonal are "
              f"masked (·, weight 0). {reads[0]} reads only itself; each row sums to 1.",
              _weights(w_self, reads, reads, "rows read, columns are read", click=True)),
        _step("decoder", f"cross-attention (decoder layer {n_layers}, mean of {h} heads)",
              run.cross[-1].shape,
              "Each decoder position (labelled with what it reads and writes) reads the source tokens; "
              "each row sums to 1. The source position each row reads most: "
              f"{', '.join(str(j + 1) for j in w_cross.argmax(-1).tolist())}.",
              _weights(w_cross, arrows, toks, "rows: decoder positions; columns: source tokens", click=True)),
        _step("output", "output layer tied to the embedding: y Eᵀ", run.logits.shape,
              f"The decoder's last vectors times Eᵀ: {len(itos)} scores per position. At position 1 the "
              f"highest is {_show(itos[ranked.indices[0]])}'s, {ranked.values[0]:.3f}, "
              f"{ranked.values[0] - ranked.values[1]:.2f} above the next.",
              _table(arrows, [*(_show(t) for t in itos[:4]), "highest"],
                     [[*_round(row[:4], 3), f"{_show(itos[int(row.argmax())])} {row.max():.3f}"]
                      for row in logits],
                     label=f"the scores of the first 4 of {len(itos)} tokens, and the highest")),
        _step("output", "softmax: the next token at each position", probs[None].shape,
              f"The most likely tokens are {' '.join(_show(itos[i]) for i in best.indices.tolist())}, what "
              f"greedy decoding writes, with probabilities {best.values.min():.3f} to "
              f"{best.values.max():.3f}.",
              _table(arrows, ["1st", "2nd", "3rd"], [_top(p, itos) for p in probs], "text",
                     label="the 3 most likely tokens and their probabilities")),
    ]
    title = title or f'"{text}" through the trained model, in {len(steps)} steps'
    tensors = {"source": src, "embedding": k["embedding"], "encoder input": k["encoder input"],
               "queries": run.q, "keys": run.k, "values": run.v, "encoder self-attention": run.encoder[0],
               "add & norm": k["add & norm"], "hidden": run.relu, "encoder layer 1": k["layer 1"],
               "memory": k["memory"], "decoder input": tgt_in, "decoder self-attention": run.decoder[0],
               "cross-attention": run.cross[-1], "logits": run.logits}
    return Explorer(title, steps, {"ids": ids, "written": written}, tensors)


@torch.no_grad()
def explore_translation(model, source, vocab, tokenize=None, detokenize=None, beam=None, title=None,
                        extra=50, heads=True):
    """A translation's steps, for an encoder–decoder (helpers.model.Transformer) or a decoder-only
    model (helpers.decoder_only.DecoderOnly).

    Encoder–decoder: source (text or tokens) -> pieces, memory, the cross-attention of every decoder
    layer (mean of the heads, then each head). Decoder-only: the one sequence (source, <s>, target,
    positions continuing), the model's mask (prefix or causal), the self-attention of every target
    position over the whole sequence in every block (mean of the heads, then each head; the source's
    columns apart, their share printed) and that share layer by layer. Then, for both, the next
    piece and its top candidates; with beam=k the model follows beam search's best hypothesis (k
    beams, α 0.6) and two steps show the beam's choices. At most len(source) + extra pieces are
    written; heads=False leaves out each head's grid (the mean of the heads stays: a smaller page,
    since a decoder-only model's grids grow with the square of the sequence). vocab and tokenize as
    for explore (notebook 11's pieces object is both); detokenize: written tokens -> text (default:
    pieces joined, else tokens with spaces)."""
    with _evaluating(model):
        got = _decoded(model, source, vocab, tokenize, detokenize, beam, extra)
        run = (_StackRun if _is_decoder_only(model) else _Run)(model, got.src, got.tgt_in)
    itos, ids, written = got.itos, got.ids, got.written
    got.english = source if isinstance(source, str) else got.text_of(ids)
    got.reads = [_show(itos[i]) for i in got.tgt_in[0].tolist()]
    got.writes = [_show(itos[i]) for i in written]
    got.rows = [f"{r} → {w}" for r, w in zip(got.reads, got.writes, strict=True)]
    if _is_decoder_only(model):
        steps = _one_stack_steps(model, got, run, heads)
        tensors = {"sequence": run.ids, "mask": run.hidden, "self-attention": run.weights,
                   "source share": run.share, "logits": run.logits}
    else:
        steps = _two_stack_steps(model, got, run, heads)
        tensors = {"source": got.src, "memory": run.kept["memory"], "decoder input": got.tgt_in,
                   "cross-attention": run.cross, "logits": run.logits}
    steps += _output_steps(got, run.logits[0].softmax(-1), beam)
    if not any(t.endswith(END) for t in itos):            # whole words: say tokens, not pieces
        for step in steps:
            for key in ("title", "caption"):
                step[key] = _tokens(step[key])
            for t in step["tables"]:
                t["label"] = _tokens(t["label"])
    title = title or f'Translating "{got.english}", step by step'
    return Explorer(title, steps, {"ids": ids, "written": written}, tensors)


def _cut(got):
    marks = any(got.itos[i].endswith(END) for i in got.ids)
    return (f'"{got.english}" cut into {len(got.ids)} tokens of the shared vocabulary ({len(got.itos)} '
            "tokens)" + ("; _ marks the end of a word." if marks else "."))


def _two_stack_steps(model, got, run, heads=True):
    """The encoder–decoder's steps: the pieces, the memory, what the decoder reads, every
    cross-attention grid."""
    h, d = model.encoder_layers[0].self_attn.h, model.d
    toks = [_show(got.itos[i]) for i in got.ids]
    memory = run.kept["memory"][0]
    steps = [
        _step("input", "the source's pieces", got.src.shape, _cut(got),
              _table(toks, ["position", "id"], _positions(got.ids), "text")),
        _step("encoder", "the memory", memory[None].shape,
              f"What the encoder's {len(model.encoder_layers)} layers make of each piece: {d} numbers that "
              "also carry its neighbours. Every cross-attention reads it.",
              _table(toks, [str(i) for i in range(1, 5)], _first(memory), label=f"first 4 of {d} numbers")),
        _step("decoder", "what the decoder reads", got.tgt_in.shape,
              f"<s> and then the pieces {'beam search' if got.beams else 'greedy decoding'} writes, without "
              f"the last ({len(got.written)} pieces written): each position reads one and predicts the next.",
              _table(got.reads, ["position", "id"], _positions(got.tgt_in[0].tolist()), "text")),
    ]
    for layer, w in enumerate(run.cross, start=1):
        for head in [None, *range(h)] if heads else [None]:
            grid = w[0].mean(0) if head is None else w[0, head]
            r, c = divmod(int(grid.argmax()), grid.shape[1])
            name = f"mean of {h} heads" if head is None else f"head {head + 1}"
            steps.append(_step(
                "decoder", f"cross-attention, decoder layer {layer}, {name}", w.shape,
                "Which source pieces each written piece reads (rows sum to 1); click a written piece to see "
                f"what it reads. Its strongest link: {got.writes[r]} reads {toks[c]} with {grid[r, c]:.2f}.",
                _weights(grid, got.rows, toks, "rows: what the decoder reads → writes; columns: source "
                         "pieces", click=True)))
    return steps


class _StackRun:
    """One pass of a decoder-only model on its one sequence ``source, <s>, written pieces but the
    last`` (ids (1, N)), keeping the mask (hidden (1, N, N), True where hidden), every block's
    attention weights (1, h, N, N), the target positions' logits (1, len(written), vocab) and the
    share of each target position's attention (mean of the heads) that goes to the source
    (share (len(written), blocks))."""

    def __init__(self, model, src, tgt_in):
        n = src.shape[1]
        self.ids = torch.cat([src, tgt_in], dim=1)
        src_lengths = torch.tensor([n])
        self.hidden = model.hidden_mask(self.ids, src_lengths)
        attn = [layer.self_attn for layer in model.layers]
        for m in attn:
            m.keep_weights, m.weights = True, None
        try:
            self.logits = model(self.ids, src_lengths)[:, n:]
            self.weights = [m.weights for m in attn]
        finally:
            for m in attn:
                m.keep_weights, m.weights = False, None
        self.share = torch.stack([w[0].mean(0)[n:, :n].sum(-1) for w in self.weights], dim=1)


def _one_stack_steps(model, got, run, heads=True):
    """The decoder-only model's steps: the one sequence, the mask, every block's self-attention of
    the target positions (the source's columns apart), the source's share layer by layer."""
    n, big_n = len(got.ids), run.ids.shape[1]
    h, blocks = model.layers[0].self_attn.h, len(model.layers)
    seq = [_show(got.itos[i]) for i in run.ids[0].tolist()]
    parts = ["source"] * n + ["separator"] + ["target"] * (big_n - n - 1)
    hidden = run.hidden[0]
    kind = "prefix LM" if model.prefix else "causal LM"
    how = ("the source and the separator (positions 1 to {m}) read all of the prefix, in both directions, "
           "as an encoder does; each target position reads the prefix and its own past"
           if model.prefix else
           "every position reads itself and the positions before it, the source included, as GPT does: "
           "source piece 1 reads only itself").format(m=n + 1)
    writer = "beam search" if got.beams else "greedy decoding"
    steps = [
        _step("input", "one sequence: source, separator, target", run.ids.shape,
              f"{_cut(got)} Then the separator <s> and the pieces {writer} writes without the last "
              f"({len(got.written)} written): one sequence of {big_n} positions for one stack. The "
              f"target's positions go on from the source's (the separator is position {n + 1}); from the "
              "separator on, each position reads one piece and predicts the next.",
              _table(seq, ["position", "id", "part"],
                     [[p + 1, i, part] for p, (i, part) in enumerate(zip(run.ids[0].tolist(), parts,
                                                                         strict=True))], "text")),
        _step("input", f"the mask of this model: a {kind}", run.hidden.shape,
              f"Which positions each position may read (✓) and not (·, weight 0): {how}. "
              f"{int((~hidden).sum())} of {big_n * big_n} pairs are visible.",
              _table([f"{p + 1} {t}" for p, t in enumerate(seq)], [str(p + 1) for p in range(big_n)],
                     [[int(v) for v in row] for row in (~hidden).tolist()], "mask",
                     "rows read, columns are read (by position)", 0) | {"source": n}),
    ]
    for layer, w in enumerate(run.weights, start=1):
        for head in [None, *range(h)] if heads else [None]:
            grid = (w[0].mean(0) if head is None else w[0, head])[n:]
            share = grid[:, :n].sum(-1)
            r, c = divmod(int(grid.argmax()), grid.shape[1])
            name = f"mean of {h} heads" if head is None else f"head {head + 1}"
            said = (f"The share on the source: {share[0]:.2f} at the separator, {share[-1]:.2f} at the last "
                    f"position. The strongest link: the position writing {got.writes[r]} reads {seq[c]} with "
                    f"{grid[r, c]:.2f}.")
            if head is None:
                said = ("What each target position reads of the whole sequence (rows sum to 1, · hidden by "
                        f"the mask): the source's {n} pieces, then the separator and the target; click a row "
                        f"to see what it reads. {said}")
            steps.append(_step(
                "decoder", f"self-attention, block {layer}, {name}", w.shape, said,
                _weights(grid, got.rows, seq, "" if head is not None else "rows: what each target position "
                         "reads → writes; columns: the sequence", click=True, hidden=hidden[n:]) | {
                    "source": n, "share": [round(float(v), 2) for v in share]}))
    first, last = run.share[:, 0], run.share[:, -1]
    steps.append(_step(
        "decoder", "the source's share, block by block", run.share.shape,
        f"The share of each target position's attention (mean of the {h} heads) that goes to the source's "
        f"pieces, in each of the {blocks} blocks. Block 1: {first[0]:.2f} at the separator, {first[-1]:.2f} "
        f"at the last position; block {blocks}: {last[0]:.2f}, then {last[-1]:.2f}.",
        _table(got.rows, [f"block {b}" for b in range(1, blocks + 1)], _round(run.share, 2),
               label="share of the attention on the source", digits=2)))
    return steps


def _output_steps(got, probs, beam):
    """The steps both kinds end with: the next piece's candidates, the beam's choices, the result."""
    written, itos = got.written, got.itos
    picked = [int(probs[p].argmax()) == written[p] for p in range(len(written))]
    steps = [_step(
        "output", "the next piece and its top candidates", [1, *probs.shape],
        f"At each position the model's probabilities for the next piece. The written piece is the most "
        f"likely one at {sum(picked)} of {len(written)} positions"
        + ("." if all(picked) else
           ": beam search kept a less likely piece where a whole hypothesis scored better."),
        _table(got.rows, ["1st", "2nd", "3rd"], [_top(p, itos) for p in probs], "text",
               label="the 3 most likely next pieces and their probabilities"))]
    if got.beams:
        steps += _beam_steps(got.beams, beam, got.text_of)
    steps.append(_step(
        "output", "the translation", [1, len(written) + 1],
        f'"{got.english}" → "{got.text_of(written)}"'
        + (f", the best of {beam} hypotheses." if got.beams else ", greedy decoding."),
        _table(got.writes, ["position", "id"], _positions(written), "text",
               label="the pieces written")))
    return steps


def _log_p(model, src, ys):
    """log P of each hypothesis (rows of ys, starting with <s>, <pad> after </s>)."""
    logp = _teacher_forced(model, src, ys).log_softmax(-1).gather(2, ys[:, 1:, None])[..., 0]
    written = ys[:, 1:]
    after = ((written == EOS).long().cumsum(1) - (written == EOS).long()) > 0
    return logp.masked_fill(after, 0.0).sum(1).tolist()


def _beam_steps(beams, k, text_of):
    def text(row):
        return text_of(row[1:]) + (" </s>" if EOS in row else "")

    def number(v):
        return round(v, 3) if math.isfinite(v) else "—"

    lines = []
    for ys, log_p in zip(beams["steps"], beams["log_p"], strict=True):
        lines.append([f"{text(row)} ({lp:.2f})" if lp > -1e9 else "—"
                      for row, lp in zip(ys.tolist(), log_p, strict=True)])
    result = beams["result"]
    final = [[text(row), number(lp), n, number(s)] for row, lp, n, s in zip(
        result["tokens"][0].tolist(), result["log_p"][0].tolist(), result["lengths"][0].tolist(),
        result["scores"][0].tolist(), strict=True)]
    return [
        _step("output", f"the beam's choices, step by step (k = {k})", [1, k, len(lines) + 1],
              f"Beam search keeps the {k} most likely hypotheses after each written piece (log P in "
              f"brackets), ranked by log P divided by the length penalty; {len(lines)} steps.",
              _table([f"step {t}" for t in range(1, len(lines) + 1)], [f"beam {j}" for j in range(1, k + 1)],
                     lines[:-1] + [lines[-1]], "text", label="the hypotheses kept after each step")),
        _step("output", "the beam's final ranking", [1, k],
              f"The {k} hypotheses at the end: log P, length |Y| (</s> included) and the score "
              "log P / ((5 + |Y|) / 6)^0.6 that ranks the finished ones (— for one that did not write "
              "</s>); the first is the translation.",
              _table([str(j) for j in range(1, k + 1)], ["hypothesis", "log P", "|Y|", "score"], final,
                     "text")),
    ]


def _tokens(text):
    return text.replace("pieces", "tokens").replace("piece", "token")


def _join(tokens):
    if any(t.endswith(END) for t in tokens):
        return Segmenter.join(tokens)
    return " ".join(tokens)


# --- the display --------------------------------------------------------------------------------

class Explorer:
    """An explorer's steps (``.steps``, a list of dicts: n, phase, title, shape, caption, tables),
    the unrounded tensors they show (``.tensors``), the ids read and written (``.extra``), and
    their display (``_repr_html_``, ``html()``)."""

    def __init__(self, title, steps, extra=None, tensors=None):
        for n, step in enumerate(steps, start=1):
            step["n"] = n
        self.title, self.steps, self.extra, self.tensors = title, steps, extra or {}, tensors or {}
        data = json.dumps({"title": title, "steps": steps}, sort_keys=True)
        self.id = f"explorer-{next(_count)}-{hashlib.sha1(data.encode()).hexdigest()[:4]}"

    def __repr__(self):
        return f"<Explorer {self.title!r}: {len(self.steps)} steps>"

    def _repr_html_(self):
        return self.html()

    def data(self):
        """What the page embeds as JSON."""
        return {"id": self.id, "title": self.title, "phases": list(PHASES), "steps": self.steps}

    def html(self):
        """One self-contained HTML fragment: styles, every step as plain HTML, the JSON, the script."""
        i = self.id
        parts = [f'<div class="tx-explorer" id="{i}" tabindex="-1">', _CSS.replace("#ID", f"#{i}"),
                 f'<p class="tx-title"><strong>{html.escape(self.title)}</strong></p>',
                 '<div class="tx-controls" hidden></div>', '<ol class="tx-steps">']
        for step in self.steps:
            parts.append(_step_html(i, step, len(self.steps)))
        parts.append("</ol>")
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        parts.append(f'<script type="application/json" class="tx-data">{data}</script>')
        parts.append("<script>" + _JS.replace("__ID__", i) + "</script></div>")
        return "\n".join(parts)


def _step_html(i, step, total):
    shape = "(" + ", ".join(str(s) for s in step["shape"]) + ")"
    out = [f'<li class="tx-step" id="{i}-step-{step["n"]}" data-step="{step["n"]}" '
           f'data-phase="{step["phase"]}">',
           f'<p class="tx-meta"><span class="tx-num">Step {step["n"]} of {total}</span> · '
           f'<span class="tx-phase">{step["phase"]}</span> · '
           f'<b class="tx-name">{html.escape(step["title"])}</b> · '
           f'shape <code class="tx-shape">{shape}</code></p>',
           f'<p class="tx-caption">{html.escape(step["caption"])}</p>']
    for t, table in enumerate(step["tables"]):
        out.append(_table_html(table, t))
    out.append("</li>")
    return "\n".join(out)


def _cell(v, kind, digits):
    if kind == "mask":
        return "<td>✓</td>" if v else "<td class=tx-masked>·</td>"
    if kind == "weights":
        if v is None:
            return "<td class=tx-masked>·</td>"
        if v < 0.005:
            return "<td>0.00</td>"
        return f'<td style=--w:{v:.2f}{" class=tx-hi" if v > 0.55 else ""}>{v:.2f}</td>'
    if isinstance(v, float):
        return f"<td>{v:.{digits}f}</td>"
    return f"<td>{html.escape(str(v))}</td>"


def _table_html(table, t):
    """A table; with "source" (how many of the first columns are the source's), a header row that
    names the source's columns and the others, and a bar between them; with "share", a last
    column: each row's share of attention on the source."""
    kind, digits, cols = table["kind"], table["digits"], table["cols"]
    src, share = table.get("source"), table.get("share")
    click = ' data-click="1"' if table.get("click") else ""
    groups = parts = ""
    if src:
        rest = len(cols) - src
        groups = (f'<colgroup></colgroup><colgroup span="{src}" class="tx-src"></colgroup>'
                  f'<colgroup span="{rest}"></colgroup>' + ("<colgroup></colgroup>" if share else ""))
        parts = (f'<tr><th></th><th scope="colgroup" colspan="{src}" class="tx-src">source</th>'
                 f'<th scope="colgroup" colspan="{rest}">separator and target</th>'
                 + ("<th></th>" if share else "") + "</tr>")
    head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in cols)
    if share:
        head += '<th scope="col" class="tx-share">on the source</th>'
    body = "".join(
        f'<tr><th scope="row">{html.escape(str(r))}</th>{"".join(_cell(v, kind, digits) for v in row)}'
        + (f'<td class="tx-share">{share[k]:.2f}</td>' if share else "") + "</tr>"
        for k, (r, row) in enumerate(zip(table["rows"], table["cells"], strict=True)))
    caption = f'<caption>{html.escape(table["label"])}</caption>' if table["label"] else ""
    return (f'<div class="tx-box"><table class="tx-{kind}" data-table="{t}"{click}>{caption}{groups}'
            f"<thead>{parts}<tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"
            f'{"<p class=tx-reads></p>" if click else ""}</div>')


_CSS = """<style>
#ID{--tx-fg:var(--pst-color-text-base,var(--jp-content-font-color1,#1f2328));
--tx-bg:var(--pst-color-background,var(--jp-layout-color0,#fff));
--tx-muted:var(--pst-color-text-muted,var(--jp-content-font-color2,#59636e));
--tx-line:var(--pst-color-border,var(--jp-border-color1,#d0d7de));
--tx-heat:37,99,235;--tx-src:217,119,6;color:var(--tx-fg);max-width:100%;box-sizing:border-box;font-size:14px;
line-height:1.4;margin:.5em 0;outline:none}
@media (prefers-color-scheme:dark){#ID{
--tx-fg:var(--pst-color-text-base,var(--jp-content-font-color1,#e6edf3));
--tx-bg:var(--pst-color-background,var(--jp-layout-color0,#0d1117));
--tx-muted:var(--pst-color-text-muted,var(--jp-content-font-color2,#9198a1));
--tx-line:var(--pst-color-border,var(--jp-border-color1,#3d444d))}}
html[data-theme=dark] #ID{--tx-heat:96,165,250}
#ID *{box-sizing:border-box}
#ID [hidden]{display:none!important}
#ID .tx-title{margin:0 0 .4em}
#ID .tx-steps{list-style:none;margin:0;padding:0}
#ID .tx-step{margin:0 0 1em;padding:0}
#ID .tx-meta{margin:0 0 .2em;color:var(--tx-muted);font-size:13px}
#ID .tx-name{color:var(--tx-fg)}
#ID .tx-phase{display:inline-block;padding:0 .4em;border:1px solid var(--tx-line);border-radius:3px;
text-transform:uppercase;font-size:11px;letter-spacing:.04em}
#ID .tx-caption{margin:0 0 .4em}
#ID .tx-box{max-width:100%;overflow:auto;max-height:420px;margin:0 0 .4em}
#ID table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px;margin:0}
#ID caption{text-align:left;color:var(--tx-muted);font-size:12px;padding:0 0 .2em;caption-side:top}
#ID th,#ID td{border:1px solid var(--tx-line);padding:2px 6px;text-align:right;white-space:nowrap}
#ID th{font-weight:600;background:transparent}
#ID th[scope=row]{text-align:left}
#ID table.tx-text td{text-align:left}
#ID table.tx-weights td{background:rgba(var(--tx-heat),var(--w,0));min-width:2.6em;text-align:center}
#ID table.tx-weights td.tx-hi{color:#fff}
#ID table.tx-mask{font-size:12px}
#ID table.tx-mask td{min-width:1.5em;padding:1px 2px;text-align:center}
#ID table.tx-mask td:not(.tx-masked){background:rgba(var(--tx-heat),.2)}
#ID th[scope=colgroup]{text-align:center}
#ID colgroup.tx-src{border-left:3px solid rgb(var(--tx-src));border-right:3px solid rgb(var(--tx-src))}
#ID th.tx-src{box-shadow:inset 0 -3px 0 rgb(var(--tx-src))}
#ID .tx-share{font-weight:600;border-left:3px double var(--tx-line)}
#ID td.tx-masked{color:var(--tx-muted);background:repeating-linear-gradient(45deg,transparent 0 4px,
rgba(127,127,127,.18) 4px 8px)}
#ID .tx-controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:0 0 .6em}
#ID .tx-phases{display:flex;flex-wrap:wrap;gap:4px;width:100%}
#ID button{font:inherit;font-size:13px;color:var(--tx-fg);background:var(--tx-bg);
border:1px solid var(--tx-line);
border-radius:4px;padding:3px 9px;cursor:pointer}
#ID button:disabled{opacity:.45;cursor:default}
#ID button[aria-current=true]{border-color:rgb(var(--tx-heat));box-shadow:inset 0 -2px 0 rgb(var(--tx-heat))}
#ID input[type=range]{flex:1 1 120px;min-width:90px;max-width:320px;accent-color:rgb(var(--tx-heat))}
#ID .tx-where{font-size:13px;color:var(--tx-muted);min-width:6.5em}
#ID button.tx-row{padding:0 4px;border:0;background:transparent;text-decoration:underline dotted;
font-weight:600}
#ID tr.tx-on th,#ID tr.tx-on td{outline:2px solid rgb(var(--tx-heat));outline-offset:-2px}
#ID .tx-reads{margin:.3em 0 0;font-size:13px}
#ID .tx-reads span{display:inline-block;margin:1px 2px;padding:0 4px;border-radius:3px;
background:rgba(var(--tx-heat),var(--w,0))}
#ID .tx-reads span.tx-hi{color:#fff}
#ID .tx-reads span.tx-src{box-shadow:inset 0 -2px 0 rgb(var(--tx-src))}
#ID.tx-live .tx-step{min-height:0}
@media print{#ID .tx-controls{display:none!important}#ID .tx-step[hidden]{display:block!important}}
</style>"""

_JS = r"""(function () {
  var ID = "__ID__";
  var roots = document.querySelectorAll('[id="' + ID + '"]');
  for (var r = 0; r < roots.length; r++) setup(roots[r]);
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function setup(root) {
    if (root.getAttribute("data-ready")) return;
    root.setAttribute("data-ready", "1");
    var data = JSON.parse(root.querySelector("script.tx-data").textContent);
    var steps = root.querySelectorAll(".tx-step"), n = steps.length, cur = 0;
    var ctl = root.querySelector(".tx-controls");
    var phases = el("div", {"class": "tx-phases", role: "group", "aria-label": "phases"});
    var phaseButtons = {};
    data.phases.forEach(function (p) {
      var first = -1;
      data.steps.forEach(function (s, i) { if (first < 0 && s.phase === p) first = i; });
      if (first < 0) return;
      var b = el("button", {type: "button", "data-phase": p}, p);
      b.addEventListener("click", function () { show(first, true); });
      phases.appendChild(b);
      phaseButtons[p] = b;
    });
    var prev = el("button", {type: "button", "class": "tx-prev"}, "\u2190 Previous");
    var slider = el("input", {type: "range", min: 1, max: n, step: 1, value: 1, "aria-label": "step"});
    var next = el("button", {type: "button", "class": "tx-next"}, "Next \u2192");
    var where = el("span", {"class": "tx-where", "aria-live": "polite"});
    [phases, prev, slider, next, where].forEach(function (e) { ctl.appendChild(e); });
    ctl.hidden = false;
    root.classList.add("tx-live");
    root.setAttribute("tabindex", "0");
    function show(i, remember) {
      cur = Math.max(0, Math.min(n - 1, i));
      for (var k = 0; k < n; k++) steps[k].hidden = k !== cur;
      slider.value = cur + 1;
      where.textContent = "Step " + (cur + 1) + " of " + n;
      prev.disabled = cur === 0;
      next.disabled = cur === n - 1;
      for (var p in phaseButtons) phaseButtons[p].setAttribute("aria-current", p === data.steps[cur].phase);
      root.setAttribute("data-current", cur + 1);
      if (remember) {
        try { history.replaceState(null, "", "#" + ID + "-step-" + (cur + 1)); }
        catch (e) { /* a sandboxed frame may refuse */ }
      }
    }
    prev.addEventListener("click", function () { show(cur - 1, true); });
    next.addEventListener("click", function () { show(cur + 1, true); });
    slider.addEventListener("input", function () { show(+slider.value - 1, true); });
    root.addEventListener("keydown", function (e) {
      if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.key === "ArrowRight") { show(cur + 1, true); e.preventDefault(); }
      if (e.key === "ArrowLeft") { show(cur - 1, true); e.preventDefault(); }
    });
    var tables = root.querySelectorAll("table[data-click]");
    for (var t = 0; t < tables.length; t++) clickable(tables[t]);
    function clickable(table) {
      var li = table.closest(".tx-step"), s = data.steps[+li.getAttribute("data-step") - 1];
      var spec = s.tables[+table.getAttribute("data-table")];
      var out = table.parentNode.querySelector(".tx-reads");
      var heads = table.querySelectorAll("tbody th[scope=row]");
      for (var r = 0; r < heads.length; r++) {
        var b = el("button", {type: "button", "class": "tx-row", "data-row": r}, heads[r].textContent);
        heads[r].textContent = "";
        heads[r].appendChild(b);
        b.addEventListener("click", function (e) { pick(+e.currentTarget.getAttribute("data-row")); });
      }
      function pick(row) {
        var trs = table.querySelectorAll("tbody tr");
        for (var k = 0; k < trs.length; k++) trs[k].classList.toggle("tx-on", k === row);
        out.textContent = spec.rows[row] + " reads: ";
        spec.cells[row].forEach(function (w, j) {
          if (w === null) return;
          var sp = el("span", {style: "--w:" + w}, spec.cols[j] + " " + w.toFixed(2));
          if (w > 0.55) sp.className = "tx-hi";
          if (j < (spec.source || 0)) sp.classList.add("tx-src");
          out.appendChild(sp);
        });
        if (spec.share) out.appendChild(document.createTextNode(
          " \u2014 " + spec.share[row].toFixed(2) + " of it on the source"));
      }
    }
    var m = location.hash.match(new RegExp("^#" + ID + "-step-(\\d+)$"));
    show(m ? +m[1] - 1 : 0, false);
    if (m && root.scrollIntoView) root.scrollIntoView();
  }
})();"""
