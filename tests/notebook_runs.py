"""One run per notebook: the solution's outputs compared strictly, and the exercise copy proved.

pytest collects each ``solutions/`` notebook with ``CourseNotebook``, nbval's notebook collector
with two changes, so that every notebook runs once, not twice (once for its stored outputs and
once more as an untouched exercise copy):

- **Alone in an empty folder**, as Colab and Kaggle run it: the kernel starts in an empty folder,
  and the setup cell clones the course from a local repository made from this working tree
  (``COURSE_REPO_URL``, no network, no ``PYTHONPATH``); a cell after it asserts that it cloned.
- **The exercise copy inside it** (``combined``): before each answer cell (tag ``solution``) run
  the exercise copy's placeholder and the check on it, which must print one line "Not answered
  yet: ..."; then the answer, its check and the solution-only cells, compared strictly with their
  stored outputs as every other cell is; then the names are put back as the exercise copy has
  them (names the answer or a solution-only cell made are deleted, names it rebound get the
  placeholder's values back) with the random state the placeholder left (torch's and Python's),
  and a tensor or a module the answer changed in place (values, weights, train/eval mode) back
  as it was.
  So every later cell runs as in the untouched exercise copy, and its outputs must still equal
  the solution's stored ones: the copy runs to the end, no later cell depends on an answer, and
  the learner's copy prints the numbers the solution shows.
  The exercise copy's own cells are the combined notebook's cells without the added ones
  (``tests/test_exercises_run.py`` checks it).
- A notebook that starts worker processes (``STARTS_WORKERS``) ends with a cell asserting that
  none is left (Linux: it reads /proc).

Cells are named as nbval names the solution's code cells ("Cell 7"); an added cell says where
it stands and what it is ("before Cell 7: the exercise copy's placeholder").
"""

import os
import shutil
import tempfile
import textwrap
from collections import defaultdict

import nbformat
from nbval.kernel import RunningKernel
from nbval.plugin import IPyNbCell, IPyNbFile, find_comment_markers, find_metadata_tags
from platforms import local_course_repo

from helpers import course
from helpers.course import notebooks

STARTS_WORKERS = {"10_many_workers"}
ADDED = "course-run"   # metadata key of the cells this module adds: what the cell is
PLACEHOLDER = "the exercise copy's placeholder"
PUT_BACK = "names and random state put back as the exercise copy has them"

CLONED = f"""\
import pathlib as _pathlib, helpers as _helpers
_clone = _pathlib.Path.cwd() / {course.CLONE_DIR!r}
assert (_clone / "helpers" / "__init__.py").is_file(), "the setup cell did not clone the course"
assert _pathlib.Path(_helpers.__file__).resolve().parent == (_clone / "helpers").resolve(), _helpers.__file__
"""

UNTOUCHED = """\
from IPython.utils.capture import capture_output as _capture_output
with _capture_output() as _untouched:
{check}
_lines = _untouched.stdout.strip().splitlines()
assert len(_lines) == 1, f"a check prints one line, got {{_lines!r}}"
assert _lines[0].startswith("Not answered yet: "), f"the check of an untouched placeholder: {{_lines[0]!r}}"
"""

SAVE = """\
import random as _random, torch as _torch
_exercise_names = {k: v for k, v in globals().items() if not k.startswith("_")}
_exercise_rng = (_torch.random.get_rng_state(), _random.getstate())
_exercise_tensors = {k: v.detach().clone() for k, v in _exercise_names.items()
                     if isinstance(v, _torch.Tensor)}
_exercise_modules = {k: ({n: t.clone() for n, t in v.state_dict().items()}, [m.training for m in v.modules()])
                     for k, v in _exercise_names.items() if isinstance(v, _torch.nn.Module)}
"""

RESTORE = """\
for _name in [k for k in globals() if not k.startswith("_") and k not in _exercise_names]:
    del globals()[_name]
globals().update(_exercise_names)
_torch.random.set_rng_state(_exercise_rng[0])
_random.setstate(_exercise_rng[1])
with _torch.no_grad():
    for _name, _saved in _exercise_tensors.items():      # a tensor changed in place
        if not _torch.equal(_exercise_names[_name], _saved):
            _exercise_names[_name].copy_(_saved)
    for _name, (_state, _modes) in _exercise_modules.items():   # a module's weights and train/eval modes
        _exercise_names[_name].load_state_dict(_state)
        for _module, _mode in zip(_exercise_names[_name].modules(), _modes):
            _module.training = _mode
del _exercise_names, _exercise_rng, _exercise_tensors, _exercise_modules
"""

PROBE = """\
import multiprocessing as _multiprocessing, os as _os, pathlib as _pathlib
from helpers import distributed as _distributed
_children = []
for _entry in _pathlib.Path("/proc").glob("[0-9]*"):
    try:
        _fields = (_entry / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if _fields[1] == str(_os.getpid()):
        _children.append(_entry.name)
_left = (_children, _multiprocessing.active_children(), _distributed.leftover_workers())
assert not any(_left), f"processes left behind (children, active, workers): {_left}"
"""


def added(source, what):
    cell = nbformat.v4.new_code_cell(source, metadata={ADDED: what, "tags": ["nbval-ignore-output"]})
    cell.execution_count = None
    return cell


def combined(solution, stem):
    """The notebook CourseNotebook runs: the solution with the exercise copy's placeholders, the
    checks on them, and the cells that put the exercise copy's names back (see the module text)."""
    nb = notebooks.with_bootstrap(solution)
    code = [c for c in nb.cells if c.cell_type == "code"]
    cells, block = [], False
    for i, cell in enumerate(code):
        kind = notebooks.tags(cell)
        if block and ("solution" in kind or not {"solution-only", "check"} & set(kind)):
            cells.append(added(RESTORE, f"before Cell {i}: {PUT_BACK}"))
            block = False
        if "solution" in kind:
            check = next(c for c in code[i + 1:] if "check" in notebooks.tags(c))
            cells.append(added(cell.metadata["exercise"], f"before Cell {i}: {PLACEHOLDER}"))
            cells.append(added(UNTOUCHED.format(check=textwrap.indent(check.source, "    ")),
                               f"before Cell {i}: the check on the placeholder says Not answered yet"))
            cells.append(added(SAVE, f"before Cell {i}: names and random state saved"))
            block = True
        cells.append(cell)
        if "bootstrap" in kind:
            cells.append(added(CLONED, f"after Cell {i}: the setup cell cloned the course"))
    if block:
        cells.append(added(RESTORE, f"at the end: {PUT_BACK}"))
    if stem in STARTS_WORKERS and os.path.exists("/proc/self/stat"):
        cells.append(added(PROBE, "at the end: no worker process left behind"))
    nb.cells = cells        # nb is with_bootstrap's copy of the solution
    return nb


class CourseNotebook(IPyNbFile):
    """nbval's notebook collector, running ``combined(...)`` alone in an empty folder."""

    def collect(self):
        solution = nbformat.read(str(self.fspath), as_version=4)
        self.nb = combined(solution, self.path.stem)
        number = 0
        for cell_num, cell in enumerate(self.nb.cells):
            if ADDED in cell.metadata:
                name = cell.metadata[ADDED]
            else:
                name, number = f"Cell {number}", number + 1
            options = defaultdict(bool, find_metadata_tags(cell.metadata))
            options.update(dict(find_comment_markers(cell.source)))
            options.setdefault("check", self.compare_outputs)
            yield IPyNbCell.from_parent(self, name=name, cell_num=cell_num, cell=cell, options=options)

    def setup(self):
        self.folder = tempfile.mkdtemp(prefix="course-run-")
        remote = local_course_repo(os.path.join(self.folder, "remote"), course.REPO_REF)
        alone = os.path.join(self.folder, "alone")
        os.mkdir(alone)
        saved = dict(os.environ)
        os.environ["COURSE_REPO_URL"] = remote
        os.environ.pop("PYTHONPATH", None)
        try:
            kernel_name = self.nb.metadata.get("kernelspec", {}).get("name", "python3")
            self.kernel = RunningKernel(kernel_name, cwd=alone,
                                        startup_timeout=self.config.option.nbval_kernel_startup_timeout)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.setup_sanitize_files()

    def teardown(self):
        super().teardown()
        shutil.rmtree(getattr(self, "folder", ""), ignore_errors=True)


def pytest_collect_file(file_path, parent):
    """A plugin (pyproject.toml's addopts: -p notebook_runs): collect solutions/*.ipynb, unless
    nbval's own --nbval or --nbval-lax is on."""
    opt = parent.config.option
    ours = file_path.suffix == ".ipynb" and file_path.parent.name == "solutions"
    if ours and not (opt.nbval or opt.nbval_lax):
        return CourseNotebook.from_parent(parent, path=file_path)
    return None
