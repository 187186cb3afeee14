"""The checkers of notebook 10: every named mistake, written here independently, gets its hint;
perturbed and odd answers never make a checker fail on its own code (as tests/fuzz.py does)."""

import random

import pytest
import torch
import torch.distributed as dist

from helpers import distributed
from helpers.checks import PASSED
from helpers.checks.distributed import (check_accumulation, check_micro_question, check_ring_question,
                                        check_seeds_question, check_worker)
from helpers.distributed import n_tokens, token_loss
from helpers.tasks.workers import LR, SEED, new_model, shard_loss, step_batch
from printed import printed
from tests.fuzz import assert_survives, wrong_functions, wrong_tensors

# --- Your turn 1: accumulation, each way of getting it wrong written out -----------------------


def right_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(int((b[2] != 0).sum()) for b in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * int((tgt_out != 0).sum()) / total
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole


def right_step_summed_losses(model, optimizer, micro_batches):
    """Another right way: the sum of every token's loss, divided once by the total."""
    optimizer.zero_grad()
    total = sum(int((b[2] != 0).sum()) for b in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        logits = model(src, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                                                 reduction="sum") / total
        loss.backward()
        whole += float(loss)
    optimizer.step()
    return torch.tensor(whole)


def mean_of_means(model, optimizer, micro_batches):
    optimizer.zero_grad()
    whole = 0.0
    for batch in micro_batches:
        loss = token_loss(model, *batch) / len(micro_batches)
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole


def by_rows(model, optimizer, micro_batches):
    optimizer.zero_grad()
    rows = sum(b[0].shape[0] for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * batch[0].shape[0] / rows).backward()
    optimizer.step()
    return 1.0


def not_scaled(model, optimizer, micro_batches):
    optimizer.zero_grad()
    for batch in micro_batches:
        token_loss(model, *batch).backward()
    optimizer.step()
    return 1.0


def zero_inside(model, optimizer, micro_batches):
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        optimizer.zero_grad()
        (token_loss(model, *batch) * n_tokens(batch[2]) / total).backward()
    optimizer.step()
    return 1.0


def step_inside(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * n_tokens(batch[2]) / total).backward()
        optimizer.step()
    return 1.0


def step_and_zero_inside(model, optimizer, micro_batches):
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        optimizer.zero_grad()
        (token_loss(model, *batch) * n_tokens(batch[2]) / total).backward()
        optimizer.step()
    return 1.0


def no_zero_at_start(model, optimizer, micro_batches):
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * n_tokens(batch[2]) / total).backward()
    optimizer.step()
    return 1.0


def no_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * n_tokens(batch[2]) / total).backward()
    return 1.0


def calls_the_reference(model, optimizer, micro_batches):
    distributed.accumulated_step(model, optimizer, micro_batches)
    return 1.0


def wrong_loss_returned(model, optimizer, micro_batches):
    """The step right, but the loss reported is the mean of the micro-batch means."""
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    means = []
    for batch in micro_batches:
        loss = token_loss(model, *batch)
        (loss * n_tokens(batch[2]) / total).backward()
        means.append(loss.item())
    optimizer.step()
    return sum(means) / len(means)


def placeholder(model, optimizer, micro_batches):
    '''One optimizer step.'''
    ...


@pytest.mark.parametrize("fn", [right_step, right_step_summed_losses])
def test_accumulation_accepts_right_steps(fn, capsys):
    assert printed(capsys, check_accumulation, fn).startswith(PASSED)


@pytest.mark.parametrize("fn, words", [
    (mean_of_means, "equal weights (loss / n_micro)"),
    (by_rows, "number of sentences"),
    (not_scaled, "The losses are not scaled"),
    (zero_inside, "zero_grad() is inside the loop: it erases"),
    (step_inside, "optimizer.step() is inside the loop: that takes"),
    (step_and_zero_inside, "with zero_grad() there too"),
    (no_zero_at_start, "left by the previous step"),
    (no_step, "The weights did not change"),
    (calls_the_reference, "the very reference this check compares"),
    (wrong_loss_returned, "the loss returned is not the big batch's"),
    (placeholder, "Not answered yet"),
])
def test_accumulation_names_each_mistake(fn, words, capsys):
    line = printed(capsys, check_accumulation, fn)
    assert words in line, line


def test_accumulation_hint_gives_this_check_s_token_counts(capsys):
    line = printed(capsys, check_accumulation, mean_of_means)
    from helpers.checks.distributed import micro_batches
    counts = [n_tokens(b[2]) for b in micro_batches()]
    assert len(set(counts)) == 3 and f"{counts[0]}, {counts[1]} and {counts[2]}" in line


@pytest.mark.parametrize("label, fn", wrong_functions(right_step_summed_losses),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_accumulation_check_survives_wrong_returns(label, fn, capsys):
    line = assert_survives(capsys, check_accumulation, fn)
    if label in ("random", "negated", "zeros", "scaled by 1/8", "raises", "returns a string"):
        assert not line.startswith(PASSED), line


# --- Your turn 2: the worker, each mistake written out (each runs 2 processes) ----------------

def right_worker(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        optimizer.step()
    return model


def divide_first_worker(rank, world_size, steps):
    """Right too: divide, then sum, and one flat buffer for all the gradients."""
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()]) / world_size
        dist.all_reduce(flat)
        offset = 0
        for p in model.parameters():
            p.grad.copy_(flat[offset: offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()
    return model


def _worker_with(reduce, seed=lambda rank: SEED, before=False):
    def worker(rank, world_size, steps):
        torch.manual_seed(seed(rank))
        model = new_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        for step in range(steps):
            optimizer.zero_grad()
            if before:
                reduce(model, world_size)
            shard_loss(model, step, rank, world_size).backward()
            if not before:
                reduce(model, world_size)
            optimizer.step()
        return model
    return worker


def sum_only(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad)


def divide_twice(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world_size
        p.grad /= world_size


def reduce_weights(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.data)
        p.data /= world_size


def reduce_right(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world_size


def average_op(model, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)


def nothing(model, world_size):
    pass


def reduce_copies(model, world_size):
    for p in model.parameters():
        g = p.grad.clone()
        dist.all_reduce(g)


def raises_on_rank_1(rank, world_size, steps):
    if rank == 1:
        raise KeyError("only worker 1")
    return right_worker(rank, world_size, steps)


def returns_nothing(rank, world_size, steps):
    right_worker(rank, world_size, steps)
    return "done"


def builds_no_model(rank, world_size, steps):
    return torch.nn.Linear(2, 2)


def unseeded(rank, world_size, steps):
    torch.manual_seed(SEED + 1)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        reduce_right(model, world_size)
        optimizer.step()
    return model


def one_step_short(rank, world_size, steps):
    return right_worker(rank, world_size, steps - 1)


WORKER_CASES = [
    (_worker_with(sum_only), "the sum over the workers, not the mean"),
    (_worker_with(divide_twice), "divided by world_size twice"),
    (_worker_with(reduce_weights), "You all-reduced the weights"),
    (_worker_with(reduce_right, before=True), "a parameter's .grad is None until loss.backward()"),
    (_worker_with(reduce_right, seed=lambda rank: rank), "started from different weights"),
    (_worker_with(nothing), "No dist.all_reduce was called"),
    (_worker_with(reduce_copies), "kept its own shard's gradient"),
    (raises_on_rank_1, "KeyError: 'only worker 1'"),
    (returns_nothing, "returned str"),
    (builds_no_model, "built no model"),
    (unseeded, "did not start from the weights of seed SEED"),
    (one_step_short, "differ from one process on the whole batch"),
]


@pytest.mark.parametrize("fn", [right_worker, divide_first_worker])
def test_worker_accepts_right_workers(fn, capsys):
    line = printed(capsys, check_worker, fn)
    assert line.startswith(PASSED) and "bit for bit" in line, line
    assert distributed.leftover_workers() == []


@pytest.mark.parametrize("fn, words", WORKER_CASES, ids=[w for _, w in WORKER_CASES])
def test_worker_names_each_mistake(fn, words, capsys):
    line = printed(capsys, check_worker, fn)
    assert words in line, line
    assert distributed.leftover_workers() == []


def test_average_op_passes_where_gloo_has_it_and_is_named_where_not(capsys):
    line = printed(capsys, check_worker, _worker_with(average_op))
    assert line.startswith(PASSED) or "no ReduceOp.AVG" in line, line


def test_reducing_before_backward_with_zeroed_gradients_is_named(capsys):
    def worker(rank, world_size, steps):
        torch.manual_seed(SEED)
        model = new_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        for step in range(steps):
            optimizer.zero_grad(set_to_none=False) if step else None
            if step:
                reduce_right(model, world_size)
            shard_loss(model, step, rank, world_size).backward()
            if not step:
                reduce_right(model, world_size)
            optimizer.step()
        return model
    line = printed(capsys, check_worker, worker)
    assert "before loss.backward()" in line or "different weights" in line or "the workers end" in line, line


@pytest.mark.parametrize("answer", [None, ..., "my_worker", 3, lambda *a: None])
def test_worker_check_without_a_function_starts_no_process(answer, capsys, monkeypatch):
    monkeypatch.setattr(distributed, "launch", lambda *a, **k: pytest.fail("launched"))
    assert_survives(capsys, check_worker, answer)


# --- Check your understanding -------------------------------------------------------------------

def test_micro_question(capsys):
    assert printed(capsys, check_micro_question, 4).startswith(PASSED)
    assert printed(capsys, check_micro_question, 4.0).startswith(PASSED)
    assert "there are 2 workers" in printed(capsys, check_micro_question, 8)
    assert "as the paper had 8 GPUs" in printed(capsys, check_micro_question, 1)
    assert "12,500 tokens" in printed(capsys, check_micro_question, 2)
    assert "Count the tokens" in printed(capsys, check_micro_question, 5)


def test_seeds_question(capsys):
    assert printed(capsys, check_seeds_question, "stays").startswith(PASSED)
    assert printed(capsys, check_seeds_question, " Stays ").startswith(PASSED)
    for wrong in ("identical", "grows", "shrinks"):
        line = printed(capsys, check_seeds_question, wrong)
        assert not line.startswith(PASSED) and "same" in line


def test_ring_question(capsys):
    right = 2 * 15 * 4 * 63_082_496 // 16
    assert right == 473_118_720
    assert printed(capsys, check_ring_question, right).startswith(PASSED)
    gradient = 4 * 63_082_496
    cases = {gradient: "the gradient itself", gradient * 15 / 16: "one of the two halves",
             2 * gradient: "1.875 for 16 workers", 2 * 7 * gradient // 8: "the 8 workers of section 4",
             gradient * 15: "each of the 15 others", right / 4: "counts numbers", right / 1e6: "megabytes",
             right / 2 ** 20: "mebibytes", right + 1000: "exact number", 5: "Each worker sends"}
    for value, words in cases.items():
        assert words in printed(capsys, check_ring_question, value), value


ODD = [None, ..., "4", "", True, -1, 0, 1e300, float("nan"), float("inf"), [4], (1, 2), {"a": 1},
       torch.tensor([]), torch.tensor(1 + 2j), object()]


def near(right, seed, count=20):
    rng = random.Random(seed)
    return [right + rng.choice([-1, 1]) * rng.randint(1, 10 ** rng.randint(0, 9)) for _ in range(count)]


@pytest.mark.parametrize("value", ODD + near(4, 0) + [v for _, v in wrong_tensors(torch.tensor(4.0))])
def test_micro_question_survives(value, capsys):
    assert_survives(capsys, check_micro_question, value)


RING_ODD = ODD + near(473_118_720, 1) + [v for _, v in wrong_tensors(torch.tensor(4.7e8))]


@pytest.mark.parametrize("value", RING_ODD)
def test_ring_question_survives(value, capsys):
    assert_survives(capsys, check_ring_question, value)


@pytest.mark.parametrize("value", ODD + ["stay", "identical, stays", "STAYS!"])
def test_seeds_question_survives(value, capsys):
    assert_survives(capsys, check_seeds_question, value)


# --- Issue 39: check_accumulation's other mistakes, each with its own hint ---------------------------

def integer_division(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * (n_tokens(batch[2]) // total)).backward()
    optimizer.step()
    return 1.0


def backward_after_the_loop(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        loss = token_loss(model, *batch) * n_tokens(batch[2]) / total
    loss.backward()
    optimizer.step()
    return 1.0


def by_positions(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(b[2].numel() for b in micro_batches)
    for batch in micro_batches:
        (token_loss(model, *batch) * batch[2].numel() / total).backward()
    optimizer.step()
    return 1.0


def scaled_twice(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro_batches)
    for batch in micro_batches:
        loss = token_loss(model, *batch) * n_tokens(batch[2]) / total
        (loss / len(micro_batches)).backward()
    optimizer.step()
    return 1.0


def summed_never_divided(model, optimizer, micro_batches):
    optimizer.zero_grad()
    for src, tgt_in, tgt_out in micro_batches:
        logits = model(src, tgt_in)
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0,
                                          reduction="sum").backward()
    optimizer.step()
    return 1.0


@pytest.mark.parametrize("fn, words", [
    (integer_division, "integer division"),
    (backward_after_the_loop, "loss.backward() ran once, after the loop"),
    (by_positions, "by its positions, padding included"),
    (scaled_twice, "Each loss is scaled twice"),
    (summed_never_divided, "sums over the tokens (reduction=\"sum\"), never divided"),
])
def test_accumulation_names_the_other_mistakes(fn, words, capsys):
    line = printed(capsys, check_accumulation, fn)
    assert words in line, line


# --- Issue 39: check_worker, references inside the worker, hard-coded runs, the order of events ---

def worker_calling(reduce_step):
    """A worker that follows the exercise but averages with reduce_step(model, rank, world_size)."""
    def worker(rank, world_size, steps):
        torch.manual_seed(SEED)
        model = new_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        for step in range(steps):
            optimizer.zero_grad()
            shard_loss(model, step, rank, world_size).backward()
            reduce_step(model, rank, world_size)
            optimizer.step()
        return model
    return worker


def course_average(model, rank, world_size):
    distributed.average_gradients(model, world_size)


def reduce_then_broadcast(model, rank, world_size):
    for p in model.parameters():
        dist.reduce(p.grad, dst=0)
        if rank == 0:
            p.grad /= world_size
        dist.broadcast(p.grad, src=0)


def all_gather_then_mean(model, rank, world_size):
    for p in model.parameters():
        gathered = [torch.zeros_like(p.grad) for _ in range(world_size)]
        dist.all_gather(gathered, p.grad)
        p.grad = torch.stack(gathered).mean(0)


def loads_the_reference_weights(rank, world_size, steps):
    from helpers.tasks.workers import train_worker
    torch.manual_seed(SEED)
    model = new_model()
    model.load_state_dict(train_worker(rank, world_size, steps, "by hand")["final"])
    return model


def ddp_wrapped(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    net = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(net, step, rank, world_size).backward()
        optimizer.step()
    return model


def three_steps_always(rank, world_size, steps):
    return right_worker(rank, world_size, 3)


def divides_by_two(model, rank, world_size):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= 2


def step_before_reduce(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        optimizer.step()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
    return model


def rank_0_shard_everywhere(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, 0, world_size).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        optimizer.step()
    return model


def whole_batch_everywhere(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        token_loss(model, *step_batch(step, world_size)).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        optimizer.step()
    return model


@pytest.mark.parametrize("fn", [worker_calling(reduce_then_broadcast), worker_calling(all_gather_then_mean)],
                         ids=["reduce then broadcast", "all_gather then mean"])
def test_worker_accepts_the_other_right_collectives(fn, capsys):
    line = printed(capsys, check_worker, fn)
    assert line.startswith(PASSED), line
    assert distributed.leftover_workers() == []


ISSUE_39_WORKER_CASES = [
    (worker_calling(course_average), "calls helpers.distributed.average_gradients, the very reference"),
    (loads_the_reference_weights, "calls helpers.tasks.workers.train_worker, the very reference"),
    (ddp_wrapped, "calls DistributedDataParallel (it averages the gradients itself), the very reference"),
    (three_steps_always, "Asked for steps = 4"),
    (worker_calling(divides_by_two), "you divided by 2, not by world_size"),
    (step_before_reduce, "You called optimizer.step() before the all-reduce"),
    (rank_0_shard_everywhere, "Every worker computed its loss on worker 0's shard"),
    (whole_batch_everywhere, "Every worker computed the gradient of the whole batch"),
]


@pytest.mark.parametrize("fn, words", ISSUE_39_WORKER_CASES, ids=[w for _, w in ISSUE_39_WORKER_CASES])
def test_worker_names_each_issue_39_mistake(fn, words, capsys):
    line = printed(capsys, check_worker, fn)
    assert words in line, line
    assert distributed.leftover_workers() == []


SPAWNED = '''
import torch
import torch.distributed as dist
from helpers.tasks.workers import LR, SEED, new_model, shard_loss, step_batch

def my_worker(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= DIVISOR
        optimizer.step()
    return model
'''


@pytest.mark.parametrize("divisor, words", [("world_size", PASSED),
                                            ("world_size ** 2", "divided by world_size")])
def test_worker_check_under_spawn_on_a_function_defined_in_main(divisor, words, capsys, monkeypatch):
    """Windows and macOS spawn their workers: the learner's function, defined in the notebook (__main__),
    travels by value, as the launcher's target does; a right one passes and a wrong one is named."""
    monkeypatch.setattr(distributed, "start_method", lambda: "spawn")
    namespace = {"__name__": "__main__"}
    exec(SPAWNED.replace("DIVISOR", divisor), namespace)
    assert namespace["my_worker"].__module__ == "__main__"
    line = printed(capsys, check_worker, namespace["my_worker"])
    assert words in line, line
    assert distributed.leftover_workers() == []


# --- Issue 48: Q3 in other units, and with the paper's 65 M parameters --------------------------------

@pytest.mark.parametrize("value, words", [
    (0.473, "gigabytes (GB)"), (0.47311872, "gigabytes (GB)"), (0.44, "gibibytes (GiB)"),
    (473_118.72, "kilobytes (kB)"), (473_119, "kilobytes (kB)"), (462_030, "kibibytes (KiB)"),
    (473.1, "megabytes (MB)"),
    (2 * 15 * 4 * 65_000_000 / 16, "the paper's 65 M parameters"),
    (0.4875, "the paper's 65 M parameters"), (487.5, "the paper's 65 M parameters"),
])
def test_ring_question_names_the_unit_and_the_papers_count(value, words, capsys):
    line = printed(capsys, check_ring_question, value)
    assert words in line, (value, line)
    assert "473,118,720" not in line and "473118720" not in line, line


# --- Issue 48: a rebuilt or wrapped accumulated_step is not told "returned None" -----------------------

def test_a_rebuilt_or_wrapped_reference_is_not_told_it_returned_none(capsys):
    """The course's accumulated_step returned nothing while the exercise asks for the loss, so a copy of it
    was told "returned None"; it returns the loss now, as the exercise's answer does."""
    import types
    f = distributed.accumulated_step

    class Holder:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args):
            return self.fn(*args)
    for fn in (types.FunctionType(f.__code__, f.__globals__), Holder(f)):
        line = printed(capsys, check_accumulation, fn)
        assert "returned None" not in line, line


# --- Issue 48: four more accumulation mistakes, each with its own sentence -------------------------------

def clipped_before_the_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(int((b[2] != 0).sum()) for b in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * int((tgt_out != 0).sum()) / total
        loss.backward()
        whole += loss.item()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return whole


def last_left_unscaled(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(int((b[2] != 0).sum()) for b in micro_batches)
    whole = 0.0
    for i, (src, tgt_in, tgt_out) in enumerate(micro_batches):
        loss = token_loss(model, src, tgt_in, tgt_out)
        if i < len(micro_batches) - 1:
            loss = loss * int((tgt_out != 0).sum()) / total
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole


def stepped_twice(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = sum(int((b[2] != 0).sum()) for b in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * int((tgt_out != 0).sum()) / total
        loss.backward()
        whole += loss.item()
    optimizer.step()
    optimizer.step()                  # once more "to be sure"
    return whole


def running_total(model, optimizer, micro_batches):
    optimizer.zero_grad()
    seen, whole = 0, 0.0
    for src, tgt_in, tgt_out in micro_batches:
        tokens = int((tgt_out != 0).sum())
        seen += tokens
        loss = token_loss(model, src, tgt_in, tgt_out) * tokens / seen
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole


ISSUE_48_ACCUMULATION = {clipped_before_the_step: "clip_grad_norm_",
                         last_left_unscaled: "last micro-batch's loss",
                         stepped_twice: "optimizer.step() ran 2 times", running_total: "running total"}


@pytest.mark.parametrize("fn", list(ISSUE_48_ACCUMULATION))
def test_each_issue_48_accumulation_mistake_has_its_own_sentence(fn, capsys):
    line = printed(capsys, check_accumulation, fn)
    assert ISSUE_48_ACCUMULATION[fn] in line, line
    assert all(words not in line for other, words in ISSUE_48_ACCUMULATION.items() if other is not fn), line
    assert not line.startswith("The step differs from one step"), line


# --- Issue 48: zero_grad() among the worker's events, and state_dict()'s tensors named ------------------

def zero_grad_between_reduce_and_step(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        shard_loss(model, step, rank, world_size).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world_size
        optimizer.zero_grad()                 # "clean up" before stepping
        optimizer.step()
    return model


def reduces_the_state_dict(rank, world_size, steps):
    torch.manual_seed(SEED)
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        shard_loss(model, step, rank, world_size).backward()
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                dist.all_reduce(tensor)
                tensor /= world_size
        optimizer.step()
    return model


@pytest.mark.parametrize("fn, words", [
    (zero_grad_between_reduce_and_step, "zero_grad() ran between the all-reduce and optimizer.step()"),
    (reduces_the_state_dict, "model.state_dict()'s tensors"),
])
def test_worker_names_zero_grad_after_the_reduce_and_the_state_dict(fn, words, capsys):
    line = printed(capsys, check_worker, fn)
    assert words in line and "not the parameters' gradients" in line or "zero_grad()" in words, line
    assert "call loss.backward() before it" not in line, line
    assert distributed.leftover_workers() == []
