"""helpers.distributed: batches by tokens, accumulation, the workers it starts and always ends;
notebook 10 leaves no process behind."""

import multiprocessing
import pathlib
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist

from helpers import distributed
from helpers.distributed import (WorkerError, accumulated_step, batch_stats, identical, largest_difference,
                                 launch, n_tokens, one_batch, token_batches, token_loss)
from helpers.tasks import workers
from helpers.tasks.numbers import Pair, load_pairs
from helpers.tasks.workers import lengths, new_model, train_worker

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_worker_left():
    yield
    assert distributed.leftover_workers() == []


# --- batches by tokens ------------------------------------------------------------------------

def test_token_batches_hold_every_pair_once_within_the_budget():
    pairs = load_pairs("train")
    for budget in (300, 1000):
        batches = token_batches(pairs, budget, lengths)
        assert sorted(p.number for b in batches for p in b) == sorted(p.number for p in pairs)
        for batch in batches:
            ls = [lengths(p) for p in batch]
            assert len(batch) * max(s for s, _ in ls) <= budget
            assert len(batch) * max(t for _, t in ls) <= budget


def test_padding_share_by_hand():
    # targets of 2, 5 and 9 tokens (French words + </s>), sources of 1 token each
    pairs = [Pair(1, "one", "un"), Pair(2, "two", "a b c d"), Pair(3, "three", "a b c d e f g h")]
    assert [lengths(p)[1] for p in pairs] == [2, 5, 9]
    stats = batch_stats([pairs], lengths)
    assert stats["batches"] == 1 and stats["most"] == 16
    assert stats["padding share"] == pytest.approx(1 - (3 + 16) / (3 * 1 + 3 * 9))


# --- accumulation -----------------------------------------------------------------------------

def test_accumulated_step_equals_one_big_step():
    from helpers.checks.distributed import micro_batches
    torch.set_num_threads(1)
    micro = micro_batches()
    assert len({n_tokens(b[2]) for b in micro}) == 3
    models = []
    for accumulate in (True, False):
        torch.manual_seed(3)
        model = new_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if accumulate:
            returned = accumulated_step(model, optimizer, micro)
        else:
            loss = token_loss(model, *one_batch(micro))
            loss.backward()
            optimizer.step()
        models.append(model.state_dict())
    assert largest_difference(*models) < 1e-6
    assert abs(returned - loss.item()) < 1e-5        # it returns the whole batch's loss, as the exercise asks


# --- the workers ------------------------------------------------------------------------------

def rank_and_sum(rank, world_size, value):
    x = torch.tensor([float(value + rank)])
    dist.all_reduce(x)
    return rank, world_size, x.item(), torch.get_num_threads()


def test_launch_returns_the_results_in_rank_order():
    assert launch(rank_and_sum, 3, 10) == [(0, 3, 33.0, 1), (1, 3, 33.0, 1), (2, 3, 33.0, 1)]


def fails_on_one(rank, world_size):
    if rank == 1:
        raise ValueError("worker one\nsecond line")
    x = torch.ones(2)
    dist.all_reduce(x)                        # waits for worker 1, which has left
    return x


def test_a_worker_that_raises_gives_one_line_and_ends_the_others():
    start = time.monotonic()
    with pytest.raises(WorkerError) as e:
        launch(fails_on_one, 2)
    assert str(e.value) == "worker 1 raised ValueError: worker one second line"
    assert time.monotonic() - start < distributed.GROUP_TIMEOUT


def sleeps(rank, world_size):
    time.sleep(60)


def test_workers_that_hang_are_ended_after_the_timeout():
    start = time.monotonic()
    with pytest.raises(WorkerError, match="did not finish within 2 s"):
        launch(sleeps, 2, timeout=2)
    assert time.monotonic() - start < 20


def test_a_notebook_function_runs_in_spawned_workers_too():
    namespace = {"__name__": "__main__"}
    exec("import torch\nimport torch.distributed as dist\nOFFSET = 5\n"
         "def from_notebook(rank, world_size):\n"
         "    x = torch.tensor([float(rank + OFFSET)])\n"
         "    dist.all_reduce(x)\n"
         "    return x.item()\n", namespace)
    fn = namespace["from_notebook"]
    assert fn.__module__ == "__main__"
    assert launch(fn, 2, method="spawn", timeout=180) == [11.0, 11.0]


def test_start_method_forks_where_it_can():
    import multiprocessing
    assert distributed.start_method() == ("fork" if "fork" in multiprocessing.get_all_start_methods()
                                          else "spawn")


def test_by_hand_equals_ddp_exactly_and_one_process_to_rounding():
    by_hand = launch(train_worker, 2, 3, "by hand")
    ddp = launch(train_worker, 2, 3, "ddp")
    one = workers.one_process(3, 2)
    assert identical(by_hand[0]["final"], by_hand[1]["final"])
    assert identical(by_hand[0]["final"], ddp[0]["final"])
    assert not identical(by_hand[0]["final"], by_hand[0]["initial"])
    assert largest_difference(by_hand[0]["final"], one["final"]) < 1e-5
    assert largest_difference(by_hand[0]["final"], by_hand[0]["initial"]) > 1e-2


def test_seeds_that_differ_stay_apart_by_hand_and_not_with_ddp():
    by_hand = launch(train_worker, 2, 3, "by hand", "rank")
    ddp = launch(train_worker, 2, 3, "ddp", "rank")
    assert not identical(by_hand[0]["final"], by_hand[1]["final"])
    assert identical(ddp[0]["final"], ddp[1]["final"])
    start = {k: by_hand[0]["initial"][k] - by_hand[1]["initial"][k] for k in by_hand[0]["initial"]}
    end = {k: by_hand[0]["final"][k] - by_hand[1]["final"][k] for k in start}
    assert largest_difference(start, end) < 1e-5


def test_shards_of_a_step_hold_equal_token_counts():
    for step in range(5):
        batch = workers.step_batch(step, 2)
        counts = [n_tokens(distributed.shard(batch, r, 2)[2]) for r in range(2)]
        assert counts[0] == counts[1] > 0


def test_allreduce_seconds_times_each_size():
    seconds = launch(distributed.allreduce_seconds, 2, [16, 1024], 2)
    assert len(seconds) == 2 and all(len(s) == 2 and min(s) > 0 for s in seconds)


# --- notebook 10 leaves nothing behind ---------------------------------------------------------

# Notebook 10 leaves no child process: its run (tests/notebook_runs.py) ends with a cell asserting it.


def _named_sleeper(seconds):
    distributed._name_process()
    time.sleep(seconds)


@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_leftover_workers_finds_its_own_live_worker_only():
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_named_sleeper, args=(30,))
    child.start()
    try:
        deadline = time.monotonic() + 10
        while child.pid not in distributed.leftover_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in distributed.leftover_workers()            # a live child of ours
        other = subprocess.run(                                       # another process's view
            [sys.executable, "-c", "from helpers import distributed; print(distributed.leftover_workers())"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert str(child.pid) not in other                            # its parent, us, is alive
    finally:
        child.kill()
        child.join(5)
    assert distributed.leftover_workers() == []


# --- Issue 39: Gloo's connection notice (torch 2.10 prints it on stdout) leaves torchrun's output -------

NOTICE = "[Gloo] Rank {r} is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n"
SCRIPT_OUTPUT = ("rank 0 of 2, LOCAL_RANK 0\nrank 1 of 2, LOCAL_RANK 1\n"
                 "the workers' weights are identical: True\n")


@pytest.mark.parametrize("stdout", [
    NOTICE.format(r=0) + NOTICE.format(r=1) + SCRIPT_OUTPUT,                       # whole lines, first
    SCRIPT_OUTPUT[:26] + NOTICE.format(r=1) + SCRIPT_OUTPUT[26:],                  # between two lines
    # in pieces: the notice's first words, then the script's line, then the rest (seen on Kaggle's torch)
    "[Gloo] Rank " + SCRIPT_OUTPUT[:26] + NOTICE.format(r=0)[len("[Gloo] Rank "):] + SCRIPT_OUTPUT[26:],
    "[Gloo] Rank 1 is connected to " + SCRIPT_OUTPUT[:52] + "1 peer ranks. Expected number of connected "
    "peer ranks is : 1\n" + SCRIPT_OUTPUT[52:],
    SCRIPT_OUTPUT[:26] + NOTICE.format(r=0)[:-1] + SCRIPT_OUTPUT[26:],              # without its newline
    # one rank's whole notice inside the other's first words (seen on Kaggle's torch 2.10)
    "[Gloo] Rank " + NOTICE.format(r=1) + NOTICE.format(r=0)[len("[Gloo] Rank "):] + SCRIPT_OUTPUT,
    # two notices interleaved piece by piece: verbatim from torch 2.10 (Kaggle's), 4 runs in 12 here
    "[Gloo] Rank [Gloo] Rank 1 is connected to 01 is connected to  peer ranks. 1Expected number of "
    "connected peer ranks is :  peer ranks. 1Expected number of connected peer ranks is : \n1\n"
    + SCRIPT_OUTPUT,
    # the same, numbers together: its first 120 characters as a platform run showed them, then a guess
    "[Gloo] Rank [Gloo] Rank 10 is connected to  is connected to 11 peer ranks.  peer ranks. Expected "
    "number of connected peer ranks is : Expected number of connected peer ranks is : 11\n\n"
    + SCRIPT_OUTPUT,
], ids=["lines first", "between lines", "split by a line", "split by two lines", "no newline",
        "inside the other notice", "piece by piece", "piece by piece, numbers together"])
def test_torchrun_output_drops_the_gloo_notice_wherever_it_lands(stdout):
    assert distributed.without_gloo_notice(stdout) == SCRIPT_OUTPUT


def test_the_gloo_filter_keeps_everything_else():
    text = "[Gloo] Rank is a word here\nrank 0 is connected to 1 peer\n" + SCRIPT_OUTPUT
    assert distributed.without_gloo_notice(text) == text
