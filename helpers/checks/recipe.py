"""Checks for notebook 05 (training recipe): a warmup schedule computed by hand, the label-smoothed
loss and its floor, greedy decoding of the trained model, and the questions of "Check your
understanding".
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from helpers import decoding, recipe
from helpers.tasks import reversal
from helpers.checks import Hint, Passed, call, checker, choice, exercise, number, tensor
from helpers.decoding import greedy_decode
from helpers.model import Transformer
from helpers.recipe import lrate
from helpers.tasks.reversal import BOS, EOS, PAD, VOCAB, batch, pad_after_eos

HALF = (torch.float16, torch.bfloat16)


def _half(x, name):
    """Raise Hint when x is a half-precision tensor (its rounding, not the formula, is then wrong)."""
    if isinstance(x, torch.Tensor) and x.dtype in HALF:
        raise Hint(f"{name} is a {str(x.dtype).removeprefix('torch.')} tensor, which rounds every number "
                   "to 3 significant digits or fewer: compute in float32 (or with Python floats).")


def _as_printed(value, right):
    """True when value is right to the 3 significant digits a log prints (1.58e-03), or closer."""
    unit = 10.0 ** (math.floor(math.log10(abs(right))) - 2)
    return abs(value - right) <= 0.5 * unit * 1.001


def _rounded(value, right):
    """The number of significant digits (1 or 2) to which value is right rounded or cut, or None."""
    for digits in (1, 2):
        unit = 10.0 ** (math.floor(math.log10(abs(right))) - digits + 1)
        for cut in (round(right / unit) * unit, math.floor(right / unit) * unit):
            if abs(value - cut) <= 1e-9 * abs(right):
                return digits
    return None


def _check_digits(value, right, name, near=None):
    """Raise Hint when value is within 5 % of right but not right to three significant digits:
    say it is rounded only when it is right rounded (or cut) to 1 or 2 digits; else how far off
    it is, and (near: (the value it is a multiple of, its name, the right factor)) by what factor."""
    if abs(value - right) > 0.05 * abs(right):
        return
    digits = _rounded(value, right)
    if digits:
        raise Hint(f"{name}: {value:.3g} is the rate rounded to {digits} significant digit"
                   f"{'s' if digits > 1 else ''}: give three significant digits (a log prints them, like "
                   "1.23e-03).")
    if near is not None:
        base, label, factor = near
        raise Hint(f"{name}: {value:.4g} is {value / base:.4g} × {label}, not a rounding of the right "
                   f"rate: the rate there is {label} × {factor}, since in the warmup it grows in "
                   "proportion to the step. Compute it from the formula.")
    raise Hint(f"{name}: {value:.3g} is within {abs(value - right) / abs(right):.1%} of the rate but not "
               "right to three significant digits, and not a rounding of it: compute it from the "
               "formula, without rounding on the way.")


# --- Your turn: a schedule by hand ---------------------------------------------------------------

# A model none of the notebook's cells prints a rate for: d_model 256, warmup_steps 1000.
D_MODEL, WARMUP = 256, 1000
IN_WARMUP, AFTER_PEAK = 250, 3000          # a step of the warmup, a step after the peak


def _rate(step, d_model=D_MODEL, warmup=WARMUP):
    return lrate(step, d_model, warmup)


def _constants(step):
    """(value, hint) of the formula at `step` with another model's constants."""
    this = f"this model has d_model = {D_MODEL} and warmup = {WARMUP}."
    return [
        (_rate(step, 512, 4000), f"that is the paper's schedule (d_model = 512, warmup = 4000); {this}"),
        (_rate(step, 64, 400), f"that is the tiny model's schedule (d_model = 64, warmup = 400); {this}"),
        (_rate(step, 512, WARMUP), f"you used d_model = 512 (the paper's); {this}"),
        (_rate(step, 64, WARMUP), f"you used d_model = 64 (the tiny model's); {this}"),
        (_rate(step, D_MODEL, 4000), f"you used warmup = 4000 (the paper's); {this}"),
        (_rate(step, D_MODEL, 400), f"you used warmup = 400 (the tiny model's); {this}"),
    ]


def _one_step_off(value, right_step, name):
    """Raise Hint when value is the rate of a step near right_step (up to 3 steps away)."""
    if _as_printed(value, _rate(right_step)):
        return
    for step in sorted(range(right_step - 3, right_step + 4), key=lambda s: abs(s - right_step)):
        if step != right_step and _as_printed(value, _rate(step)):
            off = step - right_step
            raise Hint(f"{name}: {value:.4g} is lrate({step}), the rate of step {step}: "
                       f"{abs(off)} step{'s' if abs(off) > 1 else ''} {'late' if off > 0 else 'early'}; "
                       f"you want the rate of step {right_step}.")


def _check_in_warmup(value):
    step, name = IN_WARMUP, f"lr_{IN_WARMUP}"
    right = _rate(step)
    if _as_printed(value, right):
        return
    d = D_MODEL ** -0.5
    if _as_printed(value, d * step ** -0.5):
        raise Hint(f"{name}: that is the decay branch, d_model^-0.5 · step^-0.5; step {step} is still in "
                   f"the warmup ({step} < {WARMUP}), where min picks step · warmup^-1.5.")
    if _as_printed(value, step * WARMUP ** -1.5):
        raise Hint(f"{name}: you left out the factor d_model^-0.5 = {d:g}: it multiplies both branches.")
    if _as_printed(value, D_MODEL ** 0.5 * step * WARMUP ** -1.5):
        raise Hint(f"{name}: you multiplied by d_model^0.5 = {D_MODEL ** 0.5:g}; the factor is "
                   f"d_model^-0.5 = {d:g}.")
    if _as_printed(value, d * step * WARMUP ** -0.5):
        raise Hint(f"{name}: the warmup branch is step · warmup^-1.5, not warmup^-0.5.")
    for wrong, hint in _constants(step):
        if _as_printed(value, wrong):
            raise Hint(f"{name}: {hint}")
    if _as_printed(value, _rate(step + 1)):
        raise Hint(f"{name}: that is the rate of step {step + 1}, what a log after sched.step() shows; "
                   f"use step = {step} in the formula.")
    _one_step_off(value, step, name)
    _check_digits(value, right, name)
    raise Hint(f"{name}: compute {D_MODEL}^-0.5 · min({step}^-0.5, {step} · {WARMUP}^-1.5).")


def _check_after_peak(value):
    step, name = AFTER_PEAK, f"lr_{AFTER_PEAK}"
    right = _rate(step)
    if _as_printed(value, right):
        return
    d = D_MODEL ** -0.5
    if _as_printed(value, d * step * WARMUP ** -1.5):
        raise Hint(f"{name}: that is the warmup branch, d_model^-0.5 · step · warmup^-1.5 (or max instead "
                   f"of min); step {step} is past the peak at step {WARMUP}, so min picks step^-0.5.")
    if _as_printed(value, step ** -0.5):
        raise Hint(f"{name}: you left out the factor d_model^-0.5 = {d:g}: it multiplies both branches.")
    if _as_printed(value, D_MODEL ** 0.5 * step ** -0.5):
        raise Hint(f"{name}: you multiplied by d_model^0.5 = {D_MODEL ** 0.5:g}; the factor is "
                   f"d_model^-0.5 = {d:g}.")
    if _as_printed(value, _rate(WARMUP)):
        raise Hint(f"{name}: {value:.4g} is the peak, at step {WARMUP}; after it the rate falls as 1/√step.")
    for wrong, hint in _constants(step):
        if _as_printed(value, wrong):
            raise Hint(f"{name}: {hint}")
    _check_digits(value, right, name)
    raise Hint(f"{name}: compute {D_MODEL}^-0.5 · min({step}^-0.5, {step} · {WARMUP}^-1.5).")


def _check_logged(value):
    step, name = IN_WARMUP, f"logged_{IN_WARMUP}"
    right = _rate(step + 1)
    if _as_printed(value, right):
        return
    if _as_printed(value, _rate(step)):
        raise Hint(f"{name}: that is the rate step {step} used; sched.step() has already moved the "
                   "optimiser to the next step's rate before the print.")
    if _as_printed(value, _rate(step - 1)):
        raise Hint(f"{name}: the schedule moves forward: after sched.step() the optimiser holds the rate "
                   f"of step {step + 1}, not {step - 1}.")
    if _as_printed(value, _rate(step + 2)):
        raise Hint(f"{name}: that is lrate({step + 2}), one step too far: after step {step}, sched.step() "
                   f"has been called {step} times and LambdaLR holds lrate({step} + 1); the + 1 counts once.")
    for wrong, hint in _constants(step + 1):
        if _as_printed(value, wrong):
            raise Hint(f"{name}: {hint}")
    _one_step_off(value, step + 1, name)
    _check_digits(value, right, name, near=(_rate(step), f"lr_{step}", f"{step + 1}/{step}"))
    raise Hint(f"{name}: LambdaLR sets the rate to lrate(s + 1) after s calls of sched.step(); after "
               f"step {step} that is lrate({step + 1}, {D_MODEL}, {WARMUP}).")


@checker
def check_schedule(lr_in_warmup, lr_after_peak, logged):
    """A schedule of d_model 256, warmup 1000: lrate at steps 250 and 3000, and the rate a log
    printed right after sched.step() at step 250 shows. Right to 3 significant digits passes."""
    for value, name, check in ((lr_in_warmup, f"lr_{IN_WARMUP}", _check_in_warmup),
                               (lr_after_peak, f"lr_{AFTER_PEAK}", _check_after_peak),
                               (logged, f"logged_{IN_WARMUP}", _check_logged)):
        got = number(value, name)
        try:
            check(got)
        except Hint:
            _half(value, name)
            raise


# --- Your turn: the floor for 37,000 tokens ------------------------------------------------------

def _floor(n_vocab, eps_ls):
    """The entropy of PyTorch's smoothed target: 1 - eps_ls + eps_ls/n_vocab on the right token,
    eps_ls/n_vocab on each of the others (natural log)."""
    right, other = 1 - eps_ls + eps_ls / n_vocab, eps_ls / n_vocab
    return -(right * math.log(right) + (n_vocab - 1) * other * math.log(other))


@checker
def check_smoothing_floor(floor):
    """The best possible label-smoothed loss for a vocabulary of 37,000 tokens and eps_ls = 0.1."""
    value = number(floor, "floor")
    right = _floor(37_000, 0.1)
    if abs(value - right) < 5e-3:                      # right to 3 decimals, or to 2
        return
    _half(floor, "floor")
    if abs(value - _floor(13, 0.1)) < 2e-3:
        raise Hint("0.537 is the floor for the tiny model's 13 tokens; use n_vocab = 37,000.")
    if abs(value - _floor(32_000, 0.1)) < 4e-3:          # 1.362, to 3 decimals or to 2 (1.36)
        raise Hint("That is the floor for 32,000 tokens, the paper's English-French word-piece vocabulary; "
                   "this question is about English-German's shared vocabulary of about 37,000: use "
                   "n_vocab = 37,000.")
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


# --- Your turn: the label-smoothed loss ----------------------------------------------------------

# (seed, rows, vocabulary, eps_ls, pad): the first two are the notebook's setting, the third
# changes eps_ls, the vocabulary and the padding id, to catch constants written into the function.
LOSS_CASES = [(0, 24, 13, 0.1, 0), (1, 40, 13, 0.1, 0), (2, 30, 7, 0.25, 3)]

LOSS_REFERENCE = "nn.CrossEntropyLoss / F.cross_entropy with label_smoothing"
LOSS_INSTEAD = ("build the smoothed target q yourself and take −Σ_k q(k)·log_softmax(logits)(k) per row, "
                "then the mean over the real rows.")


def _loss_inputs(seed, rows, n_vocab, pad):
    """Random logits (rows, n_vocab) and targets (rows,), a quarter of them padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, n_vocab, generator=g) * 2
    target = torch.randint(0, n_vocab, (rows,), generator=g)
    target[target == pad] = (pad + 1) % n_vocab                      # real rows: real tokens
    padded = torch.randperm(rows, generator=g)[: rows // 4]
    target[padded] = pad
    return logits, target


def _smoothing(name, args, kwargs):
    """True when this call of a cross-entropy function asks for label smoothing: without it, it is a
    fair building block (the negative log-likelihood of the right token); with it, it is this check's
    reference. F.cross_entropy takes label_smoothing 8th, torch's C function (and aten's) 6th."""
    position = 7 if name == "cross_entropy" else 5
    value = kwargs.get("label_smoothing", args[position] if len(args) > position else 0.0)
    try:
        return bool(value)
    except (RuntimeError, TypeError, ValueError):
        return True


# F.cross_entropy (and nn.CrossEntropyLoss, which calls it) ends in torch._C._nn.cross_entropy_loss:
# watching both in torch's dispatch catches every route, a default argument, a closure or a partial.
LOSS_REFERENCES = [(recipe, "smoothed_loss", "helpers.recipe.smoothed_loss"),
                   (F, "cross_entropy", LOSS_REFERENCE, _smoothing),
                   (torch._C._nn, "cross_entropy_loss", LOSS_REFERENCE, _smoothing)]


def _smoothed(logp, target, q_right, q_other, pad, zero_column=None, rows="real", reduce="mean",
              columns="one per row", zero_last=False):
    """-sum_k q(k) log p(k) per row with q_right on the target and q_other elsewhere (0 on
    zero_column, set before the target, or after it with zero_last), reduced over the real rows
    ("real"), all rows ("all"), or the real rows summed then divided by all rows ("all_divided");
    reduce="entries" averages q(k) log p(k) over every entry of the real rows (a mean, not a sum,
    over the vocabulary). columns="all rows" puts q_right in every row's target column in every
    row (q[:, target])."""
    q = torch.full_like(logp, q_other)
    if zero_column is not None and not zero_last:
        q[:, zero_column] = 0.0
    if columns == "all rows":
        q[:, target.unique()] = q_right
    else:
        q[torch.arange(len(target)), target] = q_right
    if zero_column is not None and zero_last:
        q[:, zero_column] = 0.0
    per_row = -(q * logp).sum(-1)
    if reduce == "entries":
        per_row = per_row / logp.shape[-1]
    real = target != pad
    if rows == "all":
        return per_row.mean()
    if rows == "pad":
        return per_row[~real].mean()
    if rows == "all_divided":
        return per_row[real].sum() / len(target)
    return per_row[real].sum() if reduce == "sum" else per_row[real].mean()


def _loss_mistakes(logits, target, eps_ls, pad):
    """(hint, what a loss with that mistake returns), the likely mistakes first."""
    n = logits.shape[-1]
    logp = logits.log_softmax(-1)
    pytorch = (1 - eps_ls + eps_ls / n, eps_ls / n)
    yield ("You spread ε_ls/(n_vocab − 1) over the wrong tokens and gave the right one 1 − ε_ls: that is "
           "another convention (fairseq's, tensor2tensor's); PyTorch gives every token ε_ls/n_vocab, the "
           "right one included, so the right token gets 1 − ε_ls + ε_ls/n_vocab (section 4).",
           _smoothed(logp, target, 1 - eps_ls, eps_ls / (n - 1), pad))
    yield ("Your target gives the right token 1 − ε_ls, so it sums to 1 − ε_ls/n_vocab: every token gets "
           "ε_ls/n_vocab, the right one too, and the right one gets 1 − ε_ls on top "
           "(q[rows, target] += 1 − ε_ls, not =).",
           _smoothed(logp, target, 1 - eps_ls, eps_ls / n, pad))
    every_row = ("q[:, target] writes the right-token value into every target column of every row: "
                 "index one column per row, q[torch.arange(N), target].")
    yield every_row, _smoothed(logp, target, *pytorch, pad, columns="all rows")
    yield every_row, _smoothed(logp, target, 1 - eps_ls, eps_ls / n, pad, columns="all rows")
    yield ("The right token gets 1 + ε_ls/n_vocab in your target, which then sums to 1 + ε_ls: you forgot "
           "the factor (1 − ε_ls) on the right token; q = (1 − ε_ls)·[k = right] + ε_ls/n_vocab.",
           _smoothed(logp, target, 1 + eps_ls / n, eps_ls / n, pad))
    for rows in ("all", "all_divided"):
        yield ("Your mean counts the padding rows: average over the rows whose target is not pad "
               "only (ignore_index removes them from the sum and from the count).",
               _smoothed(logp, target, *pytorch, pad, rows=rows))
    yield ("Your mean is over the padding rows only, the ones to leave out: keep the rows whose target "
           "is not pad, target != pad (== pad picks the padding).",
           _smoothed(logp, target, *pytorch, pad, rows="pad"))
    entries = ("Your loss is n_vocab times too small: you averaged q(k)·log p(k) over every entry of the "
               "(N, n_vocab) table; sum over the vocabulary first (.sum(dim=-1)), then take the mean over "
               "the real rows.")
    yield entries, _smoothed(logp, target, *pytorch, pad, reduce="entries")
    yield entries, _smoothed(logp, target, *pytorch, pad, reduce="entries", rows="all")
    yield ("You gave the padding column 0 and spread ε_ls over the other n_vocab − 2 tokens (the Annotated "
           "Transformer's convention); PyTorch's label_smoothing gives every column ε_ls/n_vocab, padding "
           "included (section 4).",
           _smoothed(logp, target, 1 - eps_ls, eps_ls / (n - 2), pad, zero_column=pad))
    yield ("You gave the padding column 0: PyTorch's label_smoothing gives every column ε_ls/n_vocab, the "
           "padding column included (section 4).",
           _smoothed(logp, target, *pytorch, pad, zero_column=pad))
    yield ("You set the padding column of q to 0 and averaged over every row: ignore_index removes "
           "the rows whose target is pad (from the sum and the count), and leaves the padding "
           "column at ε_ls/n_vocab.", _smoothed(logp, target, *pytorch, pad, zero_column=pad, rows="all",
                                                 zero_last=True))
    entropy = -(pytorch[0] * math.log(pytorch[0]) + (n - 1) * pytorch[1] * math.log(pytorch[1]))
    yield ("Your loss is the KL divergence from the target, the cross-entropy minus the target's "
           "entropy (the floor, 0.537 for 13 tokens and ε_ls = 0.1): CrossEntropyLoss returns "
           "−Σ_k q(k)·log p(k) itself.", _smoothed(logp, target, *pytorch, pad) - entropy)
    q_other = eps_ls / (n - 2)
    annotated_entropy = -((1 - eps_ls) * math.log(1 - eps_ls) + (n - 2) * q_other * math.log(q_other))
    yield ("That is the Annotated Transformer's loss: the KL divergence against its target (0 on the "
           "padding column, ε_ls/(n_vocab − 2) elsewhere). CrossEntropyLoss is the cross-entropy "
           "−Σ_k q(k)·log p(k) against ε_ls/n_vocab on every token and 1 − ε_ls + ε_ls/n_vocab on the "
           "right one (section 4).",
           _smoothed(logp, target, 1 - eps_ls, q_other, pad, zero_column=pad) - annotated_entropy)
    yield ("That is the plain cross-entropy: the target must be smoothed, 1 − ε_ls + ε_ls/n_vocab on the "
           "right token and ε_ls/n_vocab on each other.", _smoothed(logp, target, 1.0, 0.0, pad))
    yield ("You left out the ε_ls/n_vocab spread: the right token gets 1 − ε_ls + ε_ls/n_vocab and every "
           "other token ε_ls/n_vocab.", _smoothed(logp, target, 1 - eps_ls, 0.0, pad))
    yield ("You summed over the rows: take the mean over the real (non-padding) rows.",
           _smoothed(logp, target, *pytorch, pad, reduce="sum"))
    yield ("Turn the scores into log-probabilities first: log_softmax(logits, dim=-1), not the raw "
           "logits.", _smoothed(logits, target, *pytorch, pad))
    yield ("Use the log of the probabilities: log_softmax(logits, dim=-1), not softmax.",
           _smoothed(logits.softmax(-1), target, *pytorch, pad))
    yield ("Your log_softmax runs over the rows (dim=0): normalise each row over the vocabulary, "
           "dim=-1.", _smoothed(logits.log_softmax(0), target, *pytorch, pad))
    if eps_ls != 0.1:
        yield ("Right with ε_ls = 0.1 only: use the eps_ls argument, not 0.1.",
               _smoothed(logp, target, 0.9 + 0.1 / n, 0.1 / n, pad))
    if n != 13:
        yield ("Right with 13 tokens only: take n_vocab from the logits (logits.shape[-1]), not 13.",
               _smoothed(logp, target, 1 - eps_ls + eps_ls / 13, eps_ls / 13, pad))
    if pad != 0:
        yield ("Right with pad = 0 only: ignore the rows whose target equals the pad argument.",
               _smoothed(logp, target, *pytorch, 0))


def _trainable(out, dtype):
    """Raise Hint unless the (right) loss is what training can use: a torch tensor of the logits'
    dtype that keeps the graph back to the logits, so that loss.backward() reaches the model."""
    if not isinstance(out, torch.Tensor):
        raise Hint(f"The value is right, but your loss is a {type(out).__name__}, not a torch tensor: "
                   "training calls loss.backward(), which a number cannot do. Return the tensor itself "
                   "(no .item(), float(...) or torch.tensor(...) around it).")
    if out.grad_fn is None:
        raise Hint("The value is right, but your loss has no graph back to the logits (.detach(), "
                   "torch.no_grad() or torch.tensor(...) of a number cut it): loss.backward() could not "
                   "reach the model's weights. Compute it from logits with tensor operations.")
    if out.dtype != dtype:
        raise Hint(f"The value is right, but your loss is {str(out.dtype).removeprefix('torch.')} and the "
                   f"logits are {str(dtype).removeprefix('torch.')}: keep the logits' dtype (no .double() "
                   "or .to(...)), as the model and its optimizer work in it.")


@checker
def check_smoothed_loss(fn):
    """The learner's my_smoothed_loss(logits, target, eps_ls, pad) against
    nn.CrossEntropyLoss(label_smoothing=eps_ls, ignore_index=pad) on random logits with padding rows."""
    name = "my_smoothed_loss(logits, target, eps_ls, pad)"
    for seed, rows, n_vocab, eps_ls, pad in LOSS_CASES:
        logits, target = _loss_inputs(seed, rows, n_vocab, pad)
        try:     # logits that require a gradient, as a model's do: the loss must keep the graph
            out = call(fn, name, logits.requires_grad_(), target, eps_ls, pad, no_grad=False,
                       reference=LOSS_REFERENCES, instead=LOSS_INSTEAD)
        except Hint as h:
            if (n_vocab, eps_ls, pad) == LOSS_CASES[0][2:] or " raised " not in str(h):
                raise
            raise Hint(f"{h} (on the batch with {n_vocab} tokens, ε_ls = {eps_ls} and pad = {pad}, after "
                       "passing with 13 tokens: take n_vocab from logits.shape[-1] and ε_ls and pad from "
                       "the arguments, not 13, 0.1 and 0)") from None
        if isinstance(out, torch.Tensor) and out.numel() != 1:
            raise Hint(f"{name} should return one number (the mean over the real rows), got a tensor "
                       f"of shape {tuple(out.shape)}: average the per-row losses.")
        got = number(out, "your loss")
        logits = logits.detach()
        right = nn.CrossEntropyLoss(label_smoothing=eps_ls, ignore_index=pad)(logits.double(), target).item()
        if abs(got - right) <= 1e-4 * max(1.0, abs(right)):
            _trainable(out, logits.dtype)
            continue
        for hint, wrong in _loss_mistakes(logits.double(), target, eps_ls, pad):
            if abs(got - wrong.item()) <= 1e-4 * max(1.0, abs(right)):
                return hint
        _half(out, "your loss")
        return ("Not PyTorch's smoothed loss yet: q = (1 − ε_ls)·[k = right] + ε_ls/n_vocab for every token "
                "k, loss = −Σ_k q(k)·log_softmax(logits)(k) per row, then the mean over the rows whose "
                f"target is not pad (expected {right:.4f} here, got {got:.4f}).")
    return Passed("Your loss equals nn.CrossEntropyLoss(label_smoothing=ε_ls, ignore_index=pad) on three "
                  "random batches with padding rows, including another ε_ls, vocabulary and pad id.")


# --- Your turn: greedy decoding ------------------------------------------------------------------

DECODE_SEEDS = (1, 2)        # two batches of 64 test-like sequences (3 to 8 letters, padded)
EXTRA = 50                   # the paper's limit: input length + 50 tokens (§6.1)

DECODE_REFERENCE = [
    (decoding, "greedy_decode", "helpers.decoding.greedy_decode"),
    (decoding, "_write", "helpers.decoding._write, the loop of greedy_decode"),
    (decoding, "write", "helpers.decoding.write, the decoding loop every model shares"),
    (decoding, "sample_decode", "helpers.decoding.sample_decode (greedy with top_k=1)"),
    (decoding, "beam_search", "helpers.decoding.beam_search"),
    (decoding, "beam_search_all", "helpers.decoding.beam_search_all"),
    (decoding, "beam_search_apart", "helpers.decoding.beam_search_apart"),
    (decoding, "search", "helpers.decoding.search"),
    (decoding, "search_apart", "helpers.decoding.search_apart"),
    (reversal, "pad_after_eos", "helpers.tasks.reversal.pad_after_eos"),
]
DECODE_INSTEAD = ("write the loop yourself: encode once, start every row from <s>, append the argmax "
                  "of the last position's logits, <pad> after a row's </s>.")


def _decode(model, src, start=BOS, position=-1, stop="all", pad=True, max_cols=None, over_positions=False):
    """Greedy decoding with a chosen mistake: the start token (an id or a column), the position
    whose logits are read, when to stop ("all" rows done, "any" row done, "never"), whether a finished row
    gets <pad>, and the argmax taken over the positions instead of the tokens. Returns None as soon as
    the output grows past max_cols columns (it cannot be the learner's output then: this saves decoding
    up to the limit for nothing), or when the mistake feeds the embedding an id it does not have."""
    with torch.no_grad():
        try:
            return _decode_steps(model, src, start, position, stop, pad, max_cols, over_positions)
        except IndexError:
            if over_positions:
                return None
            raise


def _decode_steps(model, src, start, position, stop, pad, max_cols, over_positions=False):
    memory_mask = model.memory_mask(src)
    memory = model.encode(src, memory_mask)
    ys = start if isinstance(start, torch.Tensor) else torch.full((src.shape[0], 1), start)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(src.shape[1] + EXTRA):
        if max_cols is not None and ys.shape[1] >= max_cols:
            return None
        logits = model.decode(ys, memory, memory_mask=memory_mask)
        nxt = logits.argmax(1)[:, -1] if over_positions else logits[:, position].argmax(-1)
        if pad:
            nxt = nxt.masked_fill(done, PAD)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if (stop == "all" and done.all()) or (stop == "any" and done.any()):
            break
    return ys


def _right_decode(model, src):
    """The course's greedy decoder (the whole prefix at each step, as the learner's loop), with
    the paper's limit and <pad> after each row's </s>."""
    return pad_after_eos(greedy_decode(model, src, max_len=src.shape[1] + EXTRA, use_cache=False))


def _never_ends():
    """An untrained model (fixed weights, no dropout) that never writes </s> on _LIMIT_SRC: every
    row of a right decoder runs to the limit, input length + 50."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Transformer(VOCAB, 16, 2, 32, 1, p=0.0).eval()


_LIMIT_SRC = batch(4, torch.Generator().manual_seed(5))[0]


def _ids(x, name, rows):
    """x as a (rows, n) tensor of token ids, or raise Hint."""
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor) and x[0].dim() == 1:
        x = torch.nn.utils.rnn.pad_sequence(list(x), batch_first=True, padding_value=PAD)
    x = tensor(x, name)
    if x.dim() != 2 or x.shape[0] != rows:
        raise Hint(f"{name} should be a tensor of token ids of shape (batch, 1 + steps) = ({rows}, ...), "
                   f"one row per source sequence, got shape {tuple(x.shape)}.")
    if not torch.isfinite(x).all() or not torch.equal(x, x.round()) or x.min() < 0 or x.max() >= 2 ** 31:
        raise Hint(f"{name} should hold token ids (whole numbers, e.g. from argmax), not scores or "
                   "probabilities.")
    return x.long()


def _run(fn, name, model, src):
    """call(), with a hint for the usual errors of a loop written for one sequence."""
    try:
        return _ids(call(fn, name, model, src, reference=DECODE_REFERENCE, instead=DECODE_INSTEAD),
                    "your output", src.shape[0])
    except Hint as h:
        if "Boolean value of Tensor with more than one value is ambiguous" in str(h):
            raise Hint(f"{h} (with a batch, `if nxt == EOS` tests several rows at once: keep a "
                       "tensor `done` of finished rows and stop when done.all())") from None
        if "'bool' object is not subscriptable" in str(h):              # decode(ys, memory): no src
            raise Hint(f"{h} (call model.decode(ys, memory, src): the decoder needs the source to "
                       "build the padding mask its cross-attention uses)") from None
        if " raised IndexError: Dimension out of range" in str(h):
            raise Hint(f"{h} (an argmax or softmax over an axis the tensor does not have: model.decode "
                       "gives logits (batch, steps, 13), logits[:, -1] those of the last position, "
                       "(batch, 13); the next token is their argmax over the 13 tokens, "
                       "argmax(dim=-1))") from None
        if " raised IndexError: index out of range in self" in str(h):     # the embedding's lookup
            raise Hint(f"{h} (a token id of 13 or more reached the embedding: most likely an argmax over "
                       "the positions, argmax(dim=1) of the (batch, steps, 13) logits, which gives position "
                       "numbers, not tokens; take the last position, logits[:, -1], then the argmax over "
                       "the 13 tokens, dim=-1)") from None
        raise


def _same(a, b):
    return a.shape == b.shape and torch.equal(a, b)


def _stops_early(got, src):
    """The hint for an output that is right but cut short: a limit below input length + 50."""
    steps, n = got.shape[1] - 1, src.shape[1]
    default = " (greedy_decode's default, max_len = n + 1)" if steps == n + 1 else ""
    return (f"Your decoder stops after {steps} new tokens{default}, while some rows have not written "
            f"</s>: the paper's limit is input length + 50, here n + 50 = {n + EXTRA} (src.shape[1] + 50); "
            "stop earlier only when every row has written </s>.")


def _eval_mistakes(model, src, right, cols):
    """(hint, output) of each mistake, computed with the model in evaluation mode; an output that
    would be longer than the learner's cols columns is None (not computed to the end)."""
    yield ("Your rows lack the <s> they start from: return ys with <s> in column 0, as "
           "helpers.decoding.greedy_decode does.", right[:, 1:])
    stop_any = ("You stopped as soon as one row wrote </s>: stop when every row has written it "
                "(done.all()), the others are not finished.")
    yield stop_any, _decode(model, src, stop="any", max_cols=cols)
    yield stop_any, _decode(model, src, stop="any", pad=False, max_cols=cols)
    yield ("A finished row keeps writing in your output: after a row's </s>, put <pad> "
           "(nxt.masked_fill(done, PAD)); the loop stops when every row has written </s>.",
           _decode(model, src, pad=False, max_cols=cols))
    if cols == src.shape[1] + EXTRA + 1:                           # the learner ran to the limit
        yield ("You do not stop at </s>: your rows go on after </s> until the length limit. Put "
               "<pad> after a row's </s>, and stop when every row has written </s>.",
               _decode(model, src, stop="never", pad=False))
        never = _decode(model, src, stop="never")
        yield (f"Right tokens, but {never.shape[1] - right.shape[1]} extra columns of <pad> at the "
               "end: stop the loop as soon as every row has written </s> (if done.all(): break).", never)
    yield ("Your decoder takes the argmax over the positions: argmax(dim=1) of the (batch, steps, 13) logits "
           "gives position numbers, not tokens. Take the last position, logits[:, -1], then the argmax over "
           "the 13 tokens, dim=-1.", _decode(model, src, max_cols=cols, over_positions=True))
    position_0 = ("You read the logits of position 0 at every step: the next token is predicted at "
                  "the last position, logits[:, -1] (position 0 only ever reads <s>).")
    yield position_0, _decode(model, src, position=0, max_cols=cols)
    yield position_0, _decode(model, src, position=0, stop="never", pad=False, max_cols=cols)
    for start, what in ((PAD, "<pad>"), (EOS, "</s>"), (src[:, :1], "the first source letter")):
        hint = (f"Your decoder starts from {what}: it must start from <s> (id {BOS}), the token it "
                "read first in training (tgt_in begins with <s>), and keep it in column 0.")
        yield hint, _decode(model, src, start=start, max_cols=cols)
        wrong = _decode(model, src, start=start, max_cols=cols + 1)
        yield hint, None if wrong is None else wrong[:, 1:]


def _compare(fn, name, model, src):
    """None when fn decodes src like the course's decoder (model in evaluation mode), else the hint."""
    model.eval()
    right = _right_decode(model, src)
    got = _run(fn, name, model, src)
    if _same(got, right):
        return None
    model.eval()
    for hint, wrong in _eval_mistakes(model, src, right, got.shape[1]):
        if wrong is not None and _same(got, wrong):
            return hint
    if got.shape[1] < right.shape[1] and _same(got, right[:, :got.shape[1]]):
        return _stops_early(got, src)
    if got.shape[1] > right.shape[1] and right.shape[1] == src.shape[1] + EXTRA + 1 and \
            _same(got[:, :right.shape[1]], right):
        return (f"Your decoder writes {got.shape[1] - 1} new tokens on rows that never write </s>: the "
                f"paper's limit is input length + 50, here n + 50 = {src.shape[1] + EXTRA}.")
    if got.shape != right.shape:
        return (f"Your output has shape {tuple(got.shape)}, the greedy decoder's "
                f"{tuple(right.shape)}: <s> in column 0, one column per step, and stop when "
                "every row has written </s>.")
    rows = int((got != right).any(1).sum())
    return (f"{rows} of {src.shape[0]} rows differ from greedy decoding: encode once, start "
            "from <s>, append the argmax of the last position's logits, <pad> after </s>.")


@checker
def check_greedy_decode(fn, model):
    """The learner's my_greedy_decode(model, src) against helpers.decoding.greedy_decode (with
    <pad> after each row's </s>) on two padded batches; then on an untrained model that never
    writes </s> (the length limit, input length + 50); then, with the model handed over in
    training mode, on sequences with repeated letters, against a seeded training-mode decode
    (dropout left on)."""
    name = "my_greedy_decode(model, src)"
    if not isinstance(model, nn.Module) or not all(hasattr(model, a) for a in ("encode", "decode",
                                                                              "memory_mask")):
        raise Hint(f"Pass the trained model (model) as the second argument, not a {type(model).__name__}.")
    was_training = model.training
    try:
        for seed in DECODE_SEEDS:
            hint = _compare(fn, name, model, batch(64, torch.Generator().manual_seed(seed))[0])
            if hint:
                return hint
        hint = _compare(fn, name, _never_ends(), _LIMIT_SRC)
        if hint:
            return hint
        # Dropout hardly changes the trained model's answers on sequences like its training data;
        # on repeated letters, which it never saw, it is unsure enough that dropout shows.
        src = batch(32, torch.Generator().manual_seed(3), repeats=True)[0]
        model.eval()
        right = _right_decode(model, src)
        for seed in (0, 1):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model.train()
                got = _run(fn, name, model, src)
                torch.manual_seed(seed)
                model.train()
                with_dropout = pad_after_eos(_decode(model, src, pad=False))
            if not _same(got, right):
                how = "" if _same(got, with_dropout) else " (your output changes with the random seed)"
                return ("Handed the model in training mode, your decoder runs with dropout on" + how +
                        ": call model.eval() first, so every number of the network is used (section 3).")
    finally:
        model.train(was_training)
    return Passed("Your decoder writes the same tokens as helpers.decoding.greedy_decode on 128 "
                  "sequences, runs to the paper's limit (input length + 50) when no row writes </s>, "
                  "and switches dropout off itself when handed a model in training mode.")


# --- Check your understanding --------------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_FLOOR_QUESTION = (
    "label smoothing",
    "The smoothed target is 0.9077 on the right token and 0.0077 on each other one: the best a "
    "model can do is predict exactly that, which costs its entropy, 0.537, and a surer model pays more.",
    {
        "too few steps": "More steps would not bring it to 0: even a perfect model pays 0.537 against "
                         "the smoothed target, and being surer than 0.9077 costs more (section 4's "
                         "curve); the exact match is already at or near 100 % (section 6).",
        "dropout": "Dropout adds a little in training (the training loss ends just above 0.537), but "
                   "with dropout off the top probability still stays near 0.9077, far from 0.99 "
                   "(sections 7 and 9): the target itself asks for 0.9077 (section 4).",
        "learning rate": "The rate is still high at the end of the run (its log, section 6), but the "
                         "loss curve sits flat on the 0.537 floor that label smoothing sets (sections 4 "
                         "and 6): no rate brings a model below it.",
    },
)


@checker
def check_floor_question(answer_1):
    """Why the smoothed training loss stops near 0.54 and the top probability near 0.92."""
    return choice(answer_1, "answer_1", *_FLOOR_QUESTION)


# Question 2: greedy decoding writes "d e b a c </s>" after <s>; the answer is computed from it.
_WRITTEN = "d e b a c </s>"
_PASSES_QUESTION = (
    len(_WRITTEN.split()),
    "One decoder pass per written token: d, e, b, a, c and </s>; the encoder runs once, and each pass "
    "reads everything written so far.",
    {1: "One pass is teacher forcing in training, where the whole answer is given; to write, each token "
        "needs the ones before it: one pass per written token (section 7).",
     len(_WRITTEN.split()) - 1: "The decoder also writes </s>, to say it has finished: count that pass "
                                "too (section 7).",
     len(_WRITTEN.split()) + 1: "<s> is given, not written (the first pass reads <s> and writes d), and "
                                "the encoder's single run is not a decoder pass (section 7).",
     2 * len(_WRITTEN.split()): "That counts each of the 2 decoder layers: count the calls of the whole "
                                "decoder stack, model.decode, one per written token (section 7)."},
    "Count the lines of section 7's loop: each is one pass of the decoder writing one token.",
)


@checker
def check_passes_question(answer_2):
    """How many times greedy decoding runs the decoder (model.decode) to write "d e b a c </s>"."""
    right, why, wrong, otherwise = _PASSES_QUESTION
    value = number(answer_2, "answer_2")
    return Passed(why) if value == right else wrong.get(value, otherwise)


_AVERAGING_QUESTION = (
    "jitter",
    "At the end of this short run the rate is still high, so the weights jump around a good "
    "solution; the mean of 5 nearby checkpoints sits closer to its centre.",
    {
        "ensemble": "An ensemble averages the outputs of several models, run one by one; here the "
                    "weights are averaged into one model, run once, which works because the 5 "
                    "checkpoints lie close together on one path (section 6).",
        "more training": "No step is added: the 5 checkpoints were all kept during the last 500 "
                         "steps, and their average is computed without any gradient (section 6).",
        "no dropout": "Every checkpoint is evaluated with dropout off alike; averaging changes the "
                      "weights, not the dropout (sections 3 and 6).",
    },
)


@checker
def check_averaging_question(answer_3):
    """Why averaging the last 5 checkpoints helps in this short run."""
    return choice(answer_3, "answer_3", *_AVERAGING_QUESTION)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_smoothed_loss, recipe.smoothed_loss,
         lambda f: lambda logits, target, eps_ls, pad: f(pad, eps_ls)(logits, target))
exercise(check_greedy_decode, decoding.greedy_decode,
         lambda f: lambda model, src: (lambda ys: ys.masked_fill(   # <pad> after each row's </s>
             (ys == EOS).cumsum(1) - (ys == EOS).long() > 0, PAD))(
                 f(model, src, max_len=src.shape[1] + EXTRA)),
         lambda: (reversal.load_tiny(reversal.CHECKPOINTS / reversal.TRAINED),))   # the notebook's model
