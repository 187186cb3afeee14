"""Seed sweep: re-train each training notebook with several seeds and check its claims.

Every number or statement a notebook makes about a trained model goes through
``helpers.claims.expect`` / ``expect_true``. This command executes the solution copy of each
notebook given (default: every notebook with a cell tagged ``parameters`` that sets
``SEED``) once per seed with papermill, collects those claims, and prints, per notebook, a
table: each claim, the range the notebook states, the range measured over the runs, and
whether it held in every run. Exit status 1 when a claim failed in some run.

    .venv/bin/python tests/seed_sweep.py                   # all training notebooks, seeds 0-5
    .venv/bin/python tests/seed_sweep.py 05 --seeds 1 2 3  # one notebook, three seeds
    .venv/bin/python tests/seed_sweep.py 07 --jobs 1 --json sweep07.json
    .venv/bin/python tests/seed_sweep.py 09 --families default avx512

Every seed runs under two of PyTorch's CPU kernel families (``ATEN_CPU_CAPABILITY``; by
default ``default`` and this CPU's own, see ``tests/kernels.py``): another family rounds as
another CPU does, and training makes those differences grow. A claim must hold in every run,
every seed under every family. Seed 0 under the CPU's own family is the notebook's stored run.
Runs go two at a time (--jobs): each training cell uses one thread.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sweepable():
    """Stems of the solution notebooks that take a SEED parameter."""
    import nbformat
    stems = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any("parameters" in c.metadata.get("tags", []) and "SEED" in c.source for c in nb.cells):
            stems.append(path.stem)
    return stems


def run_one(stem, seed, family=None):
    """Execute solutions/<stem>.ipynb with SEED = seed under a kernel family; (claims, seconds, error)."""
    import papermill
    with tempfile.TemporaryDirectory() as tmp:
        record = pathlib.Path(tmp) / "claims.jsonl"
        os.environ["COURSE_CLAIMS_FILE"] = str(record)
        if family:  # the kernel papermill starts inherits it
            os.environ["ATEN_CPU_CAPABILITY"] = family
        else:
            os.environ.pop("ATEN_CPU_CAPABILITY", None)
        start = time.perf_counter()
        error = None
        try:
            papermill.execute_notebook(
                str(ROOT / "solutions" / f"{stem}.ipynb"), str(pathlib.Path(tmp) / "out.ipynb"),
                parameters={"SEED": seed}, cwd=str(ROOT / "solutions"), kernel_name="python3",
                progress_bar=False, log_output=False)
        except Exception as e:  # report the failed run, go on with the others
            error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        seconds = time.perf_counter() - start
        claims = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return claims, seconds, error


def table(stem, runs):
    """Markdown table of one notebook's claims over its runs: {(family, seed): (claims, seconds, error)}."""
    rows, order = {}, []
    for seed, (claims, _, _) in sorted(runs.items()):
        for c in claims:
            if c["what"] not in rows:
                rows[c["what"]] = []
                order.append(c["what"])
            rows[c["what"]].append((seed, c))
    n = len(runs)
    families = sorted({f for f, _ in runs})
    seeds = sorted({s for _, s in runs})
    lines = [f"### {stem}: {n} runs (seeds {', '.join(str(s) for s in seeds)}; "
             f"kernel families {', '.join(families)})", "",
             "| claim | stated | measured | held |", "|---|---|---|---|"]
    failed = False
    for what in order:
        seen = rows[what]
        held = sum(c["held"] for _, c in seen)
        failed |= held < n
        first = seen[0][1]
        if "low" in first:
            fmt = first["fmt"]
            values = [c["value"] for _, c in seen]
            stated = f"{fmt.format(first['low'])} to {fmt.format(first['high'])}"
            measured = f"{fmt.format(min(values))} to {fmt.format(max(values))}"
        else:
            stated, measured = "true", f"true in {held}"
        lines.append(f"| {what} | {stated} | {measured} | {held}/{n} |")
    for (family, seed), (_, _seconds, error) in sorted(runs.items()):
        if error:
            failed = True
            lines.append(f"\nseed {seed}, {family}: the run failed ({error})")
    seconds = [s for _, s, _ in runs.values()]
    lines.append(f"\nseconds per run: {min(seconds):.0f} to {max(seconds):.0f}")
    return "\n".join(lines), failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="two-digit numbers, e.g. 05 07 (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--families", nargs="+", default=None,
                        help="ATEN_CPU_CAPABILITY values (default: 'default' and this CPU's own)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="also write every run's claims to this file")
    args = parser.parse_args(argv)
    stems = sweepable()
    if args.notebooks:
        stems = [s for s in stems if s[:2] in args.notebooks]
    if not stems:
        parser.error("no notebook with a SEED parameter matches")
    if args.families is None:
        import kernels
        args.families = sorted({"default", kernels.own()}, key=kernels.ORDER.index)
    results = {stem: {} for stem in stems}
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, stem, seed, family): (stem, family, seed)
                   for stem in stems for family in args.families for seed in args.seeds}
        for future in concurrent.futures.as_completed(futures):
            stem, family, seed = futures[future]
            results[stem][family, seed] = future.result()
            print(f"  {stem} seed {seed} {family}: {results[stem][family, seed][1]:.0f} s", file=sys.stderr)
    failed = False
    for stem in stems:
        text, bad = table(stem, results[stem])
        failed |= bad
        print(text + "\n")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {stem: {f"{f}/{s}": r[0] for (f, s), r in runs.items()} for stem, runs in results.items()},
            indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
