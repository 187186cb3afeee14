"""helpers.attention and helpers.layers against PyTorch (beyond tests/test_model.py).

The checks of notebook 03 are tested in tests/test_encoder_checks.py."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import (MultiHeadAttention, additive_mask, additive_scores, attention, merge_heads,
                               split_heads)
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


def test_hand_example_of_the_notebook():
    x = torch.tensor([1.0, 2.0])
    W1 = torch.tensor([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]])
    W2 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    out = torch.relu(x @ W1 + torch.tensor([0.0, 0.0, 1.0])) @ W2 + torch.tensor([0.5, 0.0])
    assert out.tolist() == [1.5, 1.0]
    assert math.isclose(F.gelu(torch.tensor(1.0)).item(), 0.8413, abs_tol=1e-4)


def test_float64_attention_with_a_float32_mask_hides_the_future():
    from helpers.attention import MultiHeadAttention, additive_mask, causal_mask
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 1).double().eval()
    x = torch.randn(1, 20, 16, dtype=torch.float64)
    changed = x.clone()
    changed[:, 10:] += 1.0                           # change only the future of positions 0..9
    mask = additive_mask(causal=causal_mask(20))     # float32, as the model builds it
    with torch.no_grad():
        gap = (mha(x, mask=mask)[:, :10] - mha(changed, mask=mask)[:, :10]).abs().max().item()
    assert gap == 0.0


# --- Figure 2 and additive attention (notebook 03) ---------------------------------------------

@pytest.mark.parametrize("d_model, h, n, batch", [(64, 4, 5, 1), (48, 6, 7, 3)])
def test_figure_two_shapes_are_those_of_a_real_run(d_model, h, n, batch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.figures import attention_shapes, draw_attention
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model, h).eval()
    mha.keep_weights = True                                   # the step-by-step path keeps the weights
    seen = {}
    mha.out_proj.register_forward_hook(lambda m, i, o: seen.update(concat=i[0], output=o))
    x = torch.randn(batch, n, d_model)
    with torch.no_grad():
        out = mha(x)
        q = split_heads(x @ mha.in_proj_weight[:d_model].T, h)
        scores = q @ split_heads(x @ mha.in_proj_weight[d_model:2 * d_model].T, h).transpose(-2, -1)
        heads, _ = attention(q, q, q)
    measured = {"x": x, "q, k, v": q, "q @ k.T": scores, "scaled": scores / math.sqrt(d_model // h),
                "masked": scores, "weights": mha.weights, "heads": heads, "concat": seen["concat"],
                "output": out}
    shapes = attention_shapes(d_model, h, n, batch)
    assert set(shapes) == set(measured)
    for name, t in measured.items():
        assert shapes[name] == tuple(t.shape), name
    fig, drawn = draw_attention(d_model, h, n, batch)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert drawn == shapes and fig.axes[0].get_title()
    for name in ("q, k, v", "weights", "concat", "output", "x"):
        assert str(shapes[name]) in texts, name
    for box in ("MatMul", "Scale", "Mask (opt.)", "SoftMax", "Concat", "merge_heads", "split_heads",
                "W_O", "W_Q", "W_K", "W_V"):
        assert box in texts, box
    plt.close(fig)


def test_additive_scores_equal_the_formula_for_each_pair():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(2, 5, 4, dtype=torch.float64)
    W_q, W_k, v_a = (torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 6, dtype=torch.float64),
                     torch.randn(6, dtype=torch.float64))
    scores = additive_scores(q, k, W_q, W_k, v_a)
    assert scores.shape == (2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                by_hand = v_a @ torch.tanh(W_q.T @ q[b, i] + W_k.T @ k[b, j])
                assert math.isclose(scores[b, i, j].item(), by_hand.item(), rel_tol=1e-12)
    # the notebook's hand example: W_q = W_k = I, v_a = (1, 1), q = (1, 0)
    eye, ones = torch.eye(2), torch.ones(2)
    hand = additive_scores(torch.tensor([[1.0, 0.0]]), torch.eye(2), eye, eye, ones)
    assert torch.allclose(hand, torch.tensor([[math.tanh(2.0), 2 * math.tanh(1.0)]]))
