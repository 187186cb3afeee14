"""Checks for notebook 04 (cross-attention): a whole post-norm decoder layer on a padded batch,
the shapes of a 7-letter example through the tiny model (d_model 64, 4 heads, d_ff 256,
vocabulary 13), and the questions of "Check your understanding".
"""

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention, causal_mask
from helpers.checks import (FUSED_ATTENTION, Hint, Passed, call, checker, choice, choices, exercise, number,
                            shape)
from helpers.layers import DecoderLayer

EXPECTED = {
    "source embedded": (1, 7, 64),
    "target embedded": (1, 8, 64),
    "encoder self-attention weights": (1, 4, 7, 7),
    "FFN hidden": (1, 7, 256),
    "memory": (1, 7, 64),
    "decoder self-attention weights": (1, 4, 8, 8),
    "cross-attention weights": (1, 4, 8, 7),
    "logits": (1, 8, 13),
}

SWAP = "the source has 7 letters; the decoder input has 8 tokens (<s> and the 7 reversed letters)"
HINTS = {
    "source embedded": {
        (1, 8, 64): SWAP,
        (1, 7): "that is the shape of the token ids; each id becomes a row of d_model = 64 numbers",
        (1, 7, 13): "the embedding gives d_model = 64 numbers per token, not one per vocabulary token",
    },
    "target embedded": {
        (1, 7, 64): "the decoder input starts with <s>: 1 + 7 = 8 tokens",
        (1, 6, 64): "that is the 5-letter example of the text; here <s> and 7 letters: 8 tokens",
    },
    "encoder self-attention weights": {
        (1, 4, 8, 8): "the encoder reads the source only: 7 letters, so 7 × 7 per head",
        (1, 7, 7): "keep the head axis: one 7 × 7 table for each of the 4 heads",
        (1, 4, 7, 16): "that is Q, K or V split into heads; the weights are one score per query and key",
    },
    "FFN hidden": {
        (1, 7, 64): "the first linear layer widens each position to d_ff = 256 numbers",
        (1, 8, 256): "this is the encoder's FFN: one row per source letter, 7",
        (1, 4, 7, 256): "the FFN works on whole positions, after the heads are concatenated: no head axis",
    },
    "memory": {
        (1, 7, 256): "the second linear layer brings each position back to d_model = 64",
        (1, 8, 64): "the memory is the encoder's output: one row per source letter, 7",
        (1, 4, 7, 7): "those are attention weights; the memory holds d_model = 64 numbers per source letter",
    },
    "decoder self-attention weights": {
        (1, 4, 7, 7): "the decoder's self-attention reads the 8 decoder tokens: 8 × 8 per head",
        (1, 4, 8, 7): "that is the cross-attention; the decoder's own self-attention compares its "
                      "8 tokens with each other",
    },
    "cross-attention weights": {
        (1, 4, 7, 8): "rows are the queries, from the decoder (8 positions); columns the keys, from "
                      "the memory (7 letters)",
        (1, 4, 8, 8): "the keys come from the memory, 7 source letters, not from the decoder",
        (1, 4, 7, 7): "the queries come from the decoder (8 positions), the keys from the memory (7)",
        (1, 8, 7): "keep the head axis: each of the 4 heads has its own 8 × 7 table",
    },
    "logits": {
        (1, 8, 64): "the output layer multiplies by Eᵀ (64 × 13): one score per vocabulary token",
        (1, 7, 13): "one prediction per decoder position: 8 of them",
        (1, 8, 37000): "the tiny model's vocabulary has 13 tokens",
        (1, 13): "the decoder predicts at every one of its 8 positions at once",
    },
}


def _check_dict(shapes):
    if shapes is None or shapes is Ellipsis:
        raise Hint("Not answered yet: fill in the shapes in the dictionary.")
    if not isinstance(shapes, dict):
        raise Hint(f"shapes should be the dictionary of the exercise, got {type(shapes).__name__}.")
    for name, expected in EXPECTED.items():
        if name not in shapes:
            raise Hint(f"The dictionary has no entry {name!r}: keep the names of the exercise.")
        value = shapes[name]
        if value is None:
            raise Hint(f"Not answered yet: the shape of the {name}.")
        got = shape(value, name)
        if got != expected:
            hint = HINTS[name].get(got, "write the axes step by step: batch 1, 7 source letters, "
                                        "8 decoder tokens, h = 4, d_model = 64, d_ff = 256, 13 tokens")
            raise Hint(f"The {name}: {got} is not right; {hint}.")


def _check_hidden(hidden_cells):
    n = number(hidden_cells, "hidden_cells")
    wrong = {36: "36 cells are visible (the diagonal and below); the mask hides those above the "
                 "diagonal: 8 · 7 / 2",
             56: "8 · 7 = 56 counts both triangles; the mask hides only the cells above the "
                 "diagonal: half of that",
             112: "That is all 4 heads together; count one head's 8 × 8 table",
             21: "The decoder reads 8 tokens (<s> and 7 letters), not 7",
             15: "15 is for 6 tokens; the decoder here reads 8",
             64: "64 is the whole 8 × 8 table; the mask hides only the cells above the diagonal",
             32: "32 is half of the 8 × 8 table, half the diagonal with it; the diagonal stays visible "
                 "(each position reads itself): (64 − 8) / 2"}
    if n != 28:
        raise Hint(wrong.get(n, "Count the cells above the diagonal of one head's 8 × 8 table: "
                                "row i hides 8 − i of them, or n(n − 1)/2 in all") + ".")


def _check_not_square(not_square):
    if not_square is None or not_square is Ellipsis:
        raise Hint("Not answered yet: which attention is not square?")
    if not isinstance(not_square, str):
        raise Hint("not_square should be one of the strings 'encoder self', 'decoder self', 'cross'.")
    answer = " ".join(not_square.strip().strip("'\"").lower().replace("-", " ").split())
    answer = answer.removesuffix(" attention").removesuffix(" weights")
    if answer in ("cross", "encoder decoder"):
        return
    if answer in ("encoder self", "encoder", "encoder self attention"):
        raise Hint("The encoder's self-attention compares the 7 source letters with each other: "
                   "7 × 7, square.")
    if answer in ("decoder self", "decoder", "masked", "masked self", "decoder masked self",
                  "decoder self attention", "masked self attention"):
        raise Hint("The decoder's self-attention compares its 8 tokens with each other: 8 × 8, "
                   "square (with the upper triangle hidden).")
    raise Hint(f"Answer with one of 'encoder self', 'decoder self', 'cross' (one attention), "
               f"not {not_square!r}.")


@checker
def check_guided_shapes(shapes, hidden_cells, not_square):
    """The 7-letter example: every shape, the hidden cells of one head, the non-square one."""
    _check_dict(shapes)
    _check_hidden(hidden_cells)
    _check_not_square(not_square)


# --- The central exercise: a whole decoder layer on a padded batch ----------------------------

D_MODEL, HEADS, D_FF = 64, 4, 256
LAYER = "my_decoder_layer(y, memory, src_pad, L)"
RIGHT_STEPS = ("1. y = norm1(y + self-attention of y with the causal mask); 2. y = norm2(y + "
               "cross-attention with queries from y, keys and values from memory, the padded source "
               "tokens hidden as keys); 3. y = norm3(y + FFN(y)), the FFN being linear1, ReLU, linear2")


INSTEAD = ("write the three sublayers yourself: mha_forward with L.self_attn or L.multihead_attn as "
           "its A (their weights are yours to use, their forward is what the check compares with), "
           "each with its mask, then L.norm1, L.norm2, L.norm3 and L.linear1, L.linear2.")
SUBLAYERS = "L._sa_block, L._mha_block or L._ff_block, nn.TransformerDecoderLayer's own sublayers"
REFERENCES = [
    (nn.TransformerDecoderLayer, "forward", "nn.TransformerDecoderLayer's forward (L(...) itself)"),
    (nn.TransformerDecoderLayer, "_sa_block", SUBLAYERS),
    (nn.TransformerDecoderLayer, "_mha_block", SUBLAYERS),
    (nn.TransformerDecoderLayer, "_ff_block", SUBLAYERS),
    (nn.MultiheadAttention, "forward", "L.self_attn(...) or L.multihead_attn(...), the "
                                       "nn.MultiheadAttention inside nn.TransformerDecoderLayer"),
    (F, "multi_head_attention_forward", "F.multi_head_attention_forward, the attention inside "
                                        "nn.TransformerDecoderLayer"),
    (DecoderLayer, "forward", "the course's DecoderLayer (helpers.layers), equal to "
                              "nn.TransformerDecoderLayer"),
    (MultiHeadAttention, "forward", "the course's MultiHeadAttention (helpers.attention), equal to "
                                    "nn.MultiheadAttention"),
    FUSED_ATTENTION,     # torch._native_multi_head_attention, torch._transformer_decoder_... under any name
]


def _run(fn, L, y, memory, src_pad):
    """The learner's layer on a fresh copy of L, with the reference's forward made unusable."""
    return call(fn, LAYER, y, memory, src_pad, copy.deepcopy(L), reference=REFERENCES, instead=INSTEAD)


def _case(seed, n_tgt, lengths):
    """A moved post-norm nn.TransformerDecoderLayer (eval), y, memory and the source padding mask."""
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(seed)
        layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.1, batch_first=True,
                                           norm_first=False)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    n_src = max(lengths)
    y = torch.randn(len(lengths), n_tgt, D_MODEL, generator=g)
    memory = torch.randn(len(lengths), n_src, D_MODEL, generator=g)
    src_pad = torch.arange(n_src)[None, :] >= torch.tensor(lengths)[:, None]   # True = padding
    return layer.eval(), y, memory, src_pad


def _truth(layer, y, memory, src_pad):
    """nn.TransformerDecoderLayer itself, in float64, with the causal and the padding masks."""
    ref = copy.deepcopy(layer).double()
    with torch.no_grad():
        return ref(y.double(), memory.double(), tgt_mask=causal_mask(y.shape[1]),
                   memory_key_padding_mask=src_pad)


def _attend(q_in, kv_in, attn, hidden=None, scale="d_k", empty="nan"):
    """Multi-head attention with the weights of attn (float64); hidden: True = -inf in the scores;
    scale: the scores divided by √d_k (right) or √d_model; empty: what a query whose keys are all
    hidden reads, "nan" (a softmax of -inf only), "zero" (scaled_dot_product_attention's 0 weights)
    or "uniform" (a large finite negative number, -1e9: every key equally)."""
    b, n_q, d = q_in.shape
    h = attn.num_heads
    w, bias = attn.in_proj_weight.double(), attn.in_proj_bias.double()
    q, k, v = (t.view(b, -1, h, d // h).transpose(1, 2) for t in (
        q_in @ w[:d].T + bias[:d], kv_in @ w[d:2 * d].T + bias[d:2 * d], kv_in @ w[2 * d:].T + bias[2 * d:]))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h if scale == "d_k" else d)
    weights = torch.softmax(scores, dim=-1)
    if hidden is not None:
        weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        full = hidden.expand(scores.shape).all(-1, keepdim=True)
        if empty == "zero":
            weights = weights.masked_fill(full, 0.0)
        elif empty == "uniform":
            weights = torch.where(full, 1.0 / scores.shape[-1], weights)
    heads = (weights @ v).transpose(1, 2).reshape(b, n_q, d)
    return heads @ attn.out_proj.weight.double().T + attn.out_proj.bias.double()


def _norm(x, norm):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], norm.weight.double(), norm.bias.double(),
                                          norm.eps)


def _layer(y, memory, src_pad, L, self_hidden="causal", cross_hidden="keys", cross_from="memory",
           queries_from="y", wiring=("post", "post", "post"), norms=(1, 2, 3), activation="relu",
           attns=("self_attn", "multihead_attn"), scale="d_k", order=(0, 1, 2), empty="nan"):
    """The decoder layer with one mistake or another; float64. None when the mistake cannot run.
    order: which sublayers run, in which order (0 self-attention, 1 cross-attention, 2 FFN);
    norms and wiring go with the places, in order."""
    y, memory = y.double(), memory.double()
    y_in = y
    n_t, n_s = y.shape[1], memory.shape[1]
    nt_by_ns = torch.ones(n_t, n_s, dtype=torch.bool).triu(1)
    keys, rows = src_pad[:, None, None, :], src_pad[:, None, :, None]
    masks = {"causal": causal_mask(n_t), None: None, "keys": keys, "inverted": ~keys,
             "causal+keys": nt_by_ns | keys, "cross causal": nt_by_ns, "rows": rows,
             "inverted causal": ~causal_mask(n_t), "transposed causal": causal_mask(n_t).T,
             "diagonal": torch.ones(n_t, n_t, dtype=torch.bool).triu()}
    norm = [getattr(L, f"norm{i}") for i in norms]
    self_attn, cross_attn = (getattr(L, name) for name in attns)

    def cross(x):
        queries = {"memory": memory, "input": y_in}.get(queries_from, x)
        return _attend(queries, memory if cross_from == "memory" else x, cross_attn, masks[cross_hidden],
                       scale)

    def ffn(x):
        hidden = x @ L.linear1.weight.double().T + L.linear1.bias.double()
        hidden = {"relu": torch.relu, "gelu": F.gelu, None: lambda t: t}[activation](hidden)
        return hidden @ L.linear2.weight.double().T + L.linear2.bias.double()

    sublayers = [lambda x: _attend(x, x, self_attn, masks[self_hidden], scale, empty), cross, ffn]
    sublayers = [sublayers[i] for i in order]
    try:
        for sub, n, how in zip(sublayers, norm[:len(order)], wiring[:len(order)], strict=True):
            if how == "post":
                y = _norm(y + sub(y), n)
            elif how == "pre":
                y = y + sub(_norm(y, n))
            elif how == "norm sublayer":
                y = y + _norm(sub(y), n)
            elif how == "no norm":
                y = y + sub(y)
            elif how == "no residual":
                y = _norm(sub(y), n)
    except RuntimeError:     # a mask or a swap whose shapes cannot fit this batch
        return None
    return y


def _layer_mistakes():
    """(hint, keyword arguments of _layer), the likely mistakes first."""
    causal = ("You applied the causal mask to the cross-attention: the whole source is known from "
              "the start, so the cross-attention hides only the source's padding (sections 2 and 3).")
    yield causal, {"cross_hidden": "causal+keys"}
    yield causal, {"cross_hidden": "cross causal"}
    swapped = ("Queries and keys are swapped in the cross-attention: the queries come from the "
               "decoder (y), the keys and values from the memory (section 2).")
    for hidden in ("keys", None, "rows"):
        yield swapped, {"queries_from": "memory", "cross_from": "y", "cross_hidden": hidden}
    yield ("The padding mask is missing in the cross-attention: the padded source tokens get weight. "
           "Hide them as keys, with src_pad reshaped to (batch, 1, 1, n_src) (section 3).",
           {"cross_hidden": None})
    yield ("The padding mask is inverted: src_pad is True on the padding, the positions to hide; "
           "~src_pad hides the real tokens instead (section 3).", {"cross_hidden": "inverted"})
    yield ("The padding is hidden on the query axis: a padded source token is a key that no decoder "
           "position may read, so the mask is (batch, 1, 1, n_src), not (batch, 1, n_src, 1) "
           "(section 3).", {"cross_hidden": "rows"})
    never_read = ("The second sublayer never reads the memory: in the cross-attention the keys and "
                  "values come from the memory, the queries from y (section 2).")
    for hidden in ("keys", None, "causal"):
        yield never_read, {"cross_from": "y", "cross_hidden": hidden}
    yield ("The self-attention has no causal mask: each decoder position may read only itself and "
           "the positions before it, causal_mask(n_tgt) (section 1).", {"self_hidden": None})
    yield ("Your causal mask is inverted: causal_mask(n) is True above the diagonal, on the future "
           "to hide; ~causal_mask(n) hides each position itself and its past, and leaves the last "
           "position nothing to read (hence NaN) (section 1).", {"self_hidden": "inverted causal"})
    diagonal = ("Your causal mask hides the diagonal too: each position may read itself, so only the "
                "cells above the diagonal are hidden, triu(1) as in causal_mask(n); the first position "
                "is left with nothing to read (NaN with -inf, a row of zeros with "
                "scaled_dot_product_attention, every position read equally with -1e9) (section 1).")
    for empty in ("nan", "zero", "uniform"):
        yield diagonal, {"self_hidden": "diagonal", "empty": empty}
    yield ("Your causal mask is transposed: it hides the past (the cells below the diagonal) and lets "
           "each position read the future. causal_mask(n) is True above the diagonal, triu(1): key j is "
           "hidden from query i when j > i (section 1).", {"self_hidden": "transposed causal"})
    yield ("You divided the scores by √d_model: each head's dot product adds d_k = d_model / h "
           "products, so divide by √d_k (notebook 03, section 2).", {"scale": "d_model"})
    yield ("Your layer stops after two sublayers: the feed-forward sublayer follows the "
           "cross-attention, y = norm3(y + FFN(y)).", {"order": (0, 1)})
    ffn_first = ("The feed-forward layer comes before the cross-attention in your layer: the order is "
                 "masked self-attention, cross-attention, then the FFN, each with add & norm.")
    yield ffn_first, {"order": (0, 2, 1)}
    yield ffn_first, {"order": (0, 2, 1), "norms": (1, 3, 2)}
    yield ("The cross-attention's queries come from the output of the first sublayer (y after "
           "norm1), not from the layer's input: each sublayer reads what the one before it made.",
           {"queries_from": "input"})
    modules = ("The attention modules are mixed up: the masked self-attention uses L.self_attn's "
               "weights, the cross-attention L.multihead_attn's.")
    for attns in (("multihead_attn", "self_attn"), ("self_attn", "self_attn"),
                  ("multihead_attn", "multihead_attn")):
        yield modules, {"attns": attns}
    yield ("You wrote pre-norm, y + Sublayer(LayerNorm(y)): this layer is post-norm (norm_first=False, "
           "as in the paper), y = LayerNorm(y + Sublayer(y)).", {"wiring": ("pre",) * 3})
    yield ("A norm is in the wrong place: normalise the sum y + Sublayer(y), not the sublayer's "
           "output alone.", {"wiring": ("norm sublayer",) * 3})
    names = ("masked self-attention", "cross-attention", "feed-forward layer")
    for i, name in enumerate(names):
        wiring = ["post"] * 3
        wiring[i] = "no norm"
        yield (f"The LayerNorm after the {name} (L.norm{i + 1}) is missing: each of the three "
               "sublayers ends with add & norm.", {"wiring": tuple(wiring)})
        wiring[i] = "pre"
        yield (f"The LayerNorm of the {name} (L.norm{i + 1}) is in the wrong place: post-norm "
               "normalises after the addition, LayerNorm(y + Sublayer(y)).", {"wiring": tuple(wiring)})
        wiring[i] = "no residual"
        yield (f"The residual connection around the {name} is missing: add the sublayer's input "
               "before the norm, LayerNorm(y + Sublayer(y)).", {"wiring": tuple(wiring)})
    yield ("The norms are mixed up: norm1 follows the self-attention, norm2 the cross-attention, "
           "norm3 the feed-forward layer.", {"norms": (1, 1, 1)})
    for order in ((2, 1, 3), (1, 3, 2), (3, 2, 1), (2, 3, 1), (3, 1, 2)):
        yield ("The norms are mixed up: norm1 follows the self-attention, norm2 the cross-attention, "
               "norm3 the feed-forward layer.", {"norms": order})
    yield "The feed-forward layer has lost its ReLU: linear2(relu(linear1(y))).", {"activation": None}
    yield ("The feed-forward layer uses GELU: this layer's (the paper's) is ReLU, linear2(relu(linear1(y))); "
           "GELU is GPT-2's (notebook 03, section 5).", {"activation": "gelu"})


def _matches(got, wrong, tol=1e-4):
    """got equals wrong (same shape, NaN at the same places, close elsewhere)."""
    if wrong is None or got.shape != wrong.shape:
        return False
    nan = torch.isnan(wrong)
    if not torch.equal(torch.isnan(got), nan):
        return False
    return bool(((got - wrong).abs()[~nan] <= tol).all()) if (~nan).any() else True


def _as_output(out):
    """The learner's output as a float64 tensor, NaN kept (checked against the mistakes first)."""
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        raise Hint(f"my_decoder_layer should return one tensor, got a {type(out).__name__} of "
                   f"{len(out)} items (return only the layer's output, (batch, n_tgt, d_model)).")
    if not isinstance(out, torch.Tensor):
        raise Hint(f"my_decoder_layer should return a torch tensor, got {type(out).__name__}.")
    if out.is_complex() or out.dtype == torch.bool:
        raise Hint(f"my_decoder_layer should return real numbers, got dtype {out.dtype}.")
    if out.dtype in (torch.float16, torch.bfloat16):
        raise Hint(f"my_decoder_layer returns {str(out.dtype).removeprefix('torch.')}: compute in float32, "
                   "the inputs' dtype (half precision keeps about 3 digits, too few to compare a layer).")
    if not out.is_floating_point():
        raise Hint(f"my_decoder_layer returns whole numbers ({str(out.dtype).removeprefix('torch.')}): "
                   "keep the float32 numbers the layer computes, without rounding or .long().")
    return out.detach().to(torch.float64)


_PREPARED = {}


def _prepared(seed, n_tgt, lengths):
    """A case, its right output and the output of every mistake (computed once)."""
    key = (seed, n_tgt, lengths)
    if key not in _PREPARED:
        L, y, memory, src_pad = _case(*key)
        wrong = [(hint, _layer(y, memory, src_pad, L, **how)) for hint, how in _layer_mistakes()]
        _PREPARED[key] = L, y, memory, src_pad, _truth(L, y, memory, src_pad), wrong
    return _PREPARED[key]


def _diagnose(got, wrong):
    """The hint of the first mistake whose output equals got, or None."""
    return next((hint for hint, out in wrong if _matches(got, out)), None)


def _diagnose_square(fn):
    """Run fn on a batch where n_tgt = n_src (5), so that a swap or a mask on the wrong axis
    runs instead of failing, and name the mistake it makes there (or None)."""
    L, y, memory, src_pad, want, wrong = _prepared(2, 5, (5, 3, 4))
    try:
        got = _as_output(_run(fn, L, y, memory, src_pad))
    except Hint:
        return None
    return None if _matches(got, want) else _diagnose(got, wrong)


class _FirstNaN(torch.overrides.TorchFunctionMode):
    """While active, notes the first torch operation that turned numbers without NaN into NaN.
    (It runs inside the learner's call, where this module's functions are blocked: it uses none.)"""

    def __init__(self):
        super().__init__()
        self.op = None

    @staticmethod
    def has_nan(t):
        if isinstance(t, (tuple, list)):
            return any(_FirstNaN.has_nan(x) for x in t)
        return isinstance(t, torch.Tensor) and t.is_floating_point() and bool(torch.isnan(t).any())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.op is None and self.has_nan(out) and not any(
                self.has_nan(a) for a in [*args, *(kwargs or {}).values()]):
            self.op = getattr(func, "__name__", str(func)).strip("_")
        return out


ROOTS = ("sqrt", "rsqrt", "pow", "rpow", "log", "log2", "log10", "log1p")


def _nan_hint(fn, L, y, memory, src_pad):
    """The hint for an output with NaN, from the operation that first made one."""
    mode = _FirstNaN()
    try:
        with mode:
            _run(fn, L, y, memory, src_pad)
    except Hint:
        pass
    op = mode.op or ""
    if "softmax" in op:
        return ("Your output contains NaN: some query has every key hidden (a softmax over only "
                "-inf). Check which positions each mask hides.")
    if op in ROOTS:
        return (f"Your output contains NaN, made by {op} of negative numbers, not by a mask: this "
                "layer's one square root is LayerNorm's √(σ² + ε), whose σ² (the mean of the squared "
                "deviations) is never negative, and the FFN's activation is ReLU, max(0, ·): no root, "
                "no log.")
    made = f", first made by {op}" if op else ""
    return (f"Your output contains NaN{made}: 0/0, inf − inf or 0 · inf somewhere (a softmax over only "
            "-inf gives it too); check each step's numbers on a small batch.")


class _OneThread:
    """Tiny tensors: one thread is fastest, and far faster when the cores are shared."""

    def __enter__(self):
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.threads)


@checker
def check_decoder_layer(fn):
    """The learner's post-norm decoder layer against nn.TransformerDecoderLayer on padded batches."""
    with _OneThread():
        return _check_decoder_layer(fn)


def _check_decoder_layer(fn):
    cases = ((0, 6, (5, 3, 4)), (1, 4, (7, 2)))
    for number_, (seed, n_tgt, lengths) in enumerate(cases):
        L, y, memory, src_pad, want, wrong = _prepared(seed, n_tgt, lengths)
        try:
            got = _as_output(_run(fn, L, y, memory, src_pad))
        except Hint as h:
            if " raised " not in str(h):
                raise
            found = _diagnose_square(fn)
            if found:
                return found
            said = str(h).split(" (check each tensor's shape")[0].rstrip(".")
            if "masked_fill" in said and "boolean" in said:
                said += (". mha_forward's hidden is a boolean mask, True where hidden: give it "
                         "causal_mask(n) or the reshaped src_pad themselves, not additive_mask(...)")
            elif "not ReLU" in said:
                said += (". nn.ReLU is a module, to create before calling it, nn.ReLU()(x); or call the "
                         "function torch.relu(x)")
            elif "'LayerNorm'" in said:
                said += (". L.norm1 is a module: call it, L.norm1(x); helpers.norms.layer_norm takes its "
                         "γ, β and ε: layer_norm(x, L.norm1.weight, L.norm1.bias, L.norm1.eps)")
            elif "size of tensor" in said or "must match" in said or "shape" in said:
                said += (". Each mask must fit its scores: causal_mask(n_tgt), (n_tgt, n_tgt), in "
                         "the self-attention, whose scores are (batch, heads, n_tgt, n_tgt); src_pad "
                         "as (batch, 1, 1, n_src) in the cross-attention, whose scores are (batch, "
                         "heads, n_tgt, n_src), queries from y, keys and values from memory")
            if number_ > 0:
                return (f"Right on the first batch, but on a second one (n_tgt {n_tgt}, n_src "
                        f"{max(lengths)}): {said}. Use the sizes of the tensors you are given "
                        "(y.shape[1], memory.shape[1]), not fixed numbers.")
            return said + "."
        if _matches(got, want):
            continue
        found = _diagnose(got, wrong)
        if found:
            return found
        b, n_src = src_pad.shape
        if got.shape == (b, n_src, D_MODEL) and n_src != n_tgt:
            return ("Your output has one row per source token: the queries of the cross-attention "
                    "come from the decoder (y), so the layer keeps y's shape (batch, n_tgt, d_model).")
        if got.shape != want.shape:
            return f"The output should have y's shape {tuple(want.shape)}, got {tuple(got.shape)}."
        again = _as_output(_run(fn, L, y, memory, src_pad))
        if again.shape != got.shape or not torch.allclose(got, again, rtol=0, atol=1e-6, equal_nan=True):
            return ("my_decoder_layer gives another result each time it runs on the same inputs: "
                    "dropout is still on (F.dropout drops numbers unless you pass training=False). "
                    "The exercise is the layer in evaluation mode: leave dropout out.")
        if torch.isnan(got).any():
            return _nan_hint(fn, L, y, memory, src_pad)
        if torch.isinf(got).any():
            return ("Your output contains inf: -inf belongs in the scores only, before the softmax; "
                    "check where your masks are applied.")
        if number_ > 0:
            return (f"Right on the first batch but not on a second one (n_tgt {n_tgt}, n_src "
                    f"{max(lengths)}): use the sizes of the tensors you are given, not fixed numbers.")
        return f"Not the post-norm decoder layer yet: {RIGHT_STEPS}."
    return Passed("Your layer equals nn.TransformerDecoderLayer (post-norm, evaluation mode) on two "
                  "padded batches of different sizes.")


# --- Check your understanding -----------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_WHERE_QKV_COME_FROM = (
    "b",
    "Each decoder position asks its question (the query); the source answers through the "
    "memory's keys (what to match) and values (what to take).",
    {"a": "Swapped: the queries come from the decoder, each target position asking its question; "
          "the keys and values come from the memory, the source's answers (section 2).",
     "c": "Keys and values come from the memory, not the decoder: a position compares its query "
          "with the source tokens' keys, then takes those same tokens' values (section 2).",
     "d": "That is the decoder's own self-attention: in the cross-attention the keys and values "
          "come from the memory, which is how the source enters every decoder layer (section 2)."},
)


@checker
def check_where_qkv_come_from(answer_1):
    """Question 1: where the cross-attention's queries, keys and values come from."""
    return choice(answer_1, "answer_1", *_WHERE_QKV_COME_FROM)


CROSS_SHAPE_HINTS = {
    (3, 4, 5, 6): "Rows are the queries, from the decoder (6 positions); columns are the keys, from "
                  "the memory (5 source tokens) (section 2).",
    (3, 4, 6, 6): "The keys come from the memory, 5 source tokens, not from the decoder's 6 positions "
                  "(section 2).",
    (3, 4, 5, 5): "The queries come from the decoder: one row per target position, 6 of them "
                  "(section 2).",
    (3, 6, 5): "Keep the head axis: each of the 4 heads has its own 6 × 5 table (section 2 prints "
               "(1, 4, 6, 5) for one pair).",
    (1, 4, 6, 5): "That is for one pair; the batch here holds 3, and the batch axis comes first.",
    (4, 6, 5): "Keep the batch axis first: 3 pairs, each with 4 tables of 6 × 5.",
    (3, 4, 6, 16): "(6, 16) is one head's queries (d_k = 64 / 4 = 16); the weights hold one number per "
                   "query and key (section 2).",
    (3, 6, 5, 4): "The head axis comes second, as nn.MultiheadAttention gives it with "
                  "average_attn_weights=False: (batch, heads, queries, keys) (section 2).",
    (3, 6, 4, 5): "The head axis comes second, as nn.MultiheadAttention gives it with "
                  "average_attn_weights=False: (batch, heads, queries, keys) (section 2).",
}


# Question 2's sizes; the answer is built from them: (batch, heads, target positions, source tokens).
Q2_PAIRS, Q2_HEADS, Q2_TARGETS, Q2_SOURCES = 3, 4, 6, 5
_CROSS_SHAPE = (Q2_PAIRS, Q2_HEADS, Q2_TARGETS, Q2_SOURCES)
_CROSS_SHAPE_WHY = ("(batch, heads, target positions, source tokens): one row per query from the decoder, "
                    "one column per key from the memory, and no reason to be square.")


@checker
def check_cross_weights_shape(answer_2):
    """Question 2: the shape of the cross-attention weights for 3 pairs, 6 targets, 5 sources, 4 heads."""
    got = shape(answer_2, "answer_2")
    if got == _CROSS_SHAPE:
        return Passed(_CROSS_SHAPE_WHY)
    return CROSS_SHAPE_HINTS.get(got, "The weights are (batch, heads, target positions, source tokens): "
                                      "count each axis for 3 pairs, 4 heads, 6 targets, 5 sources "
                                      "(section 2).")


_DECODER_MASKS = (
    ["a", "b", "c", "d"],
    {"a", "b"},
    "The causal mask keeps each position from reading the token it must write; the source "
    "padding mask keeps padded source tokens out of the cross-attention; padding at the end of "
    "the target is already behind every real position, and the loss skips it.",
    {"a": "The decoder's self-attention needs the causal mask: without it a position reads the "
          "token it has to write, which sits one place further in its own input (section 1).",
     "b": "The cross-attention must hide the source's padding: otherwise decoder positions read "
          "padded memory rows, and the answer depends on how much padding a batch has "
          "(section 3).",
     "c": "No target padding mask is needed here: the padding sits at the end, so the causal "
          "mask already hides it from every real position, and the loss ignores the padded "
          "positions' own outputs (section 3).",
     "d": "The cross-attention has no causal mask: the whole source is known from the start, "
          "and every decoder position may read all of it (section 2)."},
)


@checker
def check_decoder_masks(answer_3):
    """Question 3: which masks a decoder layer needs for this course's padded batches."""
    return choices(answer_3, "answer_3", *_DECODER_MASKS)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_decoder_layer, nn.TransformerDecoderLayer.forward,
         lambda f: lambda y, memory, src_pad, L: f(
             L, y, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(y.shape[1]),
             memory_key_padding_mask=src_pad))
