"""Write solutions/10_many_workers.ipynb from the cells below (a one-off authoring script).

Kept only while the notebook is first written; once it exists, edit the notebook (with nbformat)
and delete this file.
"""

import pathlib

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
IGNORE = "nbval-ignore-output"
cells = []


def md(cid, text, tags=()):
    cell = nbformat.v4.new_markdown_cell(text.strip("\n"))
    cell.id = f"c10-{cid}"
    if tags:
        cell.metadata["tags"] = list(tags)
    cells.append(cell)


def code(cid, text, tags=(), **metadata):
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    cell.id = f"c10-{cid}"
    if tags:
        cell.metadata["tags"] = list(tags)
    cell.metadata.update(metadata)
    cells.append(cell)


TIMING = "Timings depend on the machine and its load; the cell asserts only what holds on any machine."
ROUNDING = ("Float rounding differs between CPUs and kernel families; the cell asserts the stated "
            "tolerance.")

md("01", r"""
# 10 · Training on many workers

The paper trained its base model "on one machine with 8 NVIDIA P100 GPUs" (§5.2): each training
step read a batch of about 25,000 source and 25,000 target tokens (§5.1), took 0.4 s, and there
were 100,000 of them. One GPU did not hold such a batch, and one GPU alone would have taken 8 times
longer. The 8 GPUs trained **one** model together: each computed the gradient of its own part of
the batch, and the 8 gradients were averaged before every step. This is *data parallelism*, the way
nearly every large model is trained today, and the point where a learner outgrows one process.

This notebook does it on a CPU, with the engine PyTorch uses on GPUs too: `torch.distributed`,
here with its **gloo** backend, 2 worker processes on the 2 cores a free Colab or Kaggle session
has. Nothing in it is trained for long: every claim is an equality (two ways of computing a step
give the same weights) or a measurement of time.

**Learning goals**
- Batch by a token budget instead of a number of sentences, and measure what it saves (padding).
- Accumulate the gradients of several micro-batches into one step, each weighted by its tokens, and
  show it equals one bigger batch.
- Start worker processes from a notebook, join them in a process group (rank, world size), and
  average their gradients with an all-reduce that you write; check it against
  `DistributedDataParallel` and against one process on the whole batch.
- Count the bytes an all-reduce sends, measure its time, and work out what it cost the paper's
  8 GPUs.
- Run the same worker as a script with `torchrun`, and name the flags that take it to several
  machines.

**Time:** about 90 min.

Run the cells in order. Stuck on an exercise? Open the solution copy. On Kaggle, switch Internet
on in the notebook's Settings panel first (the next cell downloads the course's helpers and
notebook 09's data file, about 3 MB).
""")

code("02", "")
cells[-1].metadata["tags"] = ["bootstrap"]

code("03", r"""
import os
import pathlib
import sys
import tempfile
import time

import matplotlib.pyplot as plt
import torch
import torch.distributed as dist
from torch import nn

from helpers import distributed
from helpers.checks.distributed import (check_accumulation, check_micro_question, check_ring_question,
                                        check_seeds_question, check_worker)
from helpers.counting import BASE, transformer_params
from helpers.distributed import (LR, PER_WORKER, SEED, batch_stats, fixed_batches, identical, launch,
                                 largest_difference, n_tokens, new_model, one_batch, shard, shard_loss,
                                 step_batch, token_batches, token_loss, train_worker)
from helpers.reversal import PAD
from helpers.translation import load_pairs, make_batch, token_pairs, tokenize

torch.set_num_threads(1)   # one thread in this process, as in every worker
""")

md("04", r"""
## What you already know

- **The model and its loss** (notebooks 04, 05): `helpers.model.Transformer`, and the cross-entropy
  averaged over the target tokens that are not padding (the loss ignores `<pad>`, id 0).
- **The data** (notebook 09): English number words to French ones; `make_batch` turns pairs into
  `src`, `tgt_in` and `tgt_out`, each batch padded at the end to its own longest sequence.
- **The recipe** (notebook 05): Adam with the warmup schedule
  $lrate = d_{\text{model}}^{-0.5} \cdot \min(step^{-0.5}, step \cdot warmup\_steps^{-1.5})$, a
  function of the step number only.
- **The base model's size** (notebook 06): 63,082,496 parameters.

Here the model is notebook 05's tiny one ($d_{\text{model}} = 64$, $h = 4$, $d_{ff} = 256$, 2 + 2
layers) for notebook 09's 60 tokens, **without dropout**: dropout draws different random masks in
different processes, which would hide the equalities this notebook checks. The optimizer is plain
SGD, $w \leftarrow w - lr \cdot g$, so that any change in a gradient shows in the weights (Adam
divides each update by the gradient's size, which would hide a gradient twice too large).

## 1. Batches by tokens, not sentences

The paper: "Sentence pairs were batched together by approximate sequence length. Each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target
tokens" (§5.1). A batch is a rectangle: $b$ rows, as wide as its longest sequence $n_{\max}$. Its
**padding share** is the part of the rectangle that holds no token:

$$\text{padding share} = 1 - \frac{\sum_{\text{rows}} n_{\text{row}}}{b \cdot n_{\max}}$$

In words: the positions the batch computes on, minus the real tokens, over the positions. By hand,
for 3 targets of 2, 5 and 9 tokens: the rectangle is $3 \times 9 = 27$ positions, 16 of them
tokens, so $1 - 16/27 = 11/27 = 0.407$: 41 % of the work is spent on padding.
""")

code("05", r"""
rows = [2, 5, 9]
positions = len(rows) * max(rows)
print(f"padding share of {rows}: 1 - {sum(rows)}/{positions} = {1 - sum(rows) / positions:.3f}")
""")

md("06", r"""
Two ways to cut notebook 09's 20,887 training pairs into batches:

- **fixed size**: the pairs in a random order, 64 a batch, as most tutorials do;
- **by tokens** (`token_batches(pairs, budget)`): the pairs sorted by length, and each batch filled
  while $b \cdot n_{\max} \le$ `budget` holds on both sides (source and target), with a budget of
  1,000 positions; the order of the batches is then shuffled for training.

`batch_stats` counts the positions of `src` and `tgt_out` together:
""")

code("07", r"""
train_pairs = load_pairs("train")
by_size, by_tokens = fixed_batches(train_pairs, 64), token_batches(train_pairs, 1000)
for name, batches in (("fixed, 64 pairs", by_size), ("by tokens, 1,000", by_tokens)):
    s = batch_stats(batches)
    print(f"{name:17}: {s['batches']:3} batches of {s['pairs per batch']:5.1f} pairs on average; target "
          f"tokens per batch {s['target tokens per batch']:6.1f} (from {s['fewest']} to {s['most']}); "
          f"padding {s['padding share']:.1%}")
""")

md("08", r"""
With fixed batches, **37.7 %** of every position computed is padding: a batch of 64 random numbers
mixes "trois" with "sept cent soixante-dix-sept mille ...", and every row is padded to the longest.
Sorted by length, neighbours have nearly the same length and the padding falls to **1.7 %**: the
same epoch in 210 batches of about 99 pairs instead of 327 of 64, for the same number of real
tokens. The second gain is as important for what follows: a token budget fixes the *work* of a
step. Fixed-size batches hold from 216 target tokens (the last, smaller batch) to 642; the token
batches never exceed 1,000 positions per side, so a step's time and memory are bounded, which is
what a GPU's memory needs.
""")

code("09", r"""
fig, ax = plt.subplots(figsize=(8, 3.8))
for batches, label, color in ((by_size, "fixed size, 64 pairs", "tab:red"),
                              (by_tokens, "by tokens, budget 1,000", "tab:blue")):
    real = [sum(len(tokenize(p.french)) + 1 for p in b) for b in batches]
    ax.hist(real, bins=30, alpha=0.6, color=color, label=label)
ax.set_xlabel("target tokens in the batch (padding not counted)")
ax.set_ylabel("number of batches")
ax.set_title("One epoch of notebook 09's training pairs, cut two ways")
ax.legend()
plt.show()
""")

md("10", r"""
**Figure description.** Two histograms of the number of real target tokens per batch (horizontal
axis) over one epoch: how many batches (vertical axis) have each size. The red one, fixed batches of
64 random pairs, is a narrow bump a little below 600 tokens, with one batch apart near 216, the
last, smaller batch. The blue one, batches filled up to 1,000 positions from sorted pairs, spreads
from about 480 to 1,000 tokens, most of them between 800 and 1,000: a batch of short numbers holds many pairs and little padding, a
batch of long ones fewer pairs, and none exceeds the budget. For the same tokens, the blue batches
are fewer and almost free of padding.

## 2. Gradient accumulation: one bigger batch in several passes

The paper's 25,000 target tokens per step did not fit on one GPU: each of the 8 computed a part.
One process can do the same in turn: run several **micro-batches** through forward and backward,
let PyTorch **add** their gradients in `.grad`, and take one optimizer step at the end.

The subtle part is the loss. It is a mean over **tokens**: for a batch of $n$ target tokens with
losses $\ell_1, \dots, \ell_n$, $L = \frac{1}{n} \sum_{i=1}^{n} \ell_i$. Split into $n_{\text{micro}}$
micro-batches, micro-batch $m$ holding $n_m$ tokens with mean loss $L_m$:

$$L = \frac{1}{n} \sum_{m=1}^{n_{\text{micro}}} n_m L_m = \sum_{m=1}^{n_{\text{micro}}} \frac{n_m}{n} L_m,
\qquad \nabla L = \sum_{m=1}^{n_{\text{micro}}} \frac{n_m}{n} \nabla L_m .$$

In words: each micro-batch counts by its share of the tokens. Averaging the micro-batch means
with equal weights, $\frac{1}{n_{\text{micro}}} \sum_m L_m$, is a different loss whenever the
micro-batches hold different numbers of tokens, as batches by tokens do. By hand: micro-batch A has
10 tokens of mean loss 2.0, B 30 tokens of mean loss 1.0. The whole batch's mean is
$(10 \cdot 2.0 + 30 \cdot 1.0)/40 = 50/40 = 1.25$; the unweighted mean of means is
$(2.0 + 1.0)/2 = 1.5$, which gives A's 10 tokens as much say as B's 30.
""")

code("11", r"""
n_a, loss_a, n_b, loss_b = 10, 2.0, 30, 1.0
print("the whole batch's mean:", (n_a * loss_a + n_b * loss_b) / (n_a + n_b))
print("weighted by tokens:    ", n_a / (n_a + n_b) * loss_a + n_b / (n_a + n_b) * loss_b)
print("mean of the two means: ", (loss_a + loss_b) / 2)
""")

md("12", r"""
The same on the model: three micro-batches of notebook 09's pairs of very different lengths, the
gradient of the three as one batch against the token-weighted sum of their gradients and against
the unweighted mean. (`token_loss(model, src, tgt_in, tgt_out)` is the mean over the target tokens,
`n_tokens(tgt_out)` counts them.)
""")

code("13", r"""
pairs_by_length = sorted(train_pairs, key=lambda p: (len(tokenize(p.french)), p.number))
micro = [make_batch(token_pairs(group), distributed.vocab())
         for group in (pairs_by_length[:8], pairs_by_length[5000:5012], pairs_by_length[-3:])]
counts = [n_tokens(tgt_out) for _, _, tgt_out in micro]
print("target tokens per micro-batch:", counts, "total", sum(counts))


def gradient(losses_of):
    # the gradient of every weight after backward() of the losses that losses_of(model) returns
    torch.manual_seed(SEED)
    model = new_model()
    for loss in losses_of(model):
        loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


big = gradient(lambda m: [token_loss(m, *one_batch(micro))])
weighted = gradient(lambda m: [token_loss(m, *b) * n_tokens(b[2]) / sum(counts) for b in micro])
unweighted = gradient(lambda m: [token_loss(m, *b) / len(micro) for b in micro])
print(f"{big.numel():,} numbers in each gradient")
""")

code("14", r"""
gap_weighted, gap_unweighted = (weighted - big).abs().max().item(), (unweighted - big).abs().max().item()
print(f"weighted by tokens vs one big batch: largest difference {gap_weighted:.1e}")
print(f"unweighted mean    vs one big batch: largest difference {gap_unweighted:.1e}")
assert gap_weighted < 1e-6 < 1e-2 < gap_unweighted
""", tags=[IGNORE], ignore_output_reason=ROUNDING)

md("15", r"""
Weighted by tokens, the accumulated gradient is the big batch's to float32 rounding (a difference
below $10^{-6}$: the sums are added in another order). The unweighted mean of the micro-batch means
is off by more than $10^{-2}$ on some weights: it is the gradient of another loss, one where the 16
tokens of the 8 shortest numbers count as much as the 84 tokens of the next micro-batch.

## Your turn 1: the accumulation loop

Write `my_accumulated_step(model, optimizer, micro_batches)`: one optimizer step on the union of
`micro_batches`, a list of `(src, tgt_in, tgt_out)`, equal to one step on all of them as one batch.
Zero the gradients once; for each micro-batch, `token_loss(model, src, tgt_in, tgt_out)` times its
share of the target tokens, then `backward()`; one `optimizer.step()` at the end. Return the loss of
the whole batch as a number (the sum of the scaled losses, `.item()`). The check runs your function
on three micro-batches of very different numbers of target tokens with an SGD optimizer, and
compares the weights with one step on the three as one batch; `.grad` holds the previous step's
gradients when it starts, as in a training loop.
""")

code("16", r"""
def my_accumulated_step(model, optimizer, micro_batches):
    '''One optimizer step on the union of micro_batches, each (src, tgt_in, tgt_out); returns its loss.'''
    optimizer.zero_grad()
    total = sum(n_tokens(tgt_out) for _, _, tgt_out in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * n_tokens(tgt_out) / total
        loss.backward()                    # adds this micro-batch's share into every .grad
        whole += loss.item()
    optimizer.step()
    return whole
""", tags=["solution"], minutes=12, exercise=(
    "def my_accumulated_step(model, optimizer, micro_batches):\n"
    "    '''One optimizer step on the union of micro_batches, each (src, tgt_in, tgt_out); returns its "
    "loss.'''\n"
    "    # your code here: zero the gradients once, backward() each micro-batch's token_loss times its\n"
    "    # share of the target tokens, one optimizer.step(); return the whole batch's loss (a number)\n"
    "    ..."))

code("17", "check_accumulation(my_accumulated_step)", tags=["check"])

md("18", r"""
Each `backward()` adds into `.grad`, so the gradients of the micro-batches sum up until the next
`zero_grad()`; scaling micro-batch $m$'s loss by $n_m / n$ makes the sum the gradient of the mean
over all $n$ tokens. The mistakes the check names: the means averaged with equal weights (or
weighted by sentences), the losses not scaled (a gradient $n_{\text{micro}}$ times too large on
average), `zero_grad()` inside the loop (only the last micro-batch counts), `optimizer.step()` inside
the loop ($n_{\text{micro}}$ small steps instead of one), no `zero_grad()` at the start (the previous
step's gradients added in), and no step at all.
""", tags=["solution-only"])

md("19", r"""
`helpers.distributed.accumulated_step` is this function; the next sections use it, not yours.
Accumulation buys a bigger batch with the memory of a small one, at the price of time: the
$n_{\text{micro}}$ passes run one after the other. Workers run them at the same time.

## 3. Data parallel with `torch.distributed`

Now several **processes**, each a whole Python with its own copy of the model, on its own core (on
the paper's machine, its own GPU). Each is a **worker**; the $W$ workers together are the **world**,
$W$ the **world size** (`world_size`); each has a number from 0 to $W - 1$, its **rank** (`rank`).
They talk through a **process group**: `dist.init_process_group("gloo", init_method=...,
rank=rank, world_size=world_size)`. gloo is PyTorch's backend for CPUs (NCCL is the one for NVIDIA
GPUs); `init_method` says where the workers meet. Here it is a file in a fresh temporary folder
(`file://...`), so two notebooks running at once can never collide; over TCP (`tcp://host:port`)
they meet at a port, which must be free: bind port 0 to let the system pick one.

`helpers.distributed.launch(target, W, *args)` starts the $W$ processes with
`torch.multiprocessing.start_processes`, joins each to the group, runs `target(rank, world_size,
*args)` in each, and returns their results in rank order. On Linux (Colab, Kaggle) it **forks** the
notebook's process: each worker starts as a copy of it, a function defined in a cell included, and
is ready in a fraction of a second. (The other way, *spawn*, starts a fresh Python that must import
torch and find the function by its module and name; it works for functions of an importable module
such as `helpers.distributed`, and `launch` uses it where the system cannot fork.) The workers'
prints go to files, and `launch` ends them in every case: a worker that raises, one that waits
forever (after 60 s), or an interrupted cell.

The one collective this notebook needs is the **all-reduce**: each worker passes a tensor, and
afterwards every worker's tensor holds the sum over all of them.
""")

code("20", r"""
def hello(rank, world_size):
    x = torch.full((3,), float(rank + 1))   # worker 0 holds 1s, worker 1 holds 2s
    dist.all_reduce(x)                      # now both hold the sum, 1 + 2
    return f"worker {rank} of {world_size}: {x.tolist()}"


start = time.perf_counter()
print(*launch(hello, 2), sep="\n")
print(f"(started, joined and ended 2 workers in {time.perf_counter() - start:.1f} s)")
""")

md("21", r"""
**The gradient of the whole batch from the workers' gradients.** Each step's batch is cut into $W$
**shards**, one per worker (`shard(batch, rank, world_size)`: its slice of the rows). Each worker
computes $g_{\text{rank}}$, the gradient of the mean loss over its own shard. When the shards hold
the same number of target tokens (the batches here are built so: `step_batch` gives each step pairs
whose French has the same length), the mean over the whole batch is the mean of the shards' means,
and its gradient is the mean of their gradients (section 2 with equal weights):

$$g = \frac{1}{W} \sum_{\text{rank}=0}^{W-1} g_{\text{rank}}.$$

In words: add the workers' gradients (an all-reduce), then divide by the number of workers. By
hand, for one weight with $W = 2$: $g_0 = 0.3$, $g_1 = 0.5$; the all-reduce gives both workers
$0.8$, and dividing by 2 gives both $0.4$, the whole batch's gradient. Both then take the same step
from the same weights, so they stay identical, step after step. With shards of different token
counts, each worker would weight its loss by its share of the tokens, as in section 2.
""")

code("22", r"""
g = torch.tensor([0.3, 0.5])               # one weight's gradient on worker 0 and on worker 1
print("all-reduce (sum):", round(g.sum().item(), 4), "-> divided by W = 2:", round(g.sum().item() / 2, 4))
""")

md("23", r"""
## Your turn 2: the all-reduce by hand

Write `my_worker(rank, world_size, steps)`, what every worker runs: build its copy of the model
(`torch.manual_seed(SEED)` then `new_model()`), an optimizer `torch.optim.SGD(model.parameters(),
lr=LR)`, and for each step in `range(steps)`: `optimizer.zero_grad()`, `loss = shard_loss(model,
step, rank, world_size)` (the mean loss on this worker's shard of the step's batch),
`loss.backward()`, then **average every parameter's gradient over the workers** with
`dist.all_reduce(p.grad)` and a division, then `optimizer.step()`. Return the model.

The check runs your function in 2 worker processes for 3 steps and compares the weights with
`DistributedDataParallel`'s and with one process on the whole batch (within $10^{-5}$; float32
rounding makes them differ by about $10^{-7}$); it names the likely mistake otherwise. A mistake
that raises in a worker prints one line, and no process is left behind.
""")

code("24", r"""
def my_worker(rank, world_size, steps):
    '''One worker of data-parallel training: `steps` SGD steps on its shards, gradients averaged by hand.'''
    torch.manual_seed(SEED)                    # the same seed on every worker: the same initial weights
    model = new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        optimizer.zero_grad()
        loss = shard_loss(model, step, rank, world_size)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)            # the sum of the workers' gradients, on every worker
            p.grad /= world_size               # their mean
        optimizer.step()
    return model
""", tags=["solution"], minutes=15, exercise=(
    "def my_worker(rank, world_size, steps):\n"
    "    '''One worker of data-parallel training: `steps` SGD steps on its shards, gradients averaged by "
    "hand.'''\n"
    "    # your code here: seed, new_model(), SGD; each step zero_grad, shard_loss, backward, average\n"
    "    # every p.grad over the workers with dist.all_reduce, step; return the model\n"
    "    ..."))

code("25", "check_worker(my_worker)", tags=["check"])

md("26", r"""
`dist.all_reduce(p.grad)` sums in place, on every worker, and the division by `world_size` makes it
the mean; it must come after `backward()` (before, the gradients of this step do not exist yet)
and before `step()`. Every worker seeds its generator with the same `SEED`: otherwise the copies
start different and, getting the same averaged updates, stay different. The mistakes the check
names: no division (the sum), a division twice, the weights reduced instead of the gradients, the
reduction before `backward()`, no all-reduce at all (or one on a copy of the gradient), and seeds
that differ between workers. (`dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)` does the sum and the
division at once where the backend has it, as recent versions of gloo do.)
""", tags=["solution-only"])

md("27", r"""
**The same with `DistributedDataParallel`, and in one process.** `helpers.distributed.train_worker`
runs those steps three ways: with the gradients averaged by `average_gradients` (the function above),
with the model wrapped in `nn.parallel.DistributedDataParallel` (DDP), which does the all-reduce
itself during `backward()`, in buckets of gradients, as soon as each bucket is ready, and in one
process on the whole batch. 5 steps each:
""")

code("28", r"""
STEPS = 5
by_hand = launch(train_worker, 2, STEPS, "by hand")
ddp = launch(train_worker, 2, STEPS, "ddp")
one = distributed.one_process(STEPS, 2)
print("the weights moved by up to", f"{largest_difference(by_hand[0]['final'], by_hand[0]['initial']):.2f}")
print("worker 0 and worker 1 identical, by hand:", identical(by_hand[0]["final"], by_hand[1]["final"]),
      "| with DDP:", identical(ddp[0]["final"], ddp[1]["final"]))
print("by hand identical to DDP:", identical(by_hand[0]["final"], ddp[0]["final"]))
""")

code("29", r"""
gap = largest_difference(by_hand[0]["final"], one["final"])
print(f"by hand vs one process on the whole batch, after {STEPS} steps: largest difference {gap:.1e}")
assert gap < 1e-5
""", tags=[IGNORE], ignore_output_reason=ROUNDING)

md("30", r"""
The two workers end with **exactly** the same weights, bit for bit: the all-reduce gives both the
same sums. The hand-written average is also bit for bit DDP's: DDP divides each gradient by $W$ and
sums, we sum and divide, and with $W = 2$ both are exact in binary floating point (a division by 2
only changes the exponent). Against one process on the whole batch the weights agree to about
$10^{-7}$, float32 rounding: one process adds the 16 pairs' contributions in another order than two
processes adding 8 each. Equal as mathematics, equal to rounding as computation.

**Different seeds.** The same run with each worker seeding with its own rank, by hand and with DDP:
""")

code("31", r"""
wrong_hand = launch(train_worker, 2, STEPS, "by hand", "rank")
wrong_ddp = launch(train_worker, 2, STEPS, "ddp", "rank")
print("initial weights identical:", identical(wrong_hand[0]["initial"], wrong_hand[1]["initial"]))
print("final weights identical, by hand:", identical(wrong_hand[0]["final"], wrong_hand[1]["final"]),
      "| with DDP:", identical(wrong_ddp[0]["final"], wrong_ddp[1]["final"]))
print("DDP with seeds 0 and 1 identical to DDP with seed 0 on both:",
      identical(wrong_ddp[0]["final"], ddp[0]["final"]))
""")

md("32", r"""
By hand, two copies that start different end different: the averaged gradients were applied to
two different models. DDP survives the mistake because, when it wraps a model, it **copies rank 0's
weights to every worker** (a broadcast): both runs with DDP end with the weights of seed 0.

**What this changes in the recipe.** The effective batch of one step is
$W \times n_{\text{micro}} \times$ (one micro-batch): the paper's about 25,000 target tokens came
from $W = 8$ GPUs with no accumulation, about 3,125 each. The learning rate schedule,
$lrate = d_{\text{model}}^{-0.5} \cdot \min(step^{-0.5}, step \cdot warmup\_steps^{-1.5})$, counts
optimizer **steps**, not tokens: its 4,000 warmup steps and its rates were chosen for steps of
25,000 tokens. On fewer workers, keep the step the same by accumulating: with $W$ workers,
$n_{\text{micro}} = 8/W$ micro-batches each gives the paper's step exactly (sections 2 and 3
together), and the schedule means what it meant. Changing the batch instead (more workers, a
bigger step) changes what a step is: the usual practice is to raise the learning rate with the
batch and keep a warmup, and to check the result, since the schedule was tuned for one batch size.

## 4. What it costs

Each step, every worker sends and receives its gradient: **4 bytes per parameter** in float32.
For the tiny model here:
""")

code("33", r"""
n_params = sum(p.numel() for p in new_model().parameters())
print(f"{n_params:,} parameters -> {4 * n_params:,} bytes all-reduced per step")
base_params = transformer_params(**BASE)                  # notebook 06's count
print(f"base model: {base_params:,} parameters -> {4 * base_params:,} bytes per step")
""")

md("34", r"""
**The ring all-reduce.** Sending every gradient to every other worker would cost each worker
$(W - 1)$ times its gradient. gloo and NCCL use a ring instead: the gradient of $S$ bytes is cut
into $W$ chunks; in $W - 1$ rounds each worker passes one chunk to its neighbour, which adds its
own (reduce-scatter: afterwards each worker holds one chunk fully summed), then in $W - 1$ more
rounds the summed chunks travel around the ring (all-gather). Each worker sends

$$2 \cdot \frac{W - 1}{W} \cdot S \ \text{bytes},$$

in words: a little under twice the gradient, however many workers there are. By hand: $W = 2$ gives
$2 \cdot 1/2 = 1$ times $S$; $W = 8$ gives $2 \cdot 7/8 = 1.75$ times. For the base model on the
paper's 8 GPUs: $1.75 \times 252{,}329{,}984 = 441{,}577{,}472$ bytes per worker per step.
""")

code("35", r"""
def ring_bytes(size_bytes, world_size):
    return 2 * (world_size - 1) * size_bytes // world_size


for w in (2, 8):
    print(f"W = {w}: each worker sends {ring_bytes(4 * base_params, w):,} bytes per step of the base model "
          f"({ring_bytes(4 * base_params, w) / (4 * base_params):.2f} times the gradient)")
print(f"at 10 GB/s, W = 8: {ring_bytes(4 * base_params, 8) / 1e10:.3f} seconds per step")
""")

md("36", r"""
**Measured here.** The time of one all-reduce between the 2 workers, for float32 tensors from 1,024
numbers (4 kB) to 4,194,304 (16 MB), the shortest of 10 tries, the one least disturbed by other
programs (`helpers.distributed.allreduce_seconds`):
""")

code("37", r"""
sizes = [4 ** k for k in range(5, 12)]                      # 1,024 to 4,194,304 numbers
seconds = launch(distributed.allreduce_seconds, 2, sizes)[0]
for n, s in zip(sizes, seconds, strict=True):
    print(f"{4 * n:>12,} bytes: {1e3 * s:8.2f} ms, {4 * n / s / 1e9:5.2f} GB/s")
rate = 4 * sizes[-1] / seconds[-1]
print(f"the tiny model's gradient ({4 * n_params:,} bytes) at the largest size's rate: "
      f"{1e3 * 4 * n_params / rate:.2f} ms")
assert all(s > 0 for s in seconds) and seconds[-1] > 3 * seconds[0]
""", tags=[IGNORE], ignore_output_reason=TIMING)

code("38", r"""
fig, ax = plt.subplots(figsize=(7, 4))
ax.loglog([4 * n for n in sizes], [1e3 * s for s in seconds], "o-", label="measured, 2 workers, gloo")
ax.axvline(4 * n_params, color="grey", linestyle=":", label="the tiny model's gradient")
ax.set_xlabel("bytes all-reduced")
ax.set_ylabel("time of one all-reduce (ms)")
ax.set_title("All-reduce between 2 CPU worker processes")
ax.legend()
plt.show()
""", tags=[IGNORE], ignore_output_reason=TIMING)

md("39", r"""
**Figure description.** The time of one all-reduce (vertical axis, milliseconds, logarithmic)
against its size in bytes (horizontal axis, logarithmic), for the two worker processes of this
machine; a dotted line marks the tiny model's gradient. The largest tensor takes many times as long
as the smallest, but far from 4,096 times as long, though it is 4,096 times larger: a small
all-reduce costs a fixed price per call (waking the other process, a few system calls), and only
the large ones grow with their bytes, limited by what the memory between two processes carries per
second. The exact times, and how smooth the curve is, change with the machine and its load: on a
busy machine single points jump.

**The paper's 8 GPUs, by hand.** 441,577,472 bytes per worker per step. Over a link of 10 GB/s
(the order of a PCIe 3.0 ×16 slot, what P100s of 2017 talked through without NVLink), that is
$441{,}577{,}472 / 10^{10} = 0.044$ s, about a tenth of the 0.4 s step. DDP hides part of it: it
starts the all-reduce of the last layers' gradients while `backward()` is still computing the
first layers'.

**The limit on 2 CPU cores.** The 2 workers share the machine's 2 cores with each other and with
everything else (this notebook's own process included). The same 8 steps of 32 pairs, one process
on all of them against 2 DDP workers on 16 each:
""")

code("40", r"""
steps, pairs = 8, 32
one_time = launch(distributed.timed_steps, 1, steps, pairs)[0]
two_times = launch(distributed.timed_steps, 2, steps, pairs)
speedup = one_time / max(two_times)
print(f"one process: {one_time:.2f} s; 2 workers: {max(two_times):.2f} s; speed-up {speedup:.2f}")
assert 0 < speedup < 4
""", tags=[IGNORE], ignore_output_reason=TIMING)

md("41", r"""
The speed-up is below 2 in every run we made, and it changes from run to run; on a busy machine it
can even fall below 1, two workers being slower than one process. Three reasons: each
step waits for the slower worker (the all-reduce cannot finish before both gradients exist); the
all-reduce itself adds time that one process never spends; and the two "cores" are shared with
the notebook and any other program, and on many cloud machines they are two hyper-threads of one
physical core, which share its arithmetic units (there the speed-up is near 1). Data parallelism
pays when each worker has its own device and the computation of a step is large next to its
communication: on the paper's GPUs, about 0.4 s of computation against a few hundredths of a
second of all-reduce, and NVLink or InfiniBand links that carry tens of GB/s.

## 5. Beyond one machine: `torchrun`

In practice the worker is a script, started by **torchrun** (`python -m torch.distributed.run`),
which starts `--nproc_per_node` processes, gives each its `RANK`, `LOCAL_RANK`, `WORLD_SIZE` and the
address where they meet (`MASTER_ADDR`, `MASTER_PORT`) in environment variables, restarts them if
asked, and ends them all if one fails. The script calls `dist.init_process_group("gloo")` with no
address: it reads them from the environment. `--standalone` makes torchrun pick a free port on this
machine itself. The same training as section 3, as a script:
""")

code("42", r"""
SCRIPT = '''
import os
import torch
import torch.distributed as dist
from helpers import distributed

torch.set_num_threads(1)
dist.init_process_group("gloo")            # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: set by torchrun
rank, world_size = dist.get_rank(), dist.get_world_size()
result = distributed.train_worker(rank, world_size, 5, "ddp")
finals, lines = [None] * world_size, [None] * world_size
dist.all_gather_object(finals, result["final"])
dist.all_gather_object(lines, f"rank {rank} of {world_size}, LOCAL_RANK {os.environ['LOCAL_RANK']}")
if rank == 0:
    print(*lines, sep="\\n")
    print("the workers' weights are identical:", all(distributed.identical(finals[0], f) for f in finals))
dist.destroy_process_group()
'''
with tempfile.TemporaryDirectory() as folder:
    script = pathlib.Path(folder) / "train_ddp.py"
    script.write_text(SCRIPT)
    done = distributed.torchrun(script, nproc=2)
print("$", " ".join(["python", *done.args[1:-1], "train_ddp.py"]))
print(done.stdout, end="")
print("exit code", done.returncode)
""")

md("43", r"""
The script's rank 0 gathered one line from each worker and their weights: torchrun started 2
processes, numbered 0 and 1, and they trained one model. Nothing in the script names the machine:
on a cluster, the same command runs on each machine, with the flags that say how many machines
there are and where they meet (said here, not run):

```
torchrun --nnodes 2 --nproc_per_node 8 --rdzv-backend c10d --rdzv-endpoint host0.example:29400 \
         --rdzv-id run42 train_ddp.py
```

`--nnodes 2` machines of `--nproc_per_node 8` processes each (one per GPU) make a world of 16;
they meet at `--rdzv-endpoint`, an address and a port on one of them (the *rendezvous*), under the
job name `--rdzv-id`; each process gets its global `RANK` (0 to 15) and its `LOCAL_RANK` on its
machine (0 to 7, the GPU it takes). On GPUs the backend is `"nccl"` instead of `"gloo"`, and the
ring runs over NVLink inside a machine and over the network between machines.
""")

md("44", r"""
## Check your understanding

**1.** You have 2 workers, each of which fits micro-batches of 3,125 target tokens, and you want the
paper's steps of 25,000 target tokens. How many micro-batches $n_{\text{micro}}$ must each worker
accumulate per step? Set `answer_1` to a number.
""")

code("45", "answer_1 = 4", tags=["solution"], minutes=3, exercise="answer_1 = None   # a number")
code("46", "check_micro_question(answer_1)", tags=["check"])
md("47", r"""
**4.** A step holds $W \times n_{\text{micro}} \times 3{,}125$ tokens, so
$n_{\text{micro}} = 25{,}000 / (2 \times 3{,}125) = 4$. The paper's 8 GPUs needed none: $8 \times
3{,}125 = 25{,}000$. Accumulating 4 micro-batches on each of 2 workers gives exactly the same step
(sections 2 and 3), so the learning-rate schedule keeps its meaning; it takes 4 times longer.
""", tags=["solution-only"])

md("48", r"""
**2.** Two workers start from **different** initial weights (each seeded with its rank), and average
their gradients by hand with an all-reduce, as in Your turn 2, with SGD. How does the difference
between their weights, $w_0 - w_1$, change over the steps? Set `answer_2` to one of
`"identical"` (it becomes 0: averaging makes the copies equal), `"stays"` (it stays what it was at
the start), `"grows"`, `"shrinks"` (it shrinks but never reaches 0).
""")

code("49", 'answer_2 = "stays"', tags=["solution"], minutes=3,
     exercise='answer_2 = None   # one of "identical", "stays", "grows", "shrinks"')
code("50", "check_seeds_question(answer_2)", tags=["check"])
md("51", r"""
**It stays.** After the all-reduce both workers hold the same averaged gradient $\bar g$, and both
subtract the same $lr \cdot \bar g$: $(w_0 - lr\,\bar g) - (w_1 - lr\,\bar g) = w_0 - w_1$. The
difference of the start is carried along unchanged (to float rounding), so the copies never meet;
and $\bar g$ is the gradient of neither copy's loss on the whole batch. The cell below measures it
on section 3's run with seed = rank.
""", tags=["solution-only"])

code("52", r"""
start_gap = {k: wrong_hand[0]["initial"][k] - wrong_hand[1]["initial"][k] for k in wrong_hand[0]["initial"]}
end_gap = {k: wrong_hand[0]["final"][k] - wrong_hand[1]["final"][k] for k in start_gap}
print(f"largest |w0 - w1| at the start: {max(float(v.abs().max()) for v in start_gap.values()):.3f}; "
      f"largest change of w0 - w1 over {STEPS} steps: {largest_difference(end_gap, start_gap):.1e}")
assert largest_difference(end_gap, start_gap) < 1e-5
""", tags=["solution-only", IGNORE], ignore_output_reason=ROUNDING)

md("53", r"""
**3.** In a ring all-reduce, how many bytes does each of **16** workers send per step for the base
model's float32 gradients (63,082,496 parameters)? Set `answer_3` to a number of bytes.
""")

code("54", "answer_3 = 2 * (16 - 1) * 4 * 63_082_496 // 16", tags=["solution"], minutes=4,
     exercise="answer_3 = None   # a number of bytes")
code("55", "check_ring_question(answer_3)", tags=["check"])
md("56", r"""
**473,118,720 bytes**: $2 \cdot 15/16 \cdot 4 \cdot 63{,}082{,}496$. With 16 workers the factor is
1.875, against 1.75 for 8: the bytes a worker sends hardly grow with the number of workers, which is
why the ring scales. What grows is the number of rounds, $2(W - 1)$, each with its fixed cost (the
flat part of section 4's curve).
""", tags=["solution-only"])

md("57", r"""
## Recap

- **Batches by tokens**: sorted by length and filled up to a budget of positions, notebook 09's
  pairs waste 1.7 % of the computation on padding instead of 37.7 % with fixed batches of 64, and
  every step has a bounded amount of work, as the paper's 25,000-token batches.
- **Gradient accumulation**: $n_{\text{micro}}$ micro-batches, backward after backward, one step,
  equal to the big batch's step when each micro-batch's mean loss is weighted by its share of the
  tokens; the unweighted mean of means is another gradient.
- **Data parallel**: $W$ processes in a gloo process group, each with its rank and its shard; after
  `backward()`, an all-reduce (a sum) and a division by $W$ give every worker the whole batch's
  gradient. You wrote it; it equals `DistributedDataParallel` bit for bit with $W = 2$, and one
  process on the whole batch to float rounding; the workers stay identical, if they start identical
  (DDP makes sure of it by copying rank 0's weights).
- **The recipe**: the effective batch is $W \times n_{\text{micro}} \times$ a micro-batch, and the
  schedule counts steps: accumulate to keep the paper's step on fewer workers.
- **The cost**: 4 bytes per parameter each step; the ring sends $2 (W - 1)/W$ of them per worker,
  441,577,472 bytes for the base model on 8 GPUs, about a tenth of its 0.4 s step at 10 GB/s; on 2
  shared CPU cores the speed-up stays below 2.
- **torchrun** starts the workers of a script and gives them their ranks; `--nnodes` and
  `--rdzv-endpoint` take the same script to several machines.

## Limits of what was shown

- Two processes on one CPU: the equalities hold as they would on GPUs, the times do not say what
  GPUs with NVLink or InfiniBand do.
- Dropout was switched off to compare runs exactly; with it, each worker draws its own masks (as
  it should), and runs agree only in distribution.
- The shards of a step hold the same number of target tokens; with unequal shards each worker
  must weight its loss by its share of the step's tokens, which needs the total, one more small
  all-reduce.
- Only data parallelism: models too large for one device are also cut across devices (tensor
  parallelism, pipeline parallelism, sharded optimizer states as in ZeRO and FSDP), which this
  course does not cover.
- The paper's figures (8 P100s, 0.4 s a step) are its own; the 10 GB/s link is an assumption for a
  rough estimate, not a measurement of its machine.
""")

nb = nbformat.v4.new_notebook()
nb.cells = cells
nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
               "language_info": {"name": "python"}}
nbformat.write(nb, ROOT / "solutions" / "10_many_workers.ipynb")
print("wrote", len(cells), "cells")
