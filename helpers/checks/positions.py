"""Checkers for notebook 01 (positions)."""

import math

import torch

from helpers.checks import Hint, checker, close, number, tensor
from helpers.positions import sinusoidal_positions, wavelength


@checker
def check_pe_2(pe_2_0, pe_2_1):
    """PE(2, 0) = sin 2 ≈ 0.909 and PE(2, 1) = cos 2 ≈ −0.416."""
    a, b = number(pe_2_0, "pe_2_0"), number(pe_2_1, "pe_2_1")
    if close(a, math.cos(2)) and close(b, math.sin(2)):
        return "Sine and cosine are swapped: even column 0 is the sine, odd column 1 the cosine."
    if close(a, math.sin(math.radians(2)), 1e-3) or close(b, math.cos(math.radians(2)), 1e-3):
        return "You used degrees: the angle is 2 radians (math.sin(2), not sin of 2°)."
    if close(a, math.sin(1)) or close(b, math.cos(1)):
        return "Those are the values at position 1; the question asks for position 2."
    if not close(a, math.sin(2)):
        return "PE(2, 0) is off: for the pair i = 0 the divisor is 10000⁰ = 1, so it is sin(2)."
    if not close(b, math.cos(2)):
        return "PE(2, 1) is off: column 1 is the cosine of the same angle as column 0, cos(2)."
    return None


@checker
def check_wavelength(answer, column=30, d_model=64):
    """The wavelength 2π · 10000^(2i/d_model) of a column, with i = column // 2."""
    value = number(answer, "wavelength")
    right = wavelength(column, d_model)
    i = column // 2
    if close(value, right, 0.002 * right):
        return None
    if close(value, 2 * math.pi * 10000 ** (2 * column / d_model), 1):
        return (f"You used i = {column}, the column number: column {column} belongs to the pair "
                f"i = {column} // 2 = {i}.")
    if close(value, 10000 ** (2 * i / d_model), 0.05):
        return "You forgot the factor 2π: a full turn of sin(ω·pos) takes 2π/ω positions."
    if close(value, 2 * math.pi * 10000 ** (i / d_model), 0.05):
        return "The exponent is 2i/d_model, not i/d_model."
    return f"Not quite: compute 2π · 10000^(2i/d_model) with i = {i} and d_model = {d_model}."


@checker
def check_sinusoidal_positions(fn):
    """The learner's table builder against helpers.positions.sinusoidal_positions."""
    if fn is None or fn is Ellipsis:
        raise Hint("Not answered yet: write the body of my_sinusoidal_positions.")
    if not callable(fn):
        raise Hint(f"Pass your function itself (my_sinusoidal_positions), not a {type(fn).__name__}.")
    for n, d in ((50, 64), (7, 8)):
        try:
            got = fn(n, d)
        except Exception as e:
            return f"Your function raised {type(e).__name__}: {e}"
        got = tensor(got, f"my_sinusoidal_positions({n}, {d})")
        right = sinusoidal_positions(n, d).double()
        if tuple(got.shape) == (n, d // 2):
            return f"Shape {(n, d // 2)}: fill both the sine (even) and the cosine (odd) columns, (n, d)."
        if tuple(got.shape) != (n, d):
            return f"Expected shape {(n, d)} (one row per position), got {tuple(got.shape)}."
        if torch.allclose(got, right, atol=1e-5):
            continue
        swapped = right.clone()
        swapped[:, 0::2], swapped[:, 1::2] = right[:, 1::2], right[:, 0::2]
        if torch.allclose(got, swapped, atol=1e-5):
            return "Sine and cosine columns are swapped: even columns 2i get sin, odd columns 2i+1 get cos."
        if torch.allclose(got[:, 0::2], right[:, 0::2], atol=1e-5):
            return "The sine columns are right; check the odd columns: cos of the same angle."
        if torch.allclose(got[:, :2], right[:, :2], atol=1e-5):
            return "The first pair is right but later pairs are not: the exponent is 2i/d, not i/d."
        if torch.allclose(got[:-1], right[1:], atol=1e-5):
            return "Positions start at 0, not 1 (torch.arange(n))."
        return "Values differ from the formula: check the angle pos / 10000^(2i/d)."
    return None
