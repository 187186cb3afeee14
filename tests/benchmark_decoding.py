"""Benchmark: decoding speed of the tiny reversal model (not a pytest test).

    python tests/benchmark_decoding.py [--repeats 5] [--threads 1] [--long 128]

Loads the trained checkpoint that notebook 08 decodes (helpers/tasks/checkpoints, notebook 05's averaged
model) and measures, in the same run and interleaved (so that all see the same machine load):

1. the 500 test sequences of notebook 05 (3 to 8 letters, answers of 4 to 9 tokens), decoded
   - greedily without the cache (the whole prefix through the decoder at every step),
   - greedily with the KV cache (one new position per step),
   - with beam search, beam 4, α = 0.6, at most input + 50 tokens, with the cache, finished
     hypotheses kept in the beams (beam_search) or apart from 4 alive ones as in tensor2tensor
     (beam_search_apart),
   - by sampling at temperature 1 (a seeded generator), with the cache;
   as tokens per second: the tokens of the returned answers, up to and including </s>, divided by
   the median wall-clock time of a run (the encoder included);
2. long outputs, where the cache matters: 16 sequences, --long tokens each written greedily
   without stopping at </s>, with and without the cache, tokens per second and the ms of the last
   step (the fastest of the runs at that position).
"""

import argparse
import pathlib
import platform
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from helpers.decoding import (beam_search, beam_search_apart, exact_matches, greedy_decode, sample_decode,
                              time_per_token, up_to_eos)
from helpers.tasks.reversal import CHECKPOINTS, TRAINED, load_tiny
from helpers.tasks.reversal import batch  # noqa: E402


def answer_tokens(outputs):
    """Tokens of the answers (after <s>, up to and including </s>)."""
    return sum(len(up_to_eos(row[1:])) for row in outputs.tolist())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--long", type=int, default=128, help="tokens per sequence in part 2")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {args.threads} thread(s), "
          f"{args.repeats} repeats, median wall clock")

    model = load_tiny(CHECKPOINTS / TRAINED)
    src, _, tgt_out = batch(500, torch.Generator().manual_seed(1234))
    long_max = src.shape[1] + 50
    ways = {
        "greedy, no cache": lambda: greedy_decode(model, src, max_len=long_max, use_cache=False),
        "greedy, KV cache": lambda: greedy_decode(model, src, max_len=long_max, use_cache=True),
        "beam 4, KV cache": lambda: beam_search(model, src, k=4, alpha=0.6, extra=50),
        "beam 4, apart": lambda: beam_search_apart(model, src, k=4, alpha=0.6, extra=50)["tokens"][:, 0],
        "sampling, T = 1": lambda: sample_decode(model, src, temperature=1.0, max_len=long_max,
                                                 generator=torch.Generator().manual_seed(0)),
    }
    times = {name: [] for name in ways}
    outputs = {}
    for _ in range(args.repeats):
        for name, run in ways.items():
            start = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - start)
    print("\n1. the 500 test sequences (notebook 05's test set)")
    for name in ways:
        seconds = statistics.median(times[name])
        tokens = answer_tokens(outputs[name])
        match = exact_matches(outputs[name], tgt_out).float().mean().item()
        print(f"   {name:<18} {seconds * 1e3:7.1f} ms  {tokens:,} tokens  {tokens / seconds:9,.0f} tokens/s"
              f"   exact match {match:.1%}")

    long_src = batch(16, torch.Generator().manual_seed(8), min_len=8)[0]
    print(f"\n2. long outputs: 16 sequences x {args.long} tokens, greedy without stopping")
    per_token = {}
    for use_cache in (False, True):
        start = time.perf_counter()
        per_token[use_cache] = time_per_token(model, long_src, args.long, use_cache, repeats=args.repeats)
        wall = (time.perf_counter() - start) / args.repeats
        label = "KV cache" if use_cache else "no cache"
        print(f"   {label}: {16 * args.long / sum(per_token[use_cache]) * 1e3:9,.0f} tokens/s "
              f"(fastest run per step; {wall:.2f} s per run on average), last step "
              f"{per_token[use_cache][-1]:.2f} ms")
    print(f"   speed-up at position {args.long}: {per_token[False][-1] / per_token[True][-1]:.1f}x; "
          f"whole output: {sum(per_token[False]) / sum(per_token[True]):.1f}x")


if __name__ == "__main__":
    main()
