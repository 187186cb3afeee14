"""The tiny model's Table 3: train every row of helpers.tasks.ablation.ROWS once per seed and write
the results file that notebook 05 reads (not a pytest test).

    .venv/bin/python tests/ablations.py                          # every row, seeds 0 1 2 3 4
    .venv/bin/python tests/ablations.py --seeds 0 1 2
    .venv/bin/python tests/ablations.py --rows base "D: P_drop = 0" --seeds 3

Each run trains one thread; --jobs (default 2) runs go at a time, in separate processes. A bar
shows the runs done and a line is printed per finished run. The file (default
helpers/tasks/data/ablations.json) holds the settings, the torch version and, per row and seed, the
test exact match, the test perplexity, the typical size (RMS) of one number of the token signal and
of the position table at the end of the run (``ablation.scales`` of the averaged model) and the
seconds the run took, and the wall-clock seconds of the commands that made it. Runs already in
the file for the same settings and torch version are kept unless run again (--fresh starts a new
file).
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.tasks import ablation  # noqa: E402


def one_run(row, seed):
    """One run, in a worker process (which imports this file again, so helpers is found)."""
    return row, seed, ablation.run(row, seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rows", nargs="+", default=list(ablation.ROWS), choices=list(ablation.ROWS),
                        metavar="ROW", help="rows to run (default: all): " + ", ".join(ablation.ROWS))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    parser.add_argument("--out", default=str(ablation.RESULTS), help="the results file")
    parser.add_argument("--fresh", action="store_true", help="ignore the runs already in the file")
    args = parser.parse_args(argv)

    import torch
    from tqdm import tqdm
    out = pathlib.Path(args.out)
    runs, seconds_before = {}, 0
    if out.exists() and not args.fresh:
        old = json.loads(out.read_text())
        if old.get("settings") == ablation.SETTINGS and old.get("torch") == torch.__version__:
            runs, seconds_before = old["runs"], old.get("seconds_total", 0)
    todo = [(row, seed) for row in args.rows for seed in args.seeds]
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = [pool.submit(one_run, row, seed) for row, seed in todo]
        bar = tqdm(concurrent.futures.as_completed(futures), total=len(futures), desc="runs")
        for future in bar:
            row, seed, result = future.result()
            runs.setdefault(row, {})[str(seed)] = {k: round(v, 6) for k, v in result.items()}
            bar.write(f"{row:<22} seed {seed}: exact match {result['exact_match']:.1%}, "
                      f"perplexity {result['perplexity']:.4f}, RMS at the end: tokens "
                      f"{result['token_rms']:.3f}, positions {result['pe_rms']:.3f}, "
                      f"{result['seconds']:.0f} s")
    total = time.perf_counter() - start
    ordered = {row: dict(sorted(runs[row].items(), key=lambda kv: int(kv[0])))
               for row in ablation.ROWS if row in runs}
    results = {"settings": ablation.SETTINGS, "torch": torch.__version__,
               "python": platform.python_version(), "machine": platform.machine(),
               "seconds_total": seconds_before + round(total), "jobs": args.jobs, "runs": ordered}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\n{len(todo)} runs in {total:.0f} s ({args.jobs} at a time); wrote {out}\n")
    print(ablation.table(results))


if __name__ == "__main__":
    main()
