"""Build the exercise notebooks (and the README table) from the solution notebooks.

The solution notebook in ``solutions/`` is the one source. In it:

- the first code cell carries the tag ``bootstrap``; its text is generated here
  from ``helpers/course/__init__.py`` (never edit it by hand);
- a code cell tagged ``solution`` holds the answer; its ``metadata["exercise"]``
  holds the text the exercise copy shows instead (a placeholder such as ``x = None``);
- a cell tagged ``solution-only`` is left out of the exercise copy;
- the first cell's "**Time:** about N–M min" is the estimate of ``helpers.course.timing``,
  written here (as are each notebook's time in the README table and the README's counts
  line, between ``<!-- counts:start -->`` and ``<!-- counts:end -->``); a heading cell whose
  metadata says ``"optional": true`` starts an optional part, and gets the line
  "*Optional, about N–M min: ...*" under its heading;
- ``--execute`` records in each code cell that ran for ``helpers.course.timing.RECORDED_FROM``
  seconds or more its run time, ``metadata.run_seconds``, which the estimate uses.

Exercise copies keep no outputs. Each records a fingerprint of what was generated,
so that a copy a learner edited (or ran and saved) is never overwritten silently.

    python -m helpers.course.notebooks                # regenerate exercises and README table
    python -m helpers.course.notebooks --execute 02   # run solutions/02_*.ipynb in place first
    python -m helpers.course.notebooks --force        # overwrite edited exercise copies too
"""

import argparse
import copy
import hashlib
import json
import pathlib
import re
import sys

import nbformat

from helpers import course
from helpers.course import timing

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "notebooks"
README = ROOT / "README.md"

BOOTSTRAP = '''\
#@title Setup: run this cell first (it makes the course's `helpers` importable) {{ display-mode: "form" }}
import os, pathlib, subprocess, sys
here = pathlib.Path.cwd()
root = next((p for p in (here, *here.parents) if (p / "helpers" / "__init__.py").is_file()),
            here / "{clone_dir}")
if not (root / "helpers").is_dir():  # alone in Colab or Kaggle: clone the course once
    url = os.environ.get("COURSE_REPO_URL",
                         "{url}")
    ref = os.environ.get("COURSE_REPO_REF", "{ref}")
    clone = ["git", "clone", "-q", "--depth", "1", "-b", ref, url, str(root)]
    if subprocess.run(clone, capture_output=True).returncode:
        print("Could not download the course helpers: on Kaggle, switch Internet on in the "
              "notebook's Settings panel, then run this cell again.")
if str(root) not in sys.path:
    sys.path.insert(0, str(root))'''

# The first lines of the code cell after the setup cell: a learner who skipped the setup
# cell reads what to do instead of a bare "No module named 'helpers'".
GUARD = '''\
try:
    import helpers  # noqa: F401  (the setup cell above makes it importable)
except ModuleNotFoundError:
    raise ModuleNotFoundError("No module named 'helpers': run the setup cell at the top first.") from None
'''

# Colab shows a cell with cellView "form" as its #@title line; JupyterLab folds source_hidden.
BOOTSTRAP_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}


def bootstrap_source():
    """The text of every notebook's bootstrap cell."""
    return BOOTSTRAP.format(url=course.REPO_URL + ".git", ref=course.REPO_REF,
                            clone_dir=course.CLONE_DIR)


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


TIME = re.compile(r"\*\*Time:\*\* about \d+(?:–\d+)? min(?:, plus \d+–\d+ min for the optional parts)?")
OPTIONAL = re.compile(r"\*Optional, about \d+–\d+ min: [^*\n]*\*")
OPTIONAL_LINE = ("*Optional, about {low}–{high} min: nothing later in the course needs it; "
                 "skip it on a first pass.*")


def with_optional_lines(nb):
    """Write under each optional part's heading its own time estimate (in place)."""
    for head, cells in timing.optional_parts(nb):
        low, high = timing.optional_minutes(nb, cells)
        line = OPTIONAL_LINE.format(low=low, high=high)
        if OPTIONAL.search(head.source):
            head.source = OPTIONAL.sub(line, head.source)
        else:
            lines = head.source.split("\n")
            at = next(i for i, text in enumerate(lines) if text.startswith("#"))
            lines[at + 1:at + 1] = ["", line]
            head.source = "\n".join(lines)
    return nb


def with_bootstrap(nb):
    """A copy of nb whose bootstrap cell holds the current bootstrap text, and whose first
    cell states the time estimate of helpers.course.timing ("**Time:** about N–M min")."""
    nb = with_optional_lines(copy.deepcopy(nb))
    if not TIME.search(nb.cells[0].source):
        raise ValueError("the first cell needs a time estimate written '**Time:** about N–M min'")
    nb.cells[0].source = TIME.sub(f"**Time:** about {timing.stated(nb)}", nb.cells[0].source)
    cells = [c for c in nb.cells if "bootstrap" in tags(c)]
    if len(cells) != 1:
        raise ValueError("a notebook needs exactly one code cell tagged 'bootstrap'")
    cells[0].source = bootstrap_source()
    cells[0].metadata.update(copy.deepcopy(BOOTSTRAP_METADATA))
    code = [c for c in nb.cells if c.cell_type == "code"]
    after = code[code.index(cells[0]) + 1]
    if not after.source.startswith(GUARD) or after.source[len(GUARD):].startswith("try:"):
        while after.source.startswith("try:\n    import helpers"):  # an older guard: replace it
            after.source = after.source.split(" from None\n", 1)[1]
        after.source = GUARD + after.source
    return nb


def fingerprint(nb):
    """A hash of what a learner could change: every cell's type, text and outputs."""
    parts = [(c.cell_type, c.source, c.get("outputs", [])) for c in nb.cells]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def exercise_from_solution(solution, stem):
    """The exercise notebook generated from a solution notebook."""
    nb = with_bootstrap(solution)
    cells = []
    for cell in nb.cells:
        if "solution-only" in tags(cell):
            continue
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            if "solution" in tags(cell):
                if "exercise" not in cell.metadata:
                    raise ValueError(f"{stem}: a 'solution' cell has no metadata['exercise']")
                cell.source = cell.metadata["exercise"]
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("exercise", None)
        cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata["course"] = {"generated_from": f"solutions/{stem}.ipynb",
                             "fingerprint": fingerprint(nb)}
    return nb


def as_text(nb):
    return nbformat.writes(nb) + "\n"


def learner_edited(path):
    """True when an existing exercise file differs from what was generated into it."""
    nb = nbformat.read(path, as_version=4)
    return nb.metadata.get("course", {}).get("fingerprint") != fingerprint(nb)


def readme_table():
    """The README's table of notebooks, with badges derived from helpers/course/__init__.py."""
    colab = "https://colab.research.google.com/assets/colab-badge.svg"
    kaggle = "https://kaggle.com/static/images/open-in-kaggle.svg"
    rows = ["| # | Notebook | What you do | Time | Exercise | Solution |",
            "|---|---|---|---|---|---|"]
    times, extras = [], []
    for stem, title, line, *_ in course.NOTEBOOKS:
        nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
        times.append(timing.minutes(nb))
        extra = timing.optional_minutes(nb)
        if extra:
            extras.append(extra)
        links = []
        for folder in ("notebooks", "solutions"):
            links.append(f"[![Open in Colab]({colab})]({course.colab_url(folder, stem)}) "
                         f"[![Open in Kaggle]({kaggle})]({course.kaggle_url(folder, stem)})")
        number = stem[:2]
        rows.append(f"| {number} | [{title}](notebooks/{stem}.ipynb) | {line} | {timing.in_table(nb)} "
                    f"| {links[0]} | {links[1]} [read](solutions/{stem}.ipynb) |")
    extra = f" (+{timing.course_range(extras)} optional)" if extras else ""
    rows.append(f"| | **The whole course** | | **{timing.course_range(times)}**{extra} | | |")
    return "\n".join(rows)


START, END = "<!-- notebooks:start -->", "<!-- notebooks:end -->"
COUNTS_START, COUNTS_END = "<!-- counts:start -->", "<!-- counts:end -->"


def readme_counts():
    """The README's sentence of words, exercises, questions and hours (helpers.course.timing)."""
    return timing.counts_line([nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
                               for stem, *_ in course.NOTEBOOKS])


def between(text, start, end, new):
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{new}\n{end}{tail}"


def readme_with_table(text):
    text = between(text, START, END, readme_table())
    if COUNTS_START in text:
        text = between(text, COUNTS_START, COUNTS_END, readme_counts())
    return text


def execute(path):
    """Run a notebook top to bottom in place, in its own folder, keeping its outputs."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=1200, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        seconds = run_seconds(cell.metadata.pop("execution", {}))
        cell.metadata.pop("run_seconds", None)
        if cell.cell_type == "code" and seconds is not None and seconds >= timing.RECORDED_FROM:
            cell.metadata["run_seconds"] = round(seconds)
        if cell.cell_type == "code":
            cell.outputs = merged_streams(cell.outputs)
    nbformat.write(nb, path)


def run_seconds(execution):
    """Seconds between a cell's start and its end, from nbclient's timestamps (or None)."""
    import datetime

    try:
        start, end = (datetime.datetime.fromisoformat(execution[k].replace("Z", "+00:00"))
                      for k in ("iopub.execute_input", "shell.execute_reply"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def merged_streams(outputs):
    """Outputs with consecutive pieces of one stream joined, each as a terminal shows it.

    The kernel sends every refresh of a progress bar as its own piece of stderr; joined, the
    pieces are one line rewritten many times, and the stored notebook keeps its last state.
    """
    merged = []
    for output in outputs:
        if (output.output_type == "stream" and merged and merged[-1].output_type == "stream"
                and merged[-1].name == output.name):
            merged[-1].text += output.text
        else:
            merged.append(copy.deepcopy(output))
    for output in merged:
        if output.output_type == "stream":
            output.text = as_terminal_shows(output.text)
    return merged


def as_terminal_shows(text):
    """Text as a terminal (and Jupyter) shows it: each carriage return rewrites its line.

    A progress bar writes dozens of states of one line separated by "\\r"; the stored
    notebook keeps only the last state of each line, as a reader would see it.
    """
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))


def build(force=False, out=sys.stdout):
    """Regenerate bootstrap cells, exercise copies and the README table. Returns 0 or 1."""
    status = 0
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        solution = nbformat.read(path, as_version=4)
        fixed = with_bootstrap(solution)
        if as_text(fixed) != path.read_text():
            path.write_text(as_text(fixed))
            print(f"updated the bootstrap cell of {path.relative_to(ROOT)}", file=out)
        target = EXERCISES / path.name
        text = as_text(exercise_from_solution(fixed, path.stem))
        if target.exists() and target.read_text() == text:
            continue
        if target.exists() and learner_edited(target) and not force:
            print(f"refused: {target.relative_to(ROOT)} was edited since it was generated "
                  "(rerun with --force to overwrite it)", file=out)
            status = 1
            continue
        target.write_text(text)
        print(f"wrote {target.relative_to(ROOT)}", file=out)
    if README.exists():
        text = README.read_text()
        if START in text and readme_with_table(text) != text:
            README.write_text(readme_with_table(text))
            print("updated the notebook table in README.md", file=out)
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--execute", nargs="*", default=[], metavar="PREFIX",
                        help="first run these solution notebooks in place (e.g. 01 02, or all)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite exercise copies even if they were edited")
    args = parser.parse_args(argv)
    for prefix in args.execute:
        paths = sorted(SOLUTIONS.glob("*.ipynb" if prefix == "all" else f"{prefix}*.ipynb"))
        if not paths:
            parser.error(f"no solution notebook starts with {prefix!r}")
        for path in paths:
            print(f"executing {path.relative_to(ROOT)}")
            execute(with_bootstrap_file(path))
    return build(force=args.force)


def with_bootstrap_file(path):
    """Make sure the bootstrap cell on disk is current before executing, return path."""
    nb = nbformat.read(path, as_version=4)
    text = as_text(with_bootstrap(nb))
    if text != path.read_text():
        path.write_text(text)
    return path


if __name__ == "__main__":
    sys.exit(main())
