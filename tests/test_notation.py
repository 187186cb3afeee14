"""helpers.notation: every value the table gives is the one the code uses; every section exists."""

import inspect

import nbformat
import pytest
import torch

from helpers import counting, decoding, notation, recipe, reversal
from helpers.model import Transformer

ROWS = {s.tex: s for s in notation.SYMBOLS}


def default(fn, *names):
    params = inspect.signature(fn).parameters
    return next(params[n].default for n in names if n in params)


def adam_settings():
    opt, _ = recipe.adam_with_warmup(torch.nn.Linear(2, 2), d_model=64, warmup=400)
    group = opt.param_groups[0]
    return group["betas"], group["eps"]


def tiny_warmup():
    source = (notation_root() / "solutions" / "05_training_recipe.ipynb").read_text()
    return 400 if "adam_with_warmup(model, d_model=64, warmup=400)" in source else None


def notation_root():
    import pathlib
    return pathlib.Path(notation.__file__).resolve().parent.parent


# what the code says for each (base, tiny) value of the table
FROM_CODE = {
    r"d_{\text{model}}": lambda: (counting.BASE["d_model"], counting.TINY["d_model"]),
    r"n_{\text{vocab}}": lambda: (counting.BASE["vocab"], reversal.VOCAB),
    r"h": lambda: (counting.BASE["h"], counting.TINY["h"]),
    r"d_k,\ d_v": lambda: (counting.BASE["d_model"] // counting.BASE["h"],
                           counting.TINY["d_model"] // counting.TINY["h"]),
    r"d_{ff}": lambda: (counting.BASE["d_ff"], counting.TINY["d_ff"]),
    r"N": lambda: (counting.BASE["N"], counting.TINY["N"]),
    r"P_{drop}": lambda: (0.1, default(Transformer, "p", "p_drop", "dropout")),
    r"\epsilon_{\text{LN}}": lambda: (torch.nn.LayerNorm(4).eps, torch.nn.LayerNorm(4).eps),
    r"\beta_1,\ \beta_2": lambda: (adam_settings()[0],) * 2,
    r"\epsilon_{\text{Adam}}": lambda: (adam_settings()[1],) * 2,
    r"warmup\_steps": lambda: (default(recipe.lrate, "warmup"), tiny_warmup()),
    r"\epsilon_{ls}": lambda: (0.1, default(recipe.smoothed_loss, "eps_ls", "eps")),
    r"k": lambda: (4, default(decoding.beam_search, "k")),
    r"lp(Y),\ \alpha": lambda: (0.6, default(decoding.beam_search, "alpha")),
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
    path = notation_root() / "solutions" / f"{row.notebook}.ipynb"
    nb = nbformat.read(path, as_version=4)
    headings = [line.lstrip("#").strip() for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("#")]
    if row.section is not None:
        assert any(row.section in h for h in headings), f"{row.notebook} has no section {row.section!r}"
