"""Optional parts of a notebook: marked in one place, timed on their own, needed by nothing after them.

A heading cell whose metadata says ``"optional": true`` starts an optional part (helpers.course.timing).
A learner may skip it, so no later cell may use a name that only the optional part defines, and
no exercise or check may sit in it except its own questions.
"""

import ast
import builtins

import nbformat
import pytest

from helpers.course import notebooks, timing

SOLUTIONS = sorted(notebooks.SOLUTIONS.glob("*.ipynb"))
WITH_OPTIONAL = [p for p in SOLUTIONS if timing.optional_parts(nbformat.read(p, as_version=4))]


def bound_and_used(source):
    """(names a code cell binds, names it reads before binding them itself)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else used).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Lambda):
            bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.comprehension):
            bound.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return bound, used


def names_a_skipper_lacks(nb):
    """For each code cell after an optional part: the names it reads that only optional cells bind."""
    optional = {id(c) for _, cells in timing.optional_parts(nb) for c in cells}
    core_bound, optional_bound, missing = set(dir(builtins)), set(), []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        bound, used = bound_and_used(cell.source)
        if id(cell) in optional:
            optional_bound |= bound
            continue
        lacking = (used & optional_bound) - core_bound - bound
        if lacking:
            missing.append((cell.source.splitlines()[0], sorted(lacking)))
        core_bound |= bound
    return missing


def test_the_notebooks_that_have_optional_parts():
    assert [p.stem[:2] for p in WITH_OPTIONAL] == ["05", "06", "07", "09"]


@pytest.mark.parametrize("path", WITH_OPTIONAL, ids=lambda p: p.stem)
def test_no_later_cell_needs_an_optional_part(path):
    assert names_a_skipper_lacks(nbformat.read(path, as_version=4)) == []


def test_the_check_finds_a_name_only_an_optional_part_defines():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [md("## 1. Core"), code("a = 1"), md("## 2. More", metadata={"optional": True}),
                code("b = a + 1\ndef f(x):\n    return x"), md("## 3. Core again"),
                code("print(a, b)"), code("f(2)"), code("b = 3\nprint(b)")]
    assert names_a_skipper_lacks(nb) == [("print(a, b)", ["b"]), ("f(2)", ["f"])]


@pytest.mark.parametrize("path", WITH_OPTIONAL, ids=lambda p: p.stem)
def test_an_optional_part_holds_no_exercise_only_questions(path):
    nb = nbformat.read(path, as_version=4)
    for _, cells in timing.optional_parts(nb):
        exercises, _ = timing.tasks(nb, cells)
        assert exercises == [], [c.source.splitlines()[0] for c, _ in exercises]


@pytest.mark.parametrize("path", WITH_OPTIONAL, ids=lambda p: p.stem)
def test_each_optional_heading_states_its_own_time(path):
    nb = nbformat.read(path, as_version=4)
    for head, cells in timing.optional_parts(nb):
        low, high = timing.optional_minutes(nb, cells)
        line = notebooks.OPTIONAL_LINE.format(low=low, high=high)
        assert line in head.source, "run: python -m helpers.course.notebooks"


def test_optional_parts_end_at_the_next_heading_of_their_level():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [md("# 99 · Demo\n\n**Time:** about 5 min."), md("## 1. Core"), code("a = 1"),
                md("### A subsection", metadata={"optional": True}), code("b = 2"), md("text"),
                md("## 2. Core"), code("c = 3"), md("## 3. All optional", metadata={"optional": True}),
                md("### its subsection"), code("d = 4"), md("## 4. Core"), code("e = 5")]
    parts = timing.optional_parts(nb)
    assert [[c.source for c in cells] for _, cells in parts] == [
        ["### A subsection", "b = 2", "text"], ["## 3. All optional", "### its subsection", "d = 4"]]
    core, _, _ = timing.breakdown(nb)
    assert core["code cells"] == 3                  # a, c, e
    assert timing.stated(nb).endswith("min for the optional parts")
    written = notebooks.with_optional_lines(nb)
    assert written.cells[3].source.startswith("### A subsection\n\n*Optional, about ")
