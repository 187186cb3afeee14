"""Every untouched exercise notebook runs top to bottom; its checks print hints, not tracebacks."""

import nbformat
import papermill
import pytest

from helpers import notebooks

EXERCISES = sorted(notebooks.EXERCISES.glob("*.ipynb"))


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.stem)
def test_untouched_exercise_runs_and_checks_give_hints(path, tmp_path):
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

