"""The counting formulas equal the parameters of real modules; the notebook 06 checkers."""

import time

import pytest
import torch
from torch import nn

from helpers import counting
from helpers.attention import MultiHeadAttention
from helpers.checks.counting import check_german_model, check_my_config
from helpers.gpt2 import GPT2
from helpers.layers import DecoderLayer, EncoderLayer
from helpers.model import Transformer

BIG = dict(vocab=37_000, d_model=1024, h=16, d_ff=4096, N=6)     # the paper's "big" model


def test_the_seed_numbers():
    assert counting.attention_params(512) == 1_050_624
    assert counting.ffn_params(512, 2048) == 2_099_712
    assert counting.encoder_layer_params(512, 2048) == 3_152_384
    assert counting.decoder_layer_params(512, 2048) == 4_204_032
    assert counting.transformer_params(**counting.BASE) == 63_082_496
    assert counting.transformer_params(**counting.BASE, tied=False) == 82_026_496
    assert counting.transformer_params(**counting.TINY) == 234_304
    assert counting.gpt2_params(**counting.GPT2_SMALL) == 124_439_808
    assert counting.smollm2_params(**counting.SMOLLM2_135M) == 134_515_008
    saved = (counting.smollm2_params(**counting.SMOLLM2_135M, tied=False)
             - counting.smollm2_params(**counting.SMOLLM2_135M))
    assert saved == 28_311_552


@pytest.mark.parametrize("d_model, h, d_ff", [(64, 4, 256), (48, 3, 100), (512, 8, 2048)])
def test_formulas_equal_instances(d_model, h, d_ff):
    torch.manual_seed(0)
    assert counting.count(MultiHeadAttention(d_model, h)) == counting.attention_params(d_model)
    assert counting.count(nn.MultiheadAttention(d_model, h)) == counting.attention_params(d_model)
    assert counting.count(nn.LayerNorm(d_model)) == counting.norm_params(d_model)
    layer = EncoderLayer(d_model, h, d_ff)
    assert counting.count(layer.linear1) + counting.count(layer.linear2) == counting.ffn_params(d_model, d_ff)
    assert counting.count(layer) == counting.encoder_layer_params(d_model, d_ff)
    assert counting.count(DecoderLayer(d_model, h, d_ff)) == counting.decoder_layer_params(d_model, d_ff)
    assert counting.attention_params(d_model, bias=False) == 4 * d_model ** 2


def test_heads_change_no_count():
    assert counting.count(MultiHeadAttention(64, 1)) == counting.count(MultiHeadAttention(64, 16))


def test_tiny_model_and_nn_transformer_extra_final_norms():
    assert counting.count(Transformer(13, 64, 4, 256, 2)) == 234_304
    ref = nn.Transformer(64, 4, 2, 2, 256, batch_first=True)
    layers = 2 * (counting.encoder_layer_params(64, 256) + counting.decoder_layer_params(64, 256))
    assert counting.count(ref) - layers == 2 * counting.norm_params(64)
    ref.encoder.norm = ref.decoder.norm = None
    assert counting.count(ref) == layers


def test_base_big_gpt2_and_models_on_the_meta_device():
    with torch.device("meta"):
        base = Transformer(37_000, 512, 8, 2048, 6)
        big = Transformer(37_000, 1024, 16, 4096, 6)
        gpt2 = GPT2(50_257, 1024, 768, 12, 12)
    assert counting.count(base) == 63_082_496
    assert counting.count(big) == counting.transformer_params(**BIG) == 214_245_376
    assert counting.count(gpt2) == 124_439_808


def test_gpt2_formula_equals_a_small_instance_with_any_d_ff():
    for d_ff in (None, 100):
        model = GPT2(vocab=50, context=16, d_model=32, h=4, n_layers=3, d_ff=d_ff)
        assert counting.count(model) == counting.gpt2_params(50, 16, 32, 3, d_ff=d_ff)


def test_gpt2_is_causal_and_tied():
    torch.manual_seed(0)
    model = GPT2(vocab=50, context=16, d_model=32, h=4, n_layers=2).eval()
    ids = torch.randint(0, 50, (2, 10))
    later = ids.clone()
    later[:, 6:] = (later[:, 6:] + 1) % 50                     # change only the tokens after 5
    with torch.no_grad():
        a, b = model(ids), model(later)
    assert a.shape == (2, 10, 50)
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6) and not torch.allclose(a[:, 6:], b[:, 6:])
    with torch.no_grad():                                      # the output layer is the embedding
        model.token.weight[7] = 0
        assert torch.equal(model(ids)[..., 7], torch.zeros(2, 10))


def test_smollm2_formula_equals_modules_with_its_shapes():
    d, h, h_kv, d_ff = 96, 6, 2, 160
    d_k = d // h
    layer = nn.ModuleList([nn.Linear(d, h * d_k, bias=False), nn.Linear(d, h_kv * d_k, bias=False),
                           nn.Linear(d, h_kv * d_k, bias=False), nn.Linear(h * d_k, d, bias=False),
                           nn.Linear(d, d_ff, bias=False), nn.Linear(d, d_ff, bias=False),
                           nn.Linear(d_ff, d, bias=False), nn.RMSNorm(d), nn.RMSNorm(d)])
    model = nn.ModuleList([nn.Embedding(100, d), nn.ModuleList([layer]), nn.RMSNorm(d)])
    assert counting.count(model) == counting.smollm2_params(100, d, h, h_kv, d_ff, N=1)


def capture(check, *args):
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check(*args)
    return out.getvalue().strip()


def test_german_checker():
    assert capture(check_german_model, 76_906_496, 11_906_496) == "Check passed."
    assert "three matrices" in capture(check_german_model, 93_290_496, None)
    assert "one shared matrix" in capture(check_german_model, 60_522_496, None)
    assert "only the embeddings" in capture(check_german_model, 32_768_000, None)
    assert "37,000" in capture(check_german_model, 82_026_496, None)
    assert "millions" in capture(check_german_model, 76.9, None)
    assert "sign" in capture(check_german_model, 76_906_496, -11_906_496)
    assert "our count" in capture(check_german_model, 76_906_496, 13_824_000)
    assert "rounding" in capture(check_german_model, 76_906_496, 12_000_000)


DEEP = dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=8)      # Table 3, row (C): N = 8


def test_config_checker_builds_the_model_and_names_mistakes():
    deep = counting.transformer_params(**DEEP)
    assert deep == 77_795_328
    assert capture(check_my_config, DEEP, deep) == "Check passed."
    wide_ffn = dict(counting.BASE, d_ff=4096)
    assert capture(check_my_config, wide_ffn, 88_272_896) == "Check passed."
    long_gpt2 = dict(model="gpt2", vocab=50_257, context=2048, d_model=1024, h=16, N=24)
    assert capture(check_my_config, long_gpt2, 354_823_168 + 1024 * 1024) == "Check passed."
    small = dict(vocab=100, d_model=32, h=4, d_ff=64, N=1)
    assert capture(check_my_config, small, counting.transformer_params(**small)) == "Check passed."
    assert "separate output" in capture(check_my_config, DEEP, deep + 37_000 * 512)
    assert "two attentions" in capture(check_my_config, DEEP, deep - 8 * 1_050_624)
    assert "final LayerNorm" in capture(check_my_config, long_gpt2, 354_823_168 + 1024 * 1024 - 2048)
    assert "multiple of h" in capture(check_my_config, dict(DEEP, h=7), 1)


def test_config_checker_refuses_what_is_printed_above():
    for config, words in ((dict(counting.BASE, h=16), "section 1"),
                          (dict(counting.TINY), "section 2"),
                          (BIG, "width table"),
                          (dict(counting.BASE, N=12), "depth table"),
                          (dict(model="gpt2", **counting.GPT2_SMALL), "family table"),
                          (dict(model="gpt2", vocab=50_257, context=1024, d_model=1024, h=16, N=24),
                           "family table")):
        line = capture(check_my_config, config, 1)
        assert words in line and "printed above" in line, (config, line)


def test_config_checker_is_fast_on_absurd_sizes():
    start = time.perf_counter()
    for config in (dict(vocab=10**12, d_model=512, h=8, d_ff=2048, N=6),
                   dict(vocab=37_000, d_model=2**40, h=8, d_ff=2048, N=6),
                   dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=-3),
                   dict(vocab=37_000, d_model=512, h=0, d_ff=2048, N=6),
                   dict(model="gpt2", vocab=50_257, context=10**9, d_model=768, h=12, N=12),
                   dict(vocab=1_000_000, d_model=16_384, h=512, d_ff=65_536, N=128)):
        printed = capture(check_my_config, config, 1)
        assert printed != "Check passed." and "Could not check" not in printed
    assert time.perf_counter() - start < 30


# --- issue 11: checks that misjudged an answer (each test failed before its fix) -------------

def test_ffn_biases_forgotten_is_not_only_called_layernorms():
    deep = dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=8)          # d_ff = 4 d_model
    right = counting.transformer_params(**deep)
    ffn_biases = 2 * 8 * (2048 + 512)                                    # b1, b2 of 16 FFNs
    line = capture(check_my_config, deep, right - ffn_biases)
    assert "FFN biases" in line and "LayerNorm" in line, line
    layer_norms = 5 * 8 * 2 * 512
    assert ffn_biases == layer_norms                                     # why both are named
    line = capture(check_german_model, 76_906_496 - 12 * (2048 + 512), None)
    assert "FFN biases" in line and "LayerNorm" in line, line


def test_german_gap_must_be_exact():
    assert capture(check_german_model, 76_906_496, 11_906_496) == "Check passed."
    assert capture(check_german_model, 76_906_496, 11_906_496.0) == "Check passed."
    for wrong in (12_000_000, 11_500_000, 11_906_000, 12_406_496):
        assert capture(check_german_model, 76_906_496, wrong) != "Check passed.", wrong


def test_german_hints_name_no_source_material():
    line = capture(check_german_model, 76_906_496 - 18 * 4 * 512, None)
    assert "bias" in line
    for word in ("step-7", "step 7", "seed", "lesson"):
        assert word not in line.lower(), line
