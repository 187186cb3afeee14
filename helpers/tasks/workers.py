"""Notebook 10's runs: notebook 05's tiny model trained on the number words by several workers.

What a worker runs lives here, in an importable module (a spawned process imports it); the
machinery that starts the workers, and the all-reduce by hand, are the concept's, in
``helpers.distributed``.

- ``lengths(pair)``: the columns a number pair needs in src and tgt_out (for
  ``helpers.distributed.token_batches``).
- ``vocab()``, ``new_model()``, ``prepare()``: notebook 09's vocabulary and the tiny model
  without dropout, loaded once per process.
- ``step_batch(step, world_size)``: the whole batch of a step; ``shard_loss``: one worker's loss.
- ``train_worker``: the same few training steps with the gradients averaged by hand, by
  ``DistributedDataParallel``, or in one process; ``one_process``; ``timed_steps``.
"""

import functools
import time

import torch
import torch.distributed as dist
from torch import nn

from helpers.distributed import average_gradients, shard, token_loss
from helpers.model import Transformer
from helpers.tasks.numbers import load_pairs, make_batch, token_pairs, tokenize, vocabulary

TINY = dict(d=64, h=4, d_ff=256, n_layers=2, p=0.0)   # notebook 05's tiny model, without dropout
LR = 0.5                          # the SGD learning rate of the data-parallel runs
PER_WORKER = 8                    # pairs per worker per step
SEED = 0                          # every worker builds its copy of the model from this seed


def lengths(pair):
    """(source tokens, target tokens + 1) of a Pair: the columns it needs in src and tgt_out."""
    return len(tokenize(pair.english)), len(tokenize(pair.french)) + 1


@functools.lru_cache(maxsize=1)
def vocab():
    """Notebook 09's shared vocabulary (60 tokens), loaded once per process."""
    return vocabulary()


def new_model():
    """The tiny model for 09's vocabulary, without dropout, its weights drawn from PyTorch's
    random generator: seed it first (torch.manual_seed) to get the same weights again."""
    return Transformer(vocab=len(vocab()), **TINY)


def prepare():
    """Load the data the workers use once in this process, so that forked workers inherit it."""
    vocab()
    _by_target_length()


@functools.lru_cache(maxsize=1)
def _by_target_length():
    groups = {}
    for pair in load_pairs("train"):
        groups.setdefault(lengths(pair)[1], []).append(pair)
    return {n: g for n, g in sorted(groups.items()) if len(g) >= 64}


def step_batch(step, world_size, per_worker=PER_WORKER):
    """The whole batch of a step: world_size · per_worker pairs whose targets all have the same
    number of tokens (so every worker's shard has as many target tokens as the others)."""
    groups = _by_target_length()
    keys = list(groups)
    group = groups[keys[(3 * step + 1) % len(keys)]]
    n = world_size * per_worker
    start = (step * 97) % (len(group) - n)
    return make_batch(token_pairs(group[start: start + n]), vocab())


def shard_loss(model, step, rank, world_size, per_worker=PER_WORKER):
    """The loss of worker `rank` at a step: token_loss on its shard of step_batch."""
    return token_loss(model, *shard(step_batch(step, world_size, per_worker), rank, world_size))


def train_worker(rank, world_size, steps, how="by hand", seed=SEED, per_worker=PER_WORKER):
    """`steps` SGD steps of the tiny model on this worker's shard of each step's batch.

    how: "by hand" (average_gradients after backward), "ddp" (DistributedDataParallel does it),
    or "one process" (world_size 1 on the whole batch: call it with rank 0, world_size 1, and
    per_worker = the workers' pairs together). seed="rank" seeds each worker with its rank (a
    mistake). Returns {"initial", "final"} state dicts and the "losses" of this worker.
    """
    torch.manual_seed(rank if seed == "rank" else seed)
    model = new_model()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    net = nn.parallel.DistributedDataParallel(model) if how == "ddp" else model
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = token_loss(net, *shard(step_batch(step, world_size, per_worker), rank, world_size))
        loss.backward()
        if how == "by hand":
            average_gradients(model, world_size)
        optimizer.step()
        losses.append(loss.item())
    return {"initial": initial, "final": model.state_dict(), "losses": losses}


def one_process(steps, world_size, per_worker=PER_WORKER, seed=SEED):
    """The same steps in this process, on the whole batch (world_size · per_worker pairs)."""
    torch.set_num_threads(1)
    return train_worker(0, 1, steps, "one process", seed, world_size * per_worker)


def timed_steps(rank, world_size, steps, total_pairs):
    """Seconds for `steps` training steps (DistributedDataParallel when world_size > 1) on this
    worker's share of total_pairs pairs a step."""
    per = total_pairs // world_size
    torch.manual_seed(SEED)
    model = new_model()
    net = nn.parallel.DistributedDataParallel(model) if world_size > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    batches = [shard(step_batch(s, world_size, per), rank, world_size) for s in range(steps)]
    if world_size > 1:
        dist.barrier()
    start = time.perf_counter()
    for batch in batches:
        optimizer.zero_grad()
        token_loss(net, *batch).backward()
        optimizer.step()
    return time.perf_counter() - start


prepare()      # at import: workers forked from this process inherit the loaded data
