"""helpers.timing: each notebook's time estimate, computed by the stated method."""

import nbformat
import pytest

from helpers import notebooks, timing

SOLUTIONS = sorted(notebooks.SOLUTIONS.glob("*.ipynb"))


def small_notebook():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    words = " ".join(["word"] * 220)
    bar = nbformat.v4.new_output("stream", name="stderr", text="train: 100%|##| 10/10 [00:01<00:00]\n")
    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})
    nb.cells = [
        md("# 99 · Demo\n\n**Time:** about 5 min."),
        code("setup = 1", metadata={"tags": ["bootstrap"]}),
        md(words),                                                        # 220 words + 8 above
        code("a = 1\nb = 2", outputs=[figure]),
        code("train()", outputs=[bar]),
        md("## Your turn 1"),
        code("x = 42", metadata={"tags": ["solution"], "exercise": "x = None\n# write x"}),
        code("check(x)", metadata={"tags": ["check"]}),
        md("never shown " * 50, metadata={"tags": ["solution-only"]}),
        md("## Check your understanding"),
        code("q = 'a'", metadata={"tags": ["solution"], "exercise": "q = None"}),
        md("## Recap"),
    ]
    return nb


def test_breakdown_counts_what_the_learner_meets():
    counts, parts, minutes = timing.breakdown(small_notebook())
    assert counts == {"training cells": 1, "words": 8 + 220 + 4 + 4 + 2, "code lines": 2 + 1 + 2 + 1 + 1,
                      "code cells": 5, "figures": 1, "exercises": 1, "questions": 1}
    assert parts["exercises"] == timing.MINUTES_PER_EXERCISE
    assert parts["questions"] == timing.MINUTES_PER_QUESTION
    assert parts["running"] == 5 * timing.MINUTES_PER_CELL + timing.RUN_MINUTES
    assert minutes % 5 == 0 and minutes >= sum(parts.values()) > minutes - 5


def test_total_reads_as_hours_and_minutes():
    assert timing.total([80, 100, 5]) == "3 h 05 min"
    assert timing.total([45]) == "45 min"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_each_notebook_states_its_estimate(path):
    solution = nbformat.read(path, as_version=4)
    stated = f"**Time:** about {timing.minutes(solution)} min"
    assert stated in solution.cells[0].source, "run: python -m helpers.notebooks"
    assert stated in nbformat.read(notebooks.EXERCISES / path.name, as_version=4).cells[0].source
