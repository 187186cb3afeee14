"""Checkers for notebook 02 (layer norm)."""

import math

import torch

import helpers.norms
from helpers.checks import (NORMALISATION, Hint, Passed, call, checker, choice, choices, close, exercise,
                            number, tensor)
from helpers.norms import layer_norm, rms_norm


def _inputs(seed, size=(2, 3, 6)):
    """A batch with a mean far from 0 and a spread far from 1, plus γ and β (seeded)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*size, generator=g) * 3 + 1.5
    gamma = torch.rand(size[-1], generator=g) + 0.5
    beta = torch.randn(size[-1], generator=g)
    return x, gamma, beta


# Random batches the checks try, each (seed, shape): two seeds, batch > 1, two sizes of d.
CASES = ((0, (2, 3, 6)), (1, (3, 4, 8)))


def _stats(x, dim=-1, correction=0):
    """Mean and variance over dim (an int, a tuple, or None: everything), dividing by n - correction."""
    dims = tuple(range(x.dim())) if dim is None else (dim,) if isinstance(dim, int) else dim
    n = math.prod(x.shape[d] for d in dims)
    mu = x.mean(dim=dims, keepdim=True)
    return mu, ((x - mu) ** 2).sum(dim=dims, keepdim=True) / (n - correction)


def _layer_norm_mistakes(x, g, b, eps):
    """(hint, what a function with that mistake returns), the likely mistakes first."""
    mu, var = _stats(x)
    _, var_unbiased = _stats(x, correction=1)
    norm = (x - mu) / torch.sqrt(var + eps)
    yield ("You divided by d − 1 (unbiased variance, the default of torch.var and torch.std): LayerNorm "
           "uses the biased variance, divided by d (var(unbiased=False) or ((x - mu)**2).mean).",
           g * (x - mu) / torch.sqrt(var_unbiased + eps) + b)
    yield "You forgot both γ and β: return gamma * x_hat + beta.", norm
    yield "You forgot γ: multiply the normalised x by gamma before adding beta.", norm + b
    yield "You forgot β: add beta after multiplying by gamma.", g * norm
    yield "γ and β are swapped: gamma multiplies, beta is added.", b * norm + g
    yield ("You did not subtract the mean: the numerator is x − μ.",
           g * x / torch.sqrt(var + eps) + b)
    yield ("You did not divide by the standard deviation: after subtracting μ, divide by √(σ² + ε).",
           g * (x - mu) + b)
    yield ("You divided by the variance: divide by the standard deviation √(σ² + ε).",
           g * (x - mu) / (var + eps) + b)
    yield ("You multiplied by the standard deviation: divide x − μ by √(σ² + ε).",
           g * (x - mu) * torch.sqrt(var + eps) + b)
    for dim in (0, 1, (1, 2), None):
        m, v = _stats(x, dim=dim)
        yield ("You normalised over the wrong axis: use the last dimension (dim=-1), the d "
               "numbers of one token.", g * (x - m) / torch.sqrt(v + eps) + b)


def _layer_norm_eps_mistakes(x, g, b, eps):
    """Mistakes that only show when eps is large: (hint, what that function returns)."""
    mu, var = _stats(x)
    yield ("ε changes nothing in your function: divide by √(σ² + eps) with the eps argument you are "
           "given, not a fixed number (without ε a constant vector gives 0/0).", layer_norm(x, g, b, 0.0))
    yield "Put ε under the square root: √(σ² + ε), not σ + ε.", g * (x - mu) / (torch.sqrt(var) + eps) + b
    yield ("Put ε inside the square root, added to σ²: you added it to x − μ.",
           g * (x - mu + eps) / torch.sqrt(var) + b)


def _near(got, wrong, tol=1e-4):
    """got equals what a mistake returns, to tol relative to its size (mistakes can blow up)."""
    wrong = wrong.to(torch.float64)
    if got.shape != wrong.shape or not torch.isfinite(wrong).all():
        return False
    return close(got, wrong, tol * max(1.0, wrong.abs().max().item()))


TUPLE_HINT = "return only the normalised tensor (not μ or σ² with it)."
HALF = (torch.float16, torch.bfloat16)
HALF_TOL = 0.02


def _references(kind):
    """What the check compares with, for reference= of call: the course's function and PyTorch's."""
    F = torch.nn.functional
    targets = {"layer": [(torch.nn.LayerNorm, "forward", "nn.LayerNorm"), (F, "layer_norm", "F.layer_norm"),
                         (torch, "layer_norm", "torch.layer_norm"),
                         (helpers.norms, "layer_norm", "helpers.norms.layer_norm")],
               "rms": [(torch.nn.RMSNorm, "forward", "nn.RMSNorm"), (F, "rms_norm", "F.rms_norm"),
                       (torch, "rms_norm", "torch.rms_norm"),
                       (helpers.norms, "rms_norm", "helpers.norms.rms_norm")]}[kind]
    # every normalisation operation of torch too, whatever it is called (F.group_norm with one group,
    # F.instance_norm, torch.native_layer_norm, torch.ops.aten...): each computes what the exercise asks
    return [(owner, attr, label) for owner, attr, label in targets if hasattr(owner, attr)] + [NORMALISATION]


def _half_hint(out, name):
    return (f"{name} returns a {str(out.dtype).replace('torch.', '')} tensor: compute in float32, the "
            "dtype of x (float16 keeps about 3 significant digits, bfloat16 about 2).")


def _check_function(fn, name, args_for, right_for, mistakes, eps_mistakes, single_right, generic,
                    references=(), instead=""):
    """The checking steps LayerNorm and RMSNorm share: random batches, a large eps, one vector."""
    short = name.split("(")[0]

    def run(*args):
        return call(fn, name, *args, reference=references, instead=instead)

    for k, (seed, size) in enumerate(CASES):
        x, g, b = _inputs(seed, size)
        try:
            out = run(*args_for(x, g, b, 1e-5))
        except Hint as hint:
            if "must match the size" in str(hint):
                raise Hint(f"{name} raised a shape error on x of shape {size}: did you forget "
                           f"keepdim=True? x.mean(-1) has shape {size[:-1]} and does not line up with x; "
                           f"x.mean(-1, keepdim=True) has shape {(*size[:-1], 1)}.") from None
            raise
        got = tensor(out, f"{short}(x, ...) for x of shape {size}", shape=size, tuple_hint=TUPLE_HINT)
        x, g, b = x.double(), g.double(), b.double()
        half = out.dtype in HALF       # float16 / bfloat16 round by up to 1 % here; mistakes move 5 % or more
        if half and _near(got, right_for(x, g, b, 1e-5), HALF_TOL):
            return _half_hint(out, short)
        if not close(got, right_for(x, g, b, 1e-5), 1e-4):
            for hint, wrong in mistakes(x, g, b, 1e-5):
                if _near(got, wrong, HALF_TOL if half else 1e-4):
                    return hint
            if half:
                return f"{generic} Also, {_half_hint(out, short)}"
            if _near(got, right_for(x, g, b, 1e-5), HALF_TOL):
                return (f"{short} returns {str(out.dtype).replace('torch.', '')} values off by up to about "
                        "1 %, as float16 or bfloat16 rounding leaves them: compute in float32 throughout "
                        "(a cast to a half type and back keeps its rounding).")
            if k > 0:
                return (f"Right on a {CASES[0][1]} batch but not on a {size} one: work over dim=-1 "
                        "whatever the shape, with no fixed sizes.")
            return generic
    x, g, b = _inputs(2, (2, 5, 6))
    got = tensor(run(*args_for(x, g, b, 0.5)), f"{short}(x, ..., eps=0.5)", shape=x.shape,
                 tuple_hint=TUPLE_HINT)
    x, g, b = x.double(), g.double(), b.double()
    if not close(got, right_for(x, g, b, 0.5), 1e-4):
        for hint, wrong in eps_mistakes(x, g, b, 0.5):
            if _near(got, wrong):
                return hint
        return "Right with eps=1e-5 but not with eps=0.5: use the eps argument, under the square root."
    one = torch.tensor([1.0, 2.0, 3.0, 6.0])
    fixed_axis = ("Right on a batch but not on the single vector (1, 2, 3, 6): use dim=-1 (the last "
                  "dimension, whatever the shape), not a fixed axis number such as 2.")
    try:
        got = run(*args_for(one, torch.ones(4), torch.zeros(4), 1e-5))
    except Hint as hint:
        if "Dimension out of range" in str(hint):
            raise Hint(fixed_axis) from None
        raise
    got = tensor(got, f"{short} of the single vector (1, 2, 3, 6)", shape=(4,), tuple_hint=TUPLE_HINT)
    if not close(got, single_right, 1e-4):
        return fixed_axis
    return None


@checker
def check_layer_norm(fn):
    """The learner's layer_norm(x, gamma, beta, eps) against helpers.norms.layer_norm.

    Two random batches (two seeds, shapes (2, 3, 6) and (3, 4, 8)) with random γ and β, then
    eps = 0.5, then the single vector (1, 2, 3, 6).
    """
    return _check_function(
        fn, "my_layer_norm(x, gamma, beta, eps)", lambda x, g, b, eps: (x, g, b, eps), layer_norm,
        _layer_norm_mistakes, _layer_norm_eps_mistakes,
        layer_norm(torch.tensor([1.0, 2.0, 3.0, 6.0]), torch.ones(4), torch.zeros(4)),
        "Not LayerNorm yet: over the last dim, subtract the mean μ, divide by √(σ² + ε) with σ² "
        "divided by d, then multiply by gamma and add beta.", _references("layer"),
        "write the mean, the variance (divided by d) and the formula of section 1 yourself.")


def _rms_norm_mistakes(x, g, _, eps):
    ms = (x ** 2).mean(dim=-1, keepdim=True)
    mu, var = _stats(x)
    yield "You forgot γ: multiply by gamma.", x / torch.sqrt(ms + eps)
    yield ("You subtracted the mean: that is LayerNorm. RMSNorm divides x itself by its root mean "
           "square.", g * (x - mu) / torch.sqrt(var + eps))
    yield ("You summed the squares: the root *mean* square divides the sum by d (mean, not sum).",
           g * x / torch.sqrt((x ** 2).sum(dim=-1, keepdim=True) + eps))
    yield "You forgot the square root: divide by √(mean(x²) + ε).", g * x / (ms + eps)
    square_of_mean = x.mean(dim=-1, keepdim=True) ** 2
    yield ("You squared the mean instead of averaging the squares: the root mean square is "
           "√(mean(x²)), not √(mean(x)²) = |mean(x)|.", g * x / torch.sqrt(square_of_mean + eps))
    yield ("You divided by the standard deviation, which subtracts the mean inside: RMSNorm divides "
           "by the root mean square √(mean(x²) + ε), no mean anywhere.", g * x / torch.sqrt(var + eps))
    _, var_unbiased = _stats(x, correction=1)
    yield ("You divided by the standard deviation of torch.std (which subtracts the mean and divides by "
           "d − 1): RMSNorm divides by the root mean square √(mean(x²) + ε), no mean anywhere.",
           g * x / torch.sqrt(var_unbiased + eps))
    yield ("You multiplied by the root mean square: divide x by it.", g * x * torch.sqrt(ms + eps))
    for dim in (0, 1, (1, 2), None):
        m = (x ** 2).mean() if dim is None else (x ** 2).mean(dim=dim, keepdim=True)
        yield ("You took the mean over the wrong axis: use the last dimension (dim=-1).",
               g * x / torch.sqrt(m + eps))


def _rms_norm_eps_mistakes(x, g, _, eps):
    ms = (x ** 2).mean(dim=-1, keepdim=True)
    yield ("ε changes nothing in your function: divide by √(mean(x²) + eps) with the eps argument "
           "you are given, not a fixed number.", rms_norm(x, g, 0.0))
    yield ("Put ε under the square root: √(mean(x²) + ε), not √mean(x²) + ε.",
           g * x / (torch.sqrt(ms) + eps))


@checker
def check_rms_norm(fn):
    """The learner's rms_norm(x, gamma, eps) against helpers.norms.rms_norm (same inputs as LayerNorm)."""
    return _check_function(
        fn, "my_rms_norm(x, gamma, eps)", lambda x, g, b, eps: (x, g, eps),
        lambda x, g, b, eps: rms_norm(x, g, eps), _rms_norm_mistakes, _rms_norm_eps_mistakes,
        rms_norm(torch.tensor([1.0, 2.0, 3.0, 6.0]), torch.ones(4)),
        "Not RMSNorm yet: over the last dim, divide x by √(mean(x²) + ε), then multiply by gamma.",
        _references("rms"), "write the mean of the squares and the formula of section 8 yourself.")


def _nan_or_inf(x):
    """True for a single NaN or infinite number (float, one-element tensor, or "NaN" written as text)."""
    if isinstance(x, str):
        return x.strip().strip("'\"").lower() in ("nan", "inf", "-inf", "infinity")
    if isinstance(x, bool) or not isinstance(x, (int, float, torch.Tensor)):
        return False
    try:
        value = float(x)
    except (TypeError, ValueError, RuntimeError):
        return False
    return math.isnan(value) or math.isinf(value)


@checker
def check_predictions(scaled_first, constant_first):
    """Your turn 2: LayerNorm(4) at init on 10·x for x = (1, 2, 3, 6) (the first number), and on a
    constant vector."""
    a = number(scaled_first, "scaled_first")
    if close(a, -10.69, 0.02):
        return ("Scaling x by 10 scales x − μ and σ by 10 as well: the ratio, and so LayerNorm's "
                "output, stays the same.")
    if close(a, 1.069, 0.002):
        return "Check the sign: 10 is below the mean 30, so it becomes negative."
    if not close(a, -1.069, 0.002):
        return ("scaled_first is off: 10·x = (10, 20, 30, 60) has mean 30 and σ = √350; "
                "compute (10 − 30) / √350.")
    if _nan_or_inf(constant_first):
        return ("No NaN: σ² = 0, but ε keeps the denominator √(0 + ε) away from 0, and the "
                "numerator 7 − 7 is 0.")
    b = number(constant_first, "constant_first")
    if close(b, 7.0, 0.01):
        return "The mean is subtracted first: 7 − 7 = 0 before anything is divided."
    if close(b, 1.0, 0.01):
        return "x − μ is 0 for every entry of a constant vector, so only β (0 at init) remains."
    if not close(b, 0.0, 0.002):
        return "constant_first is off: every entry equals the mean, so x − μ = 0 and the output is β = 0."
    return None


# --- Check your understanding ------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_BATCH_OF_ONE_QUESTION = (
    "a",
    "Each feature's column holds a single number, which is its own mean: x − μ = 0 everywhere, "
    "and the token's content is erased whatever it was.",
    {"b": "Batch norm normalises each feature over the batch (a column, section 5's figure), not "
          "the token's own 8 numbers (a row): that is layer norm.",
     "c": "No NaN: σ² = 0, but ε keeps the denominator √(0 + ε) away from 0 and the numerator is "
          "0, as for the constant vector of Your turn 2 (after section 4).",
     "d": "The mean is subtracted first, and a column of one number equals its mean: x − μ = 0 "
          "(section 5 for the columns, Your turn 2 for what 0 / √ε gives)."},
)


@checker
def check_batch_of_one_question(answer_1):
    """Question 1: what batch norm's formula returns on a batch that holds one token."""
    return choice(answer_1, "answer_1", *_BATCH_OF_ONE_QUESTION)


_WHAT_MOVES_LAYER_NORM = (
    ["a", "b", "c", "d"],
    {"d"},
    "Layer norm computes μ and σ from the token's own numbers only, and a shift of all of them "
    "cancels in x − μ; after that only γ and β act, and training moves them.",
    {"a": "Layer norm uses only the token's own 8 numbers: section 5's table shows a change of "
          "0.000 in every batch. It is batch norm that moves with the other sentences.",
     "b": "Padding tokens are other rows of the batch; a row is normalised from its own numbers "
          "(section 5, last line of the table: change 0.000 for layer norm).",
     "c": "LayerNorm subtracts the token's own mean: adding the same number to all 8 numbers moves "
          "μ by as much, and x − μ, σ and the output stay the same (section 1's formula).",
     "d": "γ multiplies and β shifts the normalised numbers (section 1, and section 2 where they "
          "undo the normalisation): when training moves them, the output moves too."},
)


@checker
def check_what_moves_layer_norm(answer_2):
    """Question 2: which of the four changes move layer norm's output for c."""
    return choices(answer_2, "answer_2", *_WHAT_MOVES_LAYER_NORM)


# Question 3: four later layers, each with F' = 0.5 and a shortcut; the factor is computed from them.
Q3_LAYERS, Q3_SLOPE = 4, 0.5
_SHORTCUT_FACTOR = (1 + Q3_SLOPE) ** Q3_LAYERS
_SHORTCUT_WHY = ("Each shortcut layer contributes a factor 1 + F′ = 1.5 and the chain rule multiplies them: "
                 "1.5⁴ ≈ 5.06, where without shortcuts 0.5⁴ = 0.0625 is left.")


@checker
def check_shortcut_factor(answer_3):
    """Question 3: the factor on the gradient through four later layers with F' = 0.5 and shortcuts."""
    value = number(answer_3, "answer_3")
    if close(value, _SHORTCUT_FACTOR, 0.05):            # exact, or rounded to 2 decimals or 1
        return Passed(_SHORTCUT_WHY)
    mistakes = [
        (0.5 ** 4, "0.5⁴ = 0.0625 is the product without shortcuts; with y = x + F(x) each factor is "
                   "1 + F′ = 1.5 (section 6)."),
        (1 + 4 * 0.5, "The chain rule multiplies the four factors 1 + F′, it does not add the F′ "
                      "(section 6: (1 + F′)⁴)."),
        (1.5 * 4, "1.5 × 4 adds the four layers up; the chain rule multiplies their factors: 1.5⁴ "
                  "(section 6)."),
        (1.5, "That is one layer's factor; the gradient passes four layers, four factors (section 6)."),
        (1.5 ** 5, "The gradient reaching layer 1 passes the four later layers, not layer 1 itself: "
                   "four factors 1 + F′, 1.5⁴ (section 6)."),
        (2 ** 4, "The factor of one layer is 1 + F′ = 1.5, not 2: the 1 comes from the shortcut, "
                 "F′ = 0.5 from the layer (section 6)."),
    ]
    for wrong, hint in mistakes:
        if close(value, wrong, 0.01):
            return hint
    return "Not quite: with shortcuts each layer multiplies the gradient by 1 + F′ (section 6)."


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_layer_norm, helpers.norms.layer_norm, lambda f: lambda x, g, b, eps=1e-5: f(x, g, b, eps))
exercise(check_rms_norm, helpers.norms.rms_norm, lambda f: lambda x, g, eps=1e-5: f(x, g, eps))
