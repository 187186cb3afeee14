"""The layers and the model in helpers/ equal PyTorch's modules with the same weights."""

import pytest
import torch
from torch import nn

from helpers.attention import MultiHeadAttention, additive_mask, causal_mask
from helpers.layers import DecoderLayer, EncoderLayer
from helpers.model import Transformer, keep_attention_weights, pytorch_state_dict

pytestmark = pytest.mark.cpu_sensitive   # runs models: re-run under another CPU kernel family


def moved(module):
    """Move every parameter off its initial value (γ ≠ 1, β ≠ 0, biases ≠ 0)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return module


def test_attention_equals_pytorch_with_a_causal_mask():
    torch.manual_seed(0)
    ours = moved(MultiHeadAttention(64, 4)).eval()
    ref = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(2, 6, 64)
    mask = causal_mask(6)
    expected, _ = ref(x, x, x, attn_mask=mask, need_weights=False)
    assert torch.allclose(ours(x, mask=additive_mask(causal=mask)), expected, atol=1e-5)


def test_encoder_layer_equals_pytorch_post_and_pre_norm():
    torch.manual_seed(0)
    for norm_first in (False, True):
        ours = moved(EncoderLayer(64, 4, 256, 0.1, norm_first)).eval()
        ref = nn.TransformerEncoderLayer(64, 4, 256, 0.1, batch_first=True, norm_first=norm_first).eval()
        ref.load_state_dict(ours.state_dict())
        x = torch.randn(2, 5, 64)
        assert torch.allclose(ours(x), ref(x), atol=1e-5)


def test_decoder_layer_equals_pytorch():
    torch.manual_seed(0)
    ours = moved(DecoderLayer(64, 4, 256)).eval()
    ref = nn.TransformerDecoderLayer(64, 4, 256, batch_first=True).eval()
    state = ours.state_dict()
    ref.load_state_dict({k.replace("cross_attn.", "multihead_attn."): v for k, v in state.items()})
    y, memory = torch.randn(2, 6, 64), torch.randn(2, 5, 64)
    mask = causal_mask(6)
    assert torch.allclose(ours(y, memory, additive_mask(causal=mask)),
                          ref(y, memory, tgt_mask=mask), atol=1e-5)


def test_tiny_model_size_and_equivalence_with_nn_transformer_on_a_padded_batch():
    torch.manual_seed(0)
    ours = moved(Transformer(13, 64, 4, 256, 2)).eval()
    assert sum(p.numel() for p in ours.parameters()) == 234_304
    ref = nn.Transformer(64, 4, 2, 2, 256, batch_first=True).eval()
    ref.encoder.norm = ref.decoder.norm = None          # the paper has no final norm
    ref.encoder.use_nested_tensor = False               # no fast path that zeroes padding
    ref.load_state_dict(pytorch_state_dict(ours))
    src = torch.tensor([[5, 3, 4, 7, 6, 2], [5, 3, 4, 2, 0, 0]])
    tgt = torch.tensor([[1, 6, 7, 4, 3, 5, 2], [1, 4, 3, 5, 2, 0, 0]])
    with torch.no_grad():
        memory = ref.encoder(ours.embed(src), src_key_padding_mask=src == 0)
        y = ref.decoder(ours.embed(tgt), memory, tgt_mask=causal_mask(7),
                        memory_key_padding_mask=src == 0)
        assert torch.allclose(ours(src, tgt), y @ ours.embedding.weight.T, atol=1e-4)


def test_equivalence_with_nn_transformer_is_exact_in_float64():
    """In float32 the two differ by float rounding (about 1e-6, PyTorch's modules add in another
    order); in float64 the difference falls to about 1e-15: the same computation."""
    torch.manual_seed(0)
    ours = moved(Transformer(13, 64, 4, 256, 2)).eval().double()
    ref = nn.Transformer(64, 4, 2, 2, 256, batch_first=True).eval().double()
    ref.encoder.norm = ref.decoder.norm = None
    ref.encoder.use_nested_tensor = False
    ref.load_state_dict(pytorch_state_dict(ours))
    src = torch.tensor([[5, 3, 4, 7, 6], [8, 9, 10, 0, 0]])
    tgt = torch.tensor([[1, 6, 7, 4, 3, 5], [1, 10, 9, 8, 0, 0]])
    with torch.no_grad():
        memory = ref.encoder(ours.embed(src), src_key_padding_mask=src == 0)
        y = ref.decoder(ours.embed(tgt), memory, tgt_mask=causal_mask(6), memory_key_padding_mask=src == 0)
        assert (ours(src, tgt) - y @ ours.embedding.weight.T).abs().max() < 1e-12
        assert (ours.encode(src) - memory).abs().max() < 1e-12


def test_forward_builds_the_source_mask_once_and_equals_encode_then_decode():
    torch.manual_seed(0)
    model = Transformer(13, 64, 4, 256, 2).eval()
    src = torch.tensor([[5, 3, 4, 7, 6], [8, 9, 10, 0, 0]])
    tgt = torch.tensor([[1, 6, 7, 4, 3, 5], [1, 10, 9, 8, 0, 0]])
    with torch.no_grad():
        assert torch.equal(model(src, tgt), model.decode(tgt, model.encode(src), src))
        assert model.memory_mask(src).shape == (2, 1, 1, 5)


def test_keep_attention_weights_gives_the_shapes_of_the_lesson():
    torch.manual_seed(0)
    model = Transformer(13, 64, 4, 256, 2).eval()
    keep_attention_weights(model)
    with torch.no_grad():
        logits = model(torch.tensor([[5, 3, 4, 7, 6]]), torch.tensor([[1, 6, 7, 4, 3, 5]]))
    layer = model.decoder_layers[1]
    assert logits.shape == (1, 6, 13)
    assert model.encoder_layers[0].self_attn.weights.shape == (1, 4, 5, 5)
    assert layer.self_attn.weights.shape == (1, 4, 6, 6) and layer.cross_attn.weights.shape == (1, 4, 6, 5)
    assert torch.equal(layer.self_attn.weights[0, 0].triu(1), torch.zeros(6, 6))    # causal
    keep_attention_weights(model, False)
    assert layer.cross_attn.weights is None


def test_figure_one_shapes_are_those_of_a_real_run():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.figures import draw_transformer, transformer_shapes
    for vocab, d, h, d_ff, n_layers, batch, n_src, n_tgt in ((13, 64, 4, 256, 2, 1, 5, 6),
                                                           (20, 32, 2, 64, 1, 3, 7, 4)):
        torch.manual_seed(0)
        model = Transformer(vocab, d, h, d_ff, n_layers).eval()
        keep_attention_weights(model)
        hidden = {}
        enc, dec = model.encoder_layers[0], model.decoder_layers[0]
        hooks = [enc.linear1.register_forward_hook(lambda m, i, o, kept=hidden: kept.update(enc=o)),
                 dec.linear1.register_forward_hook(lambda m, i, o, kept=hidden: kept.update(dec=o))]
        src, tgt = torch.randint(3, vocab, (batch, n_src)), torch.randint(3, vocab, (batch, n_tgt))
        with torch.no_grad():
            memory = model.encode(src)
            logits = model.decode(tgt, memory, src)
        for hook in hooks:
            hook.remove()
        measured = {"source ids": src, "source embedded": model.embed(src),
                    "encoder self-attention weights": enc.self_attn.weights,
                    "encoder FFN hidden": hidden["enc"], "memory": memory, "decoder input ids": tgt,
                    "target embedded": model.embed(tgt),
                    "decoder masked self-attention weights": dec.self_attn.weights,
                    "cross-attention weights": dec.cross_attn.weights, "decoder FFN hidden": hidden["dec"],
                    "logits": logits, "probabilities": logits.softmax(-1)}
        shapes = transformer_shapes(vocab, d, h, d_ff, n_layers, n_src, n_tgt, batch)
        for name, t in measured.items():
            assert shapes[name] == tuple(t.shape), name
        fig, drawn = draw_transformer(vocab, d, h, d_ff, n_layers, n_src, n_tgt, batch)
        texts = " ".join(t.get_text() for t in fig.axes[0].texts)
        assert drawn == shapes and fig.axes[0].get_title()
        for name in ("memory", "cross-attention weights", "logits", "source ids", "decoder input ids"):
            assert str(shapes[name]).replace(",)", ")") in texts, name
        plt.close(fig)


def test_figure_one_labels_the_keys_and_values_arrow_and_keeps_residuals_in_their_frame():
    """The arrow into the cross-attention carries the memory's shape; each residual starts inside
    its stack's frame, not on its border."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    from helpers.figures import draw_transformer
    fig, shapes = draw_transformer(13, 64, 4, 256, 2, 5, 6)
    ax = fig.axes[0]
    assert any(t.get_text().startswith("K, V") and "(1, 5, 64)" in t.get_text() for t in ax.texts)
    frames = [p for p in ax.patches if isinstance(p, FancyBboxPatch) and p.get_facecolor()[3] == 0]
    bottom = min(f.get_y() for f in frames)
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert dashed and all(min(line.get_ydata()) > bottom + 0.1 for line in dashed)
    plt.close(fig)
