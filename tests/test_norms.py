import pytest
import torch
from torch import nn

from helpers.checks import PASSED
from helpers.checks.norms import (
    check_batch_of_one_question,
    check_layer_norm,
    check_predictions,
    check_rms_norm,
    check_shortcut_factor,
    check_what_moves_layer_norm,
)
from helpers.norms import layer_norm, rms_norm
from printed import printed
from tests.fuzz import assert_survives, wrong_functions, wrong_tensors


def test_layer_norm_of_1_2_3_6_by_hand():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    out = layer_norm(x, torch.ones(4), torch.zeros(4))
    s = 3.5 ** 0.5                                   # mean 3, variance (4 + 1 + 0 + 9) / 4
    assert torch.allclose(out, torch.tensor([-2 / s, -1 / s, 0.0, 3 / s]), atol=1e-5)


def test_layer_norm_of_the_eight_numbers_is_minus_1_5_to_2():
    x = torch.tensor([2.0, 4, 4, 4, 5, 5, 7, 9])
    out = layer_norm(x, torch.ones(8), torch.zeros(8), eps=0.0)
    assert torch.allclose(out, torch.tensor([-1.5, -0.5, -0.5, -0.5, 0, 0, 1, 2]), atol=1e-6)


def test_layer_norm_equals_torch_with_trained_gamma_and_beta():
    torch.manual_seed(0)
    ref = nn.LayerNorm(16)
    with torch.no_grad():
        ref.weight.normal_()
        ref.bias.normal_()
    x = torch.randn(3, 5, 16) * 4 + 2
    mine = layer_norm(x, ref.weight, ref.bias, ref.eps)
    assert torch.allclose(mine, ref(x), atol=1e-5)
    assert not torch.allclose(mine, layer_norm(x, torch.ones(16), torch.zeros(16)), atol=1e-2)


def test_rms_norm_equals_torch_rmsnorm():
    torch.manual_seed(1)
    ref = nn.RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        ref.weight.normal_()
    x = torch.randn(3, 5, 16) * 4 + 2
    assert torch.allclose(rms_norm(x, ref.weight, 1e-5), ref(x), atol=1e-5)


def test_rms_norm_by_hand():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    rms = (50 / 4) ** 0.5                            # (1 + 4 + 9 + 36) / 4 = 12.5
    assert torch.allclose(rms_norm(x, torch.ones(4), eps=0.0), x / rms)


# Each wrong function below is written here on its own, the way a learner would write it, not
# taken from the checker: the test fails if the checker's idea of a mistake drifts from it.

def ln_right_by_hand(x, g, b, eps):
    mu = x.mean(-1, keepdim=True)
    return g * (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps) + b


def ln_right_with_torch(x, g, b, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], g, b, eps)


def ln_right_with_var(x, g, b, eps):
    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True) + eps).sqrt() * g + b


LAYER_NORM_MISTAKES = {
    "d − 1": lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, keepdim=True) + eps) + b,
    "forgot both γ and β": lambda x, g, b, eps: (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + eps),
    "forgot γ": lambda x, g, b, eps: ln_right_by_hand(x, torch.ones_like(g), b, eps),
    "forgot β": lambda x, g, b, eps: ln_right_by_hand(x, g, torch.zeros_like(b), eps),
    "swapped": lambda x, g, b, eps: ln_right_by_hand(x, b, g, eps),
    "did not subtract the mean": lambda x, g, b, eps: g * x / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + eps) + b,
    "divided by the variance": lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True)) / (
        x.var(-1, unbiased=False, keepdim=True) + eps) + b,
    "multiplied by the standard deviation": lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True))
    * torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps) + b,
    "wrong axis": lambda x, g, b, eps: g * (x - x.mean(0, keepdim=True)) / torch.sqrt(
        x.var(0, unbiased=False, keepdim=True) + eps) + b,
    "wrong axis ": lambda x, g, b, eps: g * (x - x.mean((1, 2), keepdim=True)) / torch.sqrt(
        x.var((1, 2), unbiased=False, keepdim=True) + eps) + b,          # one mean per sequence
    "ε changes nothing": lambda x, g, b, eps: ln_right_by_hand(x, g, b, 0.0),
    "ε changes nothing ": lambda x, g, b, eps: ln_right_by_hand(x, g, b, 1e-5),     # a fixed eps
    "not σ + ε": lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True)) / (
        x.std(-1, unbiased=False, keepdim=True) + eps) + b,
    "keepdim": lambda x, g, b, eps: g * (x - x.mean(-1)) + b,
    "did not divide": lambda x, g, b, eps: g * (x - x.mean(-1, keepdim=True)) + b,
    "changed its argument number 1 in place": lambda x, g, b, eps: x.sub_(x.mean(-1, keepdim=True)).div_(
        x.pow(2).mean(-1, keepdim=True).add(eps).sqrt()).mul(g).add(b),
    "not a fixed axis number": lambda x, g, b, eps: g * (x - x.mean(2, keepdim=True)) / torch.sqrt(
        x.var(2, unbiased=False, keepdim=True) + eps) + b,
}


@pytest.mark.parametrize("fn", [ln_right_by_hand, ln_right_with_var])
def test_check_layer_norm_passes_right_functions(fn, capsys):
    assert printed(capsys, check_layer_norm, fn) == PASSED


@pytest.mark.parametrize("words", list(LAYER_NORM_MISTAKES))
def test_check_layer_norm_names_each_mistake(words, capsys):
    line = printed(capsys, check_layer_norm, LAYER_NORM_MISTAKES[words])
    assert line != PASSED and words.strip() in line, line


def rms_right_by_hand(x, g, eps):
    return g * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rms_right_with_rsqrt(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * g


def rms_forgot_return(x, g, eps):
    y = g * x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)  # noqa: F841


RMS_NORM_MISTAKES = {
    "forgot γ": lambda x, g, eps: rms_right_by_hand(x, torch.ones_like(g), eps),
    "that is LayerNorm": lambda x, g, eps: layer_norm(x, g, torch.zeros_like(g), eps),
    "mean, not sum": lambda x, g, eps: g * x / torch.sqrt((x ** 2).sum(-1, keepdim=True) + eps),
    "forgot the square root": lambda x, g, eps: g * x / ((x ** 2).mean(-1, keepdim=True) + eps),
    "squared the mean": lambda x, g, eps: g * x / torch.sqrt(x.mean(-1, keepdim=True) ** 2 + eps),
    "standard deviation": lambda x, g, eps: g * x / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + eps),
    "multiplied by the root mean square": lambda x, g, eps: g * x * torch.sqrt(
        (x ** 2).mean(-1, keepdim=True) + eps),
    "standard deviation ": lambda x, g, eps: g * x / (x.std(-1, keepdim=True) + eps),   # unbiased
    "wrong axis": lambda x, g, eps: g * x / torch.sqrt((x ** 2).mean(0, keepdim=True) + eps),
    "ε changes nothing": lambda x, g, eps: rms_right_by_hand(x, g, 0.0),
    "not √mean(x²) + ε": lambda x, g, eps: g * x / ((x ** 2).mean(-1, keepdim=True).sqrt() + eps),
    "returned None": rms_forgot_return,
}


@pytest.mark.parametrize("fn", [rms_right_by_hand, rms_right_with_rsqrt])
def test_check_rms_norm_passes_right_functions(fn, capsys):
    assert printed(capsys, check_rms_norm, fn) == PASSED


@pytest.mark.parametrize("words", list(RMS_NORM_MISTAKES))
def test_check_rms_norm_names_each_mistake(words, capsys):
    line = printed(capsys, check_rms_norm, RMS_NORM_MISTAKES[words])
    assert line != PASSED and words.strip() in line, line


def ln_placeholder(x, gamma, beta, eps=1e-5):
    """Return LayerNorm of x over its last dimension, the same shape as x."""
    # your code here: mean and variance over the last dimension
    ...


def ln_prints(x, g, b, eps):
    print("debugging", x.shape)
    return ln_right_by_hand(x, g, b, eps)


def ln_raises(x, g, b, eps):
    raise ValueError("not finished")


@pytest.mark.parametrize("check", [check_layer_norm, check_rms_norm])
def test_untouched_placeholders_say_not_answered(check, capsys):
    assert printed(capsys, check, ln_placeholder).startswith("Not answered yet: ")
    assert printed(capsys, check, None).startswith("Not answered yet: ")


def test_broken_functions_get_one_line(capsys):
    assert printed(capsys, check_layer_norm, ln_prints) == PASSED
    assert printed(capsys, check_layer_norm, ln_raises) == (
        "my_layer_norm(x, gamma, beta, eps) raised ValueError: not finished")
    assert printed(capsys, check_layer_norm, torch.nn.functional.layer_norm) != PASSED


def test_check_predictions(capsys):
    assert printed(capsys, check_predictions, -1.069, 0.0) == PASSED
    assert printed(capsys, check_predictions, -1.07, 0) == PASSED
    assert "scales x − μ and σ" in printed(capsys, check_predictions, -10.69, 0.0)
    assert "ε keeps" in printed(capsys, check_predictions, -1.069, float("nan"))
    assert "subtracted first" in printed(capsys, check_predictions, -1.069, 7)
    for nan in ("NaN", "nan", torch.tensor(float("nan"))):     # the question says "A number, or NaN?"
        assert "ε keeps" in printed(capsys, check_predictions, -1.069, nan)
    assert printed(capsys, check_predictions, -1.069, "zero") != PASSED


# --- Check your understanding -----------------------------------------------------------------

def test_batch_of_one_question(capsys):
    assert printed(capsys, check_batch_of_one_question, "a").startswith(PASSED + " Each feature's column")
    for wrong, words in (("b", "not the token's own 8 numbers"), ("c", "No NaN"), ("d", "subtracted first")):
        line = printed(capsys, check_batch_of_one_question, wrong)
        assert not line.startswith(PASSED) and words in line and "section" in line, line
    assert printed(capsys, check_batch_of_one_question, None).startswith("Not answered yet")


def test_what_moves_layer_norm_question(capsys):
    for right in ({"d"}, ["D"], "d"):
        assert printed(capsys, check_what_moves_layer_norm, right).startswith(PASSED)
    for wrong, words in (({"a", "d"}, "0.000 in every batch"), ({"b", "d"}, "Padding tokens"),
                         ({"c", "d"}, "moves μ by as much"), ({"a"}, "0.000 in every batch"),
                         (set(), "when training moves them")):
        line = printed(capsys, check_what_moves_layer_norm, wrong)
        assert not line.startswith(PASSED) and words in line and "section" in line, line
    assert printed(capsys, check_what_moves_layer_norm, None).startswith("Not answered yet")


def test_shortcut_factor_question(capsys):
    for right in (5.0625, 5.06, 5.1, 1.5 ** 4):
        assert printed(capsys, check_shortcut_factor, right).startswith(PASSED)
    for wrong, words in ((0.0625, "without shortcuts"), (3, "does not add"), (6, "adds the four layers"),
                         (1.5, "four factors"), (16, "not 2"), (1.5 ** 5, "four later layers"),
                         (7, "Not quite")):
        line = printed(capsys, check_shortcut_factor, wrong)
        assert not line.startswith(PASSED) and words in line and "section 6" in line, line
    assert printed(capsys, check_shortcut_factor, None).startswith("Not answered yet")


# --- issue 21: the reference itself, a tuple, half precision ----------------------------------

@pytest.mark.parametrize("fn, label", [
    (ln_right_with_torch, "F.layer_norm"),
    (lambda x, g, b, eps: layer_norm(x, g, b, eps), "helpers.norms.layer_norm"),
    (lambda x, g, b, eps: torch.nn.LayerNorm(x.shape[-1], eps=eps)(x) * g + b, "nn.LayerNorm"),
    # torch.layer_norm and F.layer_norm are one op in torch's dispatch: the hint names it layer_norm
    (lambda x, g, b, eps: torch.layer_norm(x, x.shape[-1:], g, b, eps), "layer_norm"),
])
def test_check_layer_norm_names_the_reference(fn, label, capsys):
    line = printed(capsys, check_layer_norm, fn)
    assert "the very reference" in line and label in line, line


@pytest.mark.parametrize("fn, label", [
    (lambda x, g, eps: torch.nn.functional.rms_norm(x, x.shape[-1:], g, eps), "F.rms_norm"),
    (lambda x, g, eps: rms_norm(x, g, eps), "helpers.norms.rms_norm"),
    (lambda x, g, eps: torch.nn.RMSNorm(x.shape[-1], eps=eps)(x) * g, "nn.RMSNorm"),
])
def test_check_rms_norm_names_the_reference(fn, label, capsys):
    line = printed(capsys, check_rms_norm, fn)
    assert "the very reference" in line and label in line, line


def test_the_references_work_again_after_a_check(capsys):
    printed(capsys, check_layer_norm, ln_right_with_torch)
    x = torch.randn(2, 4)
    mine = layer_norm(x, torch.ones(4), torch.zeros(4))
    assert torch.allclose(torch.nn.functional.layer_norm(x, (4,)), mine, atol=1e-6)
    assert torch.allclose(torch.nn.LayerNorm(4)(x), mine, atol=1e-6)


def ln_with_stats(x, g, b, eps):
    """Returns the statistics too, as (output, mean, variance)."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return g * (x - mu) / torch.sqrt(var + eps) + b, mu, var


@pytest.mark.parametrize("check, fn", [
    (check_layer_norm, ln_with_stats),
    (check_layer_norm, lambda x, g, b, eps: (ln_right_by_hand(x, g, b, eps),)),
    (check_rms_norm, lambda x, g, eps: (rms_right_by_hand(x, g, eps), (x * x).mean(-1))),
])
def test_a_tuple_gets_a_norm_hint_not_attention_advice(check, fn, capsys):
    line = printed(capsys, check, fn)
    assert "should be one tensor" in line and "not μ or σ²" in line, line
    assert "MultiheadAttention" not in line and "weights" not in line, line


@pytest.mark.parametrize("check, fn, dtype", [
    (check_layer_norm, lambda x, g, b, eps: ln_right_by_hand(x.half(), g.half(), b.half(), eps), "float16"),
    (check_layer_norm, lambda x, g, b, eps: ln_right_by_hand(x, g, b, eps).bfloat16(), "bfloat16"),
    (check_rms_norm, lambda x, g, eps: rms_right_by_hand(x.bfloat16(), g.bfloat16(), eps), "bfloat16"),
])
def test_half_precision_is_told_to_compute_in_float32(check, fn, dtype, capsys):
    line = printed(capsys, check, fn)
    assert f"returns a {dtype} tensor: compute in float32" in line, line


def test_half_precision_with_a_mistake_names_the_mistake(capsys):
    def d_minus_1_in_float16(x, g, b, eps):
        x, g, b = x.half(), g.half(), b.half()
        return g * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + b

    line = printed(capsys, check_layer_norm, d_minus_1_in_float16)
    assert "d − 1" in line and "float32" not in line, line
    line = printed(capsys, check_layer_norm, lambda x, g, b, eps: (2 * x).half())   # wrong, and float16
    assert line.startswith("Not LayerNorm yet") and "float16 tensor: compute in float32" in line, line
    def in_float64(x, g, b, eps):
        return ln_right_by_hand(x.double(), g, b, eps)
    assert printed(capsys, check_layer_norm, in_float64) == PASSED


# --- fuzz: the checkers never fail on their own code (tests/fuzz.py) -------------------------

ODD = [None, ..., "nan", "", True, 3, -1e300, float("nan"), float("inf"), [0.0], (0.0, 1.0), {"a": 1},
       torch.tensor([]), torch.tensor(1 + 2j), layer_norm, object()]


@pytest.mark.parametrize("label, fn", wrong_functions(ln_right_by_hand))
def test_check_layer_norm_survives_wrong_functions(label, fn, capsys):
    line = assert_survives(capsys, check_layer_norm, fn)
    assert not line.startswith(PASSED) or label in ("float64", "float32", "relative 1e-4", "squeezed"), line


@pytest.mark.parametrize("label, fn", wrong_functions(rms_right_by_hand))
def test_check_rms_norm_survives_wrong_functions(label, fn, capsys):
    line = assert_survives(capsys, check_rms_norm, fn)
    assert not line.startswith(PASSED) or label in ("float64", "float32", "relative 1e-4", "squeezed"), line


@pytest.mark.parametrize("value", ODD)
def test_norm_checks_survive_odd_values(value, capsys):
    for check in (check_layer_norm, check_rms_norm):
        assert_survives(capsys, check, value)
        assert_survives(capsys, check, lambda *args, v=value: v)


def test_norm_checks_survive_random_perturbations(capsys):
    g = torch.Generator().manual_seed(2)
    for scale in (1e-7, 1e-4, 1e-2, 1.0, 1e3):
        def noisy_ln(x, gamma, beta, eps, s=scale):
            out = ln_right_by_hand(x, gamma, beta, eps)
            return out + s * torch.randn(out.shape, generator=g)

        def noisy_rms(x, gamma, eps, s=scale):
            out = rms_right_by_hand(x, gamma, eps)
            return out * (1 + s * torch.randn(out.shape, generator=g))
        assert_survives(capsys, check_layer_norm, noisy_ln)
        assert_survives(capsys, check_rms_norm, noisy_rms)


@pytest.mark.parametrize("label, value",
                         wrong_tensors(torch.tensor(-1.069)) + [(f"odd{i}", v) for i, v in enumerate(ODD)],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_check_predictions_survives_wrong_values(label, value, capsys):
    assert_survives(capsys, check_predictions, value, 0.0)
    assert_survives(capsys, check_predictions, -1.069, value)


def test_check_predictions_survives_numbers_near_the_answers(capsys):
    g = torch.Generator().manual_seed(3)
    for _ in range(50):
        a, b = -1.069 * (1 + 0.1 * torch.randn(1, generator=g).item()), torch.randn(1, generator=g).item()
        assert_survives(capsys, check_predictions, a, b)


@pytest.mark.parametrize("value", ODD + ["a", " B ", "a, b", {"a", "d"}, ["d"], set(), 5.0625,
                                   torch.tensor(5.06)])
def test_norm_questions_survive_anything(value, capsys):
    for check in (check_batch_of_one_question, check_what_moves_layer_norm, check_shortcut_factor):
        assert_survives(capsys, check, value)


@pytest.mark.parametrize("label, value", wrong_tensors(torch.tensor(5.0625)))
def test_shortcut_factor_survives_wrong_tensors(label, value, capsys):
    assert_survives(capsys, check_shortcut_factor, value)


# --- Issue 48: RMSNorm (and LayerNorm) computed in a half type and cast back gets the dtype hint ----

@pytest.mark.parametrize("check, fn", [
    (check_rms_norm, lambda x, g, eps: rms_right_by_hand(x.bfloat16(), g.bfloat16(), eps).float()),
    (check_rms_norm, lambda x, g, eps: (x.half() * torch.rsqrt((x.half() ** 2).mean(-1, keepdim=True) + eps)
                                        * g.half()).to(x.dtype)),
    (check_layer_norm, lambda x, g, b, eps: ln_right_by_hand(x.bfloat16(), g, b, eps).float()),
])
def test_a_norm_computed_in_half_precision_and_cast_back_is_told_its_dtype(check, fn, capsys):
    line = printed(capsys, check, fn)
    assert "float16 or bfloat16 rounding" in line and "compute in float32 throughout" in line, line
    assert not line.startswith("Not RMSNorm yet") and not line.startswith("Not LayerNorm yet"), line
