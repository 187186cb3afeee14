"""helpers.course.notation: every value the table gives is the one the code uses; every symbol is written
first in the section that introduces it, and nowhere with another meaning (outside its stated
reuses). ``python -m helpers.course.notation`` prints every problem at once."""

import inspect
import pathlib

import pytest
import torch

from helpers import counting, decoding, recipe
from helpers.course import notation
from helpers.tasks import reversal
from helpers.model import Transformer

ROOT = pathlib.Path(notation.__file__).resolve().parents[2]
ROWS = {s.tex: s for s in notation.SYMBOLS}
TEXT = notation.course_chunks()
CODE = notation.course_code()


def default(fn, *names):
    params = inspect.signature(fn).parameters
    return next(params[n].default for n in names if n in params)


def adam_settings():
    opt, _ = recipe.adam_with_warmup(torch.nn.Linear(2, 2), d_model=64, warmup=400)
    group = opt.param_groups[0]
    return group["betas"], group["eps"]


def tiny_warmup():
    source = (ROOT / "solutions" / "05_training_recipe.ipynb").read_text()
    return 400 if "adam_with_warmup(model, d_model=64, warmup=400)" in source else None


def head_width():
    return (counting.BASE["d_model"] // counting.BASE["h"], counting.TINY["d_model"] // counting.TINY["h"])


# what the code says for each (base, tiny) value of the table
FROM_CODE = {
    r"d_{\text{model}}": lambda: (counting.BASE["d_model"], counting.TINY["d_model"]),
    r"n_{\text{vocab}}": lambda: (counting.BASE["vocab"], reversal.VOCAB),
    r"h": lambda: (counting.BASE["h"], counting.TINY["h"]),
    r"d_k": head_width,
    r"d_v": head_width,
    r"d_{ff}": lambda: (counting.BASE["d_ff"], counting.TINY["d_ff"]),
    r"N": lambda: (counting.BASE["N"], counting.TINY["N"]),
    r"P_{drop}": lambda: (0.1, default(Transformer, "p", "p_drop", "dropout")),
    r"\epsilon": lambda: (torch.nn.LayerNorm(4).eps, torch.nn.LayerNorm(4).eps),
    r"\beta_1,\ \beta_2": lambda: (adam_settings()[0],) * 2,
    r"\epsilon_{\text{Adam}}": lambda: (adam_settings()[1],) * 2,
    r"warmup\_steps": lambda: (default(recipe.lrate, "warmup"), tiny_warmup()),
    r"\epsilon_{ls}": lambda: (0.1, default(recipe.smoothed_loss, "eps_ls", "eps")),
    r"n_{\text{beam}}": lambda: (4, default(decoding.beam_search, "k", "n_beam")),
    r"lp(\hat{y}),\ \alpha": lambda: (0.6, default(decoding.beam_search, "alpha")),
}


def test_every_symbol_appears_once():
    assert len(ROWS) == len(notation.SYMBOLS)


@pytest.mark.parametrize("tex", sorted(ROWS))
def test_values_are_the_codes(tex):
    row = ROWS[tex]
    if row.base is None and row.tiny is None:
        assert tex not in FROM_CODE
        return
    assert tex in FROM_CODE, "a value in the table needs its check against the code here"
    base, tiny = FROM_CODE[tex]()
    assert (tuple(base) if isinstance(base, (tuple, list)) else base) == row.base
    assert (tuple(tiny) if isinstance(tiny, (tuple, list)) else tiny) == row.tiny


@pytest.mark.parametrize("tex", sorted(ROWS))
def test_the_introducing_section_exists(tex):
    row = ROWS[tex]
    if row.section is not None:
        assert any(notation.in_section(c, row.notebook, row.section) for c in TEXT), \
            f"{row.notebook} has no section {row.section!r}"


@pytest.mark.parametrize("tex", sorted(ROWS))
def test_written_first_in_the_section_that_introduces_it(tex):
    row = ROWS[tex]
    first = notation.first_written(row, TEXT)
    assert first is not None, f"${tex}$ is written nowhere (forms {row.forms})"
    assert notation.introduces(row, first), \
        f"${tex}$ is first written in {notation.where(first)}, not in {row.notebook[:2]} {row.section}"


@pytest.mark.parametrize("tex", sorted(ROWS))
def test_no_other_meaning(tex):
    found = notation.clashes(ROWS[tex], TEXT, CODE)
    assert not found, f"${tex}$ ({ROWS[tex].meaning}) means something else in:\n" + "\n".join(found)


# The machinery, on small texts: each rule fails where it should.
def chunk(text, notebook="08_decoding", section="Sampling: temperature and top-k", cell=5):
    return notation.Chunk(notebook, cell, section, "", text)


def test_a_form_is_found_alone_not_inside_another_symbol():
    k = notation.pattern("k")
    for formula in (r"PE(\text{pos}+k)", r"\omega_i k", r"k = 3"):
        assert k.search(notation.normalise(formula)), formula
    for formula in (r"d_k", r"k_{\text{top}}", r"\text{token}", r"\sqrt{d_{k}}"):
        assert not k.search(notation.normalise(formula)), formula
    assert notation.pattern("V").search(notation.normalise(r"k \times V"))
    assert not notation.pattern("W").search(notation.normalise(r"W^Q"))
    assert notation.written("μ is the mean and σ² the variance") == [r"\mu", r"\sigma^2"]
    assert not notation.writes(chunk("Table 1 (which writes $k$ for the width; we write $w$)"), "k")


def test_a_symbol_outside_its_places_is_a_clash():
    temperature = ROWS["T"]
    assert not notation.clashes(temperature, [chunk("The temperature $T = 2$ flattens it.")], [])
    outside = chunk("there are $T$ of them", "05_training_recipe", "What each design choice is worth")
    assert len(notation.clashes(temperature, [outside], [])) == 1
    assert len(notation.clashes(ROWS[r"\pi"], [chunk(r"$\pi$ a permutation of the positions")], [])) == 1
    assert notation.clashes(ROWS["h"], [], [("07_x", 3, "h = block(h, mask)")])
    assert not notation.clashes(ROWS["h"], [], [("03_x", 3, "d, h = 64, 4\nh = A.num_heads\nif h == 4:")])


def test_written_before_its_section_is_caught():
    row = ROWS[r"k_{\text{top}}"]
    early = chunk(r"keep the $k_{\text{top}}$ best", section="One step of beam search, for a batch", cell=3)
    first = notation.first_written(row, [early, chunk(r"$k_{\text{top}}$")])
    assert first is early and not notation.introduces(row, first)


def test_the_tour_shows_symbols_without_introducing_them():
    """Notebook 00 comes first and writes symbols that later sections introduce: it is not where they
    are first written, but a meaning it gives them outside their places is still a clash."""
    row = ROWS[r"k_{\text{top}}"]
    tour = chunk(r"keep the $k_{\text{top}}$ best", notebook="00_tour", section="Where to go next", cell=3)
    later = chunk(r"$k_{\text{top}}$")
    assert notation.first_written(row, [tour, later]) is later
    elsewhere = chunk("there are $T$ of them", "00_tour", "Training", cell=4)
    assert notation.first_written(ROWS["T"], [elsewhere]) is None
    assert notation.clashes(ROWS["T"], [elsewhere], [])
    assert "00" in notation.PREVIEWS and [s for s, *_ in notation.course.NOTEBOOKS][0].startswith("00")


def test_the_notation_page_states_the_reuses():
    import nbformat

    from helpers import course
    from helpers.course import site

    solutions = {stem: nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
                 for stem, *_ in course.NOTEBOOKS}
    page = site.notation_page(solutions)
    for reuse in notation.REUSES:
        assert reuse.meaning in page


# --- Names in code: one meaning across the notebooks ------------------------------------------

CODE_NAMES = {   # name: (how a cell may bind it, what it is in every notebook)
    "same": ({"def"}, "the tolerance comparison of notebooks 03 and 04, bound only by `def same`"),
    "attention": ({"import"}, "helpers.attention.attention, bound only by importing it"),
}


def code_bindings(source, name):
    """How a code cell binds `name`: a list of 'def', 'import' or 'assign'."""
    import ast
    kinds = []
    for node in ast.walk(ast.parse("\n".join(line for line in source.splitlines()
                                             if not line.lstrip().startswith(("%", "!"))))):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            kinds.append("def")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            kinds += ["import" for alias in node.names if (alias.asname or alias.name) == name]
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            kinds.append("assign")
        elif isinstance(node, ast.arg) and node.arg == name:
            kinds.append("assign")
    return kinds


def test_a_code_name_keeps_one_meaning_in_every_notebook():
    found = []
    for stem, cell, source in notation.course_code():
        for name, (allowed, meaning) in CODE_NAMES.items():
            wrong = set(code_bindings(source, name)) - allowed
            if wrong:
                found.append(f"{stem[:2]} cell {cell}: {name} bound by {sorted(wrong)}; it is {meaning}")
    assert not found, "\n".join(found)


def test_the_code_name_check_sees_an_assignment():
    assert code_bindings("same = all(x)\nfor attention in y: pass", "same") == ["assign"]
    assert code_bindings("for attention in y: pass", "attention") == ["assign"]
    assert code_bindings("from helpers.attention import attention", "attention") == ["import"]
    assert code_bindings("def same(a, b):\n    return a == b", "same") == ["def"]
