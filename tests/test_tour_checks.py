"""The checkers of notebook 00, the tour: every named mistake, written here independently, gets its hint;
a borrowed answer is refused; the questions' hints."""

import math

import pytest
import torch
import torch.nn.functional as F

from helpers.checks import PASSED
from helpers.checks.tour import check_attention, check_heads_question, check_memory_question
from printed import printed
from tests.fuzz import assert_survives, wrong_functions


def right(Q, K, V):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return torch.softmax(scores, dim=-1) @ V


def no_scale(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1) @ V


def by_d_k(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1], dim=-1) @ V


def by_keys(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / K.shape[-2] ** 0.5, dim=-1) @ V


def scaled_after(Q, K, V):
    weights = F.softmax(Q @ K.transpose(-2, -1), dim=-1) / math.sqrt(K.shape[-1])
    return weights @ V


def over_queries(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-2) @ V


def no_softmax(Q, K, V):
    return (Q @ K.transpose(-2, -1)) / math.sqrt(Q.shape[-1]) @ V


def weights_only(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)


def with_weights(Q, K, V):
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return w @ V, w


def in_float64(Q, K, V):
    return right(Q.double(), K.double(), V.double())


def fixed_heads(Q, K, V):
    return right(Q, K.transpose(2, 3).transpose(2, 3), V)       # axis 3: only 4-D inputs


def fixed_width(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / 4.0, dim=-1) @ V      # √16, the first case's d_k


def test_the_right_answer_passes(capsys):
    assert printed(capsys, check_attention, right) == PASSED
    assert printed(capsys, check_attention, lambda Q, K, V: F.softmax(
        torch.einsum("...qd,...kd->...qk", Q, K) * Q.size(-1) ** -0.5, -1) @ V) == PASSED


@pytest.mark.parametrize("fn, start", [
    (no_scale, "you did not scale the scores"),
    (by_d_k, "you divided the scores by d_k"),
    (by_keys, "you divided by the square root of the number of keys"),
    (scaled_after, "you divided by √d_k after the softmax"),
    (over_queries, "your softmax runs over the queries"),
    (no_softmax, "you forgot the softmax"),
    (weights_only, "You returned the attention weights"),
    (with_weights, "my_attention returned a tuple"),
    (in_float64, "The output of my_attention is float64, the inputs are float32"),
    (fixed_width, "Right for Q of shape (2, 4, 5, 16), not for Q (3, 6, 8)"),
])
def test_each_mistake_gets_its_hint(fn, start, capsys):
    line = printed(capsys, check_attention, fn)
    assert line.startswith(start), line


def test_a_function_for_four_axes_only_is_told_on_the_second_case(capsys):
    line = printed(capsys, check_attention, fixed_heads)
    assert line.startswith("my_attention(Q, K, V) raised IndexError"), line


def test_placeholder_and_borrowed_answers(capsys):
    def placeholder(Q, K, V):
        ...

    import helpers.attention
    assert printed(capsys, check_attention, placeholder).startswith("Not answered yet:")
    assert printed(capsys, check_attention, None).startswith("Not answered yet:")
    for borrowed, name in [
        (lambda Q, K, V: helpers.attention.attention(Q, K, V)[0], "helpers.attention.attention"),
        (lambda Q, K, V: F.scaled_dot_product_attention(Q, K, V), "F.scaled_dot_product_attention"),
        (lambda Q, K, V: torch.nn.functional.scaled_dot_product_attention(Q, K, V),
         "F.scaled_dot_product_attention"),
    ]:
        line = printed(capsys, check_attention, borrowed)
        assert "the very reference this check compares your answer with" in line and name in line, line
    namespace = {}
    exec("from helpers.attention import attention\n"
         "def my_attention(Q, K, V):\n    return attention(Q, K, V)[0]\n", namespace)
    assert "helpers.attention.attention" in printed(capsys, check_attention, namespace["my_attention"])


def test_the_check_leaves_the_random_state_and_the_inputs_alone(capsys):
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    check_attention(right)
    assert torch.equal(before, torch.random.get_rng_state())
    capsys.readouterr()


def test_the_checker_survives_perturbed_answers(capsys):
    for label, fn in wrong_functions(right):
        line = assert_survives(capsys, check_attention, fn)
        assert not line.startswith(PASSED) or label.startswith(("relative", "float32")), (label, line)


@pytest.mark.parametrize("check, right_answer, wrong", [
    (check_memory_question, "the encoder's output", ["the decoder's input", "the source embeddings"]),
    (check_heads_question, "the same", ["twice as many", "half as many"]),
])
def test_questions(check, right_answer, wrong, capsys):
    assert printed(capsys, check, right_answer).startswith(PASSED)
    assert printed(capsys, check, right_answer.upper()).startswith(PASSED)
    for option in wrong:
        line = printed(capsys, check, option)
        assert not line.startswith(PASSED) and "section" in line, line
    assert printed(capsys, check, None).startswith("Not answered yet:")


def test_the_heads_answer_is_what_the_model_counts():
    from helpers.counting import count
    from helpers.model import Transformer
    assert count(Transformer(13, 64, 4, 256, 2)) == count(Transformer(13, 64, 8, 256, 2))


@pytest.mark.parametrize("op", [
    lambda Q, K, V: torch.ops.aten.scaled_dot_product_attention(Q, K, V),
    lambda Q, K, V: torch.ops.aten._scaled_dot_product_attention_math(Q, K, V)[0],
    lambda Q, K, V: torch._C._nn.scaled_dot_product_attention(Q, K, V),
])
def test_torchs_scaled_dot_product_under_another_name_is_refused(op, capsys):
    def my_attention(Q, K, V):
        return op(Q, K, V)
    out = printed(capsys, check_attention, my_attention)
    assert not out.startswith(PASSED) and "scaled" in out and "dot" in out, out
