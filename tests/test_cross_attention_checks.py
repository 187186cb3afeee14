"""The checks of notebook 04 pass right answers and name each typical mistake.

Every wrong answer is written here as a learner would write it, independently of the checker's
own list of mistakes: attention with einsum and torch.where, or PyTorch's modules.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from helpers.attention import causal_mask
from helpers.checks.cross_attention import (check_cross_weights_shape, check_decoder_layer,
                                            check_decoder_masks, check_guided_shapes,
                                            check_where_qkv_come_from)
from printed import printed


def said(check, *args, capsys):
    """The one line a checker prints."""
    return printed(capsys, check, *args)


# --- a learner's building blocks, written with einsum ------------------------------------------

def attend(q_in, kv_in, A, hidden=None):
    """Multi-head attention with A's weights; hidden (True = -inf) broadcast to (b, h, n_q, n_k)."""
    d, h = q_in.shape[-1], A.num_heads
    Wq, Wk, Wv = A.in_proj_weight.chunk(3)
    bq, bk, bv = A.in_proj_bias.chunk(3)

    def heads(x, W, b):
        return (x @ W.T + b).unflatten(-1, (h, d // h))            # (b, n, h, d_k)

    q, k, v = heads(q_in, Wq, bq), heads(kv_in, Wk, bk), heads(kv_in, Wv, bv)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // h)
    if hidden is not None:
        scores = torch.where(hidden, torch.tensor(float("-inf")), scores)
    out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).flatten(-2)
    return A.out_proj(out)


def norm(x, n):
    return F.layer_norm(x, (x.shape[-1],), n.weight, n.bias, n.eps)


def ffn(y, L):
    return L.linear2(torch.relu(L.linear1(y)))


def keys(src_pad):
    return src_pad[:, None, None, :]


# --- right answers, two ways ------------------------------------------------------------------

def right_einsum(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def right_helpers_norms(y, memory, src_pad, L):
    """With L's own norms, notebook 02's layer_norm, scaled_dot_product_attention and nn.ReLU."""
    from helpers.norms import layer_norm
    n, d, h = y.shape[1], y.shape[-1], L.self_attn.num_heads

    def mha(q_in, kv_in, A, mask):
        q, k, v = (F.linear(t, w, b).view(t.shape[0], -1, h, d // h).transpose(1, 2) for t, w, b in
                   zip((q_in, kv_in, kv_in), A.in_proj_weight.chunk(3), A.in_proj_bias.chunk(3), strict=True))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)          # True = may read
        return A.out_proj(out.transpose(1, 2).flatten(2))

    y = L.norm1(y + mha(y, y, L.self_attn, causal_mask(n)))
    y = layer_norm(y + mha(y, memory, L.multihead_attn, keys(src_pad)), L.norm2.weight, L.norm2.bias,
                   L.norm2.eps)
    return L.norm3(y + L.linear2(torch.nn.ReLU()(L.linear1(y))))


@pytest.mark.parametrize("fn", [right_einsum, right_helpers_norms])
def test_right_decoder_layers_pass(fn, capsys):
    assert said(check_decoder_layer, fn, capsys=capsys).startswith("Check passed. Your layer equals")


# --- the reference itself is not an answer ----------------------------------------------------

def calls_the_layer(y, memory, src_pad, L):
    """The call the task once showed for trying the function out."""
    return L(y, memory, tgt_mask=causal_mask(y.shape[1]), memory_key_padding_mask=src_pad)


def calls_the_class(y, memory, src_pad, L):
    return torch.nn.TransformerDecoderLayer.forward(L, y, memory, tgt_mask=causal_mask(y.shape[1]),
                                                    memory_key_padding_mask=src_pad)


def calls_a_decoder_stack(y, memory, src_pad, L):
    stack = torch.nn.TransformerDecoder(L, num_layers=1)
    return stack(y, memory, tgt_mask=causal_mask(y.shape[1]), memory_key_padding_mask=src_pad)


def calls_its_attention_modules(y, memory, src_pad, L):
    """With PyTorch's attention modules, their own norms, and an additive float mask."""
    n = y.shape[1]
    causal = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    y = L.norm1(y + L.self_attn(y, y, y, attn_mask=causal, need_weights=False)[0])
    y = L.norm2(y + L.multihead_attn(y, memory, memory, key_padding_mask=src_pad, need_weights=False)[0])
    return L.norm3(y + L.linear2(F.relu(L.linear1(y))))


def calls_its_cross_attention_only(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + L.multihead_attn(y, memory, memory, key_padding_mask=src_pad)[0], L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def calls_its_sublayer_blocks(y, memory, src_pad, L):
    y = L.norm1(y + L._sa_block(y, causal_mask(y.shape[1]), None))
    y = L.norm2(y + L._mha_block(y, memory, None, src_pad))
    return L.norm3(y + L._ff_block(y))


def calls_the_functional_attention(y, memory, src_pad, L):
    from torch.nn.functional import multi_head_attention_forward as mhaf

    def mha(q, kv, A, **masks):
        out = mhaf(q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), A.embed_dim, A.num_heads,
                   A.in_proj_weight, A.in_proj_bias, None, None, False, 0.0, A.out_proj.weight,
                   A.out_proj.bias, training=False, need_weights=False, **masks)[0]
        return out.transpose(0, 1)

    y = norm(y + mha(y, y, L.self_attn, attn_mask=causal_mask(y.shape[1])), L.norm1)
    y = norm(y + mha(y, memory, L.multihead_attn, key_padding_mask=src_pad), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def calls_the_course_layer(y, memory, src_pad, L):
    from helpers.attention import additive_mask
    from helpers.layers import DecoderLayer
    ours = DecoderLayer(64, 4, 256).eval()
    ours.load_state_dict({k.replace("multihead_attn.", "cross_attn."): v for k, v in L.state_dict().items()})
    return ours(y, memory, additive_mask(causal=causal_mask(y.shape[1])), additive_mask(padding=src_pad))


def calls_the_course_attention(y, memory, src_pad, L):
    from helpers.attention import MultiHeadAttention, additive_mask
    self_attn, cross = MultiHeadAttention(64, 4), MultiHeadAttention(64, 4)
    self_attn.load_state_dict(L.self_attn.state_dict())
    cross.load_state_dict(L.multihead_attn.state_dict())
    y = norm(y + self_attn(y, mask=additive_mask(causal=causal_mask(y.shape[1]))), L.norm1)
    y = norm(y + cross(y, memory, mask=additive_mask(padding=src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


@pytest.mark.parametrize("fn, words", [
    (calls_the_layer, "calls nn.TransformerDecoderLayer's forward (L(...) itself)"),
    (calls_the_class, "calls nn.TransformerDecoderLayer's forward"),
    (calls_a_decoder_stack, "calls nn.TransformerDecoderLayer's forward"),
    (calls_its_attention_modules, "calls L.self_attn(...) or L.multihead_attn(...)"),
    (calls_its_cross_attention_only, "calls L.self_attn(...) or L.multihead_attn(...)"),
    (calls_its_sublayer_blocks, "calls L._sa_block"),
    (calls_the_functional_attention, "calls F.multi_head_attention_forward"),
    (calls_the_course_layer, "calls the course's DecoderLayer"),
    (calls_the_course_attention, "calls the course's MultiHeadAttention"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_the_reference_itself_is_named(fn, words, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line and "the very reference" in line and "mha_forward" in line, line


def test_the_reference_works_again_after_the_check(capsys):
    said(check_decoder_layer, calls_the_layer, capsys=capsys)
    layer = torch.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).eval()
    x = torch.randn(1, 3, 8)
    assert layer(x, x).shape == (1, 3, 8)
    assert torch.nn.MultiheadAttention(8, 2, batch_first=True)(x, x, x)[0].shape == (1, 3, 8)


# --- one wrong function per mistake -------------------------------------------------------------

def causal_in_cross(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, causal_mask(y.shape[1]) | keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def causal_instead_of_padding(y, memory, src_pad, L):
    n_t, n_s = y.shape[1], memory.shape[1]
    y = norm(y + attend(y, y, L.self_attn, causal_mask(n_t)), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, torch.ones(n_t, n_s, dtype=torch.bool).triu(1)),
             L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def queries_from_memory(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(memory, y, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def queries_from_memory_no_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(memory, y, L.multihead_attn), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def no_padding_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def inverted_padding_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad == False)), L.norm2)  # noqa: E712
    return norm(y + ffn(y, L), L.norm3)


def padding_on_query_axis(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, src_pad.unsqueeze(1).unsqueeze(-1)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def cross_reads_the_decoder(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, y, L.multihead_attn), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def no_causal_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def pre_norm(y, memory, src_pad, L):
    x = norm(y, L.norm1)
    y = y + attend(x, x, L.self_attn, causal_mask(y.shape[1]))
    y = y + attend(norm(y, L.norm2), memory, L.multihead_attn, keys(src_pad))
    return y + ffn(norm(y, L.norm3), L)


def norm_on_the_sublayer(y, memory, src_pad, L):
    y = y + norm(attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = y + norm(attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return y + norm(ffn(y, L), L.norm3)


def without_norm(k):
    def layer(y, memory, src_pad, L):
        sub = [lambda x: attend(x, x, L.self_attn, causal_mask(x.shape[1])),
               lambda x: attend(x, memory, L.multihead_attn, keys(src_pad)),
               lambda x: ffn(x, L)]
        for i, (f, n) in enumerate(zip(sub, (L.norm1, L.norm2, L.norm3), strict=True)):
            y = y + f(y) if i == k else norm(y + f(y), n)
        return y
    return layer


def cross_norm_before(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = y + attend(norm(y, L.norm2), memory, L.multihead_attn, keys(src_pad))
    return norm(y + ffn(y, L), L.norm3)


def no_residual_in_ffn(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(ffn(y, L), L.norm3)


def norm1_everywhere(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm1)
    return norm(y + ffn(y, L), L.norm1)


def norms_swapped(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm2)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm1)
    return norm(y + ffn(y, L), L.norm3)


def no_relu(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + L.linear2(L.linear1(y)), L.norm3)


MISTAKES = [
    (causal_in_cross, "causal mask to the cross-attention"),
    (causal_instead_of_padding, "causal mask to the cross-attention"),
    (queries_from_memory, "Queries and keys are swapped"),
    (queries_from_memory_no_mask, "Queries and keys are swapped"),
    (no_padding_mask, "padding mask is missing"),
    (inverted_padding_mask, "padding mask is inverted"),
    (padding_on_query_axis, "hidden on the query axis"),
    (cross_reads_the_decoder, "never reads the memory"),
    (no_causal_mask, "no causal mask"),
    (pre_norm, "You wrote pre-norm"),
    (norm_on_the_sublayer, "not the sublayer's output alone"),
    (without_norm(0), "after the masked self-attention (L.norm1) is missing"),
    (without_norm(1), "after the cross-attention (L.norm2) is missing"),
    (without_norm(2), "after the feed-forward layer (L.norm3) is missing"),
    (cross_norm_before, "of the cross-attention (L.norm2) is in the wrong place"),
    (no_residual_in_ffn, "residual connection around the feed-forward layer"),
    (norm1_everywhere, "norms are mixed up"),
    (norms_swapped, "norms are mixed up"),
    (no_relu, "lost its ReLU"),
]


@pytest.mark.parametrize("fn, words", MISTAKES, ids=[f.__name__ for f, _ in MISTAKES])
def test_each_mistake_gets_its_own_hint(fn, words, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line and not line.startswith("Check passed"), line


def placeholder(y, memory, src_pad, L):
    """The post-norm decoder layer with the weights of L: (batch, n_tgt, d_model), like y."""
    # your code here
    ...


def returns_a_tuple(y, memory, src_pad, L):
    return right_einsum(y, memory, src_pad, L), None


def forgot_return(y, memory, src_pad, L):
    right_einsum(y, memory, src_pad, L)


def raises(y, memory, src_pad, L):
    raise ValueError("not yet")


def mutates(y, memory, src_pad, L):
    out = right_einsum(y, memory, src_pad, L)
    y.zero_()
    return out


def fixed_sizes(y, memory, src_pad, L):
    """Right, but only for 6 target positions."""
    return right_einsum(y, memory, src_pad, L) if y.shape[1] == 6 else torch.zeros_like(y)


def unreshaped_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, src_pad), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


@pytest.mark.parametrize("fn, words", [
    (placeholder, "Not answered yet: write the body of my_decoder_layer"),
    (returns_a_tuple, "should return one tensor, got a tuple"),
    (forgot_return, "returned None"),
    (raises, "raised ValueError: not yet"),
    (mutates, "changed its argument number 1 in place"),
    (fixed_sizes, "Right on the first batch but not on a second one"),
    (unreshaped_mask, "src_pad as (batch, 1, 1, n_src) in the cross-attention"),
    (lambda y, memory, src_pad, L: memory, "one row per source token"),
    (lambda y, memory, src_pad, L: y * 2, "Not the post-norm decoder layer yet"),
    (lambda y, memory, src_pad, L: y[:, :, :10], "should have y's shape"),
])
def test_garbage_and_slips_get_one_line(fn, words, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line and not line.startswith("Check passed"), line


# --- the guided shapes (7 source letters, 8 decoder tokens) --------------------------------------

SHAPES = {"source embedded": (1, 7, 64), "target embedded": (1, 8, 64),
          "encoder self-attention weights": (1, 4, 7, 7), "FFN hidden": (1, 7, 256),
          "memory": (1, 7, 64), "decoder self-attention weights": (1, 4, 8, 8),
          "cross-attention weights": (1, 4, 8, 7), "logits": (1, 8, 13)}


def test_guided_shapes(capsys):
    assert said(check_guided_shapes, SHAPES, 28, "cross", capsys=capsys) == "Check passed."
    untouched = dict.fromkeys(SHAPES)
    assert said(check_guided_shapes, untouched, None, None, capsys=capsys).startswith("Not answered yet:")
    swapped = {**SHAPES, "cross-attention weights": (1, 4, 7, 8)}
    assert "rows are the queries" in said(check_guided_shapes, swapped, 28, "cross", capsys=capsys)
    assert "both triangles" in said(check_guided_shapes, SHAPES, 56, "cross", capsys=capsys)
    assert "square" in said(check_guided_shapes, SHAPES, 28, "decoder self", capsys=capsys)


# --- check your understanding --------------------------------------------------------------------

def test_where_queries_keys_and_values_come_from(capsys):
    assert said(check_where_qkv_come_from, "b", capsys=capsys).startswith("Check passed. Each decoder")
    assert said(check_where_qkv_come_from, " B ", capsys=capsys).startswith("Check passed.")
    for wrong, words in (("a", "Swapped"), ("c", "Keys and values come from the memory, not the decoder"),
                         ("d", "decoder's own self-attention")):
        line = said(check_where_qkv_come_from, wrong, capsys=capsys)
        assert words in line and "section 2" in line, line
    assert said(check_where_qkv_come_from, None, capsys=capsys) == (
        "Not answered yet: set answer_1 to one of 'a', 'b', 'c', 'd'.")     # the right one not first
    assert "should be one of" in said(check_where_qkv_come_from, "e", capsys=capsys)


def test_shape_of_the_cross_attention_weights(capsys):
    assert said(check_cross_weights_shape, (3, 4, 6, 5), capsys=capsys).startswith("Check passed.")
    size = torch.Size([3, 4, 6, 5])
    assert said(check_cross_weights_shape, size, capsys=capsys).startswith("Check passed.")
    for wrong, words in (((3, 4, 5, 6), "Rows are the queries"), ((3, 4, 6, 6), "keys come from the memory"),
                         ((3, 4, 5, 5), "queries come from the decoder"), ((3, 6, 5), "head axis"),
                         ((1, 4, 6, 5), "batch here holds 3"), ((3, 4, 6, 16), "one head's queries"),
                         ((3, 6, 5, 4), "head axis comes second"), ((2, 4, 6, 5), "count each axis")):
        line = said(check_cross_weights_shape, wrong, capsys=capsys)
        assert words in line, (wrong, line)
    assert said(check_cross_weights_shape, None, capsys=capsys).startswith("Not answered yet:")


def test_which_masks_a_decoder_layer_needs(capsys):
    assert said(check_decoder_masks, {"a", "b"}, capsys=capsys).startswith("Check passed. The causal")
    assert said(check_decoder_masks, "b, a", capsys=capsys).startswith("Check passed.")
    for wrong, words in (({"b"}, "needs the causal mask"), ({"a"}, "must hide the source's padding"),
                         ({"a", "b", "c"}, "No target padding mask is needed"),
                         ({"a", "b", "d"}, "has no causal mask"),
                         ({"a", "d"}, "must hide the source's padding")):
        line = said(check_decoder_masks, wrong, capsys=capsys)
        assert words in line and "section" in line, (wrong, line)
    assert said(check_decoder_masks, None, capsys=capsys).startswith("Not answered yet:")


# --- Found by a second reader: answers that passed wrongly, hints that blamed the wrong part --------

def test_not_square_takes_one_attention_only(capsys):
    for right_one in ("cross", "Cross-attention", "cross attention", "encoder-decoder attention"):
        assert said(check_guided_shapes, SHAPES, 28, right_one, capsys=capsys) == "Check passed.", right_one
    for two in ("decoder self and cross", "cross, encoder self", "not cross"):
        line = said(check_guided_shapes, SHAPES, 28, two, capsys=capsys)
        assert not line.startswith("Check passed") and "one of" in line, (two, line)


@pytest.mark.parametrize("cells", [21, 15, 112, 29, 36, 56, 64])
def test_hidden_cells_hints_are_sentences(cells, capsys):
    line = said(check_guided_shapes, SHAPES, cells, "cross", capsys=capsys)
    assert (line[0].isupper() or line[0].isdigit()) and not line.startswith("Check passed"), line


def inverted_causal_mask(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, ~causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def causal_mask_hides_the_diagonal(y, memory, src_pad, L):
    n = y.shape[1]
    y = norm(y + attend(y, y, L.self_attn, torch.ones(n, n, dtype=torch.bool).triu()), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def queries_from_the_layer_input(y, memory, src_pad, L):
    y1 = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y2 = norm(y1 + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y2 + ffn(y2, L), L.norm3)


def attention_modules_swapped(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.multihead_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.self_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def self_attn_weights_in_the_cross(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.self_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def dropout_left_on(y, memory, src_pad, L):
    y = norm(y + F.dropout(attend(y, y, L.self_attn, causal_mask(y.shape[1])), 0.1), L.norm1)
    y = norm(y + F.dropout(attend(y, memory, L.multihead_attn, keys(src_pad)), 0.1), L.norm2)
    return norm(y + F.dropout(ffn(y, L), 0.1), L.norm3)


def causal_mask_of_the_notebook(y, memory, src_pad, L):
    """Right for 6 target positions only: causal_mask(6) written in."""
    y = norm(y + attend(y, y, L.self_attn, causal_mask(6)), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def padding_mask_in_the_self_attention(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1]) | keys(src_pad)), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def additive_mask_given_to_masked_fill(y, memory, src_pad, L):
    """mha_forward takes booleans; the notebook's additive_mask gives 0 and -inf."""
    n = y.shape[1]
    additive = torch.zeros(n, n).masked_fill(causal_mask(n), float("-inf"))
    attn = L.self_attn
    d, h = y.shape[-1], attn.num_heads
    q, k, v = (y @ attn.in_proj_weight.T + attn.in_proj_bias).view(*y.shape[:2], 3, h, d // h).unbind(2)
    scores = (q.transpose(1, 2) @ k.permute(0, 2, 3, 1) / math.sqrt(d // h)).masked_fill(additive, -1e9)
    out = (scores.softmax(-1) @ v.transpose(1, 2)).transpose(1, 2).reshape(y.shape)
    y = norm(y + attn.out_proj(out), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


@pytest.mark.parametrize("fn, words", [
    (inverted_causal_mask, "causal mask is inverted"),
    (causal_mask_hides_the_diagonal, "hides the diagonal"),
    (queries_from_the_layer_input, "output of the first sublayer"),
    (attention_modules_swapped, "L.multihead_attn"),
    (self_attn_weights_in_the_cross, "L.multihead_attn"),
    (dropout_left_on, "dropout"),
    (causal_mask_of_the_notebook, "Right on the first batch"),
    (padding_mask_in_the_self_attention, "(n_tgt, n_tgt)"),
    (additive_mask_given_to_masked_fill, "not additive_mask"),
])
def test_more_decoder_layer_mistakes_are_named(fn, words, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line and not line.startswith("Check passed"), line


def test_check_decoder_layer_leaves_the_global_random_state_alone(capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_decoder_layer(right_einsum)
    check_decoder_layer(no_padding_mask)
    capsys.readouterr()
    assert torch.equal(torch.rand(3), expected)


# --- dtypes, common slips with a named hint, the threads left as they were --------------------

def in_half_precision(y, memory, src_pad, L):
    return right_einsum(y, memory, src_pad, L).half()


def in_bfloat16(y, memory, src_pad, L):
    return right_einsum(y, memory, src_pad, L).bfloat16()


def rounded_to_integers(y, memory, src_pad, L):
    return right_einsum(y, memory, src_pad, L).round().long()


def with_gelu(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + L.linear2(F.gelu(L.linear1(y))), L.norm3)


def relu_module_called_on_a_tensor(y, memory, src_pad, L):
    y = norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + L.linear2(torch.nn.ReLU(L.linear1(y))), L.norm3)


def norm_module_given_as_gamma(y, memory, src_pad, L):
    from helpers.norms import layer_norm
    y = layer_norm(y + attend(y, y, L.self_attn, causal_mask(y.shape[1])), L.norm1, None)
    y = layer_norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2, None)
    return layer_norm(y + ffn(y, L), L.norm3, None)


@pytest.mark.parametrize("fn, words", [
    (in_half_precision, "returns float16: compute in float32"),
    (in_bfloat16, "returns bfloat16: compute in float32"),
    (rounded_to_integers, "returns whole numbers (int64)"),
    (with_gelu, "uses GELU"),
    (no_relu, "lost its ReLU"),
    (relu_module_called_on_a_tensor, "nn.ReLU is a module"),
    (norm_module_given_as_gamma, "L.norm1 is a module: call it"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_dtypes_and_slips_are_named(fn, words, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line and not line.startswith("Check passed"), line


def test_gelu_and_relu_hints_do_not_fire_on_each_other(capsys):
    assert "GELU" not in said(check_decoder_layer, no_relu, capsys=capsys)
    assert "lost its ReLU" not in said(check_decoder_layer, with_gelu, capsys=capsys)


def test_check_decoder_layer_leaves_the_number_of_threads_alone(capsys):
    threads = torch.get_num_threads()
    said(check_decoder_layer, right_einsum, capsys=capsys)
    said(check_decoder_layer, raises, capsys=capsys)
    assert torch.get_num_threads() == threads


def test_half_the_table_is_not_the_triangle(capsys):
    line = said(check_guided_shapes, SHAPES, 32, "cross", capsys=capsys)
    assert "diagonal stays visible" in line, line
    for neighbour in (28, 36, 56, 64):
        assert "diagonal stays visible" not in said(check_guided_shapes, SHAPES, neighbour, "cross",
                                                    capsys=capsys)


# --- Issue 29: mistakes that were told a generic hint -------------------------------------------

def layer_with(self_hidden=None, scale=None, stop_after=3, ffn_second=False, act=torch.relu):
    """A decoder layer written out with einsum, with one thing changed."""
    def layer(y, memory, src_pad, L):
        n = y.shape[1]
        hidden = causal_mask(n) if self_hidden is None else self_hidden(n)
        d, h = y.shape[-1], L.self_attn.num_heads

        def mha(q_in, kv_in, A, mask):
            if scale is None:
                return attend(q_in, kv_in, A, mask)
            Wq, Wk, Wv = A.in_proj_weight.chunk(3)
            bq, bk, bv = A.in_proj_bias.chunk(3)
            q = (q_in @ Wq.T + bq).unflatten(-1, (h, d // h))
            k = (kv_in @ Wk.T + bk).unflatten(-1, (h, d // h))
            v = (kv_in @ Wv.T + bv).unflatten(-1, (h, d // h))
            scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / scale(d, h)
            scores = scores.masked_fill(mask, float("-inf"))
            return A.out_proj(torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).flatten(-2))

        def feed(t):
            return L.linear2(act(L.linear1(t)))

        y = norm(y + mha(y, y, L.self_attn, hidden), L.norm1)
        if ffn_second:
            y = norm(y + feed(y), L.norm2)
            return norm(y + mha(y, memory, L.multihead_attn, keys(src_pad)), L.norm3)
        y = norm(y + mha(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
        if stop_after == 2:
            return y
        return norm(y + feed(y), L.norm3)
    return layer


def sqrt_activation(t):
    return torch.sqrt(t)                 # negative pre-activations give NaN


NEW_04 = {
    "transposed": (layer_with(self_hidden=lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool), -1)),
                   "causal mask is transposed"),
    "d_model": (layer_with(scale=lambda d, h: math.sqrt(d)), "divided the scores by √d_model"),
    "two sublayers": (layer_with(stop_after=2), "stops after two sublayers"),
    "ffn first": (layer_with(ffn_second=True), "comes before the cross-attention"),
    "sqrt": (layer_with(act=sqrt_activation), "made by sqrt of negative numbers, not by a mask"),
}


@pytest.mark.parametrize("key", list(NEW_04))
def test_issue_29_decoder_layer_mistakes_are_named(key, capsys):
    fn, words = NEW_04[key]
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert words in line, line
    assert all(other not in line for k, (_, other) in NEW_04.items() if k != key), line


def test_issue_29_a_nan_from_a_mask_is_still_blamed_on_the_mask(capsys):
    line = said(check_decoder_layer, layer_with(self_hidden=lambda n: torch.ones(n, n, dtype=torch.bool)),
                capsys=capsys)
    assert "every key hidden" in line and "sqrt" not in line, line


def test_issue_29_the_layer_written_out_with_the_right_scale_passes(capsys):
    line = said(check_decoder_layer, layer_with(scale=lambda d, h: math.sqrt(d // h)), capsys=capsys)
    assert line.startswith("Check passed."), line


# --- Issue 48: a causal mask that hides the diagonal, however the mask is applied ------------------

def diagonal_hidden_with_sdpa(y, memory, src_pad, L):
    """scaled_dot_product_attention gives a query whose keys are all hidden zero weights, not NaN."""
    def mha(q_in, kv_in, A, hidden):
        d, h = q_in.shape[-1], A.num_heads
        q, k, v = (F.linear(t, w, b).view(t.shape[0], -1, h, d // h).transpose(1, 2) for t, w, b in
                   zip((q_in, kv_in, kv_in), A.in_proj_weight.chunk(3), A.in_proj_bias.chunk(3), strict=True))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~hidden)
        return A.out_proj(out.transpose(1, 2).flatten(2))
    n = y.shape[1]
    y = norm(y + mha(y, y, L.self_attn, torch.ones(n, n, dtype=torch.bool).triu()), L.norm1)
    y = norm(y + mha(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


def diagonal_hidden_with_minus_1e9(y, memory, src_pad, L):
    """A large finite negative number: the first query reads every position equally."""
    n, d, h = y.shape[1], y.shape[-1], L.self_attn.num_heads
    A = L.self_attn
    q, k, v = (F.linear(y, w, b).view(y.shape[0], n, h, d // h).transpose(1, 2)
               for w, b in zip(A.in_proj_weight.chunk(3), A.in_proj_bias.chunk(3), strict=True))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(torch.ones(n, n).triu() == 1, -1e9)
    y = norm(y + A.out_proj((scores.softmax(-1) @ v).transpose(1, 2).flatten(2)), L.norm1)
    y = norm(y + attend(y, memory, L.multihead_attn, keys(src_pad)), L.norm2)
    return norm(y + ffn(y, L), L.norm3)


@pytest.mark.parametrize("fn", [diagonal_hidden_with_sdpa, diagonal_hidden_with_minus_1e9])
def test_a_causal_mask_hiding_the_diagonal_gets_its_hint_however_applied(fn, capsys):
    line = said(check_decoder_layer, fn, capsys=capsys)
    assert line.startswith("Your causal mask hides the diagonal too"), line
