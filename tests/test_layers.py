"""helpers.attention and helpers.layers against PyTorch (beyond tests/test_model.py), and the
checks of notebook 03 recognising the mistakes they name."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import MultiHeadAttention, additive_mask, attention, merge_heads, split_heads
from helpers.checks.encoder import check_ffn, check_pre_norm, check_shapes
from helpers.layers import EncoderLayer


def moved(module):
    """Move every parameter off its initial value (γ ≠ 1, β ≠ 0, biases ≠ 0)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return module


def count(module):
    return sum(p.numel() for p in module.parameters())


# --- helpers.attention -------------------------------------------------------------------------

def test_split_heads_gives_each_head_its_own_columns_and_merge_undoes_it():
    x = torch.randn(2, 5, 64)
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 5, 16)
    for i in range(4):
        assert torch.equal(heads[:, i], x[:, :, 16 * i:16 * (i + 1)])
    assert torch.equal(merge_heads(heads), x)


@pytest.mark.parametrize("d_model, h, d_k", [(512, 8, 64), (64, 4, 16), (768, 12, 64)])
def test_d_k_is_d_model_over_h(d_model, h, d_k):
    assert split_heads(torch.zeros(1, 3, d_model), h).shape == (1, h, 3, d_k)


def test_attention_is_softmax_of_scaled_scores_times_v():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    out, weights = attention(q, k, v)
    by_hand = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)     # sqrt(d_k) = sqrt(4) = 2
    assert weights.shape == (1, 2, 3, 5)
    assert torch.allclose(weights, by_hand)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 2, 3))
    assert torch.allclose(out, by_hand @ v)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6)


def test_masked_keys_get_zero_weight():
    torch.manual_seed(0)
    q = k = v = torch.randn(2, 1, 4, 8)
    padding = torch.tensor([[False, False, True, True], [False, False, False, False]])
    _, weights = attention(q, k, v, additive_mask(padding=padding))
    assert torch.all(weights[0, :, :, 2:] == 0)
    assert torch.all(weights[1] > 0)


def test_multi_head_attention_weights_equal_pytorch_head_by_head():
    torch.manual_seed(0)
    ours = moved(MultiHeadAttention(64, 4)).eval()
    ref = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(1, 5, 64)
    expected, expected_weights = ref(x, x, x, average_attn_weights=False)
    ours.keep_weights = True
    with torch.no_grad():
        kept = ours(x)
        assert ours.weights.shape == (1, 4, 5, 5)
        assert torch.allclose(ours.weights, expected_weights, atol=1e-6)
        ours.keep_weights = False
        assert torch.allclose(ours(x), kept, atol=1e-6)      # both code paths agree
        assert torch.allclose(kept, expected, atol=1e-6)


# --- helpers.layers ----------------------------------------------------------------------------

def test_seeded_layer_of_the_lesson_equals_helpers_encoder_layer():
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.1, activation="relu",
                                     batch_first=True, norm_first=False).eval()
    x = torch.randn(1, 5, 64)
    ours = EncoderLayer(64, 4, 256).eval()
    ours.load_state_dict(ref.state_dict())
    with torch.no_grad():
        out = ours(x)
        assert out.shape == (1, 5, 64)
        assert (out - ref(x)).abs().max() < 1e-6


def test_ffn_is_relu_between_two_linear_layers_applied_per_position():
    torch.manual_seed(0)
    layer = moved(EncoderLayer(64, 4, 256))
    x = torch.randn(1, 5, 64)
    W1, b1 = layer.linear1.weight.T, layer.linear1.bias
    W2, b2 = layer.linear2.weight.T, layer.linear2.bias
    with torch.no_grad():
        assert torch.allclose(layer.ffn(x), torch.clamp(x @ W1 + b1, min=0) @ W2 + b2, atol=1e-6)
        assert torch.allclose(layer.ffn(x[:, 3:4]), layer.ffn(x)[:, 3:4], atol=1e-6)


def test_gelu_encoder_layer_equals_pytorch():
    torch.manual_seed(0)
    ours = moved(EncoderLayer(64, 4, 256, activation="gelu")).eval()
    ref = nn.TransformerEncoderLayer(64, 4, 256, activation="gelu", batch_first=True).eval()
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, 64)
    with torch.no_grad():
        assert torch.allclose(ours(x), ref(x), atol=1e-5)


def test_parameter_count_at_the_papers_size():
    layer = EncoderLayer(512, 8, 2048)
    assert count(layer.self_attn) == 4 * (512 ** 2 + 512) == 1_050_624
    assert count(layer.linear1) + count(layer.linear2) == 2_099_712
    assert count(layer) == count(nn.TransformerEncoderLayer(512, 8, 2048)) == 3_152_384


def test_dropout_only_in_training_mode():
    torch.manual_seed(0)
    layer = EncoderLayer(64, 4, 256, p=0.1)
    x = torch.randn(1, 5, 64)
    with torch.no_grad():
        assert not torch.allclose(layer.train()(x), layer(x))
        layer.eval()
        assert torch.equal(layer(x), layer(x))


def test_post_norm_output_is_normalised_and_pre_norm_is_not():
    torch.manual_seed(0)
    x = 3 * torch.randn(1, 5, 64)
    post, pre = EncoderLayer(64, 4, 256).eval(), EncoderLayer(64, 4, 256, norm_first=True).eval()
    with torch.no_grad():
        assert torch.allclose(post(x).std(-1, unbiased=False), torch.ones(1, 5), atol=1e-3)
        assert not torch.allclose(pre(x).std(-1, unbiased=False), torch.ones(1, 5), atol=0.1)


# --- helpers.checks.encoder: the mistakes it names ---------------------------------------------

def run(check, *args, capsys):
    """(passed, the one printed line) of a check call."""
    check(*args)
    printed = capsys.readouterr().out.strip()
    return printed == "Check passed.", printed


@pytest.mark.parametrize("answer, words", [
    (((1, 4, 7, 7), (1, 7, 256), (1, 7, 64)), None),
    (((1, 7, 4, 7), (1, 7, 256), (1, 7, 64)), "swapped"),
    (((1, 4, 7, 16), (1, 7, 256), (1, 7, 64)), "n × n"),
    (((1, 4, 5, 5), (1, 7, 256), (1, 7, 64)), "7 letters"),
    (((1, 4, 7, 7), (1, 7, 64), (1, 7, 64)), "d_model instead of d_ff"),
    (((1, 4, 7, 7), (1, 7, 256), (1, 7, 256)), "d_ff instead of d_model"),
    (((1, 4, 7, 7), (1, 7, 256), (1, 4, 7, 16)), "concatenated"),
    (((1, 4, 7, 7), (1, 7, 256), (2, 3)), "The memory should be 3-dimensional (1, 7, 64)"),
])
def test_check_shapes_names_the_confusion(answer, words, capsys):
    passed, printed = run(check_shapes, *answer, capsys=capsys)
    assert passed == (words is None), printed
    if words:
        assert words in printed


def right_ffn(x, L):
    return torch.relu(x @ L.linear1.weight.T + L.linear1.bias) @ L.linear2.weight.T + L.linear2.bias


@pytest.mark.parametrize("ffn, words", [
    (right_ffn, None),
    (lambda x, L: L.linear2(F.relu(L.linear1(x))), None),
    (lambda x, L: L.linear2(L.linear1(x)), "ReLU is missing"),
    (lambda x, L: L.linear2(F.gelu(L.linear1(x))), "GELU"),
    (lambda x, L: F.relu(right_ffn(x, L)), "not clipped"),
    (lambda x, L: F.relu(x @ L.linear1.weight.T) @ L.linear2.weight.T + L.linear2.bias, "b_1"),
    (lambda x, L: F.relu(L.linear1(x)) @ L.linear2.weight.T, "b_2"),
    (lambda x, L: x + right_ffn(x, L), "shortcut"),
    (lambda x, L: F.relu(x @ L.linear1.weight + L.linear1.bias), "weight.T"),
    (lambda x, L: F.relu(L.linear1(x)), "hidden layer"),
    (lambda x, L: 1 / 0, "ZeroDivisionError"),
    (lambda x, L: None, "returned None"),
    (lambda x, L: 2 * right_ffn(x, L), "differs from PyTorch"),
])
def test_check_ffn_names_the_mistake(ffn, words, capsys):
    passed, printed = run(check_ffn, ffn, capsys=capsys)
    assert passed == (words is None), printed
    if words:
        assert words in printed and "\n" not in printed


def norm(x, n, unbiased=False):
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=unbiased, keepdim=True)
    return (x - mu) / torch.sqrt(var + n.eps) * n.weight + n.bias


def attn(x, L):
    return L.self_attn(x, x, x, need_weights=False)[0]


def pre_norm(x, L, n=norm, ffn=right_ffn):
    x = x + attn(n(x, L.norm1), L)
    return x + ffn(n(x, L.norm2), L)


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


@pytest.mark.parametrize("layer, words", [
    (pre_norm, None),
    (post_norm, "post-norm"),
    (normed_shortcut, "shortcut should carry x itself"),
    (lambda x, L: norm(pre_norm(x, L), L.norm2), "no LayerNorm at the end"),
    (no_shortcut, "shortcuts are missing"),
    (swapped_norms, "swapped"),
    (lambda x, L: pre_norm(x, L, n=plain_norm), "γ and β"),
    (lambda x, L: pre_norm(x, L, n=lambda t, m: norm(t, m, unbiased=True)), "d − 1"),
    (lambda x, L: pre_norm(x, L, ffn=lambda t, M: M.linear2(M.linear1(t))), "ReLU is missing"),
    (lambda x, L: x + attn(norm(x, L.norm1), L), "stopped after the attention"),
])
def test_check_pre_norm_names_the_mistake(layer, words, capsys):
    passed, printed = run(check_pre_norm, layer, capsys=capsys)
    assert passed == (words is None), printed
    if words:
        assert words in printed


def test_checkers_leave_the_global_random_state_alone(capsys):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_ffn(right_ffn)
    check_pre_norm(pre_norm)
    capsys.readouterr()
    assert torch.equal(torch.rand(3), expected)


def test_hand_example_of_the_notebook():
    x = torch.tensor([1.0, 2.0])
    W1 = torch.tensor([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]])
    W2 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    out = torch.relu(x @ W1 + torch.tensor([0.0, 0.0, 1.0])) @ W2 + torch.tensor([0.5, 0.0])
    assert out.tolist() == [1.5, 1.0]
    assert math.isclose(F.gelu(torch.tensor(1.0)).item(), 0.8413, abs_tol=1e-4)
