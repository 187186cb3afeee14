"""The checks of notebook 03 (helpers.checks.encoder) name each mistake they claim to recognise.

Every wrong answer here is written the way a learner would write it, independently of the
checker's own code for that mistake.
"""

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks.encoder import (
    check_split_merge,
    check_ffn,
    check_path_length,
    check_more_heads,
    check_per_position,
    check_pre_norm,
    check_self_attention,
    check_shapes,
)
from printed import printed


def run(check, *args, capsys):
    """(passed, the one printed line) of a check call."""
    line = printed(capsys, check, *args)
    return line.startswith("Check passed."), line


def expect(check, answer, words, capsys):
    passed, printed = run(check, answer, capsys=capsys)
    assert passed == (words is None), printed
    if words:
        assert words in printed, printed


# --- Your turn 1: split and merge the heads ---------------------------------------------------

def split(t, h):
    b, n, d = t.shape
    return t.view(b, n, h, d // h).transpose(1, 2)


def merge(t):
    b, h, n, d_k = t.shape
    return t.transpose(1, 2).reshape(b, n, h * d_k)


def split_by_slicing(t, h):
    d_k = t.shape[-1] // h
    return torch.stack([t[..., i * d_k:(i + 1) * d_k] for i in range(h)], dim=1)


def merge_by_cat(t):
    return torch.cat([t[:, i] for i in range(t.shape[1])], dim=-1)


def split_with_unflatten(t, h):
    return t.unflatten(-1, (h, -1)).permute(0, 2, 1, 3)


def merge_with_contiguous_view(t):
    b, h, n, d_k = t.shape
    return t.transpose(1, 2).contiguous().view(b, n, h * d_k)


def split_straight(t, h):
    b, n, d = t.shape
    return t.view(b, h, n, d // h)


def split_every_hth_column(t, h):
    b, n, d = t.shape
    return t.view(b, n, d // h, h).permute(0, 3, 1, 2)


def split_transposed_first(t, h):
    b, n, d = t.shape
    return t.transpose(1, 2).reshape(b, h, n, d // h)


def split_without_transpose(t, h):
    b, n, d = t.shape
    return t.view(b, n, h, d // h)


def split_heads_in_front_of_the_batch(t, h):
    b, n, d = t.shape
    return t.view(b, n, h, d // h).permute(2, 0, 1, 3)


def split_all_axes_reversed(t, h):
    b, n, d = t.shape
    return t.view(b, n, h, d // h).transpose(1, 3)


def split_with_float_d_k(t, h):
    b, n, d = t.shape
    return t.view(b, n, h, d / h).transpose(1, 2)


def split_of_the_tiny_example(t, h):
    return t.view(1, 3, 2, 2).transpose(1, 2)


def split_for_the_first_case_only(t, h):
    b, n, d = t.shape
    return t.view(b, n, 3, d // 3).transpose(1, 2)


def merge_with_view(t):
    b, h, n, d_k = t.shape
    return t.transpose(1, 2).view(b, n, h * d_k)


def merge_without_transpose(t):
    b, h, n, d_k = t.shape
    return t.reshape(b, n, h * d_k)


def merge_every_hth_column(t):
    b, h, n, d_k = t.shape
    return t.permute(0, 2, 3, 1).reshape(b, n, h * d_k)


def merge_swapping_the_last_two(t):
    b, h, n, d_k = t.shape
    return t.transpose(2, 3).reshape(b, n, h * d_k)


def merge_forgetting_the_reshape(t):
    return t.transpose(1, 2)


def merge_of_the_heads_tokens(t):
    b, h, n, d_k = t.shape
    return t.reshape(b, h * n, d_k)


def unanswered_split(t, h):
    """(b, n, d_model) -> (b, h, n, d_k)."""
    ...


def unanswered_merge(t):
    """(b, h, n, d_k) -> (b, n, h·d_k)."""
    ...


def split_by_the_helpers(t, h):
    from helpers.attention import split_heads
    return split_heads(t, h)


def merge_by_the_helpers(t):
    import helpers.attention
    return helpers.attention.merge_heads(t)


@pytest.mark.parametrize("my_split, my_merge, words", [
    (split, merge, None),
    (split_by_slicing, merge_by_cat, None),
    (split_with_unflatten, merge_with_contiguous_view, None),
    (split_straight, merge, "straight to (b, h, n, d_k)"),
    (split_every_hth_column, merge, "every h-th column"),
    (split_transposed_first, merge, "you transposed before cutting"),
    (split_without_transpose, merge, "the heads must come in front of the tokens"),
    (split_heads_in_front_of_the_batch, merge, "returned (3, 2, 5, 4): the batch axis stays first"),
    (split_all_axes_reversed, merge, "you swapped axes 1 and 3"),
    (split_with_float_d_k, merge, "64 / 4 = 16.0, not 16"),
    (split_of_the_tiny_example, merge, "does not fit t of shape (2, 5, 12)"),
    (split_for_the_first_case_only, merge, "Right on the first tensor, but on the second"),
    (split, merge_with_view, ".reshape(...)"),
    (split, merge_without_transpose, "joined the heads with a reshape alone"),
    (split, merge_every_hth_column, "columns end up interleaved"),
    (split, merge_swapping_the_last_two, "swapped the last two axes"),
    (split, merge_forgetting_the_reshape, "now glue each token's h groups"),
    (split, merge_of_the_heads_tokens, "not the heads' tokens one after another"),
    (split, lambda t: merge(t).half(), "is float16: compute in float32"),
    (lambda t, h: (split(t, h), h), merge, "returned a tuple"),
    (split_by_the_helpers, merge, "calls helpers.attention.split_heads, the very reference"),
    (split, merge_by_the_helpers, "calls helpers.attention.merge_heads"),
    (unanswered_split, unanswered_merge, "Not answered yet: write the body of my_split_heads"),
    (split, unanswered_merge, "Not answered yet: write the body of my_merge_heads"),
])
def test_check_split_merge_names_the_mistake(my_split, my_merge, words, capsys):
    passed, line = run(check_split_merge, my_split, my_merge, capsys=capsys)
    assert passed == (words is None), line
    if words:
        assert words in line, line


def test_the_split_mistakes_differ_from_the_right_split():
    """On the check's shapes, each named mistake of the right shape gives other numbers."""
    t = torch.randn(2, 5, 12)
    for wrong in (split_straight, split_every_hth_column, split_transposed_first):
        assert wrong(t, 3).shape == split(t, 3).shape
        assert not torch.equal(wrong(t, 3), split(t, 3)), wrong.__name__
    heads = split(t, 3).contiguous()
    for wrong in (merge_without_transpose, merge_every_hth_column, merge_swapping_the_last_two):
        assert wrong(heads).shape == t.shape and not torch.equal(wrong(heads), t), wrong.__name__


# --- Your turn 2: multi-head self-attention ------------------------------------------------------

def right(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    d_k = d // h
    Q, K, V = [(x @ W).view(b, n, h, d_k).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    return (weights @ V).transpose(1, 2).reshape(b, n, d) @ W_O


def right_with_a_loop_over_heads(x, W_Q, W_K, W_V, W_O, h):
    d_k = x.shape[-1] // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        q, k, v = x @ W_Q[:, cols], x @ W_K[:, cols], x @ W_V[:, cols]
        heads.append(F.softmax(q @ k.mT / d_k ** 0.5, dim=2) @ v)
    return torch.cat(heads, dim=-1) @ W_O


def right_with_sdpa_and_einsum(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    q, k, v = (torch.einsum("bnd,de->bne", x, W).unflatten(-1, (h, d // h)).permute(0, 2, 1, 3)
               for W in (W_Q, W_K, W_V))
    heads = F.scaled_dot_product_attention(q, k, v)
    return heads.permute(0, 2, 1, 3).flatten(2) @ W_O


def merged_without_transpose(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return heads.reshape(b, n, d) @ W_O


def split_straight_to_heads(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, h, n, d // h) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def split_and_merged_straight(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).reshape(b, h, n, d // h) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return heads.reshape(b, n, d) @ W_O


def heads_take_every_hth_column(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, d // h, h).permute(0, 3, 1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def attention_with(x, W_Q, W_K, W_V, W_O, h, scale, dim=-1, use_W_O=True):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = torch.softmax(Q @ K.transpose(-2, -1) * scale(d, d // h), dim=dim)
    concat = (weights @ V).transpose(1, 2).reshape(b, n, d)
    return concat @ W_O if use_W_O else concat


def keys_against_queries(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = torch.softmax(K @ Q.transpose(-2, -1) / math.sqrt(d // h), dim=-1)
    return (weights @ V).transpose(1, 2).reshape(b, n, d) @ W_O


def no_softmax(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = Q @ K.transpose(-2, -1) / math.sqrt(d // h)
    return (weights @ V).transpose(1, 2).reshape(b, n, d) @ W_O


def pytorch_layout(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [F.linear(x, W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1)
    return F.linear((weights @ V).transpose(1, 2).reshape(b, n, d), W_O)


def one_wide_head(x, W_Q, W_K, W_V, W_O, h):
    Q, K, V = x @ W_Q, x @ W_K, x @ W_V
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(x.shape[-1] // h), dim=-1)
    return weights @ V @ W_O


def joined_with_view(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return heads.transpose(1, 2).view(b, n, d) @ W_O


def hard_coded_sizes(x, W_Q, W_K, W_V, W_O, h):
    Q, K, V = [(x @ W).view(-1, 6, 4, 16).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / 4, dim=-1) @ V
    return heads.transpose(1, 2).reshape(-1, 6, 64) @ W_O


def sizes_of_the_notebook(x, W_Q, W_K, W_V, W_O, h):
    Q, K, V = [(x @ W).view(1, 5, 4, 16).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / 4, dim=-1) @ V
    return heads.transpose(1, 2).reshape(1, 5, 64) @ W_O


def scores_without_transposing_K(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K / math.sqrt(d // h), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def W_O_before_joining(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V
    return (heads @ W_O).transpose(1, 2).reshape(b, n, d)


def scale_hard_coded(x, W_Q, W_K, W_V, W_O, h):
    return attention_with(x, W_Q, W_K, W_V, W_O, h, lambda d, d_k: 0.25)


def returns_the_heads(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h), dim=-1) @ V


def returns_output_and_weights(x, W_Q, W_K, W_V, W_O, h):
    return right(x, W_Q, W_K, W_V, W_O, h), None


def placeholder(x, W_Q, W_K, W_V, W_O, h):
    """MultiHead(x): (b, n, d_model)."""
    # your code here
    ...


def scales_x_in_place(x, W_Q, W_K, W_V, W_O, h):
    x *= 2
    return right(x / 2, W_Q, W_K, W_V, W_O, h)


def forgets_return(x, W_Q, W_K, W_V, W_O, h):
    out = right(x, W_Q, W_K, W_V, W_O, h)  # noqa: F841


def prints_and_is_right(x, W_Q, W_K, W_V, W_O, h):
    print("debugging", x.shape)
    return right(x, W_Q, W_K, W_V, W_O, h)


@pytest.mark.parametrize("fn, words", [
    (right, None),
    (right_with_a_loop_over_heads, None),
    (right_with_sdpa_and_einsum, None),
    (prints_and_is_right, None),
    (merged_without_transpose, "joined the heads with a reshape alone"),
    (split_straight_to_heads, "straight to (b, h, n, d_k)"),
    (split_and_merged_straight, "straight to (b, h, n, d_k)"),
    (heads_take_every_hth_column, "every h-th column"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1 / math.sqrt(d)), "√d_model"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1.0), "did not scale"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1 / d_k), "divide by its square root"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1 / math.sqrt(d_k), dim=-2), "over the queries"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1 / math.sqrt(d_k), dim=1), "over the heads"),
    (lambda *a: attention_with(*a, lambda d, d_k: 1 / math.sqrt(d_k), use_W_O=False), "forgot W_O"),
    (keys_against_queries, "K Qᵀ"),
    (no_softmax, "forgot the softmax"),
    (pytorch_layout, "paper's orientation"),
    (one_wide_head, "one attention over all d_model columns"),
    (joined_with_view, ".reshape(...)"),
    (hard_coded_sizes, "Right on the first batch, but on the second"),
    (scale_hard_coded, "not on the second"),
    (sizes_of_the_notebook, "does not fit x of shape (3, 6, 64)"),
    (scores_without_transposing_K, "Q @ K.transpose(-2, -1)"),
    (W_O_before_joining, "joined back to (b, n, d_model) before @ W_O"),
    (returns_the_heads, "You returned the heads"),
    (returns_output_and_weights, "return the output alone"),
    (placeholder, "Not answered yet: write the body of my_self_attention"),
    (scales_x_in_place, "in place"),
    (lambda *a: 1 / 0, "ZeroDivisionError"),
    (forgets_return, "returned None"),
    (lambda *a: 2 * right(*a), "Not equal to nn.MultiheadAttention yet"),
])
def test_check_self_attention_names_the_mistake(fn, words, capsys):
    expect(check_self_attention, fn, words, capsys)


def test_the_mistakes_give_different_outputs_on_the_checks_inputs():
    """Each named mistake is told apart: its output differs from the right one."""
    torch.manual_seed(0)
    attn = nn.MultiheadAttention(64, 4, bias=False, batch_first=True)
    x = torch.randn(3, 6, 64)
    W_Q, W_K, W_V = (w.T for w in attn.in_proj_weight.detach().split(64))
    args = (x, W_Q, W_K, W_V, attn.out_proj.weight.detach().T, 4)
    with torch.no_grad():
        expected = attn(x, x, x, need_weights=False)[0]
        assert torch.allclose(right(*args), expected, atol=1e-6)
        for wrong in (merged_without_transpose, split_straight_to_heads, one_wide_head,
                      heads_take_every_hth_column, keys_against_queries, pytorch_layout):
            assert (wrong(*args) - expected).abs().max() > 1e-2, wrong.__name__


# --- Your turn 3: the feed-forward layer --------------------------------------------------------

def right_ffn(x, L):
    return torch.relu(x @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight.T + L.linear2.bias


def ffn_with(relu):
    def ffn(x, L):
        return relu(x @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight.T + L.linear2.bias
    return ffn


@pytest.mark.parametrize("ffn, words", [
    (right_ffn, None),
    (lambda x, L: torch.addmm(L.linear2.bias, torch.relu(torch.addmm(L.linear1.bias, x.flatten(0, 1),
                                                                     L.linear1.weight.T)),
                              L.linear2.weight.T).view(x.shape), None),
    (ffn_with(lambda h: h.clamp(min=0)), None),
    (ffn_with(lambda z: torch.maximum(z, torch.zeros_like(z))), None),
    (ffn_with(lambda z: max(0, z)), "Python's max(0, z) cannot compare a whole tensor"),
    (ffn_with(lambda z: torch.max(0, z)), "torch.max(0, z) is not the formula's max(0, ·)"),
    (ffn_with(lambda z: torch.max(z, 0)), "torch.max(z, 0) returns the largest value"),
    (ffn_with(lambda z: torch.maximum(z, 0)), "torch.maximum compares two tensors"),
    (ffn_with(lambda z: z), "ReLU is missing"),
    (ffn_with(F.gelu), "GELU"),
    (lambda x, L: F.relu(right_ffn(x, L)), "not clipped"),
    (lambda x, L: F.relu(x @ L.linear1.weight.T) @ L.linear2.weight.T + L.linear2.bias, "b_1"),
    (lambda x, L: F.relu(x @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight.T, "b_2"),
    (lambda x, L: x + right_ffn(x, L), "shortcut"),
    (lambda x, L: F.relu(x @ L.linear1.weight + L.linear1.bias), "weight.T"),
    (lambda x, L: F.relu(x @ L.linear1.weight.T + L.linear1.bias), "hidden layer"),
    (lambda x, L: right_ffn(x[:1], L), "keep the input's shape"),
    (lambda x, L: right_ffn(x.view(2, 7, 64), L), "on the second"),
    (lambda x, L: 1 / 0, "ZeroDivisionError"),
    (lambda x, L: print(right_ffn(x, L)), "returned None"),
    (lambda x, L: 2 * right_ffn(x, L), "differs from PyTorch"),
])
def test_check_ffn_names_the_mistake(ffn, words, capsys):
    expect(check_ffn, ffn, words, capsys)


def test_untouched_ffn_placeholder_is_not_answered(capsys):
    def ffn(x, L):
        """FFN(x) for x of shape (b, n, d_model)."""
        # your code here
        ...
    expect(check_ffn, ffn, "Not answered yet: write the body of ffn", capsys)


# --- Your turn 5: the pre-norm layer ------------------------------------------------------------

def norm(x, n, unbiased=False):
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=unbiased, keepdim=True)
    return (x - mu) / torch.sqrt(var + n.eps) * n.weight + n.bias


def attn(x, L):
    return L.self_attn(x, x, x, need_weights=False)[0]


def pre_norm(x, L, n=norm, ffn=right_ffn):
    x = x + attn(n(x, L.norm1), L)
    return x + ffn(n(x, L.norm2), L)


def pre_norm_with_modules(x, L):
    y = L.norm1(x)
    x = x + L.self_attn(y, y, y)[0]
    return x + L.linear2(torch.relu(L.linear1(L.norm2(x))))


def normed_shortcut(x, L):
    x = norm(x, L.norm1)
    x = x + attn(x, L)
    x = norm(x, L.norm2)
    return x + right_ffn(x, L)


def post_norm(x, L):
    x = norm(x + attn(x, L), L.norm1)
    return norm(x + right_ffn(x, L), L.norm2)


def no_shortcut(x, L):
    y = attn(norm(x, L.norm1), L)
    return right_ffn(norm(y, L.norm2), L)


def swapped_norms(x, L):
    x = x + attn(norm(x, L.norm2), L)
    return x + right_ffn(norm(x, L.norm1), L)


def plain_norm(x, n):
    return F.layer_norm(x, x.shape[-1:])


def attention_tuple_as_tensor(x, L):
    y = L.norm1(x)
    x = x + L.self_attn(y, y, y)
    return x + right_ffn(L.norm2(x), L)


def relu_of_the_tuple(x, L):
    y = L.norm1(x)
    x = x + torch.relu(L.self_attn(y, y, y))
    return x + right_ffn(L.norm2(x), L)


def attention_given_one_input(x, L):
    x = x + L.self_attn(L.norm1(x))[0]
    return x + right_ffn(L.norm2(x), L)


@pytest.mark.parametrize("layer, words", [
    (pre_norm, None),
    (pre_norm_with_modules, None),
    (post_norm, "post-norm"),
    (normed_shortcut, "shortcut should carry x itself"),
    (lambda x, L: norm(pre_norm(x, L), L.norm2), "no LayerNorm at the end"),
    (no_shortcut, "shortcuts are missing"),
    (swapped_norms, "swapped"),
    (lambda x, L: pre_norm(x, L, n=plain_norm), "γ and β"),
    (lambda x, L: pre_norm(x, L, n=lambda t, m: norm(t, m, unbiased=True)), "d − 1"),
    (lambda x, L: pre_norm(x, L, ffn=lambda t, M: M.linear2(M.linear1(t))), "ReLU is missing"),
    (lambda x, L: x + attn(norm(x, L.norm1), L), "stopped after the attention"),
    (attention_tuple_as_tensor, "returns a pair (output, weights)"),
    (relu_of_the_tuple, "returns a pair (output, weights)"),
    (attention_given_one_input, "takes query, key and value"),
    (lambda x, L: pre_norm(x, L, ffn=ffn_with(lambda z: max(0, z))), "Python's max(0, z)"),
])
def test_check_pre_norm_names_the_mistake(layer, words, capsys):
    expect(check_pre_norm, layer, words, capsys)


def test_checkers_leave_the_global_random_state_alone(capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_ffn(right_ffn)
    check_pre_norm(pre_norm)
    check_self_attention(right)
    capsys.readouterr()
    assert torch.equal(torch.rand(3), expected)


# --- Your turn 4: the shapes for a batch of 2 sources of 7 letters----------------------------------------

@pytest.mark.parametrize("answer, words", [
    (((2, 4, 7, 7), (2, 7, 256), (2, 7, 64)), None),
    (([2, 4, 7, 7], torch.Size([2, 7, 256]), (2, 7, 64)), None),
    (((2, 7, 4, 7), (2, 7, 256), (2, 7, 64)), "swapped"),
    (((4, 2, 7, 7), (2, 7, 256), (2, 7, 64)), "the batch axis comes first, then the heads"),
    (((2, 4, 7, 16), (2, 7, 256), (2, 7, 64)), "n × n"),
    (((2, 4, 14, 14), (2, 7, 256), (2, 7, 64)), "its own source"),
    (((8, 7, 7), (2, 7, 256), (2, 7, 64)), "batch and the heads on two axes"),
    (((2, 4, 5, 5), (2, 7, 256), (2, 7, 64)), "7 letters"),
    (((1, 4, 7, 7), (1, 7, 256), (1, 7, 64)), "that is one source"),
    (((2, 4, 7, 7), (1, 7, 256), (1, 7, 64)), "The FFN's hidden layer: that is one source"),
    (((2, 4, 7, 7), (2, 7, 64), (2, 7, 64)), "d_model instead of d_ff"),
    (((2, 4, 7, 7), (14, 256), (2, 7, 64)), "batch and the tokens on two axes"),
    (((2, 4, 7, 7), (2, 7, 256), (2, 7, 256)), "d_ff instead of d_model"),
    (((2, 4, 7, 7), (2, 7, 256), (2, 4, 7, 16)), "concatenated"),
    (((2, 4, 7, 7), (2, 7, 256), (1, 7, 64)), "The memory: that is one source"),
    (((2, 4, 7, 7), (2, 7, 256), (2, 3)), "The memory should be 3-dimensional, not (2, 3)"),
    ((None, None, None), "Not answered yet"),
])
def test_check_shapes_names_the_confusion(answer, words, capsys):
    passed, printed = run(check_shapes, *answer, capsys=capsys)
    assert passed == (words is None), printed
    if words:
        assert words in printed
    else:
        assert "square of the length" in printed


# --- Check your understanding ------------------------------------------------------------------

@pytest.mark.parametrize("answer, words", [
    ("feed-forward", "Check passed. More heads only cut d_model"),
    (" Feed-Forward ", "Check passed."),
    ("attention", "More heads do not add parameters"),
    ("the same", "twice as many (section 7)"),
    ("ffn", "should be one of 'attention', 'feed-forward', 'the same'"),
    (None, "Not answered yet"),
])
def test_question_more_heads(answer, words, capsys):
    _, printed = run(check_more_heads, answer, capsys=capsys)
    assert words in printed, printed


def test_more_heads_do_not_change_the_attention_count():
    """The fact behind question 1, measured."""
    def count(m):
        return sum(p.numel() for p in m.parameters())
    assert count(nn.MultiheadAttention(512, 8)) == count(nn.MultiheadAttention(512, 16)) == 1_050_624
    assert count(nn.Linear(512, 2048)) + count(nn.Linear(2048, 512)) == 2_099_712


@pytest.mark.parametrize("answer, words", [
    ("layer only", "Check passed. The FFN transforms each position on its own"),
    ("neither", "token 3's query reads token 1's key"),
    ("both", "in section 5 token 3 fed alone"),
    ("ffn only", "the other way round"),
    ("yes", "should be one of"),
    (None, "Not answered yet"),
])
def test_question_per_position(answer, words, capsys):
    _, printed = run(check_per_position, answer, capsys=capsys)
    assert words in printed, printed


def test_changing_token_1_moves_the_layer_output_of_token_3_but_not_its_ffn_output():
    """The fact behind question 2, measured on PyTorch's layer."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True).eval()
    x = torch.randn(1, 5, 64)
    changed = x.clone()
    changed[0, 0] += 1.0
    with torch.no_grad():
        ffn = layer.linear2(F.relu(layer.linear1(x)))
        ffn_changed = layer.linear2(F.relu(layer.linear1(changed)))
        assert torch.equal(ffn[0, 2], ffn_changed[0, 2])
        assert (layer(x)[0, 2] - layer(changed)[0, 2]).abs().max() > 1e-3


# --- Found by a second reader: mistakes that got a raw error, a generic hint or a repeated one ---

def scores_with_K_dot_T(x, W_Q, W_K, W_V, W_O, h):
    """K.T on a 4-D tensor reverses all four axes (PyTorch warns, then fails in the product)."""
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.T / math.sqrt(d // h), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def scaled_after_the_softmax(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-1) / math.sqrt(d // h)
    return (weights @ V).transpose(1, 2).reshape(b, n, d) @ W_O


def d_k_of_the_notebook(x, W_Q, W_K, W_V, W_O, h):
    """Right for d_model 64 and 4 heads only: d_k = 16 written in."""
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, 16).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / 4, dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


@pytest.mark.parametrize("fn, words", [
    (scores_with_K_dot_T, "K.transpose(-2, -1)"),
    (scaled_after_the_softmax, "after the softmax"),
])
def test_more_self_attention_mistakes_are_named(fn, words, capsys):
    expect(check_self_attention, fn, words, capsys)


def test_a_size_hint_is_not_said_twice(capsys):
    _, printed = run(check_self_attention, d_k_of_the_notebook, capsys=capsys)
    assert "Right on the first batch, but on the second" in printed, printed
    assert printed.count("from x.shape") == 1, printed


def pre_norm_with_dropout_on(x, L):
    y = L.norm1(x)
    x = x + F.dropout(L.self_attn(y, y, y)[0], 0.1)
    return x + F.dropout(right_ffn(L.norm2(x), L), 0.1)


def ffn_reads_the_stream(x, L):
    x = x + attn(norm(x, L.norm1), L)
    return x + right_ffn(x, L)


def attention_reads_the_stream(x, L):
    x = x + attn(x, L)
    return x + right_ffn(norm(x, L.norm2), L)


@pytest.mark.parametrize("layer, words", [
    (pre_norm_with_dropout_on, "dropout"),
    (ffn_reads_the_stream, "feed-forward sublayer reads the stream itself"),
    (attention_reads_the_stream, "attention reads x itself"),
])
def test_more_pre_norm_mistakes_are_named(layer, words, capsys):
    expect(check_pre_norm, layer, words, capsys)


# --- The course's own reference is not an answer -------------------------------------------------

def self_attention_by_pytorch(x, W_Q, W_K, W_V, W_O, h):
    d = x.shape[-1]
    mha = nn.MultiheadAttention(d, h, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))
        mha.out_proj.weight.copy_(W_O.T)
    return mha(x, x, x)[0]


def self_attention_by_the_functional_form(x, W_Q, W_K, W_V, W_O, h):
    t = x.transpose(0, 1)
    out, _ = F.multi_head_attention_forward(
        t, t, t, x.shape[-1], h, torch.cat([W_Q.T, W_K.T, W_V.T]), None, None, None, False, 0.0,
        W_O.T, None, training=False, need_weights=False)
    return out.transpose(0, 1)


def self_attention_by_the_helpers(x, W_Q, W_K, W_V, W_O, h):
    from helpers.attention import attention, merge_heads, split_heads
    heads, _ = attention(*(split_heads(x @ W, h) for W in (W_Q, W_K, W_V)))
    return merge_heads(heads) @ W_O


def self_attention_split_by_the_helpers(x, W_Q, W_K, W_V, W_O, h):
    import helpers.attention
    q, k, v = (helpers.attention.split_heads(x @ W, h) for W in (W_Q, W_K, W_V))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    b, n, d = x.shape
    return (weights @ v).transpose(1, 2).reshape(b, n, d) @ W_O


def ffn_by_linear_layers(x, L):
    return L.linear2(F.relu(L.linear1(x)))


def ffn_by_F_linear(x, L):
    return F.linear(F.relu(F.linear(x, L.linear1.weight, L.linear1.bias)), L.linear2.weight, L.linear2.bias)


def ffn_by_a_copied_linear(x, L):
    first = nn.Linear(64, 256)
    first.load_state_dict(L.linear1.state_dict())
    return F.relu(first(x)) @ L.linear2.weight.T + L.linear2.bias


def pre_norm_by_the_layer(x, L):
    return L(x)


def pre_norm_by_a_copy_of_the_layer(x, L):
    copy = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True, norm_first=True).eval()
    copy.load_state_dict(L.state_dict())
    return copy(x)


@pytest.mark.parametrize("check, fn, words", [
    (check_self_attention, self_attention_by_pytorch, "calls nn.MultiheadAttention, the very reference"),
    (check_self_attention, self_attention_by_the_functional_form, "calls F.multi_head_attention_forward"),
    (check_self_attention, self_attention_by_the_helpers, "calls helpers.attention.split_heads"),
    (check_self_attention, self_attention_split_by_the_helpers, "calls helpers.attention.split_heads"),
    (check_ffn, ffn_by_linear_layers, "calls L.linear1(...), the very reference"),
    (check_ffn, ffn_by_F_linear, "calls F.linear"),
    (check_ffn, ffn_by_a_copied_linear, "calls an nn.Linear layer"),
    (check_pre_norm, pre_norm_by_the_layer, "calls L(x), the layer's own forward"),
    (check_pre_norm, lambda x, L: L.forward(x), "the layer's own forward"),
    (check_pre_norm, pre_norm_by_a_copy_of_the_layer, "nn.TransformerEncoderLayer's forward"),
])
def test_calling_the_reference_is_not_an_answer(check, fn, words, capsys):
    expect(check, fn, words, capsys)


def test_the_references_work_again_after_the_check(capsys):
    for check, fn in ((check_self_attention, self_attention_by_the_helpers),
                      (check_ffn, ffn_by_linear_layers), (check_pre_norm, pre_norm_by_the_layer)):
        check(fn)
    capsys.readouterr()
    from helpers.attention import MultiHeadAttention, split_heads
    assert split_heads(torch.zeros(1, 2, 8), 2).shape == (1, 2, 2, 4)
    assert MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8)).shape == (1, 3, 8)
    assert nn.MultiheadAttention(8, 2)(*[torch.zeros(3, 1, 8)] * 3)[0].shape == (3, 1, 8)
    assert F.linear(torch.ones(1, 2), torch.ones(3, 2)).shape == (1, 3)


# --- The most common slips get a named hint, not a raw error -----------------------------------

def d_k_as_a_float(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    d_k = d / h
    Q, K, V = [(x @ W).view(b, n, h, d_k).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def heads_sliced_with_a_float(x, W_Q, W_K, W_V, W_O, h):
    d_k = x.shape[-1] / h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        q, k, v = x @ W_Q[:, cols], x @ W_K[:, cols], x @ W_V[:, cols]
        heads.append(torch.softmax(q @ k.mT / math.sqrt(d_k), dim=-1) @ v)
    return torch.cat(heads, dim=-1) @ W_O


def scale_with_torch_sqrt(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    d_k = d // h
    Q, K, V = [(x @ W).view(b, n, h, d_k).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / torch.sqrt(d_k), dim=-1) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def softmax_without_dim(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h)) @ V
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def F_softmax_without_dim(x, W_Q, W_K, W_V, W_O, h):
    b, n, d = x.shape
    Q, K, V = [(x @ W).view(b, n, h, d // h).transpose(1, 2) for W in (W_Q, W_K, W_V)]
    heads = F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d // h)) @ V   # the implicit dim
    return heads.transpose(1, 2).reshape(b, n, d) @ W_O


def self_attention_in_half_precision(x, W_Q, W_K, W_V, W_O, h):
    return right(x, W_Q, W_K, W_V, W_O, h).half()


@pytest.mark.parametrize("fn, words", [
    (d_k_as_a_float, "64 / 4 = 16.0, not 16"),
    (heads_sliced_with_a_float, "Write d_k = d_model // h"),
    (scale_with_torch_sqrt, "math.sqrt(d_k)"),
    (softmax_without_dim, "torch.softmax needs the axis it normalises: dim=-1"),
    (F_softmax_without_dim, "F.softmax without dim= also picks axis 1"),
    (self_attention_in_half_precision, "is float16: compute in float32"),
    (lambda *a: right(*a).bfloat16(), "is bfloat16: compute in float32"),
])
def test_common_slips_of_self_attention_are_named(fn, words, capsys):
    expect(check_self_attention, fn, words, capsys)


def pre_norm_with_the_helpers_norm_given_the_module(x, L):
    from helpers.norms import layer_norm
    y = layer_norm(x, L.norm1)
    x = x + L.self_attn(y, y, y)[0]
    z = layer_norm(x, L.norm2)
    return x + right_ffn(z, L)


def pre_norm_with_the_helpers_norm(x, L):
    from helpers.norms import layer_norm
    y = layer_norm(x, L.norm1.weight, L.norm1.bias, L.norm1.eps)
    x = x + L.self_attn(y, y, y)[0]
    return x + right_ffn(layer_norm(x, L.norm2.weight, L.norm2.bias), L)


def pre_norm_returning_the_attention_pair(x, L):
    y = L.norm1(x)
    return L.self_attn(y, y, y)


@pytest.mark.parametrize("check, fn, words", [
    (check_pre_norm, pre_norm_with_the_helpers_norm, None),
    (check_pre_norm, pre_norm_with_the_helpers_norm_given_the_module, "takes x, γ and β"),
    (check_pre_norm, pre_norm_returning_the_attention_pair,
     "got a tuple: nn.MultiheadAttention returns (output, weights): take [0]"),
    (check_pre_norm, lambda x, L: pre_norm(x, L).half(), "is float16: compute in float32"),
    (check_ffn, lambda x, L: right_ffn(x, L).bfloat16(), "is bfloat16: compute in float32"),
    (check_ffn, lambda x, L: (right_ffn(x, L), None), "should return one tensor, got a tuple."),
])
def test_common_slips_of_the_layer_functions_are_named(check, fn, words, capsys):
    expect(check, fn, words, capsys)


# --- Fuzz: every checker prints one line of its own, whatever it gets ---------------------------

from tests.fuzz import assert_survives, wrong_functions, wrong_tensors  # noqa: E402

STILL_RIGHT = ("float64", "float32", "relative 1e-4", "squeezed")
ODD_VALUES = [None, ..., (), (1,), "abc", "", 1.5, float("nan"), True, 7, -1, [1, 2.5], (1, -4, 7, 7),
              ((1, 2), (3, 4)), {"shape": (1, 7, 64)}, torch.zeros(3), torch.tensor(2.0), print,
              lambda: 0, nn.Linear(2, 2), torch.Size([2, 7, 65])]


@pytest.mark.parametrize("check, right_fn", [
    (check_self_attention, right), (check_ffn, right_ffn), (check_pre_norm, pre_norm)],
    ids=["self_attention", "ffn", "pre_norm"])
def test_function_checkers_survive_perturbed_answers(check, right_fn, capsys):
    for label, wrong in wrong_functions(right_fn):
        line = assert_survives(capsys, check, wrong)
        # float64/float32 copies, a 1e-4 relative change and a squeeze (no axis of size 1 here)
        # are still right answers
        assert label in STILL_RIGHT or not line.startswith("Check passed."), (label, line)
    for value in ODD_VALUES:
        assert_survives(capsys, check, value)


def test_check_shapes_survives_odd_answers(capsys):
    right_answer = ((2, 4, 7, 7), (2, 7, 256), (2, 7, 64))
    values = ODD_VALUES + [v for _, v in wrong_tensors(torch.tensor([1, 4, 7, 7]))]
    for position in range(3):
        for value in values:
            answer = list(right_answer)
            answer[position] = value
            line = assert_survives(capsys, check_shapes, *answer)
            assert not line.startswith("Check passed."), (position, value, line)


@pytest.mark.parametrize("check", [check_more_heads, check_per_position])
def test_question_checkers_survive_odd_answers(check, capsys):
    for value in ODD_VALUES + [v for _, v in wrong_tensors(torch.tensor([768.0, 64.0]))]:
        assert_survives(capsys, check, value)


def test_check_split_merge_survives_perturbed_answers(capsys):
    for label, wrong in wrong_functions(split):
        line = assert_survives(capsys, check_split_merge, wrong, merge)
        assert label in STILL_RIGHT or not line.startswith("Check passed."), (label, line)
    for label, wrong in wrong_functions(merge):
        line = assert_survives(capsys, check_split_merge, split, wrong)
        assert label in STILL_RIGHT or not line.startswith("Check passed."), (label, line)
    for value in ODD_VALUES:
        assert_survives(capsys, check_split_merge, value, merge)
        assert_survives(capsys, check_split_merge, split, value)


# --- Question 3: the path length of a stack of convolutions -----------------------------------

@pytest.mark.parametrize("answer, words", [
    (50, "Check passed. Each layer reaches (w − 1) / 2 = 2 positions further"),
    (50.0, "Check passed."),
    (torch.tensor(50), "Check passed."),
    (100, "one position per layer"),
    (99, "not 1, and from token 1"),
    (25, "not 4 behind"),
    (20, "the rough order of growth"),
    (51, "not the tokens"),
    (3, "dilated kernels"),
    (1, "self-attention"),
    (50.5, "whole number"),
    (7, "Count the positions between the first and the last token"),
    ("50", "should be a number"),
    (None, "Not answered yet"),
])
def test_question_path_length(answer, words, capsys):
    _, line = run(check_path_length, answer, capsys=capsys)
    assert words in line, line


def test_centred_width_5_convolutions_need_50_layers_for_101_tokens():
    """The fact behind question 4, counted by following the links layer by layer."""
    n = 101
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    link = ((i - j).abs() <= 2).float()
    reached, layers = torch.zeros(n), 0
    reached[0] = 1
    while reached[-1] == 0:
        reached, layers = (link @ reached > 0).float(), layers + 1
    assert layers == 50


def test_check_path_length_survives_odd_answers(capsys):
    for value in ODD_VALUES + [float("inf"), -50, 10 ** 30, 1e300]:
        assert_survives(capsys, check_path_length, value)


# --- Issue 29: mistakes that were told a generic hint, and sizes a function cannot guess -------

def attention_varied(x, W_Q, W_K, W_V, W_O, h, keys_with=None, values=None, dropout=0.0):
    """Multi-head self-attention written out, with the keys' matrix, the values or dropout changed."""
    b, n, d = x.shape
    d_k = d // h

    def heads(t):
        return t.view(b, n, h, d_k).transpose(1, 2)

    Q = heads(x @ W_Q)
    K = heads(x @ (W_K if keys_with is None else keys_with))
    V = heads(x @ W_V if values is None else values)
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    weights = F.dropout(weights, p=dropout) if dropout else weights
    return (weights @ V).transpose(1, 2).reshape(b, n, d) @ W_O


MHA_WORDS = {"dropout": "dropout is still on", "values": "your values are x itself",
             "keys": "your keys are made with W_Q"}


@pytest.mark.parametrize("fn, key", [
    (lambda x, W_Q, W_K, W_V, W_O, h: attention_varied(x, W_Q, W_K, W_V, W_O, h, dropout=0.1), "dropout"),
    (lambda x, W_Q, W_K, W_V, W_O, h: attention_varied(x, W_Q, W_K, W_V, W_O, h, values=x), "values"),
    (lambda x, W_Q, W_K, W_V, W_O, h: attention_varied(x, W_Q, W_K, W_V, W_O, h, keys_with=W_Q), "keys"),
])
def test_issue_29_self_attention_mistakes_are_named(fn, key, capsys):
    passed, line = run(check_self_attention, fn, capsys=capsys)
    assert not passed and MHA_WORDS[key].lower() in line.lower(), line
    assert all(words.lower() not in line.lower() for other, words in MHA_WORDS.items() if other != key), line


def test_issue_29_self_attention_written_out_passes(capsys):
    passed, line = run(check_self_attention, lambda *a: attention_varied(*a), capsys=capsys)
    assert passed, line


def ffn_of(act, bias1=True, bias2=True):
    def ffn(t, L):
        hidden = act(t @ L.linear1.weight.T + (L.linear1.bias if bias1 else 0))
        return hidden @ L.linear2.weight.T + (L.linear2.bias if bias2 else 0)
    return ffn


def pre_norm_query_from_x(x, L):
    y = norm(x, L.norm1)
    x = x + L.self_attn(x, y, y, need_weights=False)[0]
    return x + right_ffn(norm(x, L.norm2), L)


def pre_norm_ffn_reads_the_input(x, L):
    y = x + attn(norm(x, L.norm1), L)
    return y + right_ffn(norm(x, L.norm2), L)


def pre_norm_ffn_reads_the_first_norm(x, L):
    z = norm(x, L.norm1)
    y = x + attn(z, L)
    return y + right_ffn(z, L)


PRE_WORDS = {"gelu": "uses GELU", "b2": "second bias b_2", "query": "queries come from x itself",
             "input": "LayerNorm2 of x as it came in", "first": "LayerNorm1(x), the first sublayer's input"}


@pytest.mark.parametrize("layer, key", [
    (lambda x, L: pre_norm(x, L, ffn=ffn_of(F.gelu)), "gelu"),
    (lambda x, L: pre_norm(x, L, ffn=ffn_of(torch.relu, bias2=False)), "b2"),
    (pre_norm_query_from_x, "query"),
    (pre_norm_ffn_reads_the_input, "input"),
    (pre_norm_ffn_reads_the_first_norm, "first"),
])
def test_issue_29_pre_norm_mistakes_are_named(layer, key, capsys):
    passed, line = run(check_pre_norm, layer, capsys=capsys)
    assert not passed and PRE_WORDS[key].lower() in line.lower(), line
    assert all(words.lower() not in line.lower() for other, words in PRE_WORDS.items() if other != key), line


def ffn_for_width_64(x, L):
    b, n, _ = x.shape
    flat = x.reshape(-1, 64)
    return right_ffn(flat, L).reshape(b, n, 64)


def ffn_with_d_ff_256(x, L):
    hidden = torch.relu(x @ L.linear1.weight.T + L.linear1.bias).reshape(-1, 256)
    return (hidden @ L.linear2.weight.T + L.linear2.bias).reshape(x.shape)


@pytest.mark.parametrize("ffn", [ffn_for_width_64, ffn_with_d_ff_256])
def test_issue_29_ffn_is_tested_on_a_width_no_function_can_guess(ffn, capsys):
    passed, line = run(check_ffn, ffn, capsys=capsys)
    assert not passed and "a layer of another width (d_model 24, d_ff 40)" in line, line


def test_issue_29_a_right_ffn_on_any_width_passes(capsys):
    passed, line = run(check_ffn, lambda x, L: L.linear2.weight @ torch.relu(
        L.linear1.weight @ x.unsqueeze(-1) + L.linear1.bias[:, None]) + L.linear2.bias[:, None],
        capsys=capsys)
    assert not passed       # (d_model, 1) columns left: the shape hint, not a crash
    passed, line = run(check_ffn, lambda x, L: torch.einsum(
        "...f,df->...d", torch.relu(torch.einsum("...d,fd->...f", x, L.linear1.weight) + L.linear1.bias),
        L.linear2.weight) + L.linear2.bias, capsys=capsys)
    assert passed, line


# --- Issue 39: another route to the reference, the inputs' dtype, the W_2 hint -----------------

def ffn_as_conv1d(x, L):
    """Section 5's form: a convolution of kernel size 1 loaded with the layer's weights."""
    conv1 = nn.Conv1d(L.linear1.in_features, L.linear1.out_features, 1)
    conv2 = nn.Conv1d(L.linear2.in_features, L.linear2.out_features, 1)
    with torch.no_grad():
        conv1.weight.copy_(L.linear1.weight[..., None])
        conv1.bias.copy_(L.linear1.bias)
        conv2.weight.copy_(L.linear2.weight[..., None])
        conv2.bias.copy_(L.linear2.bias)
    return conv2(torch.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)


def ffn_as_functional_conv(x, L):
    h = torch.nn.functional.conv1d(x.transpose(1, 2), L.linear1.weight[..., None], L.linear1.bias)
    return torch.conv1d(torch.relu(h), L.linear2.weight[..., None], L.linear2.bias).transpose(1, 2)


@pytest.mark.parametrize("fn", [ffn_as_conv1d, ffn_as_functional_conv], ids=["nn.Conv1d", "F.conv1d"])
def test_ffn_as_a_convolution_with_the_layer_s_weights_is_refused(fn, capsys):
    line = printed(capsys, check_ffn, fn)
    assert "the very reference" in line and "Conv1d" in line, line


def test_ffn_with_an_untransposed_w2_is_told_about_w2(capsys):
    def untransposed_w2(x, L):
        return torch.relu(x @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight + L.linear2.bias
    line = printed(capsys, check_ffn, untransposed_w2)
    assert "W_2 is L.linear2.weight.T" in line and "W_1" not in line, line


@pytest.mark.parametrize("check, fn, args", [
    (check_split_merge, lambda t, h: split(t, h).double(), ("merge",)),
    (check_split_merge, lambda t: merge(t).double(), ("split",)),
    (check_self_attention, lambda *a: right(*a).double(), ()),
    (check_ffn, lambda x, L: right_ffn(x, L).double(), ()),
    (check_pre_norm, lambda x, L: pre_norm(x, L).double(), ()),
], ids=["split", "merge", "self_attention", "ffn", "pre_norm"])
def test_float64_outputs_of_float32_inputs_are_refused(check, fn, args, capsys):
    answer = {"merge": (fn, merge), "split": (split, fn)}.get(args[0] if args else None, (fn,))
    line = printed(capsys, check, *answer)
    assert "is float64, the inputs are float32" in line, line


def test_the_shapes_answer_is_not_in_the_checker_s_source():
    source = inspect.getsource(check_shapes.__wrapped__)
    assert "(B, H, N, N)" not in source and "(B, N, D_FF)" not in source and "grow with" not in source
