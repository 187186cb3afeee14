"""The checkers of notebook 05: every named mistake, written here independently, gets its hint."""

import contextlib
import io
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import PASSED
from helpers.checks.recipe import (
    _LIMIT_SRC,
    _never_ends,
    _right_decode,
    check_averaging_question,
    check_floor_question,
    check_greedy_decode,
    check_passes_question,
    check_smoothed_loss,
    check_schedule,
    check_smoothing_floor,
)
from helpers import decoding, recipe
from helpers.decoding import greedy_decode
from helpers.recipe import smoothed_loss
from helpers.tasks.reversal import BOS, EOS, PAD, batch, pad_after_eos
from printed import printed
from scripted import POSITION_TILT, ScriptedReverser
from tests.fuzz import assert_survives, wrong_functions, wrong_tensors

pytestmark = pytest.mark.cpu_sensitive   # runs models: re-run under another CPU kernel family


# --- the schedule by hand (d_model 256, warmup 1000) ---------------------------------------------

def rate(step, d_model=256, warmup=1000):
    """The formula written out here, apart from helpers.recipe.lrate."""
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


RIGHT = (rate(250), rate(3000), rate(251))                    # 4.941e-04, 1.141e-03, 4.961e-04


def test_schedule_accepts_the_rates_as_a_log_prints_them(capsys):
    assert printed(capsys, check_schedule, *RIGHT) == PASSED
    assert printed(capsys, check_schedule, 4.94e-04, 1.14e-03, 4.96e-04) == PASSED       # as printed
    assert printed(capsys, check_schedule, torch.tensor(RIGHT[0]), RIGHT[1], 4.961e-4) == PASSED
    assert printed(capsys, check_schedule, torch.tensor(RIGHT[0], dtype=torch.float16), *RIGHT[1:]) == PASSED
    assert printed(capsys, check_schedule, RIGHT[0], RIGHT[1], rate(250)).startswith(
        "logged_250: that is the rate step 250 used")
    assert printed(capsys, check_schedule, RIGHT[0], RIGHT[1], 4.94e-04).startswith(
        "logged_250: that is the rate step 250 used")                        # step 250's, as printed
    assert printed(capsys, check_schedule, RIGHT[0], RIGHT[1], 5.0e-04).startswith("logged_250:")
    assert printed(capsys, check_schedule, rate(251), *RIGHT[1:]).startswith(
        "lr_250: that is the rate of step 251")


def test_schedule_names_other_models_constants(capsys):
    assert "the paper's schedule" in printed(capsys, check_schedule, rate(250, 512, 4000), *RIGHT[1:])
    assert "the tiny model's schedule" in printed(capsys, check_schedule, rate(250, 64, 400), *RIGHT[1:])
    assert "you used d_model = 512" in printed(capsys, check_schedule, rate(250, 512), *RIGHT[1:])
    assert "you used warmup = 4000" in printed(capsys, check_schedule, rate(250, 256, 4000), *RIGHT[1:])
    tiny_decay = rate(3000, 64)                                # = rate(3000, 64, 400) after the peak
    assert "(d_model = 64, warmup = 400)" in printed(capsys, check_schedule, RIGHT[0], tiny_decay, RIGHT[2])
    assert "you used d_model = 64" in printed(capsys, check_schedule, rate(250, 64), *RIGHT[1:])
    assert "you used warmup = 400 " in printed(capsys, check_schedule, *RIGHT[:2], rate(251, 256, 400))


def test_schedule_names_the_branch_and_the_factor(capsys):
    d = 256 ** -0.5
    assert "the decay branch" in printed(capsys, check_schedule, d * 250 ** -0.5, *RIGHT[1:])
    assert "warmup^-1.5, not warmup^-0.5" in printed(capsys, check_schedule, d * 250 * 1000 ** -0.5,
                                                     *RIGHT[1:])
    assert "left out the factor" in printed(capsys, check_schedule, 250 * 1000 ** -1.5, *RIGHT[1:])
    assert "the warmup branch" in printed(capsys, check_schedule, RIGHT[0], d * 3000 * 1000 ** -1.5, RIGHT[2])
    assert "the warmup branch" in printed(capsys, check_schedule, RIGHT[0],
                                          d * max(3000 ** -0.5, 3000 * 1000 ** -1.5), RIGHT[2])  # max
    assert "left out the factor" in printed(capsys, check_schedule, RIGHT[0], 3000 ** -0.5, RIGHT[2])
    assert "is the peak, at step 1000" in printed(capsys, check_schedule, RIGHT[0], rate(1000), RIGHT[2])
    up = printed(capsys, check_schedule, 16 * 250 * 1000 ** -1.5, *RIGHT[1:])      # d_model^+0.5
    assert "multiplied by d_model^0.5 = 16" in up and "left out" not in up
    up = printed(capsys, check_schedule, RIGHT[0], 16 * 3000 ** -0.5, RIGHT[2])
    assert "lr_3000: you multiplied by d_model^0.5" in up
    assert "multiplied by" not in printed(capsys, check_schedule, 250 * 1000 ** -1.5, *RIGHT[1:])  # neighbour


def test_schedule_one_step_off_is_named_as_such_not_as_rounding(capsys):
    """lrate(252) for the logged rate (the + 1 counted twice) and lrate(249) for step 250 were told
    they had rounded; a value really rounded too far is still told so."""
    twice = printed(capsys, check_schedule, *RIGHT[:2], rate(252))
    assert "lrate(252), one step too far" in twice and "significant digits" not in twice
    early = printed(capsys, check_schedule, rate(249), *RIGHT[1:])
    assert "lrate(249), the rate of step 249: 1 step early" in early and "significant" not in early
    late = printed(capsys, check_schedule, rate(253), *RIGHT[1:])
    assert "lrate(253), the rate of step 253: 3 steps late" in late
    assert "lrate(254)" in printed(capsys, check_schedule, *RIGHT[:2], rate(254))
    assert "the schedule moves forward" in printed(capsys, check_schedule, *RIGHT[:2], rate(249))
    rounded = printed(capsys, check_schedule, 4.8e-04, *RIGHT[1:])       # 2 digits: no nearby step's rate
    assert "three significant digits" in rounded and "lrate(" not in rounded
    assert "three significant digits" in printed(capsys, check_schedule, RIGHT[0], 1.1e-03, RIGHT[2])


def test_schedule_half_precision_is_told_to_compute_in_float32(capsys):
    off = torch.tensor(RIGHT[0] * 1.003, dtype=torch.float16)             # rounded away by float16
    line = printed(capsys, check_schedule, off, *RIGHT[1:])
    assert "float16 tensor" in line and "compute in float32" in line
    line = printed(capsys, check_schedule, torch.tensor(RIGHT[0], dtype=torch.bfloat16), *RIGHT[1:])
    assert "bfloat16 tensor" in line and "compute in float32" in line     # not "the rate of step 251"
    assert "float32" not in printed(capsys, check_schedule, RIGHT[0] * 1.003, *RIGHT[1:])  # a float64 slip


def test_smoothing_floor(capsys):
    n, eps_ls = 37_000, 0.1
    q_right, q_other = 1 - eps_ls + eps_ls / n, eps_ls / n
    right = -(q_right * math.log(q_right) + (n - 1) * q_other * math.log(q_other))
    assert printed(capsys, check_smoothing_floor, right) == PASSED
    assert printed(capsys, check_smoothing_floor, round(right, 3)) == PASSED
    assert "13 tokens" in printed(capsys, check_smoothing_floor, 0.537)
    assert "log base 2" in printed(capsys, check_smoothing_floor, right / math.log(2))
    assert "sign" in printed(capsys, check_smoothing_floor, -right)


# --- the label-smoothed loss ---------------------------------------------------------------------

def loss_by_target(logits, target, eps_ls, pad):
    """The smoothed target written out, then cross-entropy, averaged over the real rows."""
    n = logits.shape[-1]
    q = torch.full_like(logits, eps_ls / n)
    q[torch.arange(len(target)), target] += 1 - eps_ls
    per_row = -(q * F.log_softmax(logits, dim=-1)).sum(-1)
    real = target != pad
    return per_row[real].mean()


def loss_by_parts(logits, target, eps_ls, pad):
    """(1 - eps_ls) · NLL of the right token + eps_ls · the mean of -log p over the vocabulary."""
    real = target != pad
    logp = F.log_softmax(logits[real], dim=-1)
    nll = -logp.gather(1, target[real][:, None]).squeeze(1)
    return ((1 - eps_ls) * nll + eps_ls * -logp.mean(-1)).mean()


def with_target(q_right, q_other, zero_pad=False, rows="real", reduce="mean", eps_fixed=None,
                vocab_fixed=None, pad_fixed=None, log=lambda x: F.log_softmax(x, dim=-1)):
    """A wrong loss built from the target's two values, given as functions of (eps_ls, n)."""
    def loss(logits, target, eps_ls, pad):
        eps_ls = eps_ls if eps_fixed is None else eps_fixed
        pad = pad if pad_fixed is None else pad_fixed
        n = logits.shape[-1] if vocab_fixed is None else vocab_fixed
        q = torch.full_like(logits, q_other(eps_ls, n))
        if zero_pad:
            q[:, pad] = 0.0
        q[torch.arange(len(target)), target] = q_right(eps_ls, n)
        per_row = -(q * log(logits)).sum(-1)
        real = target != pad
        if rows == "all":
            return per_row.mean()
        if rows == "all_divided":
            return per_row[real].sum() / len(target)
        return per_row[real].sum() if reduce == "sum" else per_row[real].mean()
    return loss


PYTORCH = (lambda e, n: 1 - e + e / n, lambda e, n: e / n)


def test_smoothed_loss_passes_two_right_answers(capsys):
    assert printed(capsys, check_smoothed_loss, loss_by_target).startswith(PASSED)
    assert printed(capsys, check_smoothed_loss, loss_by_parts).startswith(PASSED)


@pytest.mark.parametrize("fn, words", [
    (lambda *a: float(loss_by_target(*a)), "your loss is a float, not a torch tensor"),
    (lambda *a: loss_by_target(*a).item(), "your loss is a float, not a torch tensor"),
    (lambda *a: loss_by_target(*a).detach(), "no graph back to the logits"),
    (lambda *a: torch.tensor(float(loss_by_target(*a))), "no graph back to the logits"),
    (lambda logits, *a: loss_by_target(logits.double(), *a), "your loss is float64"),
])
def test_smoothed_loss_must_be_a_tensor_with_a_graph_of_the_logits_dtype(fn, words, capsys):
    """Issue 39, class 3: a right value that training cannot use (a Python float, a detached tensor,
    float64) is refused."""
    line = printed(capsys, check_smoothed_loss, fn)
    assert words in line, line


SMOOTHING_ROUTES = {
    "default argument": "def f(logits, target, eps_ls, pad, ce=F.cross_entropy):\n"
                        "    return ce(logits, target, ignore_index=pad, label_smoothing=eps_ls)\n",
    "closure": "def make():\n    ce = F.cross_entropy\n    def f(logits, target, eps_ls, pad):\n"
               "        return ce(logits, target, ignore_index=pad, label_smoothing=eps_ls)\n"
               "    return f\nf = make()\n",
    "partial bound to a global": "smoothed = functools.partial(F.cross_entropy, label_smoothing=0.1)\n"
                                 "def f(logits, target, eps_ls, pad):\n"
                                 "    return smoothed(logits, target, ignore_index=pad)\n",
    "a module held in a default": "def f(logits, target, eps_ls, pad, m=nn.CrossEntropyLoss):\n"
                                  "    return m(label_smoothing=eps_ls, ignore_index=pad)(logits, target)\n",
    "torch's C function": "def f(logits, target, eps_ls, pad):\n    c = torch._C._nn\n"
                          "    return c.cross_entropy_loss(logits, target, None, 1, pad, eps_ls)\n",
    "aten": "def f(logits, target, eps_ls, pad):\n"
            "    return torch.ops.aten.cross_entropy_loss(logits, target, None, 1, pad, eps_ls)\n",
}


@pytest.mark.parametrize("route", SMOOTHING_ROUTES)
def test_smoothed_loss_reached_by_any_route_is_refused(route, capsys):
    """Issue 39, class 1: the watch is on torch's dispatch of cross_entropy and its C function, which
    every route reaches (the old check rebound the name F.cross_entropy only)."""
    namespace = {}
    exec("import functools, torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
         + SMOOTHING_ROUTES[route], namespace)
    line = printed(capsys, check_smoothed_loss, namespace["f"])
    assert "the very reference" in line, line
    assert F.cross_entropy.__name__ == "cross_entropy"
    assert torch._C._nn.cross_entropy_loss.__name__ == "cross_entropy_loss"    # given back


def test_smoothed_loss_by_parts_with_the_plain_cross_entropy_is_an_answer(capsys):
    """F.cross_entropy without smoothing is the negative log-likelihood, a fair building block."""
    def plain_plus_spread(logits, target, eps_ls, pad):
        real = target != pad
        nll = F.cross_entropy(logits, target, ignore_index=pad)
        spread = -F.log_softmax(logits[real], dim=-1).mean(-1).mean()
        return (1 - eps_ls) * nll + eps_ls * spread

    def module_without_smoothing(logits, target, eps_ls, pad):
        nll = nn.CrossEntropyLoss(ignore_index=pad)(logits, target)
        return (1 - eps_ls) * nll - eps_ls * F.log_softmax(logits[target != pad], -1).mean()

    assert printed(capsys, check_smoothed_loss, plain_plus_spread).startswith(PASSED)
    assert printed(capsys, check_smoothed_loss, module_without_smoothing).startswith(PASSED)


def test_smoothed_loss_that_calls_the_reference_is_told_so(capsys):
    def module(logits, target, eps_ls, pad):
        return nn.CrossEntropyLoss(label_smoothing=eps_ls, ignore_index=pad)(logits, target)

    def functional(logits, target, eps_ls, pad):
        return F.cross_entropy(logits, target, ignore_index=pad, label_smoothing=eps_ls)

    def positional(logits, target, eps_ls, pad):           # label_smoothing is the 8th argument
        return torch.nn.functional.cross_entropy(logits, target, None, None, pad, None, "mean", eps_ls)

    def course_helper(logits, target, eps_ls, pad):
        return recipe.smoothed_loss(pad, eps_ls)(logits, target)

    def swallowed(logits, target, eps_ls, pad):            # an except Exception does not hide it
        try:
            return smoothed_loss(pad, eps_ls)(logits, target)
        except Exception:
            return loss_by_target(logits, target, eps_ls, pad)

    for fn in (module, functional, positional):
        line = printed(capsys, check_smoothed_loss, fn)
        assert line.startswith("my_smoothed_loss calls nn.CrossEntropyLoss / F.cross_entropy with "
                               "label_smoothing, the very reference"), line
        assert "build the smoothed target q yourself" in line
    for fn in (course_helper, swallowed):
        line = printed(capsys, check_smoothed_loss, fn)
        assert line.startswith("my_smoothed_loss calls helpers.recipe.smoothed_loss, the very"), line
    assert F.cross_entropy.__name__ == "cross_entropy" and recipe.smoothed_loss is smoothed_loss  # restored


def test_smoothed_loss_that_imported_the_reference_by_name_is_told_so(capsys):
    namespace = {}
    exec("from torch.nn.functional import cross_entropy\n"
         "def by_name(logits, target, eps_ls, pad):\n"
         "    return cross_entropy(logits, target, ignore_index=pad, label_smoothing=eps_ls)\n", namespace)
    assert "the very reference" in printed(capsys, check_smoothed_loss, namespace["by_name"])
    assert namespace["cross_entropy"] is F.cross_entropy                          # given back


def test_smoothed_loss_averaged_over_every_entry_has_its_own_hint(capsys):
    """-(q · log p).mean() over the (N, n_vocab) table: the right value divided by n_vocab."""
    def entries(logits, target, eps_ls, pad):
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / n)
        q[torch.arange(len(target)), target] += 1 - eps_ls
        real = target != pad
        return -(q * F.log_softmax(logits, dim=-1))[real].mean()

    def entries_all_rows(logits, target, eps_ls, pad):
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / n)
        q[torch.arange(len(target)), target] += 1 - eps_ls
        return -(q * F.log_softmax(logits, dim=-1)).mean()

    for fn in (entries, entries_all_rows):
        assert "n_vocab times too small" in printed(capsys, check_smoothed_loss, fn)
    for neighbour in (with_target(*PYTORCH, reduce="sum"), with_target(*PYTORCH, rows="all"),
                      with_target(*PYTORCH, rows="all_divided")):
        assert "n_vocab times too small" not in printed(capsys, check_smoothed_loss, neighbour)


def test_smoothed_loss_in_half_precision_is_told_to_compute_in_float32(capsys):
    for dtype in (torch.float16, torch.bfloat16):
        def half(logits, target, eps_ls, pad, dtype=dtype):
            return loss_by_target(logits.to(dtype), target, eps_ls, pad)

        line = printed(capsys, check_smoothed_loss, half)
        assert f"{str(dtype)[6:]} tensor" in line and "compute in float32" in line, line
    line = printed(capsys, check_smoothed_loss, lambda *a: loss_by_target(*a) * 1.01)   # float32, off
    assert "float32" not in line and line.startswith("Not PyTorch's")


@pytest.mark.parametrize("wrong, words", [
    (with_target(lambda e, n: 1 - e, lambda e, n: e / (n - 1)), "ε_ls/(n_vocab − 1)"),
    (with_target(lambda e, n: 1 + e / n, lambda e, n: e / n), "forgot the factor (1 − ε_ls)"),
    (with_target(*PYTORCH, rows="all"), "counts the padding rows"),
    (with_target(*PYTORCH, rows="all_divided"), "counts the padding rows"),
    (with_target(lambda e, n: 1 - e, lambda e, n: e / (n - 2), zero_pad=True), "Annotated Transformer"),
    (with_target(*PYTORCH, zero_pad=True), "gave the padding column 0"),
    (with_target(lambda e, n: 1.0, lambda e, n: 0.0), "plain cross-entropy"),
    (with_target(lambda e, n: 1 - e, lambda e, n: 0.0), "left out the ε_ls/n_vocab spread"),
    (with_target(*PYTORCH, reduce="sum"), "summed over the rows"),
    (with_target(*PYTORCH, log=lambda x: x), "log-probabilities first"),
    (with_target(*PYTORCH, log=lambda x: x.softmax(-1)), "not softmax"),
    (with_target(*PYTORCH, log=lambda x: F.log_softmax(x, dim=0)), "over the rows (dim=0)"),
    (with_target(*PYTORCH, eps_fixed=0.1), "use the eps_ls argument"),
    (with_target(*PYTORCH, vocab_fixed=13), "logits.shape[-1]"),
    (with_target(*PYTORCH, pad_fixed=0), "equals the pad argument"),
])
def test_smoothed_loss_names_each_mistake(wrong, words, capsys):
    assert words in printed(capsys, check_smoothed_loss, wrong)


def test_smoothed_loss_names_the_kl_divergence_and_per_row_losses(capsys):
    def kl(logits, target, eps_ls, pad):
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / n)
        q[torch.arange(len(target)), target] += 1 - eps_ls
        per_row = (q * (q.log() - F.log_softmax(logits, dim=-1))).sum(-1)
        return per_row[target != pad].mean()

    def per_row(logits, target, eps_ls, pad):                # the losses of the real rows, not their mean
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / n)
        q[torch.arange(len(target)), target] += 1 - eps_ls
        return -(q * F.log_softmax(logits, dim=-1)).sum(-1)[target != pad]

    def annotated_transformer(logits, target, eps_ls, pad):     # its LabelSmoothing with KLDivLoss
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / (n - 2))
        q[torch.arange(len(target)), target] = 1 - eps_ls
        q[:, pad] = 0.0
        q[target == pad] = 0.0
        kl_sum = nn.KLDivLoss(reduction="sum")(F.log_softmax(logits, dim=-1), q)
        return kl_sum / (target != pad).sum()

    assert "KL divergence" in printed(capsys, check_smoothed_loss, kl)
    assert "the Annotated Transformer's loss" in printed(capsys, check_smoothed_loss, annotated_transformer)
    assert "should return one number" in printed(capsys, check_smoothed_loss, per_row)
    assert printed(capsys, check_smoothed_loss, lambda *a: torch.tensor(2.0)).startswith("Not PyTorch's")


# --- greedy decoding -----------------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Small matrices: one thread is faster, and much faster on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def small_model(one_thread):
    """A stand-in for a trained reversal model (tests/scripted.py): it writes </s> at different steps for
    different rows, and dropout changes its answers; its argmaxes win by margins far above rounding, so
    every verdict below is the same on any CPU (a model trained here would round differently elsewhere)."""
    return ScriptedReverser().train()


def decode(model, src, *, start=BOS, position=-1, stop_all=True, stop_any=False, pad_after=True,
           eval_mode=True, keep_start=True, extra=50, over_positions=False):
    """Greedy decoding, written with a switch for each mistake."""
    if eval_mode:
        model.eval()
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), start) if isinstance(start, int) else start
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(src.shape[1] + extra):
        scores = model.decode(ys, memory, src)
        if over_positions:                                     # argmax(dim=1) of (batch, steps, 13)
            token = scores.argmax(dim=1)[:, -1]
        else:
            token = scores[:, position, :].argmax(dim=-1)
        if pad_after:
            token = torch.where(finished, torch.full_like(token, PAD), token)
        ys = torch.cat([ys, token.unsqueeze(1)], dim=1)
        finished = finished | (token == EOS)
        if (stop_all and finished.all()) or (stop_any and finished.any()):
            break
    return ys if keep_start else ys[:, 1:]


def decode_by_rows(model, src, eval_mode=True):
    """The right answer another way: the full model each step, one Python list per row."""
    if eval_mode:
        model.eval()
    rows = [[BOS] for _ in range(src.shape[0])]
    for _ in range(src.shape[1] + 50):
        ys = torch.tensor(rows)
        nxt = model(src, ys)[:, -1].argmax(-1).tolist()
        for row, token in zip(rows, nxt, strict=True):
            row.append(PAD if EOS in row else token)
        if all(EOS in row for row in rows):
            break
    return torch.tensor(rows)


def test_the_small_model_ends_rows_at_different_steps(small_model):
    src = batch(64, torch.Generator().manual_seed(1))[0]
    ys = pad_after_eos(greedy_decode(small_model, src, max_len=src.shape[1] + 50, use_cache=False))
    ends = (ys == EOS).float().argmax(1)
    assert (ys == EOS).any(1).all() and len(set(ends.tolist())) > 1 and ys.shape[1] < src.shape[1] + 51


def test_greedy_decode_passes_two_right_answers(small_model, capsys):
    was = small_model.training
    assert printed(capsys, check_greedy_decode, decode, small_model).startswith(PASSED)
    assert printed(capsys, check_greedy_decode, decode_by_rows, small_model).startswith(PASSED)
    assert small_model.training == was                      # the check gives the model back as it was


@pytest.mark.parametrize("options, words", [
    ({"position": 0}, "logits of position 0"),
    ({"position": 0, "stop_all": False, "pad_after": False}, "logits of position 0"),
    ({"start": PAD}, "starts from <pad>"),
    ({"start": EOS}, "starts from </s>"),
    ({"start": EOS, "keep_start": False}, "starts from </s>"),
    ({"keep_start": False}, "lack the <s>"),
    ({"stop_all": False, "pad_after": False}, "do not stop at </s>"),
    ({"pad_after": False}, "finished row keeps writing"),
    ({"stop_all": False}, "extra columns of <pad>"),
    ({"stop_all": False, "stop_any": True}, "as soon as one row wrote </s>"),
    ({"eval_mode": False}, "dropout on: call model.eval()"),
    ({"over_positions": True}, "argmax over the positions"),
    ({"over_positions": True, "stop_all": False, "pad_after": False}, "likely an argmax over the positions"),
    ({"extra": 1}, "stops after 9 new tokens (greedy_decode's default, max_len = n + 1)"),
    ({"extra": 0}, "stops after 8 new tokens, while"),
    ({"extra": 60}, "writes 68 new tokens on rows that never write </s>"),
])
def test_greedy_decode_names_each_mistake(small_model, options, words, capsys):
    def wrong(model, src):
        return decode(model, src, **options)

    assert words in printed(capsys, check_greedy_decode, wrong, small_model)


def test_greedy_decode_with_an_argmax_over_the_positions_that_does_not_raise_is_named():
    # Tilted the other way, an argmax over the positions lands early and gives ids below 13: no
    # IndexError, the decoder runs; the check still names the mistake by computing what it returns.
    model = ScriptedReverser(position_tilt=-POSITION_TILT).train()

    def over_positions(m, src):
        return decode(m, src, over_positions=True)

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        check_greedy_decode(over_positions, model)
    assert buffer.getvalue().startswith("Your decoder takes the argmax over the positions")


def test_greedy_decode_written_for_one_sequence(small_model, capsys):
    def one_sequence_stop(model, src):
        model.eval()
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        for _ in range(src.shape[1] + 50):
            nxt = model.decode(ys, memory, src)[:, -1].argmax(-1)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            if nxt == EOS:
                break
        return ys

    assert "stop when done.all()" in printed(capsys, check_greedy_decode, one_sequence_stop, small_model)


def test_greedy_decode_garbage_and_the_model_argument(small_model, capsys):
    assert printed(capsys, check_greedy_decode, None, small_model).startswith("Not answered yet")
    assert "Pass the trained model" in printed(capsys, check_greedy_decode, decode, None)
    assert "token ids" in printed(capsys, check_greedy_decode,
                                  lambda m, s: torch.rand(s.shape[0], 4), small_model)
    assert "shape (batch, 1 + steps)" in printed(capsys, check_greedy_decode,
                                                 lambda m, s: torch.zeros(3, 4), small_model)
    assert "raised ZeroDivisionError" in printed(capsys, check_greedy_decode, lambda m, s: 1 / 0, small_model)
    assert printed(capsys, check_greedy_decode, lambda m, s: decode(m, s).tolist(), small_model).startswith(
        "your output should be a torch tensor")


def test_dropout_left_on_is_recognised_by_the_seeded_decode_or_by_its_randomness(small_model, capsys):
    def no_eval(model, src):                 # the same random numbers as the check's seeded decode
        return decode(model, src, eval_mode=False)

    def no_eval_by_rows(model, src):         # re-encodes at every step: other random numbers
        return decode_by_rows(model, src, eval_mode=False)

    first = printed(capsys, check_greedy_decode, no_eval, small_model)
    assert "dropout on: call model.eval()" in first and "random seed" not in first
    second = printed(capsys, check_greedy_decode, no_eval_by_rows, small_model)
    assert "dropout on (your output changes with the random seed): call model.eval()" in second


# --- Check your understanding --------------------------------------------------------------------

@pytest.mark.parametrize("answer, words", [
    ("label smoothing", "Check passed. The smoothed target is 0.9077"),
    (" Label Smoothing ", "Check passed."),
    ("too few steps", "More steps would not bring it to 0"),
    ("dropout", "with dropout off the top probability still stays near 0.9077"),
    ("learning rate", "sits flat on the 0.537 floor"),
    (None, "Not answered yet: set answer_1 to one of"),
    ("a", "answer_1 should be one of 'dropout', 'label smoothing'"),
])
def test_floor_question(answer, words, capsys):
    assert words in printed(capsys, check_floor_question, answer)


@pytest.mark.parametrize("answer, words", [
    (6, "Check passed. One decoder pass per written token"),
    (6.0, "Check passed."),
    (1, "One pass is teacher forcing"),
    (5, "also writes </s>"),
    (7, "<s> is given, not written"),
    (12, "each of the 2 decoder layers"),
    (3, "Count the lines of section 7's loop"),
    (None, "Not answered yet"),
    ("six", "answer_2 should be a number"),
])
def test_passes_question(answer, words, capsys):
    assert words in printed(capsys, check_passes_question, answer)


@pytest.mark.parametrize("answer, words", [
    ("jitter", "Check passed. At the end of this short run the rate is still high"),
    ("ensemble", "An ensemble averages the outputs"),
    ("more training", "No step is added"),
    ("no dropout", "Every checkpoint is evaluated with dropout off"),
    (None, "Not answered yet"),
])
def test_averaging_question(answer, words, capsys):
    assert words in printed(capsys, check_averaging_question, answer)


# --- found by a second reader, trying wrong answers in the exercise copy -------------------------

def test_smoothing_floor_accepts_two_decimals(capsys):
    assert printed(capsys, check_smoothing_floor, 1.38) == PASSED            # 1.377 to 2 decimals
    assert printed(capsys, check_smoothing_floor, 1.37) != PASSED


def test_smoothed_loss_names_index_slips(capsys):
    def assigned(logits, target, eps_ls, pad):                 # = instead of +=: the right token gets 1 - ε
        q = torch.full_like(logits, eps_ls / logits.shape[-1])
        q[torch.arange(len(target)), target] = 1 - eps_ls
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    def every_row(logits, target, eps_ls, pad):                # q[:, target]: every row, every target column
        q = torch.full_like(logits, eps_ls / logits.shape[-1])
        q[:, target] += 1 - eps_ls
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    def pad_column_instead_of_rows(logits, target, eps_ls, pad):
        q = F.one_hot(target, logits.shape[-1]).float() * (1 - eps_ls) + eps_ls / logits.shape[-1]
        q[:, pad] = 0.0                                      # "ignore pad" on the column axis
        return -(q * F.log_softmax(logits, -1)).sum(-1).mean()

    assert "1 − ε_ls, so it sums to 1 − ε_ls/n_vocab" in printed(capsys, check_smoothed_loss, assigned)
    assert "q[:, target]" in printed(capsys, check_smoothed_loss, every_row)
    assert "removes the rows whose target is pad" in printed(capsys, check_smoothed_loss,
                                                             pad_column_instead_of_rows)


def test_smoothed_loss_says_which_batch_a_written_in_size_breaks_on(capsys):
    def thirteen(logits, target, eps_ls, pad):                 # raises on the batch of 7 tokens
        q = F.one_hot(target, 13).float() * (1 - eps_ls) + eps_ls / 13
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    line = printed(capsys, check_smoothed_loss, thirteen)
    assert "raised RuntimeError" in line and "7 tokens" in line and "logits.shape[-1]" in line


def test_the_limit_model_never_ends_so_a_right_decoder_runs_to_n_plus_50():
    ys = _right_decode(_never_ends(), _LIMIT_SRC)
    assert ys.shape == (_LIMIT_SRC.shape[0], 1 + _LIMIT_SRC.shape[1] + 50) and not (ys == EOS).any()


def test_greedy_decode_that_stops_after_n_plus_one_is_told_exactly_that(small_model, capsys):
    """The default of greedy_decode's max_len, n + 1, is right on the trained model's rows, which all
    end in time; it was told it ran with dropout on."""
    def n_plus_one(model, src):                                 # greedy_decode's default limit
        return decode(model, src, extra=1)

    line = printed(capsys, check_greedy_decode, n_plus_one, small_model)
    assert "stops after 9 new tokens (greedy_decode's default, max_len = n + 1)" in line, line
    assert "n + 50 = 58" in line and "dropout" not in line

    def twenty_steps(model, src):
        return decode(model, src, extra=20 - src.shape[1])

    twenty = printed(capsys, check_greedy_decode, twenty_steps, small_model)
    assert "stops after 20 new tokens, while" in twenty and "default" not in twenty
    dropout_on = printed(capsys, check_greedy_decode, lambda m, s: decode(m, s, eval_mode=False), small_model)
    assert "stops after" not in dropout_on                           # the neighbour: dropout left on


def test_greedy_decode_that_calls_the_reference_is_told_so(small_model, capsys):
    def course_decoder(model, src):
        return pad_after_eos(greedy_decode(model, src, max_len=src.shape[1] + 50))

    def beam_of_one(model, src):
        return decoding.beam_search(model, src, k=1)

    def cleaned_up(model, src):                                 # its own loop, the course's clean-up
        return pad_after_eos(decode(model, src, pad_after=False))

    for fn, label in ((course_decoder, "helpers.decoding.greedy_decode"),
                      (beam_of_one, "helpers.decoding.beam_search"),
                      (cleaned_up, "helpers.tasks.reversal.pad_after_eos")):
        line = printed(capsys, check_greedy_decode, fn, small_model)
        assert line.startswith(f"my_greedy_decode calls {label}, the very reference"), line
        assert "write the loop yourself" in line
    assert printed(capsys, check_greedy_decode, decode, small_model).startswith(PASSED)   # given back


def test_greedy_decode_with_argmax_over_a_missing_axis_gets_a_named_hint(small_model, capsys):
    def one_row_argmax(model, src):                             # section 7's [0, -1], then dim=1
        model.eval()
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        for _ in range(src.shape[1] + 50):
            nxt = model.decode(ys, memory, src)[0, -1].argmax(dim=1)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
        return ys

    def three_d_argmax(model, src):                             # logits[:, -1] is 2-d: no dim 2
        model.eval()
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        for _ in range(src.shape[1] + 50):
            nxt = model.decode(ys, memory, src)[:, -1].argmax(dim=2)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
        return ys

    for fn in (one_row_argmax, three_d_argmax):
        line = printed(capsys, check_greedy_decode, fn, small_model)
        assert "raised IndexError" in line and "argmax(dim=-1)" in line, line
    over = printed(capsys, check_greedy_decode, lambda m, s: decode(m, s, over_positions=True), small_model)
    assert "over an axis the tensor does not have" not in over           # the neighbour: a silent slip


def test_greedy_decode_without_the_source_in_decode(small_model, capsys):
    def no_src(model, src):
        model.eval()
        memory = model.encode(src)
        ys = torch.full((src.shape[0], 1), BOS)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(src.shape[1] + 50):
            nxt = model.decode(ys, memory)[:, -1].argmax(-1).masked_fill(done, PAD)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == EOS
            if done.all():
                break
        return ys

    assert "model.decode(ys, memory, src)" in printed(capsys, check_greedy_decode, no_src, small_model)


# --- fuzz: perturbed answers of the right and of wrong shapes never break a checker --------------

WRONG_VALUES = {"random", "scaled by 1/8", "negated", "zeros", "one nan", "one inf", "bool",
                "tuple of two", "empty"}                # perturbations that change the answer itself


@pytest.mark.parametrize("position", range(3))
def test_schedule_survives_perturbed_numbers(position, capsys):
    for label, wrong in wrong_tensors(torch.tensor(RIGHT[position])):
        args = list(RIGHT)
        args[position] = wrong
        line = assert_survives(capsys, check_schedule, *args)
        assert label not in WRONG_VALUES or line != PASSED, label


def test_smoothing_floor_and_the_questions_survive_perturbed_numbers(capsys):
    for check, right in ((check_smoothing_floor, 1.3769), (check_passes_question, 6.0),
                         (check_floor_question, 1.0), (check_averaging_question, 1.0)):
        for label, wrong in wrong_tensors(torch.tensor(right)):
            line = assert_survives(capsys, check, wrong)
            assert label not in WRONG_VALUES or not line.startswith(PASSED), (check, label)


def test_smoothed_loss_survives_perturbed_losses(capsys):
    for label, wrong in wrong_functions(loss_by_target):
        line = assert_survives(capsys, check_smoothed_loss, wrong)
        assert label not in WRONG_VALUES | {"noise 1e-2"} or not line.startswith(PASSED), label


def test_greedy_decode_survives_perturbed_outputs(small_model, capsys):
    for label, wrong in wrong_functions(decode):
        line = assert_survives(capsys, check_greedy_decode, wrong, small_model)
        assert label not in WRONG_VALUES | {"noise 1e-2", "transposed", "axes flipped"} or \
            not line.startswith(PASSED), label
    for _, model in wrong_tensors(torch.zeros(2, 3)):
        assert_survives(capsys, check_greedy_decode, decode, model)


# --- Issue 29: hints that named the wrong mistake --------------------------------------------------

def test_issue_29_a_logged_rate_grown_by_a_fixed_factor_is_not_called_rounded(capsys):
    grown = printed(capsys, check_schedule, *RIGHT[:2], 1.01 * rate(250))
    assert "1.01 × lr_250" in grown and "251/250" in grown, grown
    assert "rounding" in grown and "without rounding" not in grown, grown
    rounded = printed(capsys, check_schedule, RIGHT[0], 1.1e-03, RIGHT[2])   # lrate(3000) = 1.141e-03
    assert "rounded to 2 significant digits" in rounded and "×" not in rounded, rounded
    off = printed(capsys, check_schedule, RIGHT[0], 1.16e-03, RIGHT[2])      # neither rounded nor a step
    assert "not a rounding" in off and "rounded to" not in off, off


def loss_over(rows_kept):
    """The smoothed loss written out, averaged over the rows rows_kept(target, pad) selects."""
    def loss(logits, target, eps_ls, pad):
        n = logits.shape[-1]
        q = torch.full_like(logits, eps_ls / n)
        q[torch.arange(len(target)), target] += 1 - eps_ls
        per_row = -(q * logits.log_softmax(-1)).sum(-1)
        return per_row[rows_kept(target, pad)].mean()
    return loss


def test_issue_29_a_mean_over_the_padding_rows_only_is_named(capsys):
    only_pad = printed(capsys, check_smoothed_loss, loss_over(lambda t, pad: t == pad))
    assert "over the padding rows only" in only_pad, only_pad
    every = printed(capsys, check_smoothed_loss,
                    loss_over(lambda t, pad: torch.ones_like(t, dtype=torch.bool)))
    assert "counts the padding rows" in every and "only" not in every.split(":")[0], every
    assert printed(capsys, check_smoothed_loss, loss_over(lambda t, pad: t != pad)).startswith(PASSED)


# --- Issue 48: the floor worked out for 32,000 tokens (English-French) gets its own hint -------------

def test_a_floor_for_32000_tokens_is_named(capsys):
    q_right, q_other = 0.9 + 0.1 / 32_000, 0.1 / 32_000        # written out, as a learner would
    floor_32k = -(q_right * math.log(q_right) + 31_999 * q_other * math.log(q_other))
    for value in (floor_32k, round(floor_32k, 3), round(floor_32k, 2)):
        line = printed(capsys, check_smoothing_floor, value)
        assert "32,000 tokens" in line and "use n_vocab = 37,000" in line, (value, line)


def test_the_shared_decoding_loop_is_refused(small_model, capsys):
    """helpers.decoding.write, the loop greedy_decode (and notebook 12's decoder-only model) runs, is
    the reference's code under another name."""
    def my_greedy_decode(model, src):
        model.eval()
        mask = model.memory_mask(src)
        memory = model.encode(src, mask)
        ys = decoding.write(lambda ys: model.decode(ys, memory, memory_mask=mask)[:, -1], src.shape[0],
                            src.shape[1] + 50, lambda logits: logits.argmax(-1))
        return pad_after_eos(ys)
    line = printed(capsys, check_greedy_decode, my_greedy_decode, small_model)
    assert "helpers.decoding.write" in line and not line.startswith(PASSED), line
