"""Every untouched exercise copy runs top to bottom, alone in an empty folder, and its checks say
"Not answered yet": proved inside the one run of each solution notebook (tests/notebook_runs.py).

Here: that run holds every cell of the exercise copy, in its order; and, on small notebooks run
the same way, that it fails when a later cell reads an answer, when a check passes an untouched
placeholder, when a later cell's numbers depend on what a solution-only cell drew at random, and
when they depend on a tensor or a module an answer changed in place.
"""

import os
import pathlib
import subprocess
import sys

import nbformat
import notebook_runs
import pytest

from helpers import course
from helpers.course import notebooks

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS = sorted(notebooks.SOLUTIONS.glob("*.ipynb"))


def test_there_is_an_exercise_copy_of_every_notebook():
    stems = {stem for stem, *_ in course.NOTEBOOKS}
    assert {p.stem for p in notebooks.EXERCISES.glob("*.ipynb")} == stems == {p.stem for p in SOLUTIONS}


def exercise_cells_of(run):
    """The code cells the exercise copy would have, read back from a combined notebook."""
    cells = []
    for cell in run.cells:
        what = cell.metadata.get(notebook_runs.ADDED, "")
        if what.endswith(notebook_runs.PLACEHOLDER):
            cells.append(cell.source)
        elif not what and not {"solution", "solution-only"} & set(notebooks.tags(cell)):
            cells.append(cell.source)
    return cells


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_the_run_holds_the_exercise_copy_in_order(path):
    run = notebook_runs.combined(nbformat.read(path, as_version=4), path.stem)
    exercise = nbformat.read(notebooks.EXERCISES / path.name, as_version=4)
    assert exercise_cells_of(run) == [c.source for c in exercise.cells if c.cell_type == "code"]
    what = [c.metadata.get(notebook_runs.ADDED, "") for c in run.cells]
    checks = [w for w in what if "Not answered yet" in w]
    assert len(checks) == sum("solution" in notebooks.tags(c) for c in run.cells) > 0
    assert len([w for w in what if w.endswith(notebook_runs.PUT_BACK)]) == len(checks)
    assert sum("cloned the course" in w for w in what) == 1


def demo(cells, outputs=None):
    """A solution notebook: a time estimate, the setup cell, then cells (source, tags, exercise)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Demo\n\n**Time:** about 1–2 min"))
    nb.cells.append(nbformat.v4.new_code_cell("", metadata={"tags": ["bootstrap"]}))
    nb.cells.append(nbformat.v4.new_code_cell("import torch"))
    for i, (source, tags, exercise) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": tags})
        if exercise is not None:
            cell.metadata["exercise"] = exercise
        if outputs and i in outputs:
            cell.execution_count = i + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=outputs[i])]
        nb.cells.append(cell)
    return notebooks.with_bootstrap(nb)


ANSWER = ("x = 42", ["solution"], "x = None")
CHECK = ('print("Not answered yet: x" if x is None else "Check passed.")', ["check"], None)


DEMOS = {
    "01_right": ([ANSWER, CHECK, ("print(7)", [], None)], {2: "7\n"}),
    "02_later_cell_reads_the_answer": ([ANSWER, CHECK, ("print(x + 1)", [], None)], None),
    "03_check_passes_the_placeholder": ([ANSWER, ('print("Check passed.")', ["check"], None)], None),
    "04_draw_in_a_solution_only_cell": ([("torch.manual_seed(0)", [], None), ANSWER, CHECK,
                                         ("noise = torch.rand(3)", ["solution-only"], None),
                                         ("print(torch.rand(1).item())", [], None)], "draw"),
    "05_answer_changes_objects_in_place": ([("w = torch.zeros(2)\nnet = torch.nn.Dropout()", [], None),
                                            ("w += 1\nnet.eval()\nx = 42", ["solution"], "x = None"), CHECK,
                                            ("print(w.tolist())", [], None),
                                            ("print(net.training)", [], None)],
                                           {3: "[1.0, 1.0]\n", 4: "False\n"}),
}
# The cells that fail in each (code cells are numbered from 0, the setup cell).
EXPECTED_FAILURES = {
    "02_later_cell_reads_the_answer": ["Cell 4"],
    "03_check_passes_the_placeholder": ["before Cell 2: the check on the placeholder says Not answered yet"],
    "04_draw_in_a_solution_only_cell": ["Cell 6"],
    "05_answer_changes_objects_in_place": ["Cell 5", "Cell 6"],
}


def test_the_run_fails_on_each_way_an_exercise_copy_breaks(tmp_path):
    import xml.etree.ElementTree as ElementTree

    import torch
    torch.manual_seed(0)
    torch.rand(3)
    second_draw = f"{torch.rand(1).item()}\n"   # what the solution prints after its solution-only draw
    folder = tmp_path / "solutions"
    folder.mkdir()
    for stem, (cells, outputs) in DEMOS.items():
        nb = demo(cells, {4: second_draw} if outputs == "draw" else outputs)
        nbformat.write(nb, folder / f"{stem}.ipynb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-o", "addopts=", "-p", "notebook_runs", "--rootdir", str(tmp_path), "-q",
                           "--junitxml", str(tmp_path / "report.xml"), str(folder)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (tmp_path / "report.xml").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    failed = {}
    for case in ElementTree.parse(tmp_path / "report.xml").iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.setdefault(case.get("classname").split(".")[-2], []).append(case.get("name"))
    assert failed == EXPECTED_FAILURES, done.stdout[-3000:] + done.stderr[-3000:]
