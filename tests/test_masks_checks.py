"""The checks of notebook 07 pass the right answers and name the typical mistakes."""

import torch
from torch import nn

from helpers.attention import causal_mask
from helpers.checks.masks import check_four_token_mask, check_hidden_cells, check_padding_mask

BATCH = torch.tensor([[12, 7, 30, 5, 0, 0], [4, 9, 0, 0, 0, 0], [3, 8, 15, 22, 41, 6]])


def said(check, *args, capsys):
    """(passed, printed line) of a checker: it prints one line, "Check passed." or a hint."""
    check(*args)
    line = capsys.readouterr().out.strip()
    return line == "Check passed.", line


def test_hidden_cells(capsys):
    assert said(check_hidden_cells, 15, capsys=capsys) == (True, "Check passed.")
    assert said(check_hidden_cells, torch.tensor(15), capsys=capsys)[0]
    for wrong, words in ((21, "diagonal"), (30, "both triangles"), (36, "every cell"), (10, "first row"),
                         (15.5, "whole number")):
        passed, line = said(check_hidden_cells, wrong, capsys=capsys)
        assert not passed and words in line, (wrong, line)


def test_four_token_mask(capsys):
    right = nn.Transformer.generate_square_subsequent_mask(4)
    assert said(check_four_token_mask, right, 6, capsys=capsys) == (True, "Check passed.")
    assert said(check_four_token_mask, causal_mask(4), 6, capsys=capsys)[0]       # boolean form
    future = causal_mask(4)
    for wrong, words in ((future.T, "past"), (torch.ones(4, 4, dtype=torch.bool).triu(0), "diagonal"),
                         (~future, "inverted"), (future.float(), "-inf"),
                         (nn.Transformer.generate_square_subsequent_mask(6), "shape (4, 4)")):
        passed, line = said(check_four_token_mask, wrong, 6, capsys=capsys)
        assert not passed and words in line, line
    passed, line = said(check_four_token_mask, right, 10, capsys=capsys)
    assert not passed and "diagonal" in line


def test_padding_mask(capsys):
    right = BATCH == 0
    assert said(check_padding_mask, right, BATCH, capsys=capsys) == (True, "Check passed.")
    additive = torch.zeros(3, 6).masked_fill(right, float("-inf"))
    for wrong, words in ((BATCH != 0, "Inverted mask"), (right.float(), "dtype"),
                         ((BATCH != 0).long(), "Inverted, and not boolean"), (right.T, "transposed"),
                         (right[:, None, None, :], "shape"), (additive, "additive form"),
                         (torch.zeros(3, 6, dtype=torch.bool), "hides nothing"),
                         (BATCH == 12, "Some cells are wrong")):
        passed, line = said(check_padding_mask, wrong, BATCH, capsys=capsys)
        assert not passed and words in line, (words, line)
    passed, line = said(check_padding_mask, right, None, capsys=capsys)
    assert not passed and "batch" in line
