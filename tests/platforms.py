"""Run every notebook as Colab and Kaggle do: alone in an empty folder, on their torch and Python.

    python tests/platforms.py                      # colab, kaggle and pinned
    python tests/platforms.py colab                # one platform
    python tests/platforms.py torch=2.12.0,python=3.12 --only 01 05

A platform is a torch version and a Python version: ``colab`` (torch 2.11, Python 3.13),
``kaggle`` (torch 2.10, Python 3.12), ``pinned`` (this interpreter, nothing installed), or
``torch=X,python=Y``. For each one a virtual environment is built once and kept in
``~/.cache/original-transformer/platforms`` (a torch build is several GB). Each notebook of
both copies is copied alone into an empty folder and executed there, its setup cell cloning
the course from a local git repository made from this working tree (``COURSE_REPO_URL``), as
the setup cell clones it from GitHub on a learner's platform. The table gives, per notebook and
platform: ran or failed, seconds, and for a solution copy how many stored text outputs differ,
the strictly compared cells and the cells tagged ``nbval-ignore-output`` (training logs,
timings) counted apart, with the first difference shown below the table.
"""

import argparse
import itertools
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE = pathlib.Path(os.environ.get("COURSE_PLATFORMS_CACHE",
                                    pathlib.Path.home() / ".cache" / "original-transformer" / "platforms"))
PLATFORMS = {"colab": ("2.11.*", "3.13"), "kaggle": ("2.10.*", "3.12"), "pinned": (None, None)}
# What a notebook needs beside torch (Colab and Kaggle have these already), and what runs it.
PACKAGES = ["matplotlib", "tqdm", "nbclient", "nbformat", "ipykernel"]
GIT = ["git", "-c", "user.name=course", "-c", "user.email=course@example.invalid",
       "-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false"]


def local_course_repo(folder, ref="main"):
    """A git repository at folder holding this working tree's helpers/ on branch ref; its URL."""
    folder = pathlib.Path(folder)
    shutil.copytree(ROOT / "helpers", folder / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*GIT, "init", "-q", str(folder)], check=True)
    subprocess.run([*GIT, "-C", str(folder), "add", "."], check=True)
    subprocess.run([*GIT, "-C", str(folder), "commit", "-qm", "course"], check=True)
    subprocess.run([*GIT, "-C", str(folder), "checkout", "-q", "-B", ref], check=True)
    return folder.as_uri()


def sanitizers():
    """The (regex, replacement) pairs of tests/nbval_sanitize.cfg, as the strict comparison uses."""
    text = (ROOT / "tests" / "nbval_sanitize.cfg").read_text()
    return [(re.compile(r), s) for r, s in re.findall(r"regex: (.*)\nreplace: (.*)", text)]


def text_outputs(cell, rules):
    """A code cell's text outputs (streams, text/plain results, errors), sanitized, as one string."""
    from helpers.course.notebooks import merged_streams  # as stored: one stream piece, last bar state

    parts = []
    for out in merged_streams(cell.get("outputs", [])):
        if out["output_type"] == "stream":
            parts.append(f"[{out['name']}] {out['text']}")
        elif out["output_type"] in ("execute_result", "display_data") and "text/plain" in out["data"]:
            if not any(k.startswith("image/") for k in out["data"]):
                parts.append(out["data"]["text/plain"])
        elif out["output_type"] == "error":
            parts.append(f"{out['ename']}: {out['evalue']}")
    text = "".join(p if isinstance(p, str) else "".join(p) for p in parts)
    for regex, replacement in rules:
        text = regex.sub(replacement, text)
    return text


def compare(stored, executed):
    """(strict differences, tolerance differences, first difference or '') of two notebooks.

    The first difference shown is the first strict one, if any: those are the ones that matter.
    """
    import nbformat

    rules = sanitizers()
    a, b = (nbformat.read(p, as_version=4) for p in (stored, executed))
    counts, first = {"strict": 0, "tolerance": 0}, {}
    for i, (old, new) in enumerate(zip(a.cells, b.cells, strict=True)):
        if old.cell_type != "code":
            continue
        before, after = text_outputs(old, rules), text_outputs(new, rules)
        if before != after:
            kind = "tolerance" if "nbval-ignore-output" in old.metadata.get("tags", []) else "strict"
            counts[kind] += 1
            if kind not in first:
                stored_line, got_line = first_difference(before, after)
                first[kind] = f"cell {i} ({kind}): stored {stored_line!r}, got {got_line!r}"
    return counts["strict"], counts["tolerance"], first.get("strict", first.get("tolerance", ""))


def first_difference(before, after):
    """The first pair of lines that differ (shortened), '<nothing>' standing for a missing line."""
    for x, y in itertools.zip_longest(before.splitlines(), after.splitlines(), fillvalue="<nothing>"):
        if x != y:
            return x.strip()[:120], y.strip()[:120]
    return before[:120], after[:120]


def execute_alone(notebook, remote, out):
    """Run in the platform's Python: execute notebook alone in an empty folder, write it to out."""
    import nbclient
    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        alone = pathlib.Path(folder) / pathlib.Path(notebook).name
        shutil.copy(notebook, alone)
        os.environ["COURSE_REPO_URL"] = remote
        os.environ.pop("PYTHONPATH", None)
        nb = nbformat.read(alone, as_version=4)
        start = time.perf_counter()
        error = ""
        try:
            nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3",
                                    resources={"metadata": {"path": folder}}).execute()
        except Exception as e:  # report the failure in the table, keep going with the others
            error = " ".join(str(e).split())[-300:]
        nbformat.write(nb, out)
        print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "error": error}))


def find_python(version):
    """An interpreter of that version: python3.X on PATH, or one that pyenv installed."""
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    for candidate in [shutil.which(f"python{version}"),
                      *sorted(map(str, pyenv.glob(f"versions/{version}*/bin/python{version}")))]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    raise SystemExit(f"No working python{version} here: install it, or name another platform "
                     "as torch=X,python=Y.")


def environment(torch_version, python_version):
    """The Python executable of a cached venv with torch_version on python_version (built once)."""
    if torch_version is None:
        return sys.executable
    python = find_python(python_version)
    venv = CACHE / f"python{python_version}-torch{torch_version.replace('*', 'x')}"
    exe = venv / "bin" / "python"
    if not (venv / "ready").exists():
        print(f"building {venv} (once; torch is several GB)", flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(exe), "-m", "pip", "install", "-q", f"torch=={torch_version}", *PACKAGES],
                       check=True)
        (venv / "ready").write_text("")
    return str(exe)


def versions(exe):
    code = "import sys, torch; print(torch.__version__, sys.version.split()[0])"
    return subprocess.run([exe, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def parse_platform(name):
    if name in PLATFORMS:
        return name, *PLATFORMS[name]
    found = dict(part.split("=", 1) for part in name.split(","))
    return name, found["torch"], found["python"]


def run(platforms, only=(), folders=("solutions", "notebooks"), out=sys.stdout):
    """Execute the notebooks on each platform; print the table; return the rows."""
    paths = [p for folder in folders for p in sorted((ROOT / folder).glob("*.ipynb"))
             if not only or any(p.name.startswith(o) for o in only)]
    rows, firsts = [], []
    with tempfile.TemporaryDirectory() as scratch:
        remote = local_course_repo(pathlib.Path(scratch) / "remote")
        for name in platforms:
            label, torch_version, python_version = parse_platform(name)
            exe = environment(torch_version, python_version)
            torch_found, python_found = versions(exe)
            started = time.perf_counter()
            for path in paths:
                executed = pathlib.Path(scratch) / f"{label}-{path.parent.name}-{path.name}"
                child = subprocess.run([exe, __file__, "--execute-one", str(path), remote, str(executed)],
                                       capture_output=True, text=True)
                try:
                    result = json.loads(child.stdout.strip().splitlines()[-1])
                except (IndexError, json.JSONDecodeError):
                    result = {"seconds": 0.0, "error": " ".join(child.stderr.split())[-300:]}
                row = {"platform": f"{label} (torch {torch_found}, Python {python_found})",
                       "notebook": f"{path.parent.name}/{path.stem}", "ran": not result["error"],
                       "seconds": result["seconds"], "strict": "", "tolerance": ""}
                if result["error"]:
                    firsts.append(f"{row['notebook']} on {label}: {result['error']}")
                elif path.parent.name == "solutions":
                    row["strict"], row["tolerance"], first = compare(path, executed)
                    if first:
                        firsts.append(f"{row['notebook']} on {label}: {first}")
                rows.append(row)
                print(f"  {row['notebook']:45s} {'ran' if row['ran'] else 'FAILED':6s} "
                      f"{row['seconds']:6.1f} s  {row['strict']!s:>3} {row['tolerance']!s:>3}", file=out,
                      flush=True)
            print(f"{label}: {time.perf_counter() - started:.0f} s in all", file=out, flush=True)
    print_table(rows, firsts, out)
    return rows


def print_table(rows, firsts, out):
    print("\n| platform | notebook | ran | seconds | strict outputs differing | tolerance outputs "
          "differing |\n|---|---|---|---|---|---|", file=out)
    for r in rows:
        strict = "" if r["strict"] == "" else r["strict"]
        print(f"| {r['platform']} | {r['notebook']} | {'ran' if r['ran'] else 'FAILED'} | "
              f"{r['seconds']:.1f} | {strict} | {r['tolerance']} |", file=out)
    print("\nFirst differences:" if firsts else "\nEvery stored text output reproduced.", file=out)
    for line in firsts:
        print("  " + line, file=out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--execute-one"]:
        return execute_alone(*argv[1:4])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("platforms", nargs="*", default=["colab", "kaggle", "pinned"],
                        help="colab, kaggle, pinned, or torch=X,python=Y")
    parser.add_argument("--only", nargs="*", default=[], metavar="PREFIX",
                        help="notebooks whose name starts with these (e.g. 01 05)")
    args = parser.parse_args(argv)
    rows = run(args.platforms, args.only)
    return 0 if all(r["ran"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
