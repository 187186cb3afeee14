"""Check cells: print ``Check passed.`` or a one-line hint, and never raise.

A checker is a function decorated with :func:`checker` that returns ``None`` when
the answer is right and a hint (one line naming the likely mistake) otherwise.
The decorator prints the result and turns any unexpected error into a hint, so a
check cell survives whatever the learner typed: None, a list, a wrong shape, NaN.
One module per notebook holds its checkers (``helpers.checks.positions``, ...).
"""

import functools
import math
import warnings

import torch

PASSED = "Check passed."


class Hint(Exception):
    """Raised inside a checker to stop at the first mistake with this hint."""


def checker(fn):
    """Print PASSED when fn returns None, else the hint it returns; never raise."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hint = fn(*args, **kwargs)
        except Hint as h:
            hint = str(h)
        except Exception as e:  # a checker must never raise, whatever it is given
            hint = f"Could not check this answer ({type(e).__name__}: {e})."
        print(PASSED if hint is None else " ".join(str(hint).split()))

    return run


def number(x, name):
    """x as a float, or raise Hint saying why it is not a usable number."""
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: replace the placeholder for {name} with your answer.")
    if isinstance(x, bool) or isinstance(x, str):
        raise Hint(f"{name} should be a number, got {type(x).__name__} {x!r}.")
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise Hint(f"{name} should be one number, got a tensor of shape {tuple(x.shape)}.")
        x = x.item()
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise Hint(f"{name} should be a number, got {type(x).__name__}.") from None
    if math.isnan(value) or math.isinf(value):
        raise Hint(f"{name} is {value}: check for a division by zero or a log of 0.")
    return value


def tensor(x, name, shape=None):
    """x as a float tensor (of the given shape), or raise Hint saying what is wrong."""
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if not isinstance(x, torch.Tensor):
        raise Hint(f"{name} should be a torch tensor, got {type(x).__name__}.")
    if x.is_complex() or x.dtype == torch.bool:
        raise Hint(f"{name} should hold real numbers, got dtype {x.dtype}.")
    x = x.detach().to(torch.float64)
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise Hint(f"{name} should have shape {tuple(shape)}, got {tuple(x.shape)}.")
    if torch.isnan(x).any():
        raise Hint(f"{name} contains NaN: look for a division by zero or 0/0.")
    return x


def shape(x, name):
    """x as a tuple of ints (from a tuple, list, torch.Size), or raise Hint."""
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: write the shape of {name} as a tuple, e.g. (1, 5, 64).")
    if isinstance(x, torch.Tensor):
        raise Hint(f"Give the shape of {name} as a tuple such as (1, 5, 64), not a tensor.")
    if isinstance(x, int):
        x = (x,)
    if not isinstance(x, (tuple, list, torch.Size)) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in x
    ):
        raise Hint(f"Write the shape of {name} as a tuple of whole numbers, e.g. (1, 5, 64).")
    return tuple(x)


def close(a, b, tol=1e-3):
    """True when a and b (numbers or tensors) agree within tol."""
    return bool(abs(torch.as_tensor(a, dtype=torch.float64)
                    - torch.as_tensor(b, dtype=torch.float64)).max() <= tol)
