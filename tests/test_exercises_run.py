"""Every untouched exercise notebook runs top to bottom, alone in an empty folder, as Colab and
Kaggle run it; its checks say "Not answered yet".

Alone: the notebook is copied into an empty folder and its bootstrap cell clones the course from
a local repository made from this working tree (``COURSE_REPO_URL``, no network), so one run
proves both that an untouched copy runs to the end and that the shipped model and data files,
and the worker processes of notebook 10, are found through the clone (and that 10 leaves no
process behind). One test class per
notebook: with pytest -n and --dist loadscope each class is a unit of work, so the exercise
notebooks run in parallel with each other and with the solutions' cells.
"""

import pathlib

import nbformat
import papermill

from helpers import course
from helpers.course import notebooks

EXERCISES = sorted(notebooks.EXERCISES.glob("*.ipynb"))

# Notebooks that start worker processes end with none left: a last cell lists the kernel's
# children, multiprocessing's and the course's workers (Linux: it reads /proc).
PROBE = """
import multiprocessing, os, pathlib
from helpers import distributed
children = []
for entry in pathlib.Path("/proc").glob("[0-9]*"):
    try:
        fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if fields[1] == str(os.getpid()):
        children.append(entry.name)
print("children", children, "active", multiprocessing.active_children(), "workers",
      distributed.leftover_workers())
"""
STARTS_WORKERS = {"10_many_workers"}


def run_untouched(path, tmp_path, remote, monkeypatch):
    alone = tmp_path / "alone"
    alone.mkdir()
    nb = nbformat.read(path, as_version=4)
    probe = path.stem in STARTS_WORKERS and pathlib.Path("/proc/self/stat").exists()
    if probe:
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    nbformat.write(nb, alone / path.name)
    monkeypatch.setenv("COURSE_REPO_URL", remote)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    out = tmp_path / path.name
    papermill.execute_notebook(str(alone / path.name), str(out), cwd=str(alone), kernel_name="python3",
                               progress_bar=False, log_output=False)
    assert (alone / course.CLONE_DIR / "helpers" / "__init__.py").is_file(), "the setup cell did not clone"
    nb = nbformat.read(out, as_version=4)
    assert all(o.output_type != "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    if probe:
        text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
        assert text == "children [] active [] workers []\n", f"worker processes left behind: {text}"
    checks = [c for c in nb.cells if "check" in notebooks.tags(c)]
    assert checks
    for cell in checks:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        lines = printed.strip().splitlines()
        assert len(lines) == 1, f"a check prints one line, got {lines!r}"
        assert lines[0].startswith("Not answered yet: "), f"an untouched placeholder: {lines[0]!r}"


def _test_class(path):
    def test_untouched_exercise_runs_alone_and_checks_say_not_answered(self, tmp_path, local_remote,
                                                                       monkeypatch):
        run_untouched(path, tmp_path, local_remote, monkeypatch)
    return type(f"TestExercise_{path.stem}", (), {
        "test_untouched_exercise_runs_alone_and_checks_say_not_answered":
            test_untouched_exercise_runs_alone_and_checks_say_not_answered})


for _path in EXERCISES:
    _cls = _test_class(_path)
    globals()[_cls.__name__] = _cls


def test_there_is_an_exercise_copy_of_every_notebook():
    stems = {stem for stem, *_ in course.NOTEBOOKS}
    assert {p.stem for p in EXERCISES} == stems
