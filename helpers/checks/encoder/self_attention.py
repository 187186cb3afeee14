"""Your turn 2: multi-head self-attention written with matrices (my_self_attention)."""

import math

import torch
import torch.nn.functional as F
from torch import nn

import helpers.attention
from helpers.checks import FUSED_ATTENTION, Hint, checker, close, exercise, tensor
from helpers.checks.encoder.common import KT_ERRORS, SLIP_ERRORS, VIEW_ERRORS, _full_precision, _match, _run
from helpers.checks.encoder.heads import INTERLEAVED_HINT, _merge, _split


SA_NAME = "my_self_attention(x, W_Q, W_K, W_V, W_O, h)"
SA_CASES = ((0, 3, 6, 64, 4), (1, 2, 5, 48, 6))   # seed, batch, tokens, d_model, heads


def _sa_case(seed, b, n, d_model, h):
    """(x, W_Q, W_K, W_V, W_O, h) in the paper's orientation, and nn.MultiheadAttention's output."""
    with torch.random.fork_rng(devices=[]):   # leave the notebook's random state alone
        torch.manual_seed(seed)
        mha = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).eval()
        x = torch.randn(b, n, d_model)
    with torch.no_grad():
        expected = mha(x, x, x, need_weights=False)[0]
        W_Q, W_K, W_V = (w.T.contiguous() for w in mha.in_proj_weight.split(d_model))
        W_O = mha.out_proj.weight.T.contiguous()
    return (x, W_Q, W_K, W_V, W_O, h), expected




def _self_attention(x, W_Q, W_K, W_V, W_O, h, split="right", merge="right", scale="d_k",
                    dim=-1, swap=False, softmax=True, w_o=True, transposed="", scale_after=False,
                    weights_for="QKV"):
    """Multi-head self-attention, or what one (or two) usual mistakes make of it.
    weights_for: the matrix each of Q, K, V is made with ("QQV": W_Q for the keys too;
    "x" in a place: that one is x itself, no matrix)."""
    W = {"Q": W_Q, "K": W_K, "V": W_V, "O": W_O}
    W = {name: (w.T if name in transposed else w) for name, w in W.items()}
    q, k, v = (_split(x if which == "x" else x @ W[which], h, split) for which in weights_for)
    d_model = x.shape[-1]
    d_k = d_model // h
    divide = {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d_model), "none": 1.0, "d_k, no root": d_k}
    scores = k @ q.transpose(-2, -1) if swap else q @ k.transpose(-2, -1)
    if scale_after:
        weights = torch.softmax(scores, dim=dim) / divide[scale]
    else:
        scores = scores / divide[scale]
        weights = torch.softmax(scores, dim=dim) if softmax else scores
    concat = _merge(weights @ v, merge)
    return concat @ W["O"] if w_o else concat


SPLIT_HINT = ("you split the heads with a view (or reshape) straight to (b, h, n, d_k): the shape "
              "is right, but each head then holds pieces of several tokens. Cut each token's "
              "d_model numbers into h groups, (b, n, h, d_k), then move the head axis in front of "
              "the tokens with transpose(1, 2).")
TRANSPOSED_HINT = ("you multiplied by transposed matrices (x @ W.T, as for PyTorch's stored "
                   "weights): here W_Q, W_K, W_V and W_O are in the paper's orientation, "
                   "Q = x @ W_Q and the output is concat @ W_O.")
ONE_HEAD_HINT = ("you computed one attention over all d_model columns: split Q, K and V into h "
                 "heads of d_k = d_model / h numbers first, each with its own n × n weights.")

SA_MISTAKES = [
    ({"merge": "no transpose"},
     "you joined the heads with a reshape alone: (b, h, n, d_k) reshaped to (b, n, d_model) "
     "mixes the tokens. Move the head axis back behind the tokens first, transpose(1, 2), then "
     "reshape."),
    ({"split": "no transpose", "merge": "no transpose"}, SPLIT_HINT),
    ({"split": "no transpose"}, SPLIT_HINT),
    ({"split": "interleaved", "merge": "interleaved"}, INTERLEAVED_HINT),
    ({"split": "interleaved"}, INTERLEAVED_HINT),
    ({"scale": "d_model"},
     "you divided the scores by √d_model: each head's dot product adds up only d_k = d_model / h "
     "products, so divide by √d_k."),
    ({"scale": "none"}, "you did not scale the scores: divide Q Kᵀ by √d_k before the softmax."),
    ({"scale": "d_k, no root"}, "you divided the scores by d_k: divide by its square root, √d_k."),
    ({"scale_after": True},
     "you divided by √d_k after the softmax: scale the scores, Q Kᵀ / √d_k, then take the softmax "
     "(dividing the weights afterwards makes each row sum to 1/√d_k instead of 1)."),
    ({"dim": -2},
     "your softmax runs over the queries (dim=-2): each query's weights over the keys must sum "
     "to 1, so take the softmax over the last axis, the keys (dim=-1)."),
    ({"dim": 1},
     "your softmax runs over the heads (dim=1; F.softmax without dim= also picks axis 1 of a 4-D "
     "tensor): take it over the last axis, the keys (dim=-1)."),
    ({"swap": True},
     "your scores are K Qᵀ, keys against queries: row i must hold query i against every key, "
     "Q Kᵀ."),
    ({"w_o": False}, "you forgot W_O: multiply the joined heads by W_O at the end."),
    ({"softmax": False},
     "you forgot the softmax: the weights are softmax(Q Kᵀ / √d_k) over the keys."),
    ({"transposed": "QKVO"}, TRANSPOSED_HINT),
    ({"transposed": "QKV"}, TRANSPOSED_HINT),
    ({"transposed": "O"}, TRANSPOSED_HINT),
    ({"split": "one head"}, ONE_HEAD_HINT),
    ({"split": "one head", "scale": "d_model"}, ONE_HEAD_HINT),
    ({"weights_for": "QKx"},
     "your values are x itself: V = x @ W_V, made with its own matrix like Q and K, then split "
     "into heads."),
    ({"weights_for": "QQV"},
     "your keys are made with W_Q: K = x @ W_K (each of Q, K and V has its own matrix; with W_Q "
     "for both, every token's key equals its query)."),
    ({"weights_for": "KKV"},
     "your queries are made with W_K: Q = x @ W_Q (each of Q, K and V has its own matrix)."),
    ({"weights_for": "QVK"},
     "K and V are swapped: the keys are x @ W_K (compared with the queries), the values x @ W_V "
     "(averaged with the weights)."),
]


def _sa_output(out, args, expected):
    """The learner's output as a float tensor of the expected shape, or raise Hint."""
    x, h = args[0], args[5]
    b, n, d_model = x.shape
    if isinstance(out, (tuple, list)):
        first = out[0] if out else None
        if isinstance(first, torch.Tensor) and first.shape == expected.shape:
            raise Hint("my_self_attention returned a tuple: return the output alone, one tensor "
                       f"of shape (b, n, d_model) = {tuple(expected.shape)}.")
    _full_precision(out, "The output of my_self_attention")
    out = tensor(out, "the output of my_self_attention", dtype=x.dtype)
    got = tuple(out.shape)
    if got == (b, h, n, d_model // h):
        raise Hint(f"You returned the heads, (b, h, n, d_k) = {got}: join them back to "
                   "(b, n, d_model), then multiply by W_O.")
    if got == (b, h, n, n):
        raise Hint(f"You returned the attention weights, (b, h, n, n) = {got}: multiply them by "
                   "V, join the heads and multiply by W_O.")
    if got != tuple(expected.shape):
        raise Hint(f"my_self_attention should return the input's shape (b, n, d_model) = "
                   f"{tuple(expected.shape)} for x of shape {tuple(x.shape)}, got {got}.")
    return out


SA_REFERENCE = [
    (nn.MultiheadAttention, "forward", "nn.MultiheadAttention"),
    (F, "multi_head_attention_forward", "F.multi_head_attention_forward"),
    (helpers.attention.MultiHeadAttention, "forward", "helpers.attention.MultiHeadAttention"),
    (helpers.attention, "split_heads", "helpers.attention.split_heads"),
    (helpers.attention, "merge_heads", "helpers.attention.merge_heads"),
    (helpers.attention, "attention", "helpers.attention.attention"),
    FUSED_ATTENTION,          # torch._native_multi_head_attention, the fast path of nn.MultiheadAttention
]
SA_INSTEAD = ("write the steps yourself with @, view or reshape, transpose and torch.softmax "
              "(your my_split_heads and my_merge_heads of Your turn 1 are welcome).")


@checker
def check_self_attention(my_self_attention=None):
    """my_self_attention(x, W_Q, W_K, W_V, W_O, h) equals nn.MultiheadAttention(bias=False)."""
    for i, case in enumerate(SA_CASES):
        args, expected = _sa_case(*case)
        try:
            out = _run(my_self_attention, SA_NAME, *args,
                       errors=SLIP_ERRORS + VIEW_ERRORS + (KT_ERRORS if i == 0 else []),
                       reference=SA_REFERENCE, instead=SA_INSTEAD)
            out = _sa_output(out, args, expected)
        except Hint as hint:
            if i == 0 or str(hint).startswith("Not answered yet"):
                raise
            said = str(hint).rstrip(".")
            advice = ("" if "x.shape" in said else
                      ". Read b, n and d_model from x.shape and use the h you are given")
            raise Hint(f"Right on the first batch, but on the second (x of shape "
                       f"{tuple(args[0].shape)}, h = {args[5]}): {said}{advice}.") from None
        if close(out, expected, 1e-4):
            continue
        hint = _match(out, [(lambda kw=kw, args=args: _self_attention(*args, **kw), hint)
                            for kw, hint in SA_MISTAKES])
        if hint:
            return hint
        again = _sa_output(_run(my_self_attention, SA_NAME, *args, errors=SLIP_ERRORS + VIEW_ERRORS,
                                reference=SA_REFERENCE, instead=SA_INSTEAD), args, expected)
        if not close(out, again, 1e-6):
            return ("my_self_attention gives another result each time it runs on the same x: dropout "
                    "is still on (F.dropout drops numbers unless you pass training=False). The "
                    "exercise is attention in evaluation mode: leave dropout out.")
        if i:
            _, b, n, d_model, h = SA_CASES[0]
            return (f"Right on the first batch (x of shape {(b, n, d_model)}, h = {h}) but not on "
                    f"the second ({tuple(args[0].shape)}, h = {args[5]}): read b, n and d_model "
                    "from x.shape, d_k = d_model // h, and write no fixed size in your function.")
        return ("Not equal to nn.MultiheadAttention yet: Q = x @ W_Q (and K, V), split into h "
                "heads (b, h, n, d_k), softmax(Q Kᵀ / √d_k) over the keys, times V, join the heads "
                "back to (b, n, d_model), times W_O.")
    return None


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_self_attention, helpers.attention.attention,
         lambda f: lambda x, W_Q, W_K, W_V, W_O, h: f(*(
             (x @ W).unflatten(-1, (h, -1)).transpose(1, 2) for W in (W_Q, W_K, W_V))
         )[0].transpose(1, 2).flatten(2) @ W_O)
