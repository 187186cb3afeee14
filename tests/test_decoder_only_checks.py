"""The check of notebook 12's prefix mask passes right answers and names each typical mistake.

Each wrong answer is written here on its own, as a learner would write it, without the checker's
code; each prints exactly its own mistake's line.
"""

import numpy as np
import pytest
import torch

from fuzz import assert_survives, wrong_functions
from helpers import decoder_only
from helpers.attention import causal_mask
from helpers.checks import decoder_only as checks
from helpers.checks.decoder_only import check_prefix_lm_mask
from helpers.vocabulary import PAD
from printed import printed

REFUSED = "the very reference this check compares your answer with"


# --- right answers, written in several ways ----------------------------------------------------

def right_broadcast(src_lengths, n, padding=None):
    i = torch.arange(n).view(n, 1)
    j = torch.arange(n).view(1, n)
    hidden = (j > i) & (j > src_lengths.view(-1, 1, 1))
    if padding is not None:
        hidden = hidden | padding.unsqueeze(1)
    return hidden


def right_visible_then_inverted(src_lengths, n, padding=None):
    pos = torch.arange(n)
    visible = (pos[None, None, :] <= pos[None, :, None]) | (pos[None, None, :] <= src_lengths[:, None, None])
    if padding is not None:
        visible = visible & ~padding[:, None, :]
    return ~visible


def right_loops(src_lengths, n, padding=None):
    out = torch.zeros(len(src_lengths), n, n, dtype=torch.bool)
    for b in range(len(src_lengths)):
        for i in range(n):
            for j in range(n):
                hidden = j > i and j > src_lengths[b]
                if padding is not None and padding[b, j]:
                    hidden = True
                out[b, i, j] = hidden
    return out


def right_from_causal_mask(src_lengths, n, padding=None):
    """Notebook 04's causal_mask, a building block the text leaves open."""
    prefix_keys = torch.arange(n)[None, None, :] <= src_lengths[:, None, None]
    hidden = causal_mask(n) & ~prefix_keys
    return hidden if padding is None else hidden | padding[:, None, :]


def right_from_causal_lm_mask(src_lengths, n, padding=None):
    """The causal LM's mask of the same notebook, another building block left open."""
    after_separator = torch.arange(n)[None, None, :] > src_lengths[:, None, None]
    return decoder_only.causal_lm_mask(n, padding) & after_separator


def right_with_a_default_only(src_lengths, n, padding=None):
    """No explicit branch: an all-False padding stands for None."""
    padding = torch.zeros(len(src_lengths), n, dtype=torch.bool) if padding is None else padding
    return right_broadcast(src_lengths, n, padding)


RIGHT = [right_broadcast, right_visible_then_inverted, right_loops, right_from_causal_mask,
         right_from_causal_lm_mask, right_with_a_default_only]


@pytest.mark.parametrize("fn", RIGHT, ids=[f.__name__ for f in RIGHT])
def test_right_answers_pass(fn, capsys):
    line = printed(capsys, check_prefix_lm_mask, fn)
    assert line == f"Check passed. {checks.PASSED_WHY}", line


def test_the_checks_right_mask_is_the_course_s(capsys):
    for src_lengths, n, padding, _ in checks.batches():
        assert torch.equal(checks.right_mask(src_lengths, n, padding),
                           decoder_only.prefix_lm_mask(src_lengths, n, padding))


# --- each named mistake, written as a learner would --------------------------------------------

def _grid(n):
    return torch.arange(n)[:, None], torch.arange(n)[None, :]


def causal_over_the_source(src_lengths, n, padding=None):
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1).repeat(len(src_lengths), 1, 1)
    return hidden if padding is None else hidden | padding[:, None, :]


def causal_alone(src_lengths, n, padding=None):
    return causal_mask(n).expand(len(src_lengths), n, n)


def target_sees_its_future(src_lengths, n, padding=None):
    hidden = torch.zeros(len(src_lengths), n, n, dtype=torch.bool)
    for b, m in enumerate(src_lengths.tolist()):
        hidden[b, :m + 1, m + 1:] = True          # the prefix does not read the target; the target reads all
        if padding is not None:
            hidden[b][:, padding[b]] = True
    return hidden


def padding_alone(src_lengths, n, padding=None):
    if padding is None:
        return torch.zeros(len(src_lengths), n, n, dtype=torch.bool)
    return padding[:, None, :].expand(-1, n, -1)


def separator_before(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = (j > i) & (j >= src_lengths[:, None, None])
    return hidden if padding is None else hidden | padding[:, None, :]


def separator_after(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = (j > i) & (j - 1 > src_lengths[:, None, None])
    return hidden if padding is None else hidden | padding[:, None, :]


def separator_after_no_padding(src_lengths, n, padding=None):
    i, j = _grid(n)
    return (j > i) & (j > src_lengths[:, None, None] + 1)


def padding_left_visible(src_lengths, n, padding=None):
    i, j = _grid(n)
    return (j > i) & (j > src_lengths[:, None, None])


def padding_on_queries(src_lengths, n, padding=None):
    hidden = padding_left_visible(src_lengths, n)
    return hidden if padding is None else hidden | padding[:, :, None]


def padding_on_both_axes(src_lengths, n, padding=None):
    hidden = padding_left_visible(src_lengths, n)
    return hidden if padding is None else hidden | padding[:, :, None] | padding[:, None, :]


def inverted(src_lengths, n, padding=None):
    i, j = _grid(n)
    visible = (j <= i) | (j <= src_lengths[:, None, None])
    return visible if padding is None else visible & ~padding[:, None, :]


def queries_and_keys_swapped(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = (i > j) & (i > src_lengths[:, None, None])
    return hidden if padding is None else hidden | padding[:, :, None]


def source_reads_target(src_lengths, n, padding=None):
    rows = []
    for b, m in enumerate(src_lengths.tolist()):
        hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
        hidden[:m + 1, :] = False                  # the prefix's rows opened, not its columns
        if padding is not None:
            hidden |= padding[b][None, :]
        rows.append(hidden)
    return torch.stack(rows)


def diagonal_hidden(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = (j >= i) & (j > src_lengths[:, None, None])
    return hidden if padding is None else hidden | padding[:, None, :]


def first_row_s_length(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = ((j > i) & (j > int(src_lengths[0]))).expand(len(src_lengths), n, n)
    return hidden if padding is None else hidden | padding[:, None, :]


def longest_source(src_lengths, n, padding=None):
    m = int(src_lengths.max())
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
    hidden[:, :m + 1] = False
    hidden = hidden.repeat(len(src_lengths), 1, 1)
    return hidden if padding is None else hidden | padding[:, None, :]


def first_row_s_padding(src_lengths, n, padding=None):
    i, j = _grid(n)
    hidden = (j > i) & (j > src_lengths[:, None, None])
    return hidden if padding is None else hidden | padding[0]


MISTAKES = {
    causal_over_the_source: checks.CAUSAL_OVER_THE_SOURCE,
    causal_alone: checks.CAUSAL_OVER_THE_SOURCE,
    target_sees_its_future: checks.TARGET_SEES_ITS_FUTURE,
    padding_alone: checks.NOTHING_HIDDEN,
    separator_before: checks.SEPARATOR_BEFORE,
    separator_after: checks.SEPARATOR_AFTER,
    separator_after_no_padding: checks.SEPARATOR_AFTER,
    padding_left_visible: checks.PADDING_VISIBLE,
    padding_on_queries: checks.PADDING_ON_QUERIES,
    padding_on_both_axes: checks.PADDING_ON_QUERIES,
    inverted: checks.INVERTED,
    queries_and_keys_swapped: checks.SWAPPED,
    source_reads_target: checks.SOURCE_READS_TARGET,
    diagonal_hidden: checks.DIAGONAL,
    first_row_s_length: checks.ONE_ROW,
    longest_source: checks.ONE_ROW,
    first_row_s_padding: checks.ONE_ROW,
}


@pytest.mark.parametrize("fn", MISTAKES, ids=[f.__name__ for f in MISTAKES])
def test_each_mistake_prints_its_own_line(fn, capsys):
    assert printed(capsys, check_prefix_lm_mask, fn) == MISTAKES[fn]


def test_the_mistakes_differ_from_the_right_mask_and_from_each_other():
    """On the check's batches, no mistake gives the right masks, and two mistakes with different
    lines never give the same masks (the line printed is the mistake's own)."""
    cases = checks.batches()
    right = [checks.right_mask(s, n, p) for s, n, p, _ in cases]
    per_batch = [checks.mistakes(s, n, p) for s, n, p, _ in cases]
    assert len({len(m) for m in per_batch}) == 1
    masks = [[made[k][1] for made in per_batch] for k in range(len(per_batch[0]))]
    lines = [hint for hint, _ in per_batch[0]]
    same = lambda a, b: all(torch.equal(x, y) for x, y in zip(a, b, strict=True))     # noqa: E731
    for k, mask in enumerate(masks):
        assert not same(mask, right), lines[k]
        for other in range(k):
            assert lines[other] == lines[k] or not same(mask, masks[other]), (lines[k], lines[other])


def test_no_hint_gives_the_masks_away():
    """A hint names a mistake: it prints no grid of True and False."""
    for hint in (checks.CAUSAL_OVER_THE_SOURCE, checks.TARGET_SEES_ITS_FUTURE, checks.NOTHING_HIDDEN,
                 checks.SEPARATOR_BEFORE, checks.SEPARATOR_AFTER, checks.PADDING_VISIBLE,
                 checks.PADDING_ON_QUERIES, checks.INVERTED, checks.SWAPPED, checks.SOURCE_READS_TARGET,
                 checks.DIAGONAL, checks.ONE_ROW):
        assert "[[" not in hint and "tensor(" not in hint and "True, False" not in hint, hint


# --- the rules the text states, each with a batch that breaks it --------------------------------

def test_the_batches_break_every_rule_the_text_states():
    cases = checks.batches()
    padded = [(s, n, p, lengths) for s, n, p, lengths in cases if p is not None]
    assert any(p is None for _, _, p, _ in cases)                       # padding may be None
    assert all(len(set(s.tolist())) == len(s) > 1 for s, *_ in cases)   # each row its own source length
    assert all(len(set(lengths.tolist())) > 1 for *_, lengths in padded)    # rows of different lengths
    assert any((lengths == n).any() for _, n, _, lengths in padded)     # a row with no padding
    assert any((lengths < n).all() for _, n, _, lengths in padded)      # n larger than every row
    targets = [lengths - s - 1 for s, _, _, lengths in cases]
    assert any((t == 1).any() for t in targets) and all((t >= 1).all() for t in targets)
    assert any((s == 1).any() for s, *_ in cases)                       # a source of one piece
    assert all(len(s) != n for s, n, *_ in cases)                       # batch ≠ n: shapes show
    for s, n, p, lengths in cases:                                      # the inputs as the helpers make them
        assert s.dtype == torch.int64 and (p is None or p.dtype == torch.bool)
        if p is not None:
            ids = torch.where(p, PAD, PAD + 5)
            assert torch.equal(p, ids == PAD) and torch.equal((~p).sum(1), lengths)
        else:
            assert (lengths == n).all()


def test_padding_none_unsupported_is_told_so(capsys):
    def no_none(src_lengths, n, padding=None):
        return right_broadcast(src_lengths, n, padding) | padding[:, None, :]
    line = printed(capsys, check_prefix_lm_mask, no_none)
    assert "raised TypeError" in line and "with padding None: padding may be None" in line, line


# --- shapes, dtypes, placeholders and odd answers: one line, no traceback ----------------------

def test_shapes_and_dtypes_are_named(capsys):
    def as_float(s, n, p=None):
        return right_broadcast(s, n, p).float()

    def additive(s, n, p=None):
        return torch.zeros(len(s), n, n).masked_fill(right_broadcast(s, n, p), float("-inf"))

    def as_int(s, n, p=None):
        return right_broadcast(s, n, p).long()

    def one_grid(s, n, p=None):
        return right_broadcast(s, n, p)[0]

    def head_axis(s, n, p=None):
        return right_broadcast(s, n, p)[:, None]

    def flat(s, n, p=None):
        return right_broadcast(s, n, p).flatten(1)

    cases = {as_float: "Your mask is float32: return booleans", as_int: "Your mask is int64: return booleans",
             additive: "An additive mask (0 and -inf) where a boolean one is asked",
             one_grid: "one mask for the whole batch", head_axis: "Your mask has a head axis",
             flat: "Your mask should have shape (batch, n, n)"}
    for fn, words in cases.items():
        line = printed(capsys, check_prefix_lm_mask, fn)
        assert line.startswith(words) or words in line, (fn.__name__, line)


def test_placeholder_none_and_odd_answers(capsys):
    def my_prefix_lm_mask(src_lengths, n, padding=None):
        """The prefix LM's mask (batch, n, n), True where query i may not read key j."""
        ...

    def forgot_return(src_lengths, n, padding=None):
        right_broadcast(src_lengths, n, padding)

    def raises(src_lengths, n, padding=None):
        raise ValueError("boom")

    def in_place(src_lengths, n, padding=None):
        src_lengths += 1
        return right_broadcast(src_lengths - 1, n, padding)

    def huge(src_lengths, n, padding=None):
        return torch.zeros(4000, 4000, dtype=torch.bool)

    cases = [(my_prefix_lm_mask, "Not answered yet: write the body of my_prefix_lm_mask"),
             (None, "Not answered yet: write the body of my_prefix_lm_mask"),
             (forgot_return, "returned None"), (raises, "raised ValueError: boom"),
             (in_place, "changed its argument number 1 in place"),
             (lambda s, n, p=None: right_broadcast(s, n, p).tolist(), "should return one tensor, got a list"),
             (lambda s, n, p=None: right_broadcast(s, n, p).numpy(),
              "should return a torch tensor, got ndarray"),
             (lambda s, n, p=None: "mask", "should return a torch tensor, got str"),
             (huge, "got (4000, 4000)"), (right_broadcast(torch.tensor([1]), 3), "Pass your function itself")]
    for fn, words in cases:
        line = printed(capsys, check_prefix_lm_mask, fn)
        assert words in line and not line.startswith("Check passed"), (words, line)
    assert printed(capsys, check_prefix_lm_mask, my_prefix_lm_mask).startswith("Not answered yet: ")


def test_odd_and_perturbed_answers_give_one_line(capsys):
    """Perturbed masks (noise, NaN, other dtypes and shapes, a tuple, a raise): never the checker's
    own failure, never a pass (but "bool": the right mask, != 0)."""
    for label, fn in wrong_functions(right_broadcast):
        line = assert_survives(capsys, check_prefix_lm_mask, fn)
        assert line.startswith("Check passed") == (label == "bool"), (label, line)
    flipped = lambda s, n, p=None: right_broadcast(s, n, p) ^ (torch.rand(len(s), n, n) < 0.1)   # noqa: E731
    line = assert_survives(capsys, check_prefix_lm_mask, flipped)
    assert line.startswith("Not this mask yet: what a "), line
    line = assert_survives(capsys, check_prefix_lm_mask, lambda s, n, p=None: np.zeros((len(s), n, n), bool))
    assert "ndarray" in line


def test_the_reference_and_the_model_s_mask_are_refused(capsys):
    def calls_the_helper(src_lengths, n, padding=None):
        return decoder_only.prefix_lm_mask(src_lengths, n, padding)

    def through_a_model(src_lengths, n, padding=None):
        model = decoder_only.DecoderOnly(10, 8, 2, 16, 1, prefix=True)
        ids = torch.full((len(src_lengths), n), 3)
        if padding is not None:
            ids[padding] = PAD
        return model.hidden_mask(ids, src_lengths)
    for fn in (calls_the_helper, through_a_model):
        line = printed(capsys, check_prefix_lm_mask, fn)
        assert REFUSED in line and "helpers.decoder_only.prefix_lm_mask" in line, line


def test_the_check_keeps_the_learners_random_state(capsys):
    torch.manual_seed(3)
    expected = torch.rand(2)
    torch.manual_seed(3)
    printed(capsys, check_prefix_lm_mask, right_broadcast)
    assert torch.equal(torch.rand(2), expected)


# --- the three questions ------------------------------------------------------------------------

def _visible_count(rule, s=checks.Q1_SOURCE, t=checks.Q1_TARGET):
    """Visible (query, key) pairs of one `source, <s>, target` sequence under rule(i, j) -> visible."""
    n = s + 1 + t
    return sum(rule(i, j, s) for i in range(n) for j in range(n))


def test_question_1_right_and_each_mistake_written_independently(capsys):
    right = _visible_count(lambda i, j, s: j <= s or j <= i)
    assert printed(capsys, checks.check_visible_question, right).startswith("Check passed")
    wrong = {
        "causal mask's count": _visible_count(lambda i, j, s: j <= i),
        "target must not read its future": _visible_count(lambda i, j, s: True),
        "stops before the separator": _visible_count(lambda i, j, s: j < s or j <= i),
        "prefix's own block only": _visible_count(lambda i, j, s: i <= s and j <= s),
        "reads itself too": _visible_count(lambda i, j, s: j <= s or j < i),
        "counts the hidden pairs": _visible_count(lambda i, j, s: not (j <= s or j <= i)),
    }
    assert len(set(wrong.values()) | {right}) == len(wrong) + 1
    for words, value in wrong.items():
        line = printed(capsys, checks.check_visible_question, value)
        assert words in line and str(right) not in line, (words, line)
    for odd in (None, "60", [60], float("nan"), 59.5, torch.tensor([1, 2])):
        line = assert_survives(capsys, checks.check_visible_question, odd)
        assert not line.startswith("Check passed"), (odd, line)


@pytest.mark.parametrize("check, options", [
    (checks.check_cost_question, ("every block reads both", "more parameters", "the prefix mask",
                                  "a larger vocabulary")),
    (checks.check_share_question, ("more keys to share", "the cache drops the source", "positions restart",
                                   "dropout")),
])
def test_questions_2_and_3(check, options, capsys):
    lines = [printed(capsys, check, option) for option in options]
    assert lines[0].startswith("Check passed")
    assert all(not line.startswith("Check passed") for line in lines[1:])
    assert len(set(lines)) == len(lines)
    for wrong_line in lines[1:]:
        assert options[0] not in wrong_line
    for odd in (None, "", "every block", 3, ["dropout"]):
        assert not assert_survives(capsys, check, odd).startswith("Check passed")
