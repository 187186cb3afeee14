"""Every checker survives any wrong input: it prints one line and never raises."""

import importlib
import inspect
import math
import pkgutil

import pytest
import torch

import helpers.checks
from helpers.checks import PASSED

WRONG = [None, ..., [], [1.0, 2.0], "0.5", True, float("nan"), math.inf, {"a": 1},
         torch.tensor(float("nan")), torch.full((3, 3), float("nan")), torch.zeros(2, 3, 4),
         torch.zeros(7, dtype=torch.bool), torch.tensor([1, 2, 3]), lambda *a: None]


def all_checkers():
    found = []
    for info in pkgutil.iter_modules(helpers.checks.__path__):
        module = importlib.import_module(f"helpers.checks.{info.name}")
        for name, fn in vars(module).items():
            if callable(fn) and hasattr(fn, "__wrapped__") and fn.__module__ == module.__name__:
                found.append(pytest.param(fn, id=f"{info.name}.{name}"))
    return found


CHECKERS = all_checkers()


def test_there_are_checkers():
    assert len(CHECKERS) >= 3


@pytest.mark.parametrize("check", CHECKERS)
def test_checker_never_raises_and_prints_one_hint(check, capsys):
    n_args = len(inspect.signature(check.__wrapped__).parameters)
    for position in range(max(n_args, 1)):
        for wrong in WRONG:
            args = [None] * n_args
            if n_args:
                args[position] = wrong
            assert check(*args) is None
            printed = capsys.readouterr().out
            assert printed.count("\n") == 1, printed
            assert printed.strip() != PASSED, (wrong, printed)
            assert "Could not check" not in printed, printed
    check()                                 # too few arguments: still one line
    assert capsys.readouterr().out.count("\n") == 1
