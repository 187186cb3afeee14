"""helpers.course.timing: each notebook's time estimate, computed by the stated method."""

import re

import nbformat
import pytest

from helpers import course
from helpers.course import notebooks, timing

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
        code("train()", outputs=[bar]),                                   # no record: RUN_MINUTES
        code("train_more()", outputs=[bar], metadata={"run_seconds": 90}),   # measured: 1.5 min
        md("## Your turn 1"),
        code("x = 42", metadata={"tags": ["solution"], "exercise": "x = None\n# write x", "minutes": 12}),
        code("check(x)", metadata={"tags": ["check"]}),
        code("y = 1", metadata={"tags": ["solution"], "exercise": "y = None"}),   # no minutes: the default
        md("never shown " * 50, metadata={"tags": ["solution-only"]}),
        code("z = 'b'", metadata={"tags": ["solution"], "exercise": "z = None", "question": True,
                                  "minutes": 3}),
        md("## Check your understanding"),
        code("q = 'a'", metadata={"tags": ["solution"], "exercise": "q = None", "minutes": 4}),
        md("## Recap"),
    ]
    return nb


def test_breakdown_counts_what_the_learner_meets():
    counts, parts, (low, high) = timing.breakdown(small_notebook())
    assert counts == {"training cells": 2, "words": 8 + 220 + 4 + 4 + 2,
                      "code lines": 2 + 1 + 1 + 2 + 1 + 1 + 1 + 1, "code cells": 8, "figures": 1,
                      "exercises": 2, "questions": 2}
    assert parts["exercises"] == 12 + timing.MINUTES_PER_EXERCISE      # its own minutes, then the default
    assert parts["questions"] == 3 + 4                                 # the flagged one counts as a question
    assert parts["running"] == 8 * timing.MINUTES_PER_CELL + timing.RUN_MINUTES + 90 / 60
    reading = parts["prose"] + parts["code"]
    rest = parts["running"] + parts["figures"] + parts["exercises"] + parts["questions"]
    assert low % 5 == 0 and high % 5 == 0
    assert low <= reading / 1.25 + rest < low + 5
    assert high - 5 < reading / 0.75 + rest <= high


def test_an_untagged_exercise_in_the_questions_section_is_a_question():
    exercises, questions = timing.tasks(small_notebook())
    assert [c.source for c, _ in exercises] == ["x = 42", "y = 1"]
    assert [c.source for c, _ in questions] == ["z = 'b'", "q = 'a'"]


def test_total_reads_as_hours_and_minutes():
    assert timing.total([80, 100, 5]) == "3 h 05 min"
    assert timing.total([45]) == "45 min"
    assert timing.course_range([(60, 80), (100, 130)]) == "2 h 40 min to 3 h 30 min"


def test_run_seconds_come_from_nbclients_timestamps():
    execution = {"iopub.execute_input": "2026-12-02T07:00:00.000000Z",
                 "shell.execute_reply": "2026-12-02T07:01:30.500000Z"}
    assert notebooks.run_seconds(execution) == 90.5
    assert notebooks.run_seconds({}) is None


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_each_notebook_states_its_estimate(path):
    solution = nbformat.read(path, as_version=4)
    stated = f"**Time:** about {timing.stated(solution)}"
    assert stated in solution.cells[0].source, "run: python -m helpers.course.notebooks"
    assert stated in nbformat.read(notebooks.EXERCISES / path.name, as_version=4).cells[0].source


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_every_exercise_and_question_has_its_own_estimate(path):
    exercises, questions = timing.tasks(nbformat.read(path, as_version=4))
    missing = [c.source.splitlines()[0] for c, _ in exercises + questions if "minutes" not in c.metadata]
    if path.stem[:2] in {"01", "02", "04", "08"}:
        assert not missing, f"no metadata.minutes: {missing}"
    for cell, minutes in exercises + questions:
        assert isinstance(minutes, int) and 1 <= minutes <= 60, cell.source.splitlines()[0]


def test_the_readme_counts_come_from_the_same_code():
    text = notebooks.README.read_text()
    line = text.split(notebooks.COUNTS_START, 1)[1].split(notebooks.COUNTS_END, 1)[0].strip()
    assert line == notebooks.readme_counts(), "run: python -m helpers.course.notebooks"
    numbers = re.search(r"([\d,]+) words of text, (\d+) \"Your turn\" exercises and (\d+) questions", line)
    solutions = [nbformat.read(notebooks.SOLUTIONS / f"{stem}.ipynb", as_version=4)
                 for stem, *_ in course.NOTEBOOKS]
    exercises = sum(len(timing.tasks(nb)[0]) for nb in solutions)
    questions = sum(len(timing.tasks(nb)[1]) for nb in solutions)
    assert (int(numbers[2]), int(numbers[3])) == (exercises, questions)
