"""The question of the tiny model's Table 3 (notebook 05): each option gets its own hint."""

import pytest

from helpers.checks.ablation import check_heads_task_question
from printed import printed

OPTIONS = ("copy", "rotate", "every other", "later of two")


@pytest.mark.parametrize("answer, words", [
    ("later of two", "Check passed. Each output position needs two source letters at once"),
    ("Later of Two ", "Check passed."),
    ("copy", "the letter at its own position, a diagonal"),
    ("rotate", "the letter one position further on"),
    ("every other", "output 1 reads letter 1, output 2 letter 3"),
    (None, "Not answered yet: set answer_heads to one of"),
    ("one pattern", "answer_heads should be one of"),
    ("heads", "answer_heads should be one of"),
    (1, "answer_heads should be one of the strings"),
])
def test_heads_task_question(answer, words, capsys):
    assert words in printed(capsys, check_heads_task_question, answer)


def test_each_hint_fires_only_on_its_own_option(capsys):
    lines = {option: printed(capsys, check_heads_task_question, option) for option in OPTIONS}
    assert len(set(lines.values())) == 4
    assert [line.startswith("Check passed") for line in lines.values()] == [False, False, False, True]


def test_the_options_do_what_the_question_says():
    """The examples of the question, computed: one source position per output for the three
    wrong options, two for the right one."""
    letters = "c a b e d".split()
    n = len(letters)
    copy = [letters[i] for i in range(n)]
    rotate = [letters[(i + 1) % n] for i in range(n)]
    every_other = letters[0::2] + letters[1::2]
    later = [max(letters[i], letters[n - 1 - i]) for i in range(n)]
    assert " ".join(copy) == "c a b e d" and " ".join(rotate) == "a b e d c"
    assert " ".join(every_other) == "c b d a e" and " ".join(later) == "d e b e d"


def test_odd_answers_get_one_line_that_is_not_the_checkers_failure(capsys):
    import torch

    from tests.fuzz import assert_survives, wrong_tensors
    for _, wrong in wrong_tensors(torch.tensor([1.0, 4.0, 16.0])):
        assert not assert_survives(capsys, check_heads_task_question, wrong).startswith("Check passed")
    for wrong in ({"later of two"}, ["later of two"], ("later of two",), b"later of two",
                  "later of two, copy"):
        assert not assert_survives(capsys, check_heads_task_question, wrong).startswith("Check passed")
