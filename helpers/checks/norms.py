"""Checkers for notebook 02 (layer norm)."""

import contextlib
import io
import math

import torch

from helpers.checks import Hint, checker, close, number, tensor
from helpers.norms import layer_norm, rms_norm


def _inputs(seed):
    """A (2, 3, 6) batch with a mean far from 0 and a spread far from 1, plus γ and β."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 6, generator=g) * 3 + 1.5
    gamma = torch.rand(6, generator=g) + 0.5
    beta = torch.randn(6, generator=g)
    return x, gamma, beta


def _call(fn, name, *args):
    """fn(*args) on copies, its printing silenced; a Hint when it fails or returns nothing."""
    if fn is None or fn is Ellipsis:
        raise Hint(f"Not answered yet: write the body of {name}.")
    if not callable(fn):
        raise Hint(f"Pass your function itself ({name}), not a {type(fn).__name__}.")
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            out = fn(*args)
    except Exception as e:
        message = f"Your function raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if "must match the size" in str(e):
            message += " (did you forget keepdim=True in mean?)"
        raise Hint(message) from None
    if out is None:
        raise Hint(f"{name} returned None: end it with return and the normalised tensor.")
    return out


def _stats(x, dim=-1, correction=0):
    """Mean and variance over dim (None: over everything), dividing by n - correction."""
    dims = tuple(range(x.dim())) if dim is None else (dim,)
    n = math.prod(x.shape[d] for d in dims)
    mu = x.mean(dim=dims, keepdim=True)
    return mu, ((x - mu) ** 2).sum(dim=dims, keepdim=True) / (n - correction)


def _layer_norm_mistakes(x, g, b, eps):
    """(hint, what a function with that mistake returns), the likely mistakes first."""
    mu, var = _stats(x)
    _, var_unbiased = _stats(x, correction=1)
    norm = (x - mu) / torch.sqrt(var + eps)
    yield ("You divided by d − 1 (unbiased variance, the default of torch.var): LayerNorm uses "
           "the biased variance, divided by d (var(unbiased=False) or ((x - mu)**2).mean).",
           g * (x - mu) / torch.sqrt(var_unbiased + eps) + b)
    yield "You forgot both γ and β: return gamma * x_hat + beta.", norm
    yield "You forgot γ: multiply the normalised x by gamma before adding beta.", norm + b
    yield "You forgot β: add beta after multiplying by gamma.", g * norm
    yield "γ and β are swapped: gamma multiplies, beta is added.", b * norm + g
    yield ("You did not subtract the mean: the numerator is x − μ.",
           g * x / torch.sqrt(var + eps) + b)
    yield ("You divided by the variance: divide by the standard deviation √(σ² + ε).",
           g * (x - mu) / (var + eps) + b)
    for dim in (0, 1, None):
        m, v = _stats(x, dim=dim)
        yield ("You normalised over the wrong axis: use the last dimension (dim=-1), the d "
               "numbers of one token.", g * (x - m) / torch.sqrt(v + eps) + b)


@checker
def check_layer_norm(fn):
    """The learner's layer_norm(x, gamma, beta, eps) against helpers.norms.layer_norm."""
    name = "my_layer_norm(x, gamma, beta, eps)"
    x, g, b = _inputs(0)
    got = tensor(_call(fn, name, x, g, b, 1e-5), "your output", shape=x.shape)
    x, g, b = x.double(), g.double(), b.double()
    if not close(got, layer_norm(x, g, b, 1e-5), 1e-4):
        for hint, wrong in _layer_norm_mistakes(x, g, b, 1e-5):
            if close(got, wrong, 1e-4):
                return hint
        return ("Not LayerNorm yet: over the last dim, subtract the mean μ, divide by √(σ² + ε) "
                "with σ² divided by d, then multiply by gamma and add beta.")
    got = tensor(_call(fn, name, x.float(), g.float(), b.float(), 0.5), "your output with eps=0.5",
                 shape=x.shape)
    if not close(got, layer_norm(x, g, b, 0.5), 1e-4):
        mu, var = _stats(x)
        if close(got, layer_norm(x, g, b, 0.0), 1e-4):
            return ("ε changes nothing in your function: divide by √(σ² + eps) with the eps you are "
                    "given (without it a constant vector gives 0/0).")
        if close(got, g * (x - mu) / (torch.sqrt(var) + 0.5) + b, 1e-4):
            return "Put ε under the square root: √(σ² + ε), not σ + ε."
        return "Right with eps=1e-5 but not with eps=0.5: use the eps argument as √(σ² + eps)."
    one = torch.tensor([1.0, 2.0, 3.0, 6.0])
    got = tensor(_call(fn, name, one, torch.ones(4), torch.zeros(4), 1e-5), "your output for (1, 2, 3, 6)",
                 shape=(4,))
    if not close(got, layer_norm(one, torch.ones(4), torch.zeros(4)), 1e-4):
        return ("Right on a batch but not on the single vector (1, 2, 3, 6): use dim=-1 (the last "
                "dimension), not a fixed axis number.")
    return None


def _rms_norm_mistakes(x, g, eps):
    ms = (x ** 2).mean(dim=-1, keepdim=True)
    mu, var = _stats(x)
    yield "You forgot γ: multiply by gamma.", x / torch.sqrt(ms + eps)
    yield ("You subtracted the mean: that is LayerNorm. RMSNorm divides x itself by its root mean "
           "square.", g * (x - mu) / torch.sqrt(var + eps))
    yield ("You summed the squares: the root *mean* square divides the sum by d (mean, not sum).",
           g * x / torch.sqrt((x ** 2).sum(dim=-1, keepdim=True) + eps))
    yield "You forgot the square root: divide by √(mean(x²) + ε).", g * x / (ms + eps)
    for dim in (0, 1, None):
        m = (x ** 2).mean() if dim is None else (x ** 2).mean(dim=dim, keepdim=True)
        yield ("You took the mean over the wrong axis: use the last dimension (dim=-1).",
               g * x / torch.sqrt(m + eps))


@checker
def check_rms_norm(fn):
    """The learner's rms_norm(x, gamma, eps) against helpers.norms.rms_norm."""
    name = "my_rms_norm(x, gamma, eps)"
    x, g, _ = _inputs(1)
    got = tensor(_call(fn, name, x, g, 1e-5), "your output", shape=x.shape)
    x, g = x.double(), g.double()
    if not close(got, rms_norm(x, g, 1e-5), 1e-4):
        for hint, wrong in _rms_norm_mistakes(x, g, 1e-5):
            if close(got, wrong, 1e-4):
                return hint
        return "Not RMSNorm yet: over the last dim, divide x by √(mean(x²) + ε), then multiply by gamma."
    got = tensor(_call(fn, name, x.float(), g.float(), 0.5), "your output with eps=0.5", shape=x.shape)
    if not close(got, rms_norm(x, g, 0.5), 1e-4):
        if close(got, rms_norm(x, g, 0.0), 1e-4):
            return "ε changes nothing in your function: divide by √(mean(x²) + eps) with the eps given."
        return "Right with eps=1e-5 but not with eps=0.5: put eps under the square root."
    one = torch.tensor([1.0, 2.0, 3.0, 6.0])
    got = tensor(_call(fn, name, one, torch.ones(4), 1e-5), "your output for (1, 2, 3, 6)", shape=(4,))
    if not close(got, rms_norm(one, torch.ones(4)), 1e-4):
        return "Right on a batch but not on a single vector: use dim=-1, not a fixed axis number."
    return None


def _nan_or_inf(x):
    """True for a single NaN or infinite number (float or one-element tensor)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, torch.Tensor)):
        return False
    try:
        value = float(x)
    except (TypeError, ValueError, RuntimeError):
        return False
    return math.isnan(value) or math.isinf(value)


@checker
def check_predictions(scaled_first, constant_first):
    """LayerNorm(4) at init: (10·x)[0] for x = (1, 2, 3, 6) is −1.069; a constant vector gives 0."""
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
