"""The checks of notebook 07 pass the right answers and name the typical mistakes.

Each mistake is written here on its own, as a learner would write it, without the checker's code;
each hint is shown to fire on its own mistake and not on the neighbouring ones.
"""

import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fuzz import assert_survives, wrong_functions, wrong_tensors
from helpers.attention import additive_mask, causal_mask, padding_mask
from helpers.checks.masks import (check_alone_vs_padded, check_decoder_mask, check_learned_positions,
                                  check_order_question, check_padding_question, check_router_question,
                                  check_shuffle_test)
from helpers.tasks.classifier import predict
from helpers.tasks.tickets import PAD
from printed import printed


def said(check, *args, capsys):
    """(passed, printed line) of a checker: it prints one line, "Check passed." or a hint."""
    line = printed(capsys, check, *args)
    return line.startswith("Check passed."), line


def names_only(line, own, others):
    """The line holds the words of its own hint and of no other hint of the same check."""
    assert own in line, (own, line)
    for words in others:
        if words != own:
            assert words not in line, (own, words, line)


# --- Your turn 1: the shuffle test -----------------------------------------------------------------

def shuffle_right(f, x, pi):
    return torch.allclose(f(x[:, pi]), f(x)[:, pi], atol=1e-5)


def shuffle_right_with_a_tensor_index(f, x, pi):
    order = torch.tensor(pi)
    return bool(((f(x.index_select(1, order)) - f(x).index_select(1, order)).abs() < 1e-5).all())


def shuffle_right_token_by_token(f, x, pi):
    out, moved = f(x), f(x[:, pi])
    return all(torch.allclose(moved[:, i], out[:, p], atol=1e-4) for i, p in enumerate(pi))


def shuffle_zero_dim_tensor(f, x, pi):
    return (f(x[:, pi]) - f(x)[:, pi]).abs().max() < 1e-5          # a 0-dim boolean tensor


def shuffle_outputs_not_reordered(f, x, pi):
    return torch.allclose(f(x[:, pi]), f(x), atol=1e-5)


def shuffle_inputs_not_reordered(f, x, pi):
    return torch.allclose(f(x), f(x)[:, pi], atol=1e-5)


def shuffle_inverse(f, x, pi):
    inverse = [pi.index(i) for i in range(len(pi))]
    return torch.allclose(f(x[:, pi]), f(x)[:, inverse], atol=1e-5)


def shuffle_exact(f, x, pi):
    return torch.equal(f(x[:, pi]), f(x)[:, pi])


def shuffle_means(f, x, pi):
    return torch.allclose(f(x[:, pi]).mean(dim=1), f(x).mean(dim=1), atol=1e-5)


def shuffle_opposite(f, x, pi):
    return not torch.allclose(f(x[:, pi]), f(x)[:, pi], atol=1e-5)


def shuffle_elementwise(f, x, pi):
    return f(x[:, pi]) == f(x)[:, pi]


def shuffle_batch_axis(f, x, pi):
    return torch.allclose(f(x[pi]), f(x)[pi], atol=1e-5)


def shuffle_feature_axis(f, x, pi):
    return torch.allclose(f(x[..., pi]), f(x)[..., pi], atol=1e-5)


SHUFFLE_HINTS = {shuffle_outputs_not_reordered: "Reorder both sides",
                 shuffle_inputs_not_reordered: "Reorder both sides",
                 shuffle_inverse: "inverse permutation", shuffle_exact: "bit-for-bit",
                 shuffle_means: "means over the tokens", shuffle_opposite: "opposite question",
                 shuffle_elementwise: "one True or False", shuffle_batch_axis: "reorders the batch axis",
                 shuffle_feature_axis: "d numbers of each token"}


def test_shuffle_test_right_answers_pass(capsys):
    for fn in (shuffle_right, shuffle_right_with_a_tensor_index, shuffle_right_token_by_token,
               shuffle_zero_dim_tensor):
        passed, line = said(check_shuffle_test, fn, capsys=capsys)
        assert passed, (fn.__name__, line)


def test_shuffle_test_names_each_mistake_and_only_it(capsys):
    for fn, words in SHUFFLE_HINTS.items():
        passed, line = said(check_shuffle_test, fn, capsys=capsys)
        assert not passed, (fn.__name__, line)
        names_only(line, words, SHUFFLE_HINTS.values())


def test_shuffle_test_placeholder_and_garbage(capsys):
    def placeholder(f, x, pi):
        """A docstring only."""
        ...

    def always_true(f, x, pi):
        return True

    for fn, words in ((placeholder, "Not answered yet"), (None, "Not answered yet"),
                      (lambda f, x, pi: 1, "True or False"),
                      (always_true, "Not yet: on self-attention with")):
        passed, line = said(check_shuffle_test, fn, capsys=capsys)
        assert not passed and words in line, (words, line)


def random_answers(seed):
    rng = random.Random(seed)

    def answer(*args):
        return rng.random() < 0.5
    return answer


def odd_functions(right, seed=0):
    """Functions returning perturbed tensors, random True/False, or failing in other ways."""
    out = [lambda *a, value=value: value
           for _, value in wrong_tensors(torch.tensor(1.0)) + wrong_tensors(torch.ones(3, 2))]
    out += [random_answers(seed + k) for k in range(3)]
    return out + [fn for label, fn in wrong_functions(right) if label in ("raises", "returns a string",
                                                                         "returns a dict", "tuple of two")]


def test_shuffle_test_survives_perturbed_answers(capsys):
    for fn in odd_functions(shuffle_right):
        assert_survives(capsys, check_shuffle_test, fn)


# --- Your turn 2: a learned position table ---------------------------------------------------------

class PositionsEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x, start=0):
        return x + self.table(torch.arange(start, start + x.shape[1]))


class PositionsParameter(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.pe = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, x, start=0):
        return x + self.pe[start:start + x.shape[1]]


class PositionsTransposed(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.pe = nn.Parameter(torch.zeros(d_model, max_len))

    def forward(self, x, start=0):
        return x + self.pe[:, start:start + x.shape[1]].T


def parameter_table(m, max_len, d):
    m.pe = nn.Parameter(torch.randn(max_len, d))


def positions_class(forward, make=parameter_table):
    """A LearnedPositions class with this forward(self, x, start) and this way of making the table."""
    class Positions(nn.Module):
        def __init__(self, max_len, d_model):
            super().__init__()
            make(self, max_len, d_model)

    Positions.forward = forward
    return Positions


def rows(m, x, start):
    return m.pe[start:start + x.shape[1]]


PlainTensor = positions_class(lambda m, x, start=0: x + rows(m, x, start),
                              make=lambda m, max_len, d: setattr(m, "pe", torch.randn(max_len, d)))


class Buffer(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.register_buffer("pe", torch.randn(max_len, d_model))

    def forward(self, x, start=0):
        return x + self.pe[start:start + x.shape[1]]


class Sinusoids(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.d = d_model

    def forward(self, x, start=0):
        pos = torch.arange(start, start + x.shape[1]).float()[:, None]
        return x + torch.sin(pos / 10000 ** (torch.arange(self.d) / self.d))


OneRowTooMany = positions_class(lambda m, x, start=0: x + rows(m, x, start),
                                make=lambda m, max_len, d: parameter_table(m, max_len + 1, d))
IgnoresStart = positions_class(lambda m, x, start=0: x + rows(m, x, 0))
OffByOne = positions_class(lambda m, x, start=0: x + rows(m, x, start + 1))
Multiplies = positions_class(lambda m, x, start=0: x * rows(m, x, start))
RowsAlone = positions_class(lambda m, x, start=0: rows(m, x, start).expand_as(x).clone())
Unchanged = positions_class(lambda m, x, start=0: x + 0 * m.pe.sum())
SameRow = positions_class(lambda m, x, start=0: x + m.pe[start])
Detached = positions_class(lambda m, x, start=0: x + rows(m, x, start).detach())
NoDefaultStart = positions_class(lambda m, x, start: x + rows(m, x, start))

POSITION_HINTS = {PlainTensor: "plain tensor", Buffer: "plain tensor", Sinusoids: "no parameter",
                  OneRowTooMany: "max_len × d_model", IgnoresStart: "ignores start", OffByOne: "Off by one",
                  Multiplies: "multiplied", RowsAlone: "position vectors alone", Unchanged: "unchanged",
                  SameRow: "same row", Detached: "No gradient", NoDefaultStart: "TypeError"}


def test_learned_positions_right_answers_pass(capsys):
    for cls in (PositionsEmbedding, PositionsParameter, PositionsTransposed):
        passed, line = said(check_learned_positions, cls, capsys=capsys)
        assert passed, (cls.__name__, line)


def test_learned_positions_names_each_mistake_and_only_it(capsys):
    for cls, words in POSITION_HINTS.items():
        passed, line = said(check_learned_positions, cls, capsys=capsys)
        assert not passed, (words, line)
        names_only(line, words, [w for w in POSITION_HINTS.values() if w != "TypeError"])


def test_learned_positions_placeholder_and_garbage(capsys):
    class Placeholder(nn.Module):
        """A docstring only."""

        def __init__(self, max_len, d_model):
            super().__init__()
            ...

        def forward(self, x, start=0):
            ...

    class Raises(nn.Module):
        def __init__(self, max_len, d_model):
            raise ValueError("boom")

    class NotAModule:
        def __init__(self, max_len, d_model):
            pass

    for cls, words in ((Placeholder, "Not answered yet"), (None, "Not answered yet"), (Raises, "ValueError"),
                       (NotAModule, "nn.Module"), (PositionsEmbedding(10, 6), "class itself")):
        passed, line = said(check_learned_positions, cls, capsys=capsys)
        assert not passed and words in line, (words, line)


def test_learned_positions_keep_the_learners_random_state(capsys):
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    said(check_learned_positions, PositionsEmbedding, capsys=capsys)
    assert torch.equal(torch.rand(3), expected)


def test_learned_positions_survive_perturbed_answers(capsys):
    x = torch.zeros(2, 4, 6)
    for _label, value in wrong_tensors(PositionsEmbedding(10, 6)(x)):
        cls = positions_class(lambda m, x, start=0, value=value: value)
        assert_survives(capsys, check_learned_positions, cls)
    for _label, fn in wrong_functions(PositionsEmbedding.forward):
        cls = positions_class(lambda m, x, start=0, fn=fn: fn(PositionsEmbedding(10, 6), x, start))
        assert_survives(capsys, check_learned_positions, cls)


# --- Your turn 3: the alone-vs-padded test ---------------------------------------------------------

def padded_at_end(ids, width, value=PAD, front=False):
    fill = torch.full((1, width - ids.shape[1]), value)
    return torch.cat([fill, ids] if front else [ids, fill], dim=1)


def alone_right(net, ids, width):
    net.eval()
    with torch.no_grad():
        return torch.allclose(net(ids), net(padded_at_end(ids, width)), atol=1e-5)


def alone_right_with_f_pad(net, ids, width):
    net.eval()
    with torch.no_grad():
        return torch.allclose(net(F.pad(ids, (0, width - ids.shape[1]), value=PAD)), net(ids), atol=1e-4)


def alone_right_in_a_batch(net, ids, width):
    net.eval()
    batch = torch.cat([padded_at_end(ids, width), torch.arange(2, 2 + width)[None]])   # with a longer ticket
    with torch.no_grad():
        return torch.allclose(net(batch)[0], net(ids)[0], atol=1e-5)


def alone_front(net, ids, width):
    net.eval()
    return torch.allclose(net(ids), net(padded_at_end(ids, width, front=True)), atol=1e-5)


def alone_other_id(net, ids, width):
    net.eval()
    return torch.allclose(net(ids), net(padded_at_end(ids, width, value=1)), atol=1e-5)


def alone_no_eval(net, ids, width):
    with torch.no_grad():
        return torch.allclose(net(ids), net(padded_at_end(ids, width)), atol=1e-5)


def alone_team_only(net, ids, width):
    net.eval()
    return bool(net(ids).argmax() == net(padded_at_end(ids, width)).argmax())


def alone_exact(net, ids, width):
    net.eval()
    return torch.equal(net(ids), net(padded_at_end(ids, width)))


def alone_predict(net, ids, width):
    return torch.allclose(predict(net, ids), predict(net, padded_at_end(ids, width)), atol=1e-5)


def alone_opposite(net, ids, width):
    net.eval()
    return not torch.allclose(net(ids), net(padded_at_end(ids, width)), atol=1e-5)


def alone_full_width(net, ids, width):
    net.eval()
    return torch.allclose(net(ids), net(padded_at_end(ids, 120)), atol=1e-5)


ALONE_HINTS = {alone_front: "at the start", alone_other_id: "another id than PAD",
               alone_no_eval: "training mode",
               alone_team_only: "winning team", alone_exact: "bit-for-bit", alone_predict: "predict and trim",
               alone_opposite: "opposite question", alone_full_width: "Pad to width"}


def test_alone_vs_padded_right_answers_pass(capsys):
    for fn in (alone_right, alone_right_with_f_pad, alone_right_in_a_batch):
        passed, line = said(check_alone_vs_padded, fn, capsys=capsys)
        assert passed, (fn.__name__, line)


def test_alone_vs_padded_names_each_mistake_and_only_it(capsys):
    for fn, words in ALONE_HINTS.items():
        passed, line = said(check_alone_vs_padded, fn, capsys=capsys)
        assert not passed, (fn.__name__, line)
        names_only(line, words, ALONE_HINTS.values())


def test_alone_vs_padded_placeholder_and_garbage(capsys):
    def placeholder(net, ids, width):
        """A docstring only."""
        ...

    def scores_not_bool(net, ids, width):
        return net(ids)

    for fn, words in ((placeholder, "Not answered yet"), (None, "Not answered yet"),
                      (scores_not_bool, "one True or False"),
                      (lambda net, ids, width: "yes", "True or False")):
        passed, line = said(check_alone_vs_padded, fn, capsys=capsys)
        assert not passed and words in line, (words, line)


def test_alone_vs_padded_survives_perturbed_answers(capsys):
    for fn in odd_functions(alone_right):
        assert_survives(capsys, check_alone_vs_padded, fn)


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


def minus_hundred(ids, pad):
    return right_with_triu(ids, pad).clamp(min=-100.0)


def minus_thousand(ids, pad):
    return right_with_triu(ids, pad).clamp(min=-1000.0)


def both_axes(ids, pad):
    n = ids.shape[1]
    hidden = torch.ones(n, n).triu(1).bool() | (ids == pad)[:, None, None, :] | (ids == pad)[:, None, :, None]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def calls_the_reference(ids, pad):
    return additive_mask(causal_mask(ids.shape[1]), padding_mask(ids, pad))


def uses_causal_mask(ids, pad):
    hidden = causal_mask(ids.shape[1]) | padding_mask(ids, pad)[:, None, None, :]
    return torch.zeros(hidden.shape).masked_fill(hidden, NEG)


def test_decoder_mask_right_answers_pass(capsys):
    for fn in (right_with_triu, right_with_where, right_with_loops, uses_causal_mask):
        passed, line = said(check_decoder_mask, fn, capsys=capsys)
        assert passed or line.startswith("Check passed."), line
        assert "large negative" not in line


def test_decoder_mask_large_negative_passes_with_a_note(capsys):
    for value in (-1e9, torch.finfo(torch.float32).min):
        _, line = said(check_decoder_mask, with_value(value), capsys=capsys)
        assert line.startswith("Check passed.") and "works in practice" in line, line


DECODER_HINTS = {inverted: "Inverted mask", plus_inf: "+inf", diagonal_hidden: "diagonal is hidden",
                 padding_on_queries: "queries instead of the keys", both_axes: "both axes",
                 booleans: "Booleans", padding_inverted: "padding part is inverted",
                 hides_the_past: "wrong side", causal_only: "padding is missing",
                 padding_only: "causal part is missing", no_head_axis: "head axis",
                 hard_coded_pad: "pad argument", multiplied: "contains nan", ones_for_hidden: "more weight",
                 minus_hundred: "only lowers", minus_thousand: "is 0 in float32, so it hides a cell only",
                 calls_the_reference: "the very reference"}


def test_decoder_mask_names_each_mistake_and_only_it(capsys):
    for fn, words in DECODER_HINTS.items():
        passed, line = said(check_decoder_mask, fn, capsys=capsys)
        assert not passed, (fn.__name__, line)
        names_only(line, words, DECODER_HINTS.values())


def test_decoder_mask_both_axes_and_large_negative_are_not_misnamed(capsys):
    """Issue 21: padding hidden on both axes was told "queries instead of keys"; -1e9 "a 1 would
    hide nothing"."""
    _, line = said(check_decoder_mask, both_axes, capsys=capsys)
    assert "both axes" in line and "queries instead" not in line, line
    _, line = said(check_decoder_mask, with_value(-1e9), capsys=capsys)
    assert line.startswith("Check passed.") and "a 1" not in line, line


def test_decoder_mask_survives_perturbed_answers(capsys):
    for _label, fn in wrong_functions(right_with_triu):
        assert_survives(capsys, check_decoder_mask, fn)


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

@pytest.mark.parametrize("check, right", ((check_order_question, ("a",)), (check_router_question, ("a",)),
                                          (check_padding_question, ("a", (2, 120)))))
def test_questions_survive_odd_answers(check, right, capsys):
    odd = [value for _, value in wrong_tensors(torch.tensor([2.0, 120.0]))] + ["A", " a ", "d", 0, ("a",)]
    for position in range(len(right)):
        for value in odd:
            args = list(right)
            args[position] = value
            assert_survives(capsys, check, *args)

def test_order_question(capsys):
    passed, line = said(check_order_question, "a", capsys=capsys)
    assert line.startswith("Check passed. ") and "Attention(X_ρ)" in line
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


# --- Issue 29 ---------------------------------------------------------------------------------------

def shuffle_sorted(f, x, pi):
    return torch.allclose(f(x[:, pi]).sort(dim=1).values, f(x).sort(dim=1).values, atol=1e-5)


def shuffle_loose(tolerance):
    def test(f, x, pi):
        return torch.allclose(f(x[:, pi]), f(x)[:, pi], atol=tolerance)
    return test


ISSUE_29_SHUFFLE = {shuffle_sorted: "compares sorted outputs", shuffle_loose(1.0): "tolerance is too loose",
                    shuffle_loose(0.1): "tolerance is too loose"}


def test_issue_29_sorted_outputs_and_a_loose_tolerance_are_named(capsys):
    words = [*SHUFFLE_HINTS.values(), *ISSUE_29_SHUFFLE.values()]
    for fn, own in ISSUE_29_SHUFFLE.items():
        passed, line = said(check_shuffle_test, fn, capsys=capsys)
        assert not passed, line
        names_only(line, own, words)
    for fn, own in SHUFFLE_HINTS.items():          # the neighbours keep their own hints
        _, line = said(check_shuffle_test, fn, capsys=capsys)
        names_only(line, own, words)
    passed, line = said(check_shuffle_test, shuffle_loose(1e-4), capsys=capsys)
    assert passed, line


def with_heads(heads):
    def mask(ids, pad):
        return right_with_triu(ids, pad).expand(-1, heads, -1, -1).contiguous()
    return mask


def test_issue_29_a_head_axis_of_any_size_but_1_is_named_precisely(capsys):
    for heads in (4, 8):
        passed, line = said(check_decoder_mask, with_heads(heads), capsys=capsys)
        assert not passed and f"head axis of size {heads}" in line and "(batch, 1, n, n)" in line, line
    passed, line = said(check_decoder_mask, with_heads(1), capsys=capsys)
    assert passed, line


def test_issue_29_the_large_negative_note_names_the_value_given(capsys):
    _, line = said(check_decoder_mask, with_value(-1e4), capsys=capsys)
    assert line.startswith("Check passed.") and "e^(-10000)" in line and "1e9" not in line, line
    _, line = said(check_decoder_mask, with_value(-1e9), capsys=capsys)
    assert "e^(-1e+09)" in line, line


# --- Issue 39: a loose tolerance on the alone-vs-padded test; the permutation is rho -----------------

def alone_with_tolerance(atol):
    def alone_vs_padded(net, ids, width):
        net.eval()
        padded = torch.full((1, width), PAD)
        padded[:, :ids.shape[1]] = ids
        with torch.no_grad():
            return torch.allclose(net(ids), net(padded), atol=atol)
    return alone_vs_padded


@pytest.mark.parametrize("atol", [1e-2, 0.1, 0.5, 1.0, 3.0])
def test_alone_vs_padded_with_a_loose_tolerance_is_told_so(atol, capsys):
    """A model whose padding moves two scores by 0.001 fails atol 0.1 and 0.5 (they passed before), and a
    model whose padding moves only its lowest score by 5 tells atol=3 from a winning-team comparison."""
    line = printed(capsys, check_alone_vs_padded, alone_with_tolerance(atol))
    assert line.startswith("Your tolerance is too loose"), (atol, line)


def test_alone_vs_padded_winning_team_hint_still_fires(capsys):
    assert "compares only the winning team" in printed(capsys, check_alone_vs_padded, alone_team_only)


def test_shuffle_hints_write_the_argument_rho(capsys):
    def unshuffled_outputs(f, x, rho):
        return torch.allclose(f(x[:, rho]), f(x), atol=1e-5)

    def batch_axis(f, x, rho):
        return torch.allclose(f(x[rho]), f(x)[rho], atol=1e-5)
    for fn in (unshuffled_outputs, batch_axis):
        line = printed(capsys, check_shuffle_test, fn)
        assert "x[:, rho]" in line and "pi" not in line, line


def test_padding_question_shape_is_not_in_the_checker_s_source():
    import inspect
    from helpers.checks.masks import check_padding_question
    assert "(2, 120)" not in inspect.getsource(check_padding_question.__wrapped__)


# --- Issue 48: the rules the text states, each with a world that breaks it -----------------------

def shuffle_first_sequence_only(f, x, pi):
    """A learner's test that looks at the batch's first sequence alone."""
    first = x[0]
    return torch.allclose(f(first[pi].unsqueeze(0))[0], f(first.unsqueeze(0))[0][pi], atol=1e-5)


def shuffle_last_sequence_only(f, x, pi):
    moved, out = f(x[:, pi]), f(x)
    return bool(((moved[-1] - out[-1, pi]).abs() <= 1e-5).all())


@pytest.mark.parametrize("fn", [shuffle_first_sequence_only, shuffle_last_sequence_only])
def test_a_shuffle_test_that_looks_at_one_sequence_fails(fn, capsys):
    passed, line = said(check_shuffle_test, fn, capsys=capsys)
    assert not passed and "looks at one sequence of the batch only" in line, line


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_a_decoder_mask_of_another_float_dtype_fails(dtype, capsys):
    def my_decoder_mask(ids, pad):
        n = ids.shape[1]
        hidden = torch.ones(n, n, dtype=torch.bool).triu(1) | (ids == pad)[:, None, None, :]
        return torch.zeros(hidden.shape, dtype=dtype).masked_fill(hidden, float("-inf"))
    passed, line = said(check_decoder_mask, my_decoder_mask, capsys=capsys)
    assert not passed and f"your mask is {str(dtype)[6:]}: build it in float32" in line, line
