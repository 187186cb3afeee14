"""Randomly perturbed answers, to show a checker never fails on its own code.

A checker must print one line, never "Could not check this answer (...)" (its catch-all
for an error inside the checker), whatever it is given. ``wrong_tensors(x)`` builds wrong
answers from a right one: of the right shape (noise, a small relative error, a pre-scaled
or negated copy, NaN, inf, other dtypes) and of wrong shapes (transposed, a row or column
short, an extra axis, flattened, empty); ``wrong_functions(f)`` wraps a right function so
that it returns those, a tuple, a list, a number, or raises.
"""

import torch

from tests.printed import printed


def wrong_tensors(x, seed=0):
    """(label, value) pairs: wrong answers made from the right tensor x."""
    g = torch.Generator().manual_seed(seed)
    x = x.detach()
    f = x.double() if x.is_floating_point() else x.double()
    noise = torch.randn(f.shape, generator=g, dtype=torch.float64)
    out = [
        ("noise 1e-2", (f + 1e-2 * noise).to(x.dtype) if x.is_floating_point() else f + 1e-2 * noise),
        ("relative 1e-4", f * (1 + 1e-4)),
        ("random", noise),
        ("scaled by 1/8", f / 8),
        ("negated", -f),
        ("zeros", torch.zeros_like(f)),
        ("float16", f.half()),
        ("bfloat16", f.bfloat16()),
        ("float64", f),
        ("float32", f.float()),
        ("int64", f.round().long()),
        ("bool", f != 0),
        ("flattened", f.reshape(-1)),
        ("extra axis", f.unsqueeze(0)),
        ("doubled batch", torch.cat([f, f]) if f.dim() else f.reshape(1, 1)),
        ("empty", f.reshape(-1)[:0]),
        ("list", f.tolist()),
        ("tuple of two", (f, f)),
        ("number", 1.5),
    ]
    if f.numel():
        nan = f.clone().reshape(-1)
        nan[0] = float("nan")
        out.append(("one nan", nan.reshape(f.shape)))
        inf = f.clone().reshape(-1)
        inf[-1] = float("inf")
        out.append(("one inf", inf.reshape(f.shape)))
    if f.dim() >= 2:
        out += [("transposed", f.transpose(-1, -2).contiguous()),
                ("last axis short", f[..., :-1]),
                ("second-to-last axis short", f[..., :-1, :]),
                ("axes flipped", f.flip(-1)),
                ("first axis dropped", f[0])]
    if f.dim() >= 1:
        out += [("first axis short", f[:-1]), ("squeezed", f.squeeze())]
    return out


def wrong_functions(fn, seed=0):
    """(label, function) pairs: fn's output replaced by each wrong tensor, and odd returns."""
    def returning(transform):
        def wrong(*args, **kwargs):
            return transform(fn(*args, **kwargs))
        return wrong

    def first_tensor(out):
        return out[0] if isinstance(out, (tuple, list)) else out

    def each(label):
        def pick(out):
            t = first_tensor(out)
            if not isinstance(t, torch.Tensor):
                return t
            return dict(wrong_tensors(t, seed))[label]
        return pick

    labels = [label for label, _ in wrong_tensors(torch.zeros(2, 3, 4))]
    out = [(label, returning(each(label))) for label in labels]

    def raises(*args, **kwargs):
        raise ValueError("boom")

    out += [("raises", raises), ("returns a string", returning(lambda o: "answer")),
            ("returns a dict", returning(lambda o: {"out": o}))]
    return out


def assert_survives(capsys, check, *args, **kwargs):
    """The check prints one line and it is not the checker's own failure; returns the line."""
    line = printed(capsys, check, *args, **kwargs)
    assert not line.startswith("Could not check"), line
    return line
