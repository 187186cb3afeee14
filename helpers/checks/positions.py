"""Checkers for notebook 01 (positions)."""

import math
import re

import torch

import helpers.model
import helpers.positions
from helpers.checks import Built, Hint, Passed, call, checker, choice, close, exercise, number, shape, tensor
from helpers.positions import sinusoidal_positions, wavelength

# Answers worked by hand to 2 decimals are right, rounded (0.91, -0.42) or cut (0.90, -0.41).
HAND = 0.01


# Two ways to end up with a tiny angle instead of 2 radians: 2 degrees, or the position divided by
# d_model (2 / 64, as if the divisor of the pair i = 0 were d_model instead of 10000⁰ = 1).
DEGREES, BY_D_MODEL = math.radians(2), 2 / 64


def _tiny_angle_hint(value, fn, name):
    """The hint for a value that is fn (sin or cos) of a tiny angle instead of fn(2), or None.

    sin(2°) = 0.0349 and sin(2/64) = 0.0312 differ in the third decimal: given to three decimals
    the mistake is named; rounded to two (0.03), or for the cosine (0.9994 and 0.9995), both are.
    """
    degrees, by_d = close(value, fn(DEGREES), 0.0005), close(value, fn(BY_D_MODEL), 0.0005)
    if degrees and not by_d:
        return (f"You used degrees: {name} is the {fn.__name__} of 2 radians "
                f"(math.{fn.__name__}(2)), not of 2°.")
    if by_d and not degrees:
        return (f"You divided the position by d_model (2 / 64): for the pair i = 0 the divisor is "
                f"10000^(2·0/64) = 10000⁰ = 1, so the angle is 2 itself and {name} = "
                f"{fn.__name__}(2), whatever d_model is.")
    if close(value, fn(DEGREES), HAND) or close(value, fn(BY_D_MODEL), HAND):
        return (f"That is the {fn.__name__} of a tiny angle (2° = 0.035 rad, or 2 / 64 = 0.031): the "
                f"angle is 2 radians, since for the pair i = 0 the divisor is 10000⁰ = 1, so {name} = "
                f"{fn.__name__}(2).")
    return None


@checker
def check_pe_2(pe_2_0, pe_2_1):
    """Your turn 1: PE(2, 0) and PE(2, 1), worked by hand (2 decimals are enough)."""
    a, b = number(pe_2_0, "pe_2_0"), number(pe_2_1, "pe_2_1")
    if close(a, math.sin(2), HAND) and close(b, math.cos(2), HAND):
        return None
    if close(a, math.cos(2), HAND) and close(b, math.sin(2), HAND):
        return "Sine and cosine are swapped: even column 0 is the sine, odd column 1 the cosine."
    if close(a, math.sin(1), HAND) or close(b, math.cos(1), HAND):
        return "Those are the values at position 1; the question asks for position 2."
    if not close(a, math.sin(2), HAND):
        return (_tiny_angle_hint(a, math.sin, "PE(2, 0)")
                or "PE(2, 0) is off: for the pair i = 0 the divisor is 10000⁰ = 1, so it is sin(2).")
    # Column 1 taken as the pair i = 1 gives cos(1.499) = 0.072 or sin(1.499) = 0.9975; the sine is
    # within 0.002 of the cosine of a tiny angle (0.9994, 0.9995): both round to 1.00.
    angle_pair_1 = 2 / 10000 ** (2 / 64)
    if close(b, math.cos(angle_pair_1), HAND) or close(b, math.sin(angle_pair_1), 0.0005):
        return ("Column 1 belongs to the pair i = 1 // 2 = 0, not i = 1: it is the cosine of the same "
                "angle as column 0, cos(2).")
    if close(b, -math.cos(2), HAND):
        return ("Check the sign of PE(2, 1): cos(2) is negative, because 2 radians is more than a "
                "quarter turn (π/2 ≈ 1.571).")
    if close(b, math.cos(DEGREES), 0.0002) or close(b, math.cos(BY_D_MODEL), 0.0002):
        return _tiny_angle_hint(b, math.cos, "PE(2, 1)")
    if close(b, math.sin(angle_pair_1), HAND):
        return ("PE(2, 1) is cos(2), the cosine of the same angle as column 0 (2 radians): a value near 1 "
                "is the sine of the pair i = 1's angle (column 1 belongs to the pair i = 1 // 2 = 0) or "
                "the cosine of a tiny angle (2°, or 2 / 64).")
    return (_tiny_angle_hint(b, math.cos, "PE(2, 1)")
            or "PE(2, 1) is off: column 1 is the cosine of the same angle as column 0, cos(2).")


@checker
def check_wavelength(answer, column=30, d_model=64):
    """The wavelength 2π · 10000^(2i/d_model) of a column, with i = column // 2."""
    value = number(answer, f"wavelength_{column}" if isinstance(column, int) else "wavelength")
    if (isinstance(column, bool) or not isinstance(column, int) or isinstance(d_model, bool)
            or not isinstance(d_model, int) or column < 0 or d_model < 2 or column >= d_model):
        raise Hint("column and d_model should be whole numbers with 0 ≤ column < d_model, "
                   "as in the exercise: check_wavelength(wavelength_30, column=30, d_model=64).")
    right = wavelength(column, d_model)
    i = column // 2
    if close(value, right, 0.002 * right):
        return None
    mistakes = [
        (2 * math.pi * 10000 ** (2 * column / d_model),
         f"You used i = {column}, the column number: column {column} belongs to the pair "
         f"i = {column} // 2 = {i}."),
        (10000 ** (2 * i / d_model),
         "You forgot the factor 2π: a full turn of sin(ω·pos) takes 2π/ω positions."),
        (10000 ** (2 * i / d_model) / (2 * math.pi),
         "You divided by 2π: a full turn of sin(pos / D) takes 2π · D positions, so multiply."),
        (2 * math.pi * 10000 ** (i / d_model), "The exponent is 2i/d_model, not i/d_model."),
        (360 * 10000 ** (2 * i / d_model),
         "A full turn is 2π radians, not 360 degrees: sin takes radians."),
        (10000 ** (-2 * i / d_model),
         "That is the frequency ω = 1 / 10000^(2i/d_model) (radians per position); the wavelength "
         "is the number of positions of a full turn, 2π / ω."),
        (2 * math.pi * 10000 ** (-2 * i / d_model),
         "You divided 2π by 10000^(2i/d_model), which gives 2π times the frequency ω; the wavelength "
         "is 2π / ω = 2π · 10000^(2i/d_model)."),
    ]
    for wrong, hint in mistakes:
        if close(value, wrong, 0.005 * abs(wrong)):
            return hint
    return f"Not quite: compute 2π · 10000^(2i/d_model) with i = {i} and d_model = {d_model}."


# --- the table as a function -------------------------------------------------------------------

def _interleave(sines, cosines):
    """A table whose even columns are `sines` and odd columns are `cosines` (each (n, d/2))."""
    table = torch.zeros(sines.shape[0], 2 * sines.shape[1], dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = sines, cosines
    return table


def _table_mistakes(n, d):
    """(hint, what a function with that mistake returns for (n, d)), the likely mistakes first."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)
    angle = pos / 10000 ** (2 * i / d)
    yield ("Sine and cosine columns are swapped: even columns 2i get sin, odd columns 2i+1 get cos.",
           _interleave(torch.cos(angle), torch.sin(angle)))
    concatenated = ("You put all the sines first, then all the cosines ([sin | cos], as some libraries "
                    "do): the paper interleaves them, sin in the even columns 0::2, cos in the odd "
                    "columns 1::2, so that each pair (2i, 2i+1) holds the sine and cosine of one angle.")
    yield concatenated, torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    yield concatenated, torch.cat([torch.cos(angle), torch.sin(angle)], dim=1)
    late = (pos + 1) / 10000 ** (2 * i / d)
    yield ("Positions start at 0, not 1: the first row is position 0, use torch.arange(n).",
           _interleave(torch.sin(late), torch.cos(late)))
    yield ("Every pair turns as fast as the first: the exponent 2i/d became 0 (an integer division // "
           "or integer tensors?). Compute it with floats: 2 * i / d.",
           _interleave(torch.sin(pos.expand(n, d // 2)), torch.cos(pos.expand(n, d // 2))))
    column = torch.arange(d, dtype=torch.float64)
    by_column = pos / 10000 ** (2 * column / d)
    yield ("You used the column number as i: column c belongs to the pair i = c // 2, so columns 2i "
           "and 2i+1 share one angle, pos / 10000^(2i/d).",
           torch.where(column % 2 == 0, torch.sin(by_column), torch.cos(by_column)))
    half = pos / 10000 ** (i / d)
    yield ("The exponent is 2i/d, not i/d (with i = 0, 1, 2, ... the pair): your later pairs turn "
           "too fast.", _interleave(torch.sin(half), torch.cos(half)))
    double = pos / 10000 ** (4 * i / d)
    yield ("You doubled the 2 of 2i/d: if your i already runs over 0, 2, 4, ... (torch.arange(0, d, 2)), "
           "divide it by d without multiplying by 2.", _interleave(torch.sin(double), torch.cos(double)))
    odd = pos / 10000 ** ((2 * i + 1) / d)
    yield ("Each odd column got its own frequency (exponent (2i+1)/d): the cosine in column 2i+1 uses "
           "the same angle as the sine in column 2i, pos / 10000^(2i/d).",
           _interleave(torch.sin(angle), torch.cos(odd)))
    if d > 2:
        spread = pos / 10000 ** (i / (d // 2 - 1))
        yield ("Your slowest pair turns exactly 10000 times slower than the first: the paper's exponent "
               "is 2i/d, so the last pair stops one step short (10000^((d-2)/d)), not i/(d/2 - 1).",
               _interleave(torch.sin(spread), torch.cos(spread)))
    product = pos * 10000 ** (2 * i / d)
    yield ("Divide the position by 10000^(2i/d), do not multiply: later pairs must turn more slowly.",
           _interleave(torch.sin(product), torch.cos(product)))
    yield ("The odd columns hold sines too: column 2i+1 is the cosine of the angle.",
           _interleave(torch.sin(angle), torch.sin(angle)))
    yield ("The even columns hold cosines too: column 2i is the sine of the angle.",
           _interleave(torch.cos(angle), torch.cos(angle)))
    yield ("You treated the angle as degrees (radians() or deg2rad): pos / 10000^(2i/d) is already in "
           "radians, give it to torch.sin as it is.",
           _interleave(torch.sin(torch.deg2rad(angle)), torch.cos(torch.deg2rad(angle))))


def _sizes():
    """(n, d) pairs the check tries: the notebook's (50, 64), a small one, and two drawn at random."""
    sizes = [(50, 64), (7, 8)]
    for seed in (1, 2):
        g = torch.Generator().manual_seed(seed)
        n = int(torch.randint(3, 40, (1,), generator=g))
        d = 2 * int(torch.randint(3, 17, (1,), generator=g))
        sizes.append((n, d))
    return sizes


# What check_sinusoidal_positions compares with: calling it is not an answer, nor reading the table
# it built for a Transformer (its position buffer pe).
REFERENCES = [(helpers.positions, "sinusoidal_positions", "helpers.positions.sinusoidal_positions"),
              Built(helpers.model.Transformer, "a helpers.model.Transformer, whose position table pe is "
                                               "built by helpers.positions.sinusoidal_positions")]
# A row of n positions meeting a row of d/2 divisors: the positions were not made a column.
_NO_COLUMN = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
# float16 / bfloat16 round a table built in them by up to 0.08 (50 × 64); every named mistake is
# 0.29 or more away from the right table.
HALF_TOL = 0.15


def _call_table(fn, name, n, d):
    """call(fn, name, n, d), naming a missing unsqueeze(1) where the learner's code raised."""
    try:
        return call(fn, name, n, d, reference=REFERENCES,
                    instead="build the table from the formula, with torch.sin and torch.cos.")
    except Hint as hint:
        found = _NO_COLUMN.search(str(hint))
        if found and {int(found[1]), int(found[2])} == {n, d // 2} and n != d // 2:
            raise Hint(f"{name} raised a shape error: a row of {n} positions cannot be divided by a row "
                       f"of {d // 2} divisors. Make the positions a column of shape ({n}, 1) with "
                       f".unsqueeze(1) (or pos[:, None]): pos / divisors then broadcasts to one angle "
                       f"per position and pair, ({n}, {d // 2}).") from None
        raise


@checker
def check_sinusoidal_positions(fn):
    """The learner's table builder against helpers.positions.sinusoidal_positions on several sizes."""
    for k, (n, d) in enumerate(_sizes()):
        name = f"my_sinusoidal_positions({n}, {d})"
        out = _call_table(fn, name, n, d)
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (d, n) and n != d:
            return (f"{name} has shape {(d, n)}, transposed: one row per position, one column per "
                    f"number of the vector, ({n}, {d}).")
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (n, d // 2):
            return (f"{name} has shape {(n, d // 2)}: fill both the sine (even) and the cosine (odd) "
                    f"columns, ({n}, {d}).")
        got = tensor(out, name, shape=(n, d), tuple_hint="return the table alone.")
        half = out.dtype in (torch.float16, torch.bfloat16)
        tol = HALF_TOL if half else 1e-4
        right = sinusoidal_positions(n, d).double()
        if close(got, right, tol):
            if half:
                return (f"{name} is a {str(out.dtype).replace('torch.', '')} table: compute it in "
                        "float32 (torch.float, the dtype of the model's weights), which keeps 7 "
                        "significant digits where float16 keeps about 3 and bfloat16 about 2.")
            if out.dtype != torch.float32:
                return (f"{name} is a {str(out.dtype).replace('torch.', '')} table: build it in float32 "
                        "(torch.float, the dtype of the model's weights and embeddings); a float64 table "
                        "added to float32 embeddings makes the sum float64, which the model's float32 "
                        "layers refuse.")
            continue
        for hint, wrong in _table_mistakes(n, d):
            if close(got, wrong, tol):
                return hint
        if k > 0:
            return (f"Right for (50, 64) but not for (n, d) = ({n}, {d}): build the table from the "
                    "arguments n and d, not from fixed numbers.")
        if close(got[:, 0::2], right[:, 0::2], 1e-4):
            return "The sine columns are right; check the odd columns: cos of the same angle."
        if close(got[:, :2], right[:, :2], 1e-4):
            return "The first pair is right but later pairs are not: check the divisor 10000^(2i/d)."
        return "Values differ from the formula: check the angle pos / 10000^(2i/d)."
    return None


# --- Check your understanding ------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_SHIFT_QUESTION = (
    "a",
    "PE(pos + k) is a rotation of PE(pos) by an angle ω·k that does not depend on pos, so one "
    "fixed matrix can point a query k tokens back at every position.",
    {"b": "The rotation angle is ω·k, with no pos in it: section 4 applies one matrix at "
          "positions 0, 10 and 40 and gets the pairs 3 positions further on each time.",
     "c": "Sines and cosines stay between −1 and 1 (section 2's table): a shift turns each pair, "
          "it does not make the numbers bigger (section 4).",
     "d": "Nothing to memorise: the angle-addition rules of section 4 give PE(pos + k) exactly, as "
          "a rotation of PE(pos)."},
)


@checker
def check_shift_question(answer_1):
    """Question 1: what a shift by k does to each pair of columns."""
    return choice(answer_1, "answer_1", *_SHIFT_QUESTION)


# Question 2's sizes: 32 sentences of 100 tokens, d_model = 512. The table is (positions, d_model),
# also right with a batch axis of size 1 in front.
Q2_SENTENCES, Q2_TOKENS, Q2_D_MODEL = 32, 100, 512
_TABLE_SHAPES = {
    (Q2_TOKENS, Q2_D_MODEL):
        "One row per position and one column per number: the table does not depend on the tokens, so the "
        "same (100, 512) table is added to all 32 sentences (broadcasting over the batch).",
    (1, Q2_TOKENS, Q2_D_MODEL):
        "(1, 100, 512) is the (100, 512) table, one row per position, kept with a batch axis of size 1: it "
        "does not depend on the tokens, so the same table is added to all 32 sentences (broadcasting over "
        "the batch).",
}


@checker
def check_table_shape_question(answer_2):
    """Question 2: the shape of the position table for 32 sentences of 100 tokens, d_model = 512."""
    got = shape(answer_2, "answer_2")
    if got in _TABLE_SHAPES:
        return Passed(_TABLE_SHAPES[got])
    if got == (32, 100, 512):
        return ("That is the shape of the embeddings and of the sum; the position table itself does not "
                "depend on the sentence: one row per position, the same for all 32 (section 2).")
    if got == (100, 256):
        return ("Each pair fills two columns, its sine and its cosine: d_model = 512 columns, not "
                "256 (section 2).")
    if got == (512, 100):
        return "Transposed: one row per position, one column per number, as section 2's (50, 64)."
    if got in ((32, 512), (32, 100)):
        return ("The table has one row per position (100 tokens), whatever the number of sentences "
                "(section 2).")
    return ("Not this shape: the table has one row per position and one column per number of the "
            "vector (section 2 printed (50, 64) for 50 positions and d_model = 64).")


_DEFAULT_INIT_QUESTION = (
    "token",
    "nn.Embedding starts with spread 1, and × √64 makes it about 8, more than ten times the "
    "positions' 0.59: the small table of spread 1/√d_model is what makes the factor balance them.",
    {"position": "Positions dominate only for the course's small table without the factor (0.20 "
                 "times as long). nn.Embedding's default spread is about 1 (section 5 prints it); "
                 "times √64 = 8 it becomes about 8, against 0.59 for the positions.",
     "balanced": "Balance needs the small table of spread 1/√64 = 0.125 that the course draws "
                 "(section 5); nn.Embedding's default spread is about 1, so × 8 makes the token "
                 "more than ten times louder than the positions."},
)


@checker
def check_default_init_question(answer_3):
    """Question 3: what nn.Embedding's default initialisation does to the positions."""
    return choice(answer_3, "answer_3", *_DEFAULT_INIT_QUESTION)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_sinusoidal_positions, helpers.positions.sinusoidal_positions, lambda f: lambda n, d: f(n, d))
