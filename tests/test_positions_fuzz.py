"""Notebook 01's checkers never fail on their own code, whatever they are given.

Each checker gets perturbed answers of the right shape and of wrong shapes, other dtypes, NaN,
lists, tuples, numbers and functions that raise (tests/fuzz.py); it must print one line that is
not "Could not check this answer (...)".
"""

import math

import pytest
import torch

from helpers.checks.positions import (
    check_default_init_question,
    check_pe_2,
    check_shift_question,
    check_sinusoidal_positions,
    check_table_shape_question,
    check_wavelength,
)
from helpers.positions import sinusoidal_positions
from tests.fuzz import assert_survives, wrong_functions, wrong_tensors

ODD = [None, ..., "0.9", "", True, 3, -1e300, float("nan"), float("inf"), [0.9], (0.9, -0.4), {"a": 1},
       torch.tensor([]), torch.tensor(1 + 2j), sinusoidal_positions, object()]


def my_table(n, d):
    """A right answer, written as in the notebook."""
    pos = torch.arange(n, dtype=torch.float).unsqueeze(1)
    angle = pos / 10000 ** (torch.arange(0, d, 2, dtype=torch.float) / d)
    table = torch.zeros(n, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table


def numbers_near(right, seed=0, count=20):
    """Random numbers around a right one: small and large relative errors, signs flipped."""
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(-6, 1, count)
    signs = torch.randint(0, 2, (count,), generator=g) * 2 - 1
    return [right * (1 + float(s) * float(e)) for s, e in zip(signs, scales, strict=True)] + [-right, 0.0]


@pytest.mark.parametrize("label, fn", wrong_functions(my_table))
def test_table_check_survives_wrong_functions(label, fn, capsys):
    line = assert_survives(capsys, check_sinusoidal_positions, fn)
    same_table = ("float64", "float32", "relative 1e-4", "squeezed")
    assert not line.startswith("Check passed") or label in same_table, (label, line)


@pytest.mark.parametrize("value", ODD)
def test_table_check_survives_odd_values(value, capsys):
    assert_survives(capsys, check_sinusoidal_positions, value)
    assert_survives(capsys, check_sinusoidal_positions, lambda n, d, v=value: v)


def test_table_check_survives_random_tables(capsys):
    g = torch.Generator().manual_seed(1)

    def noisy(scale):
        return lambda n, d: my_table(n, d) + scale * torch.randn(n, d, generator=g)

    for scale in (1e-6, 1e-3, 0.1, 10.0):
        assert_survives(capsys, check_sinusoidal_positions, noisy(scale))


@pytest.mark.parametrize("a", [math.sin(2), *numbers_near(math.sin(2))])
def test_pe_2_survives_numbers_near_the_answer(a, capsys):
    for b in (math.cos(2), *numbers_near(math.cos(2), seed=1)):
        assert_survives(capsys, check_pe_2, a, b)


@pytest.mark.parametrize("label, value", wrong_tensors(torch.tensor(math.sin(2)))
                         + [(repr(v), v) for v in ODD])
def test_pe_2_survives_wrong_values(label, value, capsys):
    assert_survives(capsys, check_pe_2, value, math.cos(2))
    assert_survives(capsys, check_pe_2, math.sin(2), value)


@pytest.mark.parametrize("label, value", wrong_tensors(torch.tensor(471.2)) + [(repr(v), v) for v in ODD])
def test_wavelength_survives_wrong_values(label, value, capsys):
    assert_survives(capsys, check_wavelength, value, column=30, d_model=64)
    assert_survives(capsys, check_wavelength, 471.2, column=value, d_model=64)
    assert_survives(capsys, check_wavelength, 471.2, column=30, d_model=value)


def test_wavelength_survives_numbers_near_the_answer(capsys):
    for value in numbers_near(2 * math.pi * 10000 ** (30 / 64)):
        assert_survives(capsys, check_wavelength, value, column=30, d_model=64)
    for column, d in ((0, 2), (1, 2), (63, 64), (0, 10**6), (10**6 - 1, 10**6)):
        assert_survives(capsys, check_wavelength, 1.0, column=column, d_model=d)


@pytest.mark.parametrize("check", [check_shift_question, check_default_init_question])
@pytest.mark.parametrize("value", ODD + ["a", " A ", "token", "e", "a, b", {"a"}, ["a"], torch.tensor(1)])
def test_choice_questions_survive_anything(check, value, capsys):
    assert_survives(capsys, check, value)


@pytest.mark.parametrize("label, value", wrong_tensors(torch.tensor([100.0, 512.0]))
                         + [(repr(v), v) for v in ODD + [(100, 512.0), (100, -512), (), (True, 512),
                                                          torch.Size([100, 512]), [100, 512], 100]])
def test_shape_question_survives_anything(label, value, capsys):
    assert_survives(capsys, check_table_shape_question, value)
