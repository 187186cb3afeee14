"""The maintainer's platform command (tests/platforms.py), on the pinned torch: it must not rot."""

import io

import nbformat

import platforms
from helpers.course import notebooks


def test_one_notebook_alone_reproduces_its_stored_outputs():
    out = io.StringIO()
    rows = platforms.run(["pinned"], only=["01"], folders=("solutions",), out=out)
    assert [(r["notebook"], r["ran"], r["strict"]) for r in rows] == [("solutions/01_positions", True, 0)]
    assert "| pinned (torch " in out.getvalue() and "Every stored text output reproduced." in out.getvalue()


def test_a_changed_output_is_counted_and_shown(tmp_path):
    stored = notebooks.SOLUTIONS / "01_positions.ipynb"
    nb = nbformat.read(stored, as_version=4)
    cell = next(c for c in nb.cells
                if c.cell_type == "code" and any(o.output_type == "stream" for o in c.outputs))
    stream = next(o for o in cell.outputs if o.output_type == "stream")
    stream.text = "a different number 1.234\n" + stream.text
    changed = tmp_path / "changed.ipynb"
    nbformat.write(nb, changed)
    strict, tolerance, first = platforms.compare(stored, changed)
    assert (strict, tolerance) == (1, 0)
    assert "'<nothing>'" not in first and "a different number 1.234" in first
    assert platforms.compare(stored, stored) == (0, 0, "")


def test_a_stream_cut_in_pieces_is_not_a_difference(tmp_path):
    stored = notebooks.SOLUTIONS / "01_positions.ipynb"
    nb = nbformat.read(stored, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            pieces = []
            for o in cell.outputs:
                if o.output_type == "stream" and len(o.text) > 3:   # as a busy kernel sends it
                    pieces += [nbformat.v4.new_output("stream", name=o.name, text=t)
                               for t in (o.text[:3], o.text[3:])]
                else:
                    pieces.append(o)
            cell.outputs = pieces
    nbformat.write(nb, tmp_path / "pieces.ipynb")
    assert platforms.compare(stored, tmp_path / "pieces.ipynb") == (0, 0, "")
