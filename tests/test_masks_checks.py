"""The checks of notebook 07 pass the right answers and name the typical mistakes."""

import torch
from torch import nn

from helpers.checks.masks import (check_decoder_mask, check_order_question, check_padding_question,
                                  check_router_question)
from printed import printed

BATCH = torch.tensor([[12, 7, 30, 5, 0, 0], [4, 9, 0, 0, 0, 0], [3, 8, 15, 22, 41, 6]])


def said(check, *args, capsys):
    """(passed, printed line) of a checker: it prints one line, "Check passed." or a hint."""
    line = printed(capsys, check, *args)
    return line == "Check passed.", line


# --- the decoder's mask: every mistake written here on its own, without the checker's code ---------

NEG = float("-inf")


def right_with_triu(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1) | (ids == pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def right_with_where(ids, pad):
    b, n = ids.shape
    i = torch.arange(n)
    keep = (i[None, :] <= i[:, None]).view(1, 1, n, n) & (ids != pad).view(b, 1, 1, n)
    return torch.where(keep, 0.0, NEG)


def right_with_loops(ids, pad):
    b, n = ids.shape
    mask = torch.zeros(b, 1, n, n)
    for t in range(b):
        for i in range(n):
            for j in range(n):
                if j > i or ids[t, j] == pad:
                    mask[t, 0, i, j] = NEG
    return mask


def with_value(value):
    def fn(ids, pad):
        return right_with_triu(ids, pad).clamp(min=value)   # -inf -> value, 0 stays 0
    return fn


def inverted(ids, pad):
    return torch.where(right_with_triu(ids, pad) == 0, NEG, 0.0)


def plus_inf(ids, pad):
    return -right_with_triu(ids, pad)


def diagonal_hidden(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).triu(0).bool() | (ids == pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def padding_on_queries(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).triu(1).bool() | (ids == pad)[:, None, :, None]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def booleans(ids, pad):
    n = ids.shape[1]
    return torch.ones(n, n).triu(1).bool() | (ids == pad)[:, None, None, :]


def padding_inverted(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).triu(1).bool() | (ids != pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def hides_the_past(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).tril(-1).bool() | (ids == pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def causal_only(ids, pad):
    n = ids.shape[1]
    return nn.Transformer.generate_square_subsequent_mask(n)


def padding_only(ids, pad):
    return torch.zeros(ids.shape).masked_fill(ids == pad, NEG)[:, None, None, :]


def no_head_axis(ids, pad):
    return right_with_triu(ids, pad)[:, 0]


def hard_coded_pad(ids, pad):
    return right_with_triu(ids, 0)


def multiplied(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).triu(1).bool() | (ids == pad)[:, None, None, :]
    return hidden.float() * NEG                         # 0 × -inf = nan


def ones_for_hidden(ids, pad):
    return (right_with_triu(ids, pad) != 0).float()


def test_decoder_mask_right_answers_pass(capsys):
    for fn in (right_with_triu, right_with_where, right_with_loops):
        passed, line = said(check_decoder_mask, fn, capsys=capsys)
        assert passed or line.startswith("Check passed."), line
        assert "large negative" not in line


def test_decoder_mask_large_negative_passes_with_a_note(capsys):
    for value in (-1e9, torch.finfo(torch.float32).min):
        _, line = said(check_decoder_mask, with_value(value), capsys=capsys)
        assert line.startswith("Check passed.") and "works in practice" in line, line


def test_decoder_mask_names_each_mistake(capsys):
    for fn, words in ((inverted, "Inverted mask"), (plus_inf, "+inf instead of -inf"),
                      (diagonal_hidden, "diagonal is hidden"),
                      (padding_on_queries, "queries instead of the keys"),
                      (booleans, "booleans"), (padding_inverted, "padding part is inverted"),
                      (hides_the_past, "wrong side"), (causal_only, "padding is missing"),
                      (padding_only, "causal part is missing"), (no_head_axis, "head axis"),
                      (hard_coded_pad, "pad argument"), (multiplied, "nan"),
                      (ones_for_hidden, "small number")):
        passed, line = said(check_decoder_mask, fn, capsys=capsys)
        assert not passed and words in line, (fn.__name__, line)
        assert not line.startswith("Check passed."), line


def test_decoder_mask_garbage_gives_one_line(capsys):
    def placeholder(ids, pad):
        """A docstring only."""
        ...

    def raises(ids, pad):
        raise ValueError("boom")

    def forgets_return(ids, pad):
        right_with_triu(ids, pad)

    for fn, words in ((None, "Not answered yet"), (placeholder, "Not answered yet"), (raises, "ValueError"),
                      (forgets_return, "returned None"), (lambda ids, pad: [1, 2], "list"),
                      (lambda ids, pad: torch.zeros(2, 3), "broadcast"), ("my_decoder_mask", "function")):
        passed, line = said(check_decoder_mask, fn, capsys=capsys)
        assert not passed and words in line and "\n" not in line, (words, line)


def test_decoder_mask_of_the_mutating_kind_is_named(capsys):
    def mutates(ids, pad):
        out = right_with_triu(ids, pad)
        ids[ids == pad] = -1
        return out

    passed, line = said(check_decoder_mask, mutates, capsys=capsys)
    assert not passed and "in place" in line


# --- check your understanding ----------------------------------------------------------------------

def test_order_question(capsys):
    passed, line = said(check_order_question, "a", capsys=capsys)
    assert line.startswith("Check passed. ") and "Attention(X_π)" in line
    for wrong, words in (("b", "section 1"), ("c", "section 5")):
        passed, line = said(check_order_question, wrong, capsys=capsys)
        assert not passed and words in line, line
    assert "Not answered yet" in said(check_order_question, None, capsys=capsys)[1]


def test_padding_question(capsys):
    _, line = said(check_padding_question, "a", (2, 120), capsys=capsys)
    assert line.startswith("Check passed. ") and "(2, 120)" in line
    _, line = said(check_padding_question, " A ", torch.Size([2, 120]), capsys=capsys)
    assert line.startswith("Check passed.")
    for wrong, words in (("b", "padding *keys*"), ("c", "not empty")):
        passed, line = said(check_padding_question, wrong, (2, 120), capsys=capsys)
        assert not passed and words in line and "section 6" in line, line
    for wrong, words in (((2, 120, 120), "(query, key)"), ((120, 120), "causal"),
                         ((2, 1, 1, 120), "additive"), ((120, 2), "transposed"),
                         ((2, 12), "one True/False per token")):
        passed, line = said(check_padding_question, "a", wrong, capsys=capsys)
        assert not passed and words in line, (wrong, line)
    assert "Not answered yet" in said(check_padding_question, "a", None, capsys=capsys)[1]
    assert "Not answered yet" in said(check_padding_question, None, None, capsys=capsys)[1]


def test_router_question(capsys):
    assert said(check_router_question, "a", capsys=capsys)[1].startswith("Check passed. ")
    for wrong, words in (("b", "Swapped"), ("c", "next word")):
        passed, line = said(check_router_question, wrong, capsys=capsys)
        assert not passed and words in line, line
    passed, line = said(check_router_question, "encoder", capsys=capsys)
    assert not passed and "should be one of" in line
