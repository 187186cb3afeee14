"""Run the test command's pytest under every CPU kernel family and thread count this CPU has.

PyTorch picks its CPU kernels by instruction set; ``ATEN_CPU_CAPABILITY`` forces another family
(another CPU's rounding) on this machine, and the thread count changes how sums are split. The
suite must pass under each: no test's verdict may rest on one CPU's rounding. This command runs
pytest (as ``.ci/run`` does, from the repository root) once per family and thread count, one after
the other, and prints a table: family, threads, passed, failed, seconds.

    .venv/bin/python tests/cpu_variants.py                          # every family, 1 and 2 threads
    .venv/bin/python tests/cpu_variants.py --families default avx2 --threads 1
    .venv/bin/python tests/cpu_variants.py --pytest-args tests/test_recipe_checks.py -n 0

Not part of the test command: a full table is six runs of the whole suite (about 40 minutes here).
Exit status 1 when any run failed.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import kernels  # noqa: E402

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def counts(output):
    """passed and failed (errors counted as failed) from pytest's last line."""
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    found = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?)", tail)}
    return found.get("passed", 0), found.get("failed", 0) + found.get("error", 0) + found.get("errors", 0)


def run(family, threads, pytest_args):
    """(passed, failed, seconds, last line) of one pytest run under a family and a thread count."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=family, **{v: str(threads) for v in THREAD_VARIABLES})
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    passed, failed = counts(done.stdout)
    if done.returncode and not failed:
        failed = 1                                   # pytest stopped before counting (collection error)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    failures = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return passed, failed, seconds, last, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=None, help="default: every family this CPU has")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[],
                        help="passed to pytest (default: none, the test command's own settings)")
    args = parser.parse_args(argv)
    families = args.families or kernels.families()
    rows, failed_any = [], False
    for family in families:
        for threads in args.threads:
            passed, failed, seconds, last, failures = run(family, threads, args.pytest_args)
            failed_any |= bool(failed)
            rows.append(f"| {family} | {threads} | {passed} | {failed} | {seconds:.0f} |")
            print(f"  {family}, {threads} thread(s): {last}", file=sys.stderr)
            for line in failures:
                print(f"    {line}", file=sys.stderr)
    import torch
    print(f"CPU: {kernels.own()} (families {', '.join(kernels.families())}); torch {torch.__version__}\n")
    print("| family | threads | passed | failed | seconds |\n|---|---|---|---|---|")
    print("\n".join(rows))
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
