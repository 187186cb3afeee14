"""The question of the tiny model's Table 3 (notebook 05): each option gets its own hint."""

import pytest

from helpers.checks.ablation import check_heads_question
from printed import printed


@pytest.mark.parametrize("answer, words", [
    ("one pattern", "Check passed. Reversing needs one relation only"),
    ("One Pattern ", "Check passed."),
    ("more parameters", "the table prints 234,304 for both rows"),
    ("less computation", "The matrix products are the same size"),
    ("luck", "the two ranges do not overlap"),
    (None, "Not answered yet: set answer_4 to one of"),
    ("heads", "answer_4 should be one of"),
    (1, "answer_4 should be one of the strings"),
])
def test_heads_question(answer, words, capsys):
    assert words in printed(capsys, check_heads_question, answer)


def test_each_hint_fires_only_on_its_own_option(capsys):
    lines = {option: printed(capsys, check_heads_question, option)
             for option in ("one pattern", "more parameters", "less computation", "luck")}
    assert len(set(lines.values())) == 4


def test_the_hints_state_what_the_results_file_holds():
    from helpers import ablation
    results = ablation.load_results()
    found = ablation.ranges(results)
    assert ablation.parameters("base") == ablation.parameters("A: h = 1") == 234_304
    assert found["A: h = 1"]["exact_match"][0] == pytest.approx(0.984)
    assert found["base"]["exact_match"][1] == pytest.approx(0.956)
    assert found["A: h = 1"]["seeds"] == found["base"]["seeds"] == 5


def test_odd_answers_get_one_line_that_is_not_the_checkers_failure(capsys):
    import torch

    from tests.fuzz import assert_survives, wrong_tensors
    for _, wrong in wrong_tensors(torch.tensor([1.0, 4.0, 16.0])):
        assert not assert_survives(capsys, check_heads_question, wrong).startswith("Check passed")
    for wrong in ({"one pattern"}, ["one pattern"], ("one pattern",), b"one pattern", "one pattern, luck"):
        assert not assert_survives(capsys, check_heads_question, wrong).startswith("Check passed")
