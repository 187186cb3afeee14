"""The checkers of notebook 05: every named mistake, written here independently, gets its hint."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.checks import PASSED
from helpers.checks.recipe import (
    check_averaging_question,
    check_floor_question,
    check_greedy_decode,
    check_passes_question,
    check_smoothed_loss,
    check_smoothing_floor,
    check_tiny_schedule,
)
from helpers.model import Transformer
from helpers.recipe import adam_with_warmup, smoothed_loss, train
from helpers.reversal import BOS, EOS, PAD, VOCAB, batch, greedy_decode, pad_after_eos
from printed import printed


# --- the tiny schedule ---------------------------------------------------------------------------

def test_tiny_schedule_accepts_the_rates_as_a_log_prints_them(capsys):
    assert printed(capsys, check_tiny_schedule, 0.0015625, 0.003125, 101 / 8000 / 8) == PASSED
    assert printed(capsys, check_tiny_schedule, 1.5625e-03, 3.125e-03, 1.58e-03) == PASSED  # "1.58e-03"
    assert printed(capsys, check_tiny_schedule, 1.56e-03, 3.12e-03, 1.578e-03) == PASSED
    assert printed(capsys, check_tiny_schedule, torch.tensor(0.0015625), 0.003125, 0.00158) == PASSED
    assert printed(capsys, check_tiny_schedule, 0.0015625, 0.003125, 0.0015625).startswith(
        "logged_100: that is the rate step 100 used")
    assert printed(capsys, check_tiny_schedule, 0.0015625, 0.003125, 1.56e-03).startswith(
        "logged_100: that is the rate step 100 used")                        # step 100's, as printed
    assert printed(capsys, check_tiny_schedule, 0.0015625, 0.003125, 1.6e-03).startswith("logged_100:")
    assert printed(capsys, check_tiny_schedule, 1.58e-03, 0.003125, 1.58e-03).startswith(
        "lr_100: that is the rate of step 101")


def test_tiny_schedule_names_the_paper_constants(capsys):
    paper_d = 512 ** -0.5 * 100 * 400 ** -1.5
    paper_warmup = 64 ** -0.5 * 100 * 4000 ** -1.5
    assert "d_model = 512" in printed(capsys, check_tiny_schedule, paper_d, 0.003125, 0.00157813)
    assert "warmup = 4000" in printed(capsys, check_tiny_schedule, paper_warmup, 0.003125, 0.00157813)
    assert "0.00625 is the peak" in printed(capsys, check_tiny_schedule, 0.0015625, 0.00625, 0.00157813)


def test_smoothing_floor(capsys):
    n, eps = 37_000, 0.1
    q_right, q_other = 1 - eps + eps / n, eps / n
    right = -(q_right * math.log(q_right) + (n - 1) * q_other * math.log(q_other))
    assert printed(capsys, check_smoothing_floor, right) == PASSED
    assert printed(capsys, check_smoothing_floor, round(right, 3)) == PASSED
    assert "13 tokens" in printed(capsys, check_smoothing_floor, 0.537)
    assert "log base 2" in printed(capsys, check_smoothing_floor, right / math.log(2))
    assert "sign" in printed(capsys, check_smoothing_floor, -right)


# --- the label-smoothed loss ---------------------------------------------------------------------

def loss_by_target(logits, target, eps, pad):
    """The smoothed target written out, then cross-entropy, averaged over the real rows."""
    n = logits.shape[-1]
    q = torch.full_like(logits, eps / n)
    q[torch.arange(len(target)), target] += 1 - eps
    per_row = -(q * F.log_softmax(logits, dim=-1)).sum(-1)
    real = target != pad
    return per_row[real].mean()


def loss_by_parts(logits, target, eps, pad):
    """(1 - eps) · NLL of the right token + eps · the mean of -log p over the vocabulary."""
    real = target != pad
    logp = F.log_softmax(logits[real], dim=-1)
    nll = -logp.gather(1, target[real][:, None]).squeeze(1)
    return ((1 - eps) * nll + eps * -logp.mean(-1)).mean()


def with_target(q_right, q_other, zero_pad=False, rows="real", reduce="mean", eps_fixed=None,
                vocab_fixed=None, pad_fixed=None, log=lambda x: F.log_softmax(x, dim=-1)):
    """A wrong loss built from the target's two values, given as functions of (eps, n)."""
    def loss(logits, target, eps, pad):
        eps = eps if eps_fixed is None else eps_fixed
        pad = pad if pad_fixed is None else pad_fixed
        n = logits.shape[-1] if vocab_fixed is None else vocab_fixed
        q = torch.full_like(logits, q_other(eps, n))
        if zero_pad:
            q[:, pad] = 0.0
        q[torch.arange(len(target)), target] = q_right(eps, n)
        per_row = -(q * log(logits)).sum(-1)
        real = target != pad
        if rows == "all":
            return per_row.mean()
        if rows == "all_divided":
            return per_row[real].sum() / len(target)
        return per_row[real].sum() if reduce == "sum" else per_row[real].mean()
    return loss


PYTORCH = (lambda e, n: 1 - e + e / n, lambda e, n: e / n)


def test_smoothed_loss_passes_two_right_answers_and_pytorch_itself(capsys):
    assert printed(capsys, check_smoothed_loss, loss_by_target).startswith(PASSED)
    assert printed(capsys, check_smoothed_loss, loss_by_parts).startswith(PASSED)

    def pytorch(logits, target, eps, pad):
        return nn.CrossEntropyLoss(label_smoothing=eps, ignore_index=pad)(logits, target)

    assert printed(capsys, check_smoothed_loss, pytorch).startswith(PASSED)
    assert printed(capsys, check_smoothed_loss, lambda *a: float(loss_by_target(*a))).startswith(PASSED)


@pytest.mark.parametrize("wrong, words", [
    (with_target(lambda e, n: 1 - e, lambda e, n: e / (n - 1)), "ε/(V−1)"),
    (with_target(lambda e, n: 1 + e / n, lambda e, n: e / n), "forgot the factor (1 − ε)"),
    (with_target(*PYTORCH, rows="all"), "counts the padding rows"),
    (with_target(*PYTORCH, rows="all_divided"), "counts the padding rows"),
    (with_target(lambda e, n: 1 - e, lambda e, n: e / (n - 2), zero_pad=True), "Annotated Transformer"),
    (with_target(*PYTORCH, zero_pad=True), "gave the padding column 0"),
    (with_target(lambda e, n: 1.0, lambda e, n: 0.0), "plain cross-entropy"),
    (with_target(lambda e, n: 1 - e, lambda e, n: 0.0), "left out the ε/V spread"),
    (with_target(*PYTORCH, reduce="sum"), "summed over the rows"),
    (with_target(*PYTORCH, log=lambda x: x), "log-probabilities first"),
    (with_target(*PYTORCH, log=lambda x: x.softmax(-1)), "not softmax"),
    (with_target(*PYTORCH, log=lambda x: F.log_softmax(x, dim=0)), "over the rows (dim=0)"),
    (with_target(*PYTORCH, eps_fixed=0.1), "use the eps argument"),
    (with_target(*PYTORCH, vocab_fixed=13), "logits.shape[-1]"),
    (with_target(*PYTORCH, pad_fixed=0), "equals the pad argument"),
])
def test_smoothed_loss_names_each_mistake(wrong, words, capsys):
    assert words in printed(capsys, check_smoothed_loss, wrong)


def test_smoothed_loss_names_the_kl_divergence_and_per_row_losses(capsys):
    def kl(logits, target, eps, pad):
        n = logits.shape[-1]
        q = torch.full_like(logits, eps / n)
        q[torch.arange(len(target)), target] += 1 - eps
        per_row = (q * (q.log() - F.log_softmax(logits, dim=-1))).sum(-1)
        return per_row[target != pad].mean()

    def per_row(logits, target, eps, pad):
        return F.cross_entropy(logits, target, label_smoothing=eps, ignore_index=pad, reduction="none")

    def annotated_transformer(logits, target, eps, pad):     # its LabelSmoothing with KLDivLoss
        n = logits.shape[-1]
        q = torch.full_like(logits, eps / (n - 2))
        q[torch.arange(len(target)), target] = 1 - eps
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
    """A small model trained for 200 steps: it writes </s>, at different steps for different rows,
    and is still unsure enough that dropout changes its answers."""
    torch.manual_seed(0)
    model = Transformer(VOCAB, 32, 2, 64, 1, p=0.1)
    opt, sched = adam_with_warmup(model, 32, 100)
    gen = torch.Generator().manual_seed(0)
    train(model, opt, sched, smoothed_loss(PAD), 200, lambda: batch(32, gen, one_length=True),
          progress=False)
    return model.train()


def decode(model, src, *, start=BOS, position=-1, stop_all=True, stop_any=False, pad_after=True,
           eval_mode=True, keep_start=True):
    """Greedy decoding, written with a switch for each mistake."""
    if eval_mode:
        model.eval()
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), start) if isinstance(start, int) else start
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(src.shape[1] + 50):
        scores = model.decode(ys, memory, src)
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
    ys = pad_after_eos(greedy_decode(small_model, src, max_len=src.shape[1] + 50))
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
])
def test_greedy_decode_names_each_mistake(small_model, options, words, capsys):
    def wrong(model, src):
        return decode(model, src, **options)

    assert words in printed(capsys, check_greedy_decode, wrong, small_model)


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
    ("dropout", "with dropout off the top probability is still about 0.92"),
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

def test_tiny_schedule_names_the_papers_rate_printed_above_and_too_few_digits(capsys):
    paper = 512 ** -0.5 * 100 * 4000 ** -1.5                # lrate(100), printed in section 2
    assert "d_model = 512 and warmup = 4000" in printed(capsys, check_tiny_schedule, paper, 0.003125, 0.00158)
    assert "three significant digits" in printed(capsys, check_tiny_schedule, 0.0016, 0.003125, 0.00158)
    assert "three significant digits" in printed(capsys, check_tiny_schedule, 0.0015625, 0.0031, 0.00158)


def test_smoothing_floor_accepts_two_decimals(capsys):
    assert printed(capsys, check_smoothing_floor, 1.38) == PASSED            # 1.377 to 2 decimals
    assert printed(capsys, check_smoothing_floor, 1.37) != PASSED


def test_smoothed_loss_names_index_slips(capsys):
    def assigned(logits, target, eps, pad):                 # = instead of +=: the right token gets 1 - eps
        q = torch.full_like(logits, eps / logits.shape[-1])
        q[torch.arange(len(target)), target] = 1 - eps
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    def every_row(logits, target, eps, pad):                # q[:, target]: every row, every target column
        q = torch.full_like(logits, eps / logits.shape[-1])
        q[:, target] += 1 - eps
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    def pad_column_instead_of_rows(logits, target, eps, pad):
        q = F.one_hot(target, logits.shape[-1]).float() * (1 - eps) + eps / logits.shape[-1]
        q[:, pad] = 0.0                                      # "ignore pad" on the column axis
        return -(q * F.log_softmax(logits, -1)).sum(-1).mean()

    assert "1 − ε, so it sums to 1 − ε/V" in printed(capsys, check_smoothed_loss, assigned)
    assert "q[:, target]" in printed(capsys, check_smoothed_loss, every_row)
    assert "removes the rows whose target is pad" in printed(capsys, check_smoothed_loss,
                                                             pad_column_instead_of_rows)


def test_smoothed_loss_says_which_batch_a_written_in_size_breaks_on(capsys):
    def thirteen(logits, target, eps, pad):                 # raises on the batch of 7 tokens
        q = F.one_hot(target, 13).float() * (1 - eps) + eps / 13
        return -(q * F.log_softmax(logits, -1)).sum(-1)[target != pad].mean()

    line = printed(capsys, check_smoothed_loss, thirteen)
    assert "raised RuntimeError" in line and "7 tokens" in line and "logits.shape[-1]" in line


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
