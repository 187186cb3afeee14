"""The model options of the paper's Table 3 (head sizes d_k, d_v; learned positions) and
helpers.ablation: its rows, its results file and one re-run row."""

import math

import pytest
import torch
import torch.nn.functional as F

from helpers.attention import MultiHeadAttention, additive_mask, causal_mask
from helpers.decoding import greedy_decode
from helpers.layers import DecoderLayer, EncoderLayer
from helpers.model import Transformer


def moved(module):
    """Move every parameter off its initial value (biases ≠ 0, γ ≠ 1, β ≠ 0)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return module


def count(module):
    return sum(p.numel() for p in module.parameters())


# --- the defaults are the paper's base model, unchanged ---------------------------------------

def test_default_model_loads_the_shipped_checkpoints_and_has_no_new_key():
    from helpers.decoding import CHECKPOINTS, PARTLY_TRAINED, TINY, TRAINED
    model = Transformer(13, p=0.1, **TINY)
    for name in (PARTLY_TRAINED, TRAINED):
        state = torch.load(CHECKPOINTS / name, weights_only=True)
        assert model.load_state_dict(state, strict=True)                # same keys, same shapes
    assert "pe" not in model.state_dict() and not model.pe.requires_grad
    assert count(model) == 234_304


def test_explicit_default_head_sizes_give_the_same_module_and_numbers():
    for d_k, d_v in ((None, None), (16, None), (None, 16), (16, 16)):
        torch.manual_seed(0)
        a = MultiHeadAttention(64, 4)
        torch.manual_seed(0)
        b = MultiHeadAttention(64, 4, d_k, d_v)
        assert a.state_dict().keys() == b.state_dict().keys()
        assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
        x = torch.randn(2, 5, 64)
        with torch.no_grad():
            assert torch.equal(a(x), b(x))


def test_a_model_built_with_defaults_consumes_the_same_random_numbers():
    """Every seeded run depends on the order of initialisation: explicit defaults change nothing."""
    torch.manual_seed(0)
    a = Transformer(13, 64, 4, 256, 2)
    after_a = torch.rand(3)
    torch.manual_seed(0)
    b = Transformer(13, 64, 4, 256, 2, d_k=16, d_v=16, positions="sinusoidal")
    assert torch.equal(after_a, torch.rand(3))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


# --- d_k and d_v ------------------------------------------------------------------------------

def by_hand(attn, x, memory=None, mask=None):
    """Multi-head attention head by head, from the slices of W_Q, W_K, W_V and W_O."""
    h, d_k, d_v = attn.h, attn.d_k, attn.d_v
    w, b = attn.in_proj_weight, attn.in_proj_bias
    source = x if memory is None else memory
    W_Q, W_K, W_V = w[:h * d_k], w[h * d_k:2 * h * d_k], w[2 * h * d_k:]
    b_Q, b_K, b_V = b[:h * d_k], b[h * d_k:2 * h * d_k], b[2 * h * d_k:]
    heads = []
    for i in range(h):
        q = x @ W_Q[i * d_k:(i + 1) * d_k].T + b_Q[i * d_k:(i + 1) * d_k]
        k = source @ W_K[i * d_k:(i + 1) * d_k].T + b_K[i * d_k:(i + 1) * d_k]
        v = source @ W_V[i * d_v:(i + 1) * d_v].T + b_V[i * d_v:(i + 1) * d_v]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
        if mask is not None:
            scores = scores + mask[:, 0] if mask.dim() == 4 else scores + mask
        heads.append(torch.softmax(scores, -1) @ v)                     # (batch, n, d_v)
    return attn.out_proj(torch.cat(heads, -1))


@pytest.mark.parametrize("h, d_k, d_v", [(4, 8, None), (4, 4, 16), (2, 3, 5), (1, 64, 64), (16, None, None)])
def test_other_head_sizes_compute_attention_head_by_head(h, d_k, d_v):
    torch.manual_seed(0)
    attn = moved(MultiHeadAttention(64, h, d_k, d_v)).eval()
    d_k = 64 // h if d_k is None else d_k
    d_v = 64 // h if d_v is None else d_v
    assert (attn.d_k, attn.d_v) == (d_k, d_v)
    assert attn.in_proj_weight.shape == (h * (2 * d_k + d_v), 64)
    assert attn.out_proj.weight.shape == (64, h * d_v)
    assert count(attn) == 64 * h * (2 * d_k + d_v) + h * (2 * d_k + d_v) + h * d_v * 64 + 64
    x, memory = torch.randn(2, 6, 64), torch.randn(2, 5, 64)
    causal = additive_mask(causal=causal_mask(6))
    with torch.no_grad():
        assert torch.allclose(attn(x, mask=causal), by_hand(attn, x, mask=causal), atol=1e-5)
        assert torch.allclose(attn(x, memory), by_hand(attn, x, memory), atol=1e-5)
        attn.keep_weights = True                                        # the other code path
        assert torch.allclose(attn(x, memory), by_hand(attn, x, memory), atol=1e-5)
        assert attn.weights.shape == (2, h, 6, 5)


def test_smaller_d_k_changes_only_the_query_and_key_rows():
    base, small = MultiHeadAttention(64, 4), MultiHeadAttention(64, 4, d_k=4)
    assert base.in_proj_weight.shape == (192, 64) and small.in_proj_weight.shape == (4 * 4 * 2 + 64, 64)
    assert small.out_proj.weight.shape == base.out_proj.weight.shape == (64, 64)     # d_v = 16 still


def test_layers_and_model_pass_the_head_sizes_to_every_attention():
    enc, dec = EncoderLayer(64, 4, 256, d_k=8), DecoderLayer(64, 4, 256, d_k=8, d_v=4)
    assert enc.self_attn.d_k == 8 and enc.self_attn.d_v == 16
    assert (dec.self_attn.d_k, dec.cross_attn.d_k, dec.cross_attn.d_v) == (8, 8, 4)
    torch.manual_seed(0)
    model = Transformer(13, 64, 4, 256, 2, d_k=4).eval()
    assert {m.d_k for m in model.modules() if isinstance(m, MultiHeadAttention)} == {4}
    assert count(model) == 234_304 - 6 * 2 * (64 * 4 * 12 + 4 * 12)     # 6 attentions, W_Q and W_K smaller
    src, tgt = torch.tensor([[5, 3, 4, 7, 6], [8, 9, 10, 0, 0]]), torch.tensor([[1, 6, 7], [1, 10, 9]])
    with torch.no_grad():
        assert model(src, tgt).shape == (2, 3, 13)
        assert greedy_decode(model, src, use_cache=False).shape[0] == 2


# --- learned positions ------------------------------------------------------------------------

def test_learned_positions_are_a_trained_parameter_in_the_state_dict():
    torch.manual_seed(0)
    model = Transformer(13, 64, 4, 256, 2, positions="learned", max_len=32)
    state = model.state_dict()
    assert state["pe"].shape == (32, 64) and model.pe.requires_grad
    assert count(model) == 234_304 + 32 * 64
    assert 0.1 < model.pe.std().item() < 0.15                           # like E: std 1/√64 = 0.125
    src, tgt = torch.tensor([[5, 3, 4, 7, 6]]), torch.tensor([[1, 6, 7, 4, 3, 5]])
    F.cross_entropy(model(src, tgt)[0], torch.tensor([6, 7, 4, 3, 5, 2])).backward()
    assert model.pe.grad[:6].abs().sum() > 0 and model.pe.grad[6:].abs().sum() == 0
    fresh = Transformer(13, 64, 4, 256, 2, positions="learned", max_len=32)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.pe, model.pe)


def test_learned_positions_are_what_embed_adds():
    torch.manual_seed(0)
    model = Transformer(13, 64, 4, 256, 2, p=0.0, positions="learned").eval()
    ids = torch.tensor([[5, 3, 4]])
    with torch.no_grad():
        assert torch.allclose(model.embed(ids), model.embedding(ids) * 8 + model.pe[:3])
        model.pe[1] += 1.0
        assert torch.allclose(model.embed(ids)[0, 1], model.embedding(ids)[0, 1] * 8 + model.pe[1])


def test_learned_positions_decode_alike_with_and_without_the_cache():
    torch.manual_seed(0)
    model = moved(Transformer(13, 64, 4, 256, 2, positions="learned")).eval()
    src = torch.tensor([[5, 3, 4, 7, 6], [8, 9, 10, 0, 0]])
    assert torch.equal(greedy_decode(model, src, stop=False), greedy_decode(model, src, use_cache=False,
                                                                            stop=False))


def test_unknown_positions_are_refused():
    with pytest.raises(ValueError, match="sinusoidal"):
        Transformer(13, 64, 4, 256, 2, positions="rotary")
