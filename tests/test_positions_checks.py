"""The checks of notebook 01 pass right answers, however written, and name each typical mistake.

Every wrong answer below is written here, on its own (plain Python loops over math.sin and
math.cos), not taken from the checker, so that a test fails if the checker's idea of a mistake
drifts from what a learner would actually write.
"""

import math

import pytest
import torch

import helpers.positions
from helpers.checks import PASSED
from helpers.checks.positions import (
    check_default_init_question,
    check_pe_2,
    check_shift_question,
    check_sinusoidal_positions,
    check_table_shape_question,
    check_wavelength,
)
from helpers.positions import sinusoidal_positions
from printed import printed


said = printed   # the one line a checker prints


# --- Your turn: PE(2, 0) and PE(2, 1) ---------------------------------------------------------

@pytest.mark.parametrize("a, b", [(math.sin(2), math.cos(2)), (0.909, -0.416), (0.91, -0.42),
                                  (0.90, -0.41),                  # two decimals, truncated
                                  (torch.tensor(0.9093), torch.tensor(-0.4161))])
def test_pe_2_accepts_answers_right_to_two_decimals(a, b, capsys):
    assert said(capsys, check_pe_2, a, b) == PASSED


@pytest.mark.parametrize("a, b, words", [
    (math.cos(2), math.sin(2), "swapped"),
    (math.sin(2 * math.pi / 180), math.cos(2 * math.pi / 180), "degrees"),
    (0.841, 0.540, "position 1"),
    (0.5, -0.416, "PE(2, 0) is off"),
    (0.909, math.cos(2 / 10000 ** (2 / 64)), "i = 1 // 2 = 0"),
    (0.909, math.sin(2 / 10000 ** (2 / 64)), "i = 1 // 2 = 0"),   # not "degrees": cos 2° is near
    (0.909, 0.416, "negative"),                                  # the sign of cos 2 forgotten
    (0.909, 0.3, "PE(2, 1) is off"),
    (None, -0.416, "Not answered yet"),
])
def test_pe_2_names_the_mistake(a, b, words, capsys):
    line = said(capsys, check_pe_2, a, b)
    assert line != PASSED and words in line, line


# --- Your turn: the wavelength of column 30 ---------------------------------------------------

@pytest.mark.parametrize("answer", [2 * math.pi * 10000 ** (30 / 64), 471.2, 471])
def test_wavelength_accepts_the_right_value(answer, capsys):
    assert said(capsys, check_wavelength, answer, column=30, d_model=64) == PASSED


@pytest.mark.parametrize("answer, words", [
    (2 * math.pi * 10000 ** (2 * 30 / 64), "the column number"),
    (10000 ** (30 / 64), "factor 2π"),
    (10000 ** (30 / 64) / (2 * math.pi), "divided by 2π"),
    (2 * math.pi * 10000 ** (15 / 64), "not i/d_model"),
    (360 * 10000 ** (30 / 64), "360 degrees"),
    (1 / 10000 ** (30 / 64), "frequency"),
    (2 * math.pi / 10000 ** (30 / 64), "frequency"),
    (400, "Not quite"),
])
def test_wavelength_names_the_mistake(answer, words, capsys):
    line = said(capsys, check_wavelength, answer, column=30, d_model=64)
    assert line != PASSED and words in line, line


def test_wavelength_with_garbage_column(capsys):
    assert "column and d_model" in said(capsys, check_wavelength, 471.2, column="30", d_model=64)


# --- Your turn: the table as a function -------------------------------------------------------

def right_vectorised(n, d):
    pos = torch.arange(n, dtype=torch.float).unsqueeze(1)
    angle = pos / 10000 ** (torch.arange(0, d, 2, dtype=torch.float) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def right_with_exp_and_a_stack(n, d):
    """The same table written another way: exp(-log(10000) 2i/d) and stack + flatten, in float64 then
    returned in float32."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    frequency = torch.exp(-math.log(10000.0) * torch.arange(d // 2, dtype=torch.float64) * 2 / d)
    return torch.stack([torch.sin(pos * frequency), torch.cos(pos * frequency)], dim=-1).reshape(n, d).float()


def table_from(n, d, value):
    """A table filled cell by cell: value(pos, column) for every position and column."""
    return torch.tensor([[value(pos, column) for column in range(d)] for pos in range(n)])


def paper(pos, column, d):
    angle = pos / 10000 ** (2 * (column // 2) / d)
    return math.sin(angle) if column % 2 == 0 else math.cos(angle)


MISTAKES = {
    "swapped": lambda n, d: table_from(n, d, lambda p, c: paper(p, c ^ 1, d)),
    "all the sines first": lambda n, d: table_from(
        n, d, lambda p, c: math.sin(p / 10000 ** (2 * c / d)) if c < d // 2
        else math.cos(p / 10000 ** (2 * (c - d // 2) / d))),
    "Positions start at 0": lambda n, d: table_from(n, d, lambda p, c: paper(p + 1, c, d)),
    "exponent 2i/d became 0": lambda n, d: table_from(
        n, d, lambda p, c: math.sin(p / 10000 ** (2 * (c // 2) // d)) if c % 2 == 0
        else math.cos(p / 10000 ** (2 * (c // 2) // d))),
    "not i/d": lambda n, d: table_from(
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c // 2) / d))),
    "doubled the 2": lambda n, d: table_from(                       # i taken from arange(0, d, 2)
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** (2 * (c - c % 2) / d))),
    "its own frequency": lambda n, d: table_from(                   # exponent column / d
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** (c / d))),
    "slowest pair": lambda n, d: table_from(                        # frequencies from 1 to 1/10000
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c // 2) / (d // 2 - 1)))),
    "do not multiply": lambda n, d: table_from(
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p * 10000 ** (2 * (c // 2) / d))),
    "odd columns hold sines": lambda n, d: table_from(n, d, lambda p, c: paper(p, c - c % 2, d)),
    "even columns hold cosines": lambda n, d: table_from(n, d, lambda p, c: paper(p, c | 1, d)),
    "column number as i": lambda n, d: table_from(                # i = column, not column // 2
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(p / 10000 ** (2 * c / d))),
    "as degrees": lambda n, d: table_from(
        n, d, lambda p, c: (math.sin if c % 2 == 0 else math.cos)(
            math.radians(p / 10000 ** (2 * (c // 2) / d)))),
    "transposed": lambda n, d: right_vectorised(n, d).T,
    "fill both the sine": lambda n, d: right_vectorised(n, d)[:, 0::2],
    "not from fixed numbers": lambda n, d: right_vectorised(50, 64)[:n, :d],
}


@pytest.mark.parametrize("fn", [right_vectorised, right_with_exp_and_a_stack,
                                lambda n, d: table_from(n, d, lambda p, c: paper(p, c, d))])
def test_table_check_passes_right_answers(fn, capsys):
    assert said(capsys, check_sinusoidal_positions, fn) == PASSED


@pytest.mark.parametrize("words", list(MISTAKES))
def test_table_check_names_each_mistake(words, capsys):
    line = said(capsys, check_sinusoidal_positions, MISTAKES[words])
    assert line != PASSED and words in line, line


def placeholder(n, d):
    """Return the (n, d) table of sinusoidal positions."""
    # your code here
    ...


def forgot_return(n, d):
    table = right_vectorised(n, d)  # noqa: F841


def prints(n, d):
    print("debugging", n, d)
    return right_vectorised(n, d)


def raises(n, d):
    return torch.zeros(n, d)[:, ::2] + torch.ones(3)


@pytest.mark.parametrize("fn, start", [
    (placeholder, "Not answered yet: write the body of my_sinusoidal_positions"),
    (None, "Not answered yet"),
    (forgot_return, "my_sinusoidal_positions(50, 64) returned None"),
    (raises, "my_sinusoidal_positions(50, 64) raised RuntimeError"),
    (prints, PASSED),
    (lambda n, d: [[0.0] * d] * n, "my_sinusoidal_positions(50, 64) should be a torch tensor"),
    (lambda n, d: torch.full((n, d), float("nan")), "my_sinusoidal_positions(50, 64) contains NaN"),
])
def test_table_check_handles_broken_functions_in_one_line(fn, start, capsys):
    assert said(capsys, check_sinusoidal_positions, fn).startswith(start)


# --- Check your understanding -----------------------------------------------------------------

def test_shift_question(capsys):
    assert said(capsys, check_shift_question, "a").startswith(PASSED + " PE(pos + k) is a rotation")
    for wrong, words in (("b", "no pos in it"), ("c", "between −1 and 1"), ("d", "Nothing to memorise")):
        line = said(capsys, check_shift_question, wrong)
        assert not line.startswith(PASSED) and words in line and "section" in line, line
    assert said(capsys, check_shift_question, None).startswith("Not answered yet")


def test_table_shape_question(capsys):
    assert said(capsys, check_table_shape_question, (100, 512)).startswith(PASSED)
    assert said(capsys, check_table_shape_question, torch.Size([100, 512])).startswith(PASSED)
    line = said(capsys, check_table_shape_question, (1, 100, 512))   # the table kept with a batch axis
    assert line.startswith(PASSED) and "(1, 100, 512)" in line, line
    for wrong, words in (((32, 100, 512), "does not depend on the sentence"), ((100, 256), "two columns"),
                         ((512, 100), "Transposed"), ((32, 512), "one row per position"),
                         ((50, 64), "Not this shape")):
        line = said(capsys, check_table_shape_question, wrong)
        assert not line.startswith(PASSED) and words in line and "section 2" in line, line
    assert said(capsys, check_table_shape_question, None).startswith("Not answered yet")


def test_default_init_question(capsys):
    assert said(capsys, check_default_init_question, "token").startswith(PASSED)
    for wrong, words in (("position", "without the factor"), ("balanced", "1/√64 = 0.125")):
        line = said(capsys, check_default_init_question, wrong)
        assert not line.startswith(PASSED) and words in line and "section 5" in line, line
    assert said(capsys, check_default_init_question, None).startswith("Not answered yet")


# --- issue 21: each hint names its own mistake only -------------------------------------------

@pytest.mark.parametrize("a, b, words, not_words", [
    (math.sin(2 / 64), math.cos(2 / 64), "divided the position by d_model", "degrees"),
    (0.031, 0.9995, "divided the position by d_model", "degrees"),
    (0.0312, 1.0, "divided the position by d_model", "degrees"),
    (0.035, 0.999, "You used degrees", "d_model (2 / 64)"),
    (math.sin(math.radians(2)), 0.9994, "You used degrees", "d_model (2 / 64)"),
    (0.03, 1.0, "2° = 0.035 rad, or 2 / 64", "You used degrees"),      # two decimals: either one
    (0.909, math.cos(math.radians(2)), "tiny angle", "You used degrees"),
    (0.909, math.cos(2 / 64), "tiny angle", "divided the position"),
    (0.909, 0.9975, "i = 1 // 2 = 0", "tiny angle"),                  # sin of pair 1's angle
    (0.909, 1.0, "sine of the pair i = 1's angle", "You used"),        # two decimals: either one
    (0.5, -0.416, "PE(2, 0) is off", "tiny angle"),
])
def test_pe_2_tiny_angles(a, b, words, not_words, capsys):
    line = said(capsys, check_pe_2, a, b)
    assert words in line and not_words not in line, line


def no_column(n, d):
    """The positions left as a row: pos / divisors cannot broadcast."""
    pos = torch.arange(n, dtype=torch.float)
    angle = pos / 10000 ** (torch.arange(0, d, 2, dtype=torch.float) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def row_of_positions(n, d):
    pos = torch.arange(n, dtype=torch.float)[None, :]                    # (1, n): a row again
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2) / d)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(n, d)


def divisors_for_every_column(n, d):
    """A shape error of another kind: (n, d) angles assigned to d/2 columns."""
    pos = torch.arange(n, dtype=torch.float).unsqueeze(1)
    angle = pos / 10000 ** (torch.arange(d, dtype=torch.float) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(angle)
    return table


@pytest.mark.parametrize("fn", [no_column, row_of_positions])
def test_table_check_names_a_missing_unsqueeze(fn, capsys):
    line = said(capsys, check_sinusoidal_positions, fn)
    assert "unsqueeze(1)" in line and "a row of 50 positions" in line and "raised" in line, line


@pytest.mark.parametrize("fn", [divisors_for_every_column, raises])
def test_other_shape_errors_are_not_called_a_missing_unsqueeze(fn, capsys):
    line = said(capsys, check_sinusoidal_positions, fn)
    assert "raised RuntimeError" in line and "unsqueeze" not in line, line


def in_dtype(dtype, mistake=None):
    def table(n, d):
        pos = torch.arange(n, dtype=dtype).unsqueeze(1)
        angle = pos / 10000 ** (torch.arange(0, d, 2, dtype=dtype) / d)
        out = torch.zeros(n, d, dtype=dtype)
        first, second = (torch.cos, torch.sin) if mistake == "swapped" else (torch.sin, torch.cos)
        out[:, 0::2], out[:, 1::2] = first(angle), second(angle)
        return out
    return table


@pytest.mark.parametrize("fn, words", [
    (in_dtype(torch.float16), "float16 table: compute it in float32"),
    (in_dtype(torch.bfloat16), "bfloat16 table: compute it in float32"),
    (lambda n, d: right_vectorised(n, d).half(), "float16 table"),
    (in_dtype(torch.float16, "swapped"), "swapped"),
    (in_dtype(torch.bfloat16, "swapped"), "swapped"),
])
def test_table_check_half_precision(fn, words, capsys):
    line = said(capsys, check_sinusoidal_positions, fn)
    assert words in line, line
    if words == "swapped":
        assert "float32" not in line, line


def test_table_check_float64_fails_with_its_dtype_hint(capsys):
    """Issue 48: the table is the model's, float32; a float64 one (torch.arange's default for a float
    step, or .double()) is named, not passed."""
    for fn in (in_dtype(torch.float64), lambda n, d: right_vectorised(n, d).double()):
        line = said(capsys, check_sinusoidal_positions, fn)
        assert "float64 table: build it in float32" in line, line


def test_table_check_calling_the_reference_is_named(capsys):
    """Written as in a notebook, where the imports are the function's globals."""
    for fn in (lambda n, d: sinusoidal_positions(n, d),
               lambda n, d: helpers.positions.sinusoidal_positions(n, d).clone()):
        line = said(capsys, check_sinusoidal_positions, fn)
        assert "the very reference" in line and "sinusoidal_positions" in line, line
    assert torch.equal(sinusoidal_positions(3, 4), right_vectorised(3, 4))    # usable again
