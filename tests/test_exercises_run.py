"""Every untouched exercise notebook runs top to bottom; its checks say "Not answered yet".

One test class per notebook: with pytest -n and --dist loadscope each class is a unit of work,
so the exercise notebooks run in parallel with each other and with the solutions' cells.
"""

import nbformat
import papermill

from helpers.course import notebooks

EXERCISES = sorted(notebooks.EXERCISES.glob("*.ipynb"))


def run_untouched(path, tmp_path):
    out = tmp_path / path.name
    papermill.execute_notebook(str(path), str(out), cwd=str(path.parent), kernel_name="python3",
                               progress_bar=False, log_output=False)
    nb = nbformat.read(out, as_version=4)
    checks = [c for c in nb.cells if "check" in notebooks.tags(c)]
    assert checks
    for cell in checks:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        lines = printed.strip().splitlines()
        assert len(lines) == 1, f"a check prints one line, got {lines!r}"
        assert lines[0].startswith("Not answered yet: "), f"an untouched placeholder: {lines[0]!r}"


def _test_class(path):
    def test_untouched_exercise_runs_and_checks_say_not_answered(self, tmp_path):
        run_untouched(path, tmp_path)
    return type(f"TestExercise_{path.stem}", (), {
        "test_untouched_exercise_runs_and_checks_say_not_answered":
            test_untouched_exercise_runs_and_checks_say_not_answered})


for _path in EXERCISES:
    _cls = _test_class(_path)
    globals()[_cls.__name__] = _cls


def test_there_is_an_exercise_copy_of_every_notebook():
    assert len(EXERCISES) >= 7
