"""Notebook 06's checkers: your turn 3 (a model of today from its config) and the questions.

Every wrong answer is written here as a learner would write it, independently of the checker.
"""

import contextlib
import io

import pytest
import torch
from torch import nn

from helpers import counting
from helpers.checks.counting import (MODERN_CONFIGS, check_cache_or_weights, check_changed_choices,
                                     check_german_model, check_gpu_share, check_modern_count,
                                     check_my_config, check_width_factor)
from helpers.counting import llama_modules, llama_sizes, smollm2_params

SMOL_360M = counting.SMOLLM2_360M_CONFIG


def said(check, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check(*args)
    printed = out.getvalue()
    assert printed.count("\n") == 1, printed
    return printed.strip()


# --- the published config ---------------------------------------------------------------------

def test_smollm2_360m_config_and_count():
    """The fields of HuggingFaceTB/SmolLM2-360M's config.json that fix the count."""
    c = SMOL_360M
    assert (c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"],
            c["num_hidden_layers"], c["vocab_size"], c["tie_word_embeddings"]) == (
        960, 2560, 15, 5, 32, 49_152, True)
    assert counting.smollm2_params(**counting.llama_sizes(c)) == 361_821_120
    sizes_135m = counting.llama_sizes(counting.SMOLLM2_135M_CONFIG)
    assert sizes_135m == dict(counting.SMOLLM2_135M, tied=True)


@pytest.mark.parametrize("label, config", MODERN_CONFIGS)
def test_llama_modules_equal_the_formula(label, config):
    sizes = counting.llama_sizes(config)
    with torch.device("meta"):
        model = counting.llama_modules(**sizes)
    assert counting.count(model) == counting.smollm2_params(**sizes)
    assert (model["lm_head"].weight is model["embed_tokens"].weight) == sizes["tied"]


def test_kv_cache_bytes():
    # SmolLM2-135M: 30 layers, 3 key-value heads of 64; 8,192 tokens in bfloat16
    assert counting.kv_cache_bytes(30, 3, 64, 8192) == 2 * 30 * 3 * 64 * 8192 * 2 == 188_743_680
    assert counting.kv_cache_bytes(30, 3, 64, 8192, batch=4, bytes_per_number=4) == 4 * 2 * 188_743_680
    # equal to the bytes of real key and value tensors of that shape
    k = torch.zeros(1, 3, 100, 64, dtype=torch.bfloat16)
    assert counting.kv_cache_bytes(30, 3, 64, 100) == 30 * 2 * k.numel() * k.element_size()


# --- your turn 3: right answers, written two ways ---------------------------------------------

def by_formula(config):
    d, d_ff = config["hidden_size"], config["intermediate_size"]
    h, h_kv = config["num_attention_heads"], config["num_key_value_heads"]
    d_k = d // h
    layer = d * h * d_k + 2 * d * h_kv * d_k + h * d_k * d + 3 * d * d_ff + 2 * d
    embedding = config["vocab_size"] * d
    return (config["num_hidden_layers"] * layer + d + embedding
            + (0 if config["tie_word_embeddings"] else embedding))


def by_building(config):
    """The modules written out in plain PyTorch, on the meta device, counted with parameters()."""
    d, d_ff = config["hidden_size"], config["intermediate_size"]
    h, h_kv = config["num_attention_heads"], config["num_key_value_heads"]
    kv = h_kv * (d // h)
    with torch.device("meta"):
        layers = nn.ModuleList(
            nn.ModuleList([nn.Linear(d, d, bias=False), nn.Linear(d, kv, bias=False),
                           nn.Linear(d, kv, bias=False), nn.Linear(d, d, bias=False),
                           nn.Linear(d, d_ff, bias=False), nn.Linear(d, d_ff, bias=False),
                           nn.Linear(d_ff, d, bias=False), nn.RMSNorm(d), nn.RMSNorm(d)])
            for _ in range(config["num_hidden_layers"]))
        embed = nn.Embedding(config["vocab_size"], d)
        head = nn.Linear(d, config["vocab_size"], bias=False)
        if config["tie_word_embeddings"]:
            head.weight = embed.weight
        model = nn.ModuleList([embed, layers, nn.RMSNorm(d), head])
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("fn", [by_formula, by_building, lambda c: float(by_formula(c)),
                                lambda c: torch.tensor(by_formula(c))])
def test_modern_count_passes_right_answers(fn):
    line = said(check_modern_count, fn)
    assert line.startswith("Check passed.") and "361,821,120" in line, line


# --- your turn 3: each slip, written as a learner would ----------------------------------------

def slip(**changes):
    """A learner's count with one or more slips (each a keyword)."""
    def count(config):
        d, d_ff = config["hidden_size"], config["intermediate_size"]
        h, h_kv = config["num_attention_heads"], config["num_key_value_heads"]
        n, vocab = config["num_hidden_layers"], config["vocab_size"]
        d_k = 64 if changes.get("head_64_all") else d // h
        kv_heads = h if changes.get("kv_all_heads") else h_kv
        kv_head_size = 64 if changes.get("head_64") else d_k
        attention = d * h * d_k + 2 * d * kv_heads * kv_head_size
        if not changes.get("no_w_o"):
            attention += h * d_k * d
        if changes.get("attention_bias"):
            attention += h * d_k + 2 * kv_heads * d_k + d
        ffn = (2 if changes.get("two_ffn") else 3) * d * d_ff
        if changes.get("mlp_bias"):
            ffn += 2 * d_ff + d
        per_norm = 2 * d if changes.get("rms_beta") or changes.get("rms_beta_layers") else d
        norms_per_layer = 1 if changes.get("one_norm") else 0 if changes.get("no_norms") else 2
        layer = attention + ffn + norms_per_layer * per_norm
        final = 0 if changes.get("no_final") or changes.get("no_norms") else (
            2 * d if changes.get("rms_beta") else d)
        embedding = 0 if changes.get("no_embedding") else vocab * d
        tied = True if changes.get("always_tied") else config["tie_word_embeddings"]
        output = vocab * d if changes.get("output_twice") or not tied else 0
        positions = config["max_position_embeddings"] * d if changes.get("positions") else 0
        layers = 1 if changes.get("one_layer") else n
        return layers * layer + final + embedding + output + positions
    return count


@pytest.mark.parametrize("changes, words", [
    (dict(kv_all_heads=True), "num_key_value_heads"),
    (dict(two_ffn=True), "three"),
    (dict(output_twice=True), "tie_word_embeddings is true"),
    (dict(rms_beta=True), "gain γ only"),
    (dict(rms_beta_layers=True), "gain γ only"),
    (dict(no_final=True), "final RMSNorm"),
    (dict(no_norms=True), "left out the RMSNorms"),
    (dict(one_norm=True), "two (before attention and before the MLP)"),
    (dict(attention_bias=True), "attention_bias is false"),
    (dict(mlp_bias=True), "mlp_bias is false"),
    (dict(positions=True), "rotary"),
    (dict(no_w_o=True), "W_O"),
    (dict(no_embedding=True), "left out the embedding"),
    (dict(one_layer=True), "num_hidden_layers"),
    (dict(always_tied=True), "not for an untied model"),
    (dict(head_64=True), "head_dim = hidden_size // num_attention_heads"),
    (dict(head_64_all=True), "head_dim = hidden_size // num_attention_heads"),
    (dict(kv_all_heads=True, two_ffn=True), "two slips"),
    (dict(two_ffn=True, no_final=True), "final RMSNorm"),
    (dict(head_64=True, always_tied=True), "two slips"),
])
def test_modern_count_names_each_slip(changes, words):
    line = said(check_modern_count, slip(**changes))
    assert not line.startswith("Check passed.") and words in line, (changes, line)


def test_untied_slip_is_named():
    line = said(check_modern_count, slip(always_tied=True))
    assert "tie_word_embeddings is false" in line, line


def test_modern_count_on_wrong_functions():
    fixed = 361_821_120                                     # the right count, written in
    line = said(check_modern_count, lambda config: fixed)
    assert "same number" in line, line
    assert "millions" in said(check_modern_count, lambda c: by_formula(c) / 1e6)
    assert "whole number" in said(check_modern_count, lambda c: by_formula(c) + 0.5)
    assert "raised KeyError" in said(check_modern_count, lambda c: c["head_dim"])

    def forgot_return(config):
        total = by_formula(config)  # noqa: F841
    assert "returned None" in said(check_modern_count, forgot_return)

    def placeholder(config):
        """A docstring."""
        # your code here
        ...
    assert said(check_modern_count, placeholder).startswith("Not answered yet")
    assert said(check_modern_count, None).startswith("Not answered yet")

    def mutates(config):
        config["hidden_size"] = 1
        return by_formula(config)
    assert not said(check_modern_count, mutates).startswith("Check passed.")


def test_modern_slip_differences_are_distinct_on_smollm2_360m():
    from helpers.checks.counting import _modern_slips
    diffs = [d for _, d in _modern_slips(SMOL_360M)]
    assert len(diffs) == len(set(diffs))


# --- your turn 2: a GPT-2 count without the attention biases (same as the LayerNorms) ----------

def test_gpt2_attention_biases_and_norms_are_both_named():
    long_gpt2 = dict(model="gpt2", vocab=50_257, context=2048, d_model=1024, h=16, N=24)
    right = counting.gpt2_params(50_257, 2048, 1024, 24)
    no_attention_biases = right - 24 * 4 * 1024
    line = said(check_my_config, long_gpt2, no_attention_biases)
    assert "attention biases" in line and "LayerNorms" in line, line
    line = said(check_my_config, long_gpt2, right - 24 * (4096 + 1024))
    assert "FFN biases" in line, line


# --- check your understanding ----------------------------------------------------------------

def test_question_changed_choices():
    right = {"post-norm", "sinusoidal", "relu", "kv per head"}
    assert said(check_changed_choices, right).startswith("Check passed.")
    assert said(check_changed_choices, "Post-norm, sinusoidal, ReLU, kv per head").startswith("Check passed.")
    assert said(check_changed_choices, None).startswith("Not answered yet")
    for wrong, words in ((right | {"tied"}, "tying did not change"),
                         (right | {"softmax"}, "attention itself did not change"),
                         (right | {"residual"}, "residual connections did not change"),
                         (right - {"post-norm"}, "the norm did change"),
                         (right - {"sinusoidal"}, "positions did change"),
                         (right - {"relu"}, "feed-forward layer did change"),
                         (right - {"kv per head"}, "key-value heads did change"),
                         ({"post-norm", "rotary"}, "should be one of")):
        line = said(check_changed_choices, wrong)
        assert not line.startswith("Check passed.") and words in line, (wrong, line)


def test_question_cache_or_weights():
    weights = counting.smollm2_params(**counting.SMOLLM2_135M) * 2          # bfloat16
    cache = 4 * 2 * 30 * 3 * 64 * 8192 * 2                                  # 4 sequences
    assert cache > weights
    assert said(check_cache_or_weights, "cache").startswith("Check passed.")
    assert "once per sequence" in said(check_cache_or_weights, "weights")
    assert "grows with every token" in said(check_cache_or_weights, "same")
    assert "should be one of" in said(check_cache_or_weights, "both")


def test_question_width_factor():
    layers = [counting.transformer_params(37_000, d, 4 * d, 6) - 37_000 * d for d in (512, 1024)]
    assert round(layers[1] / layers[0], 2) == 4.0
    assert said(check_width_factor, 4).startswith("Check passed.")
    assert said(check_width_factor, layers[1] / layers[0]).startswith("Check passed.")
    assert "embedding" in said(check_width_factor, 2)
    assert "two sides" in said(check_width_factor, 8)
    assert "Not answered yet" in said(check_width_factor, None)


def test_gpt2_style_ffn_is_named_not_taken_for_two_slips():
    """2 · d · 4d equals 3 · d · intermediate_size in both SmolLM2 configs (d_ff = 8d/3): only the
    untied config tells them apart, and the hint must name that slip, not a pair of others."""
    def gpt2_ffn(config):
        d, n = config["hidden_size"], config["num_hidden_layers"]
        return by_formula(config) - n * (3 * d * config["intermediate_size"] - 8 * d * d)

    line = said(check_modern_count, gpt2_ffn)
    assert "4 · hidden_size" in line and "two slips" not in line, line


# --- issue 21: a rounded count, the reference itself, question 4 ------------------------------

def test_table_3s_rounded_count_is_named_and_only_it():
    deep = dict(vocab=37_000, d_model=512, h=8, d_ff=2048, N=8)          # Table 3: "80" million
    right = counting.transformer_params(**deep)
    line = said(check_my_config, deep, 80_000_000)
    assert "rounded to millions" in line and "recount" not in line, line
    assert "not in millions" in said(check_my_config, deep, 80)
    line = said(check_my_config, deep, round(right, -3))                # their own count, rounded
    assert "rounded" in line and "thousands" in line, line
    assert said(check_my_config, deep, right) == "Check passed."
    for wrong, words in ((right + 37_000 * 512, "separate output"),     # neighbouring mistakes
                         (right - 8 * 1_050_624, "two attentions"),
                         (right + 12_345, "recount")):
        line = said(check_my_config, deep, wrong)
        assert words in line and "rounded" not in line, (wrong, line)
    far = said(check_my_config, deep, 120_000_000)                      # round, but far: not Table 3's
    assert "rounded" not in far and "recount" in far, far


def test_german_rounded_total_is_named():
    line = said(check_german_model, 77_000_000, None)
    assert "rounded to millions" in line, line
    line = said(check_german_model, 76_906_000, None)
    assert "rounded" in line and "thousands" in line, line
    assert "three matrices" in said(check_german_model, 93_290_496, None)


def test_modern_count_calling_the_reference_is_named():
    """Written as in a notebook, where the imports are the function's globals."""
    def via_formula(config):
        return counting.smollm2_params(**counting.llama_sizes(config))

    def via_import(config):
        return smollm2_params(**llama_sizes(config))

    def via_modules(config):
        with torch.device("meta"):
            return counting.count(llama_modules(**llama_sizes(config)))

    for fn, name in ((via_formula, "smollm2_params"), (via_import, "smollm2_params"),
                     (via_modules, "llama_modules")):
        line = said(check_modern_count, fn)
        assert "the very reference" in line and name in line, line
    # the reference is usable again afterwards, and a right answer of one's own still passes
    assert counting.smollm2_params(**counting.SMOLLM2_135M) == 134_515_008
    assert said(check_modern_count, by_formula).startswith("Check passed.")


def share_right():
    return 6 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 8 * 20e12)


SHARE_WORDS = ("8 GPUs", "hours", "minutes", "forward pass only", "two slips", "halved the tokens",
               "upside down", "percentage", "not quite")


@pytest.mark.parametrize("answer, words", [
    (6 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 20e12), "8 GPUs"),              # no GPUs
    (6 * 350e6 * 100_000 * 20_000 / (30 * 8 * 20e12), "hours"),                   # hours
    (6 * 350e6 * 100_000 * 20_000 / (30 * 60 * 8 * 20e12), "minutes"),            # minutes
    (2 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 8 * 20e12), "forward pass only"),  # 2 FLOPs
    (2 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 20e12), "two slips"),
    (6 * 350e6 * 50_000 * 20_000 / (30 * 3600 * 8 * 20e12), "halved the tokens"),
    ((30 * 3600 * 8 * 20e12) / (6 * 350e6 * 100_000 * 20_000), "upside down"),
    (100 * 6 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 8 * 20e12), "percentage"),
    (0.5, "not quite"),
])
def test_question_gpu_share_names_each_mistake(answer, words):
    line = said(check_gpu_share, answer)
    assert not line.startswith("Check passed.") and words in line, (answer, line)
    others = [w for w in SHARE_WORDS if w != words and w not in ("8 GPUs", "forward pass only")]
    assert not any(w in line for w in others), line     # only its own hint (two slips names both)


def test_question_gpu_share_passes():
    for answer in (share_right(), 0.24, 0.243, torch.tensor(share_right())):
        assert said(check_gpu_share, answer).startswith("Check passed."), answer
    assert said(check_gpu_share, None).startswith("Not answered yet")
    assert round(share_right(), 3) == 0.243


def test_issue_29_three_flops_per_parameter_is_named_with_the_halved_tokens():
    """3 FLOPs per parameter per token and half the tokens give the same number: the hint names both."""
    line = said(check_gpu_share, 3 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 8 * 20e12))
    assert "3 FLOPs per parameter per token" in line and "halved the tokens" in line, line
    two = said(check_gpu_share, 2 * 350e6 * 100_000 * 20_000 / (30 * 3600 * 8 * 20e12))
    assert "3 FLOPs" not in two and "forward pass only" in two, two


def test_issue_29_a_dict_changed_in_place_is_named_as_a_dict():
    def adds_a_key(config):
        config["head_dim"] = config["hidden_size"] // config["num_attention_heads"]
        return 134_515_008

    def sets_a_value(config):
        config["vocab_size"] = 0
        return 1

    for fn in (adds_a_key, sets_a_value):
        line = said(check_modern_count, fn)
        assert "changed the dict it was given" in line and "tensors" not in line, line
