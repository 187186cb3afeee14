"""Benchmark: milliseconds per training step of the tiny reversal model (not a pytest test).

    python tests/benchmark_training.py [--repeats 7] [--steps 50] [--threads N] [--no-breakdown]
                                       [--no-full-run]

Measures, in the same run and interleaved (so both see the same machine load), one training step
of notebook 05 — a batch of 64 random sequences of one random length (3 to 8 letters), forward,
label-smoothed loss, backward, Adam, the warmup schedule — for two models of the same
configuration (vocabulary 13, d_model 64, 4 heads, d_ff 256, 2 + 2 layers, dropout 0.1, shared
embedding × √d_model, sinusoidal positions, tied output layer):

- ``helpers``: helpers.model.Transformer;
- ``nn.Transformer``: the same embedding and output around ``torch.nn.Transformer`` (post-norm,
  the paper's layout: its two extra final LayerNorms removed).

Prints the median ms/step of each over several repeats (wall clock and this process's CPU time)
and their ratio; then (unless --no-breakdown) where a step's time goes, from torch.profiler,
and the floor of a step on this machine: the fixed cost of a step (a batch of one sequence) plus
the extra matrix products of a batch of 64; then (unless --no-full-run) times notebook 05's
whole training cell: 1500 steps, its evaluations and the checkpoint average, with the final
exact match. Targets on a 2-core CPU:
helpers ≤ 20 ms/step, ratio ≤ 0.8, the full run well under a minute. Timings depend on the
machine and on its load: --threads 2 is faster on an idle 2-core machine, much slower on a busy
one (the two threads wait for each other at every small operation).
"""

import argparse
import math
import pathlib
import platform
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from helpers import seed_all  # noqa: E402
from helpers.attention import causal_mask  # noqa: E402
from helpers.model import Transformer  # noqa: E402
from helpers.positions import sinusoidal_positions  # noqa: E402
from helpers.recipe import (  # noqa: E402
    adam_with_warmup,
    average_weights,
    cross_entropy,
    smoothed_loss,
    train,
    train_step,
)
from helpers.decoding import exact_matches, greedy_decode  # noqa: E402
from helpers.tasks.reversal import PAD, VOCAB, batch  # noqa: E402

D, H, D_FF, N_LAYERS, P, BATCH, WARMUP = 64, 4, 256, 2, 0.1, 64, 400
THREADS = 1   # as notebook 05's training cell: robust when the machine is shared


def run_reversal():
    """Notebook 05's training cell: 1500 steps on one-length batches, the test loss at step 1 and
    every 100 steps, the exact match at steps 1, 500, 1000, 1500, then the average of the last 5
    checkpoints. Returns (exact match of the last weights, of the averaged weights)."""
    seed_all(0)
    gen = torch.Generator().manual_seed(0)
    test_src, test_in, test_out = batch(500, torch.Generator().manual_seed(1234))
    model = Transformer(VOCAB, D, H, D_FF, N_LAYERS, P)
    opt, sched = adam_with_warmup(model, d_model=D, warmup=WARMUP)

    def exact_match(m):
        return exact_matches(greedy_decode(m, test_src), test_out).float().mean().item()

    def evaluate(m, step):
        result = {"test_loss": cross_entropy(m, test_src, test_in, test_out, PAD)}
        if step in (1, 500, 1000, 1500):
            result["exact_match"] = exact_match(m)
        return result

    history = train(model, opt, sched, smoothed_loss(PAD), 1500, lambda: batch(BATCH, gen, one_length=True),
                    evaluate, every=100, keep=5, progress=False)
    model.load_state_dict(average_weights(history["checkpoints"]))
    return history["evals"][-1]["exact_match"], exact_match(model)


class TorchTransformer(nn.Module):
    """The same model around nn.Transformer: embedding × √d + positions, tied output layer."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, D)
        nn.init.normal_(self.embedding.weight, std=D ** -0.5)
        self.register_buffer("pe", sinusoidal_positions(256, D), persistent=False)
        self.transformer = nn.Transformer(D, H, N_LAYERS, N_LAYERS, D_FF, P, batch_first=True)
        self.transformer.encoder.norm = self.transformer.decoder.norm = None   # post-norm: none
        self.dropout = nn.Dropout(P)

    def embed(self, ids):
        return self.dropout(self.embedding(ids) * math.sqrt(D) + self.pe[: ids.shape[1]])

    def forward(self, src, tgt):
        pad = src == PAD
        y = self.transformer(self.embed(src), self.embed(tgt), tgt_mask=causal_mask(tgt.shape[1]),
                             src_key_padding_mask=pad, memory_key_padding_mask=pad)
        return y @ self.embedding.weight.T


def stepper(model, seed=0, size=BATCH):
    """A function doing one training step of notebook 05 on this model (both models draw the
    same batches: `size` sequences of one random length)."""
    opt, sched = adam_with_warmup(model, D, WARMUP)
    loss_fn = smoothed_loss(PAD)
    gen = torch.Generator().manual_seed(seed)
    return lambda: train_step(model, opt, sched, loss_fn, *batch(size, gen, one_length=True))


# Where the time of a step goes: self CPU time of these operators, as the profiler sees them.
GROUPS = {
    "matrix products (mm, addmm, bmm)": ("aten::mm", "aten::addmm", "aten::bmm"),
    "attention kernels (SDPA, forward and backward)": ("aten::_scaled_dot_product",),
    "dropout masks (bernoulli_)": ("aten::bernoulli_",),
}


def breakdown(step, n):
    """ms per step of each GROUPS entry and of everything else, from torch.profiler over n steps
    (the profiler adds a little to every small operator; the matrix products barely change)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    parts = {name: sum(e.self_cpu_time_total for e in events if e.key.startswith(prefixes))
             for name, prefixes in GROUPS.items()}
    parts["everything else (LayerNorm, ReLU, copies, autograd, Adam...)"] = total - sum(parts.values())
    return {name: us / 1000 / n for name, us in parts.items()}


def time_steps(step, n):
    """(wall-clock ms, CPU ms of this process) per step, over n steps."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        step()
    return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds per model")
    parser.add_argument("--steps", type=int, default=50, help="training steps per round")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"torch threads (default {THREADS}, as notebook 05)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the profile of a step")
    parser.add_argument("--no-full-run", action="store_true", help="skip the 1500-step run")
    args = parser.parse_args()

    torch.set_num_threads(args.threads or THREADS)
    print(f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} thread(s), "
          f"batch {BATCH}, {args.repeats} rounds of {args.steps} steps")
    seed_all(0)
    models = {"helpers": Transformer(VOCAB, D, H, D_FF, N_LAYERS, P), "nn.Transformer": TorchTransformer()}
    assert sum(p.numel() for p in models["helpers"].parameters()) == 234_304
    steps = {name: stepper(model) for name, model in models.items()}
    for step in steps.values():                      # warm up: first calls allocate
        time_steps(step, 10)
    times = {name: [] for name in steps}
    for _ in range(args.repeats):                    # interleaved: both see the same load
        for name, step in steps.items():
            times[name].append(time_steps(step, args.steps))
    medians = {}
    for name, t in times.items():
        wall, cpu = statistics.median(w for w, _ in t), statistics.median(c for _, c in t)
        medians[name] = wall
        print(f"{name:>15}: median {wall:6.1f} ms/step wall clock, {cpu:6.1f} ms CPU time "
              "(rounds: " + " ".join(f"{w:.1f}" for w, _ in t) + ")")
    ratio = medians["helpers"] / medians["nn.Transformer"]
    print(f"ratio helpers / nn.Transformer (wall clock): {ratio:.2f}")
    print(f"targets: helpers <= 20 ms/step: {medians['helpers'] <= 20}; ratio <= 0.8: {ratio <= 0.8}")
    print("(on a busy machine the wall clock includes waiting for a core; the CPU time does not)")

    if not args.no_breakdown:
        # The floor: what a step costs before any attention, dropout or normalisation work.
        one = stepper(Transformer(VOCAB, D, H, D_FF, N_LAYERS, P), size=1)
        time_steps(one, 10)
        fixed = statistics.median(time_steps(one, args.steps)[0] for _ in range(args.repeats))
        parts = breakdown(steps["helpers"], args.steps)
        print(f"where a helpers step goes (torch.profiler, {sum(parts.values()):.1f} ms in all):")
        for name, ms in parts.items():
            print(f"  {ms:6.1f} ms  {name}")
        products = "matrix products (mm, addmm, bmm)"
        extra = parts[products] - breakdown(one, args.steps)[products]
        floor = fixed + extra
        print(f"fixed cost of a step (1 sequence: Python, dispatch, autograd, Adam): {fixed:.1f} ms")
        kernels = sum(ms for name, ms in parts.items() if name.startswith(("attention", "dropout")))
        print(f"floor = fixed cost + the extra matrix products of a batch of {BATCH} ({extra:.1f} ms) "
              f"= {floor:.1f} ms, before the attention kernels and dropout masks ({kernels:.1f} ms more)")

    if not args.no_full_run:
        start = time.perf_counter()
        last, averaged = run_reversal()
        seconds = time.perf_counter() - start
        print(f"notebook 05's run (1500 steps, evaluations, checkpoint average): {seconds:.1f} s; "
              f"exact match: last weights {last:.1%}, averaged {averaged:.1%}")


if __name__ == "__main__":
    main()
