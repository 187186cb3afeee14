"""One source: exercise copies, bootstrap cells and README badges are generated, never drift."""

import re

import nbformat
import pytest

from helpers import course
from helpers.course import notebooks

SOLUTIONS = sorted(notebooks.SOLUTIONS.glob("*.ipynb"))
STEMS = [stem for stem, *_ in course.NOTEBOOKS]


def test_every_notebook_of_the_course_exists_in_both_copies():
    assert [p.stem for p in SOLUTIONS] == STEMS
    assert sorted(p.stem for p in notebooks.EXERCISES.glob("*.ipynb")) == STEMS


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_exercise_copy_is_what_the_generator_makes(path):
    solution = nbformat.read(path, as_version=4)
    expected = notebooks.as_text(notebooks.exercise_from_solution(solution, path.stem))
    committed = (notebooks.EXERCISES / path.name).read_text()
    assert committed == expected, "run: python -m helpers.course.notebooks"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_bootstrap_cell_is_first_and_current(path):
    for nb_path in (path, notebooks.EXERCISES / path.name):
        nb = nbformat.read(nb_path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "bootstrap" in notebooks.tags(code[0])
        assert code[0].source == notebooks.bootstrap_source()
        assert f'"{course.REPO_URL}.git"' in code[0].source
        assert code[0].source.startswith("#@title Setup")
        for key, value in notebooks.BOOTSTRAP_METADATA.items():
            assert code[0].metadata[key] == value
        assert code[1].source.startswith(notebooks.GUARD)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_notebook_follows_the_conventions(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    first = nb.cells[0].source.lower()
    assert "learning goals" in first or "you will" in first
    assert re.search(r"\d+ min", first), "the first cell states a time estimate"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown").lower()
    for heading in ("what you already know", "your turn", "recap", "limits"):
        assert heading in text, f"no '{heading}' section"
    solutions = [c for c in nb.cells if "solution" in notebooks.tags(c)]
    checks = [c for c in nb.cells if "check" in notebooks.tags(c)]
    assert solutions and len(checks) >= len(solutions) > 0
    for cell in checks:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert printed.strip().splitlines()[-1].startswith("Check passed."), cell.source
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert all(o.output_type != "error" for o in cell.outputs), cell.source


def test_readme_badges_derive_from_the_one_url():
    readme = notebooks.README.read_text()
    assert notebooks.readme_with_table(readme) == readme, "run: python -m helpers.course.notebooks"
    for stem in STEMS:
        for folder in ("notebooks", "solutions"):
            assert course.colab_url(folder, stem) in readme
            assert course.kaggle_url(folder, stem) in readme
    urls = re.findall(r"github(?:\.com)?/([\w.-]+/[\w.-]+)/blob/", readme)
    assert urls and set(urls) == {course.REPO_URL.removeprefix("https://github.com/")}


def test_generator_refuses_to_overwrite_an_edited_exercise(tmp_path, monkeypatch):
    solutions, exercises = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir(), exercises.mkdir()
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# 01 · Demo\n\n**Time:** about 5 min.")
    boot = nbformat.v4.new_code_cell("", metadata={"tags": ["bootstrap"]})
    answer = nbformat.v4.new_code_cell("x = 42", metadata={"tags": ["solution"], "exercise": "x = None"})
    nb.cells = [title, boot, answer]
    nbformat.write(nb, solutions / "01_demo.ipynb")
    monkeypatch.setattr(notebooks, "SOLUTIONS", solutions)
    monkeypatch.setattr(notebooks, "EXERCISES", exercises)
    monkeypatch.setattr(notebooks, "README", tmp_path / "README.md")
    monkeypatch.setattr(notebooks, "ROOT", tmp_path)
    assert notebooks.build() == 0
    exercise = nbformat.read(exercises / "01_demo.ipynb", as_version=4)
    assert exercise.cells[2].source == "x = None" and "exercise" not in exercise.cells[2].metadata
    exercise.cells[2].source = "x = 41  # the learner's attempt"
    nbformat.write(exercise, exercises / "01_demo.ipynb")
    answer.source = "x = 43"
    nbformat.write(nb, solutions / "01_demo.ipynb")
    assert notebooks.build() == 1                      # refused
    assert "learner's attempt" in (exercises / "01_demo.ipynb").read_text()
    assert notebooks.build(force=True) == 0            # explicit flag overwrites
    assert "learner's attempt" not in (exercises / "01_demo.ipynb").read_text()


def test_stored_progress_bars_keep_their_last_state_only():
    bar = "train:   0%|  | 0/10\rtrain:  50%|# | 5/10 [loss 2.1]\rtrain: 100%|##| 10/10 [loss 0.6]\n"
    assert notebooks.as_terminal_shows(bar + "done\n") == "train: 100%|##| 10/10 [loss 0.6]\ndone\n"
    assert notebooks.as_terminal_shows("no bar\n") == "no bar\n"
    states = ("\rtrain:   0%|  | 0/10", "\rtrain:  50%|# | 5/10", "\rtrain: 100%|##| 10/10\n")
    pieces = [nbformat.v4.new_output("stream", name="stderr", text=t) for t in states]
    pieces.insert(0, nbformat.v4.new_output("stream", name="stdout", text="start\n"))
    merged = notebooks.merged_streams(pieces)
    assert [(o.name, o.text) for o in merged] == [("stdout", "start\n"),
                                                  ("stderr", "train: 100%|##| 10/10\n")]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_stored_outputs_hold_no_overwritten_progress_states(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                assert "\r" not in output.text.rstrip("\r"), cell.source[:80]
        streams = [o.name for o in cell.get("outputs", []) if o.output_type == "stream"]
        assert all(a != b for a, b in zip(streams, streams[1:], strict=False)), "a stream left in pieces"


LEARNER_MUST_NOT_READ = re.compile(
    r"seed lesson|source lesson|seed page|\bthe seeds?\b(?! \d)|\bnbval\b|\bpapermill\b|step-7", re.I)


def learner_visible(cell):
    """The text of a cell a learner reads: markdown, and the comments and strings of code."""
    if cell.cell_type == "markdown":
        return cell.source
    return "\n".join(line for line in cell.source.splitlines() if "#" in line or '"' in line or "'" in line)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_learner_text_names_no_source_material_and_no_test_machinery(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        found = LEARNER_MUST_NOT_READ.search(learner_visible(cell))
        assert not found, f"{found.group(0)!r} in: {cell.source[:120]}"
        if "nbval-ignore-output" in notebooks.tags(cell):
            assert cell.metadata.get("ignore_output_reason"), "say why in metadata['ignore_output_reason']"


def test_hints_name_no_source_material():
    for path in sorted((notebooks.ROOT / "helpers" / "checks").glob("*.py")):
        found = LEARNER_MUST_NOT_READ.search(path.read_text())
        assert not found, f"{path.name}: {found.group(0)!r}"
