"""Checks for notebook 05 (training recipe): the tiny warmup schedule and the label-smoothing floor."""

import math

from helpers.checks import Hint, checker, number
from helpers.recipe import lrate


def _same(a, b, rel=1e-3):
    return math.isclose(a, b, rel_tol=rel)


def _check_lr_100(value):
    right = lrate(100, 64, 400)                                        # 0.0015625
    if _same(value, right):
        return
    if _same(value, 0.0125):
        raise Hint("lr_100: 0.0125 is step^-0.5 · 64^-0.5 (the decay branch) or the warmup branch "
                   "without the factor 64^-0.5; step 100 is still in the warmup, so min picks "
                   "step · warmup^-1.5, and both branches are multiplied by d_model^-0.5 = 0.125.")
    if _same(value, lrate(100, 512, 400)):
        raise Hint("lr_100: you used d_model = 512 (the paper's); the tiny model has d_model = 64.")
    if _same(value, lrate(100, 64, 4000)):
        raise Hint("lr_100: you used warmup = 4000 (the paper's); the tiny schedule warms up for 400 steps.")
    if _same(value, lrate(101, 64, 400)):
        raise Hint("lr_100: that is the rate of step 101 (what a log after sched.step() shows); "
                   "use step = 100 in the formula.")
    raise Hint("lr_100: compute 64^-0.5 · min(100^-0.5, 100 · 400^-1.5) = 0.125 · min(0.1, ...).")


def _check_lr_1600(value):
    right = lrate(1600, 64, 400)                                       # 0.003125
    if _same(value, right):
        return
    if _same(value, 0.025):
        raise Hint("lr_1600: 0.025 is the warmup branch (1600 · 400^-1.5 · 0.125) or 1600^-0.5 without "
                   "the factor 64^-0.5; step 1600 is past the peak at step 400, so min picks "
                   "1600^-0.5 = 0.025, then times d_model^-0.5 = 0.125.")
    if _same(value, lrate(400, 64, 400)):
        raise Hint("lr_1600: 0.00625 is the peak, at step 400; after it the rate falls as 1/√step.")
    if _same(value, lrate(1600, 512, 400)) or _same(value, lrate(1600, 512, 4000)):
        raise Hint("lr_1600: you used d_model = 512 (the paper's); the tiny model has d_model = 64.")
    if _same(value, lrate(1600, 64, 4000)):
        raise Hint("lr_1600: you used warmup = 4000: with it, step 1600 would still be in the warmup; "
                   "the tiny schedule warms up for 400 steps.")
    raise Hint("lr_1600: compute 64^-0.5 · min(1600^-0.5, 1600 · 400^-1.5) = 0.125 · min(0.025, ...).")


def _check_logged(value):
    right = lrate(101, 64, 400)                                        # 0.00157813
    if _same(value, right, 1e-4):
        return
    if _same(value, lrate(100, 64, 400), 1e-4):
        raise Hint("logged_100: that is the rate step 100 used; sched.step() has already moved the "
                   "optimiser to the next step's rate before the print.")
    if _same(value, lrate(99, 64, 400), 1e-4):
        raise Hint("logged_100: the schedule moves forward: after sched.step() the optimiser holds "
                   "the rate of step 101, not 99.")
    raise Hint("logged_100: LambdaLR sets the rate to lrate(s + 1) after s calls of sched.step(); "
               "after step 100 that is lrate(101, 64, 400).")


@checker
def check_tiny_schedule(lr_100, lr_1600, logged_100):
    """Tiny schedule (d_model 64, warmup 400): lrate at steps 100 and 1600; the rate a log printed
    right after sched.step() at step 100 shows."""
    _check_lr_100(number(lr_100, "lr_100"))
    _check_lr_1600(number(lr_1600, "lr_1600"))
    _check_logged(number(logged_100, "logged_100"))


def _floor(n_vocab, eps):
    """The entropy of the smoothed target: 1 - eps + eps/n_vocab on the right token, eps/n_vocab
    on each of the others (natural log)."""
    right, other = 1 - eps + eps / n_vocab, eps / n_vocab
    return -(right * math.log(right) + (n_vocab - 1) * other * math.log(other))


@checker
def check_smoothing_floor(floor):
    """The best possible label-smoothed loss for a vocabulary of 37,000 tokens and eps = 0.1."""
    value = number(floor, "floor")
    right = _floor(37_000, 0.1)                                        # 1.377
    if abs(value - right) < 2e-3:
        return
    if abs(value - _floor(13, 0.1)) < 2e-3:
        raise Hint("0.537 is the floor for the tiny model's 13 tokens; use n_vocab = 37,000.")
    if abs(value - right / math.log(2)) < 3e-3:
        raise Hint("You used log base 2 (bits); PyTorch's cross-entropy uses the natural log.")
    if abs(value - 2.0) < 2e-3:
        raise Hint("2.0 is the loss of a model 100% sure of the right token; the floor is the loss of "
                   "a model that predicts exactly the smoothed target.")
    if abs(value + right) < 2e-3:
        raise Hint("The entropy is minus the sum of q · log q: your sign is flipped.")
    if abs(value - (-0.9 * math.log(0.9))) < 2e-3:
        raise Hint("You counted only the right token; add the 36,999 other tokens, each with "
                   "q = 0.1/37,000.")
    raise Hint("The floor is the entropy of q: −(q_right · ln q_right + 36,999 · q_other · ln q_other), "
               "with q_right = 0.9 + 0.1/37,000 and q_other = 0.1/37,000.")
