import math

import torch

from helpers.positions import sinusoidal_positions, wavelength


def test_position_one_matches_the_hand_computation():
    pe = sinusoidal_positions(50, 64)
    assert pe.shape == (50, 64)
    expected = [math.sin(1), math.cos(1), math.sin(1 / 10000 ** (2 / 64)), math.cos(1 / 10000 ** (2 / 64))]
    assert torch.allclose(pe[1, :4], torch.tensor(expected), atol=1e-6)


def test_position_zero_is_zero_one_pairs():
    pe = sinusoidal_positions(3, 8)
    assert pe[0].tolist() == [0.0, 1.0] * 4


def test_wavelength_is_geometric_from_2pi_to_10000_2pi():
    assert math.isclose(wavelength(0, 512), 2 * math.pi)
    assert math.isclose(wavelength(1, 512), 2 * math.pi)          # a pair shares its frequency
    assert math.isclose(wavelength(8, 64), 19.87, rel_tol=1e-3)
    assert wavelength(510, 512) < 10000 * 2 * math.pi


def test_shift_is_a_rotation_of_each_pair():
    pe = sinusoidal_positions(60, 64)
    k, i = 7, 3
    w = 1 / 10000 ** (2 * i / 64)
    turn = torch.tensor([[math.cos(w * k), math.sin(w * k)], [-math.sin(w * k), math.cos(w * k)]])
    for pos in (0, 13, 50):
        assert torch.allclose(turn @ pe[pos, 2 * i:2 * i + 2], pe[pos + k, 2 * i:2 * i + 2], atol=1e-5)
