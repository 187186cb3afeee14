import torch
from torch import nn

from helpers.checks import PASSED
from helpers.checks.norms import check_layer_norm, check_predictions, check_rms_norm
from helpers.norms import layer_norm, rms_norm


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


def printed(capsys, check, *args):
    check(*args)
    return capsys.readouterr().out.strip()


def test_check_layer_norm_passes_the_right_function_and_names_mistakes(capsys):
    def unbiased(x, g, b, eps):
        return g * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + b

    def no_gamma(x, g, b, eps):
        return layer_norm(x, torch.ones_like(g), b, eps)

    def no_beta(x, g, b, eps):
        return layer_norm(x, g, torch.zeros_like(b), eps)

    def no_eps(x, g, b, eps):
        return layer_norm(x, g, b, 0.0)

    def first_axis(x, g, b, eps):
        mu, var = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
        return g * (x - mu) / torch.sqrt(var + eps) + b

    def no_keepdim(x, g, b, eps):
        return g * (x - x.mean(-1)) + b

    assert printed(capsys, check_layer_norm, layer_norm) == PASSED
    assert printed(capsys, check_layer_norm, torch.nn.functional.layer_norm) != PASSED
    assert "d − 1" in printed(capsys, check_layer_norm, unbiased)
    assert "forgot γ" in printed(capsys, check_layer_norm, no_gamma)
    assert "forgot β" in printed(capsys, check_layer_norm, no_beta)
    assert "ε changes nothing" in printed(capsys, check_layer_norm, no_eps)
    assert "wrong axis" in printed(capsys, check_layer_norm, first_axis)
    assert "keepdim" in printed(capsys, check_layer_norm, no_keepdim)


def test_check_rms_norm_passes_the_right_function_and_names_mistakes(capsys):
    def like_layer_norm(x, g, eps):
        return layer_norm(x, g, torch.zeros_like(g), eps)

    def summed(x, g, eps):
        return g * x / torch.sqrt((x ** 2).sum(-1, keepdim=True) + eps)

    assert printed(capsys, check_rms_norm, rms_norm) == PASSED
    assert "LayerNorm" in printed(capsys, check_rms_norm, like_layer_norm)
    assert "mean, not sum" in printed(capsys, check_rms_norm, summed)
    assert "forgot γ" in printed(capsys, check_rms_norm, lambda x, g, eps: rms_norm(x, 1.0, eps))


def test_check_predictions(capsys):
    assert printed(capsys, check_predictions, -1.069, 0.0) == PASSED
    assert "scales x − μ and σ" in printed(capsys, check_predictions, -10.69, 0.0)
    assert "ε keeps" in printed(capsys, check_predictions, -1.069, float("nan"))
    assert "subtracted first" in printed(capsys, check_predictions, -1.069, 7)
