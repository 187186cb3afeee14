"""Every checker of notebook 04 survives perturbed answers: one line, never its own failure."""

import pytest
import torch

from helpers.checks.cross_attention import (check_cross_weights_shape, check_decoder_layer,
                                            check_decoder_masks, check_guided_shapes,
                                            check_where_qkv_come_from)
from test_cross_attention_checks import SHAPES, right_einsum
from tests.fuzz import assert_survives, wrong_functions, wrong_tensors

SAME_VALUES = {"float64", "float32", "squeezed"}      # perturbations that leave a right answer right


def name(v):
    return v if isinstance(v, str) else ""


@pytest.mark.parametrize("label, fn", wrong_functions(right_einsum), ids=name)
def test_decoder_layer_survives_perturbed_layers(label, fn, capsys):
    line = assert_survives(capsys, check_decoder_layer, fn)
    assert line.startswith("Check passed") == (label in SAME_VALUES), (label, line)


def test_decoder_layer_names_half_precision_and_nan(capsys):
    wrong = dict(wrong_functions(right_einsum))
    assert "compute in float32" in assert_survives(capsys, check_decoder_layer, wrong["float16"])
    assert "compute in float32" in assert_survives(capsys, check_decoder_layer, wrong["bfloat16"])
    assert "NaN" in assert_survives(capsys, check_decoder_layer, wrong["one nan"])
    assert "contains inf" in assert_survives(capsys, check_decoder_layer, wrong["one inf"])


ODD = [None, ..., "28", 28.5, -1, 0, True, [28], (28,), {"a": 1}, float("nan"), float("inf"),
       torch.tensor([28, 28]), lambda: 28]


@pytest.mark.parametrize("label, value", [*wrong_tensors(torch.tensor(28.0)),
                                          *wrong_tensors(torch.tensor([28.0])),
                                          *[(f"odd{i}", v) for i, v in enumerate(ODD)]],
                         ids=name)
def test_guided_shapes_survive_odd_counts(label, value, capsys):
    line = assert_survives(capsys, check_guided_shapes, SHAPES, value, "cross")
    if isinstance(value, torch.Tensor):
        right = value.numel() == 1 and value.dtype != torch.bool and float(value) == 28
    else:
        right = isinstance(value, (int, float)) and not isinstance(value, bool) and value == 28
    assert line.startswith("Check passed") == right, (label, line)


def shape_answers(right):
    """Wrong ways to write a shape: a tensor of it, its entries perturbed, floats, nested."""
    t = torch.tensor(right)
    out = [(f"tensor {label}", value) for label, value in wrong_tensors(t.float())]
    out += [("floats", tuple(float(n) for n in right)), ("string", str(right)), ("nested", (right,)),
            ("one short", right[:-1]), ("one more", (*right, 1)), ("negative", tuple(-n for n in right)),
            ("zeros", (0,) * len(right)), ("bools", (True,) * len(right)), ("set", set(right)),
            ("dict", dict(enumerate(right))), ("size", torch.Size(right)), ("list", list(right))]
    return out


@pytest.mark.parametrize("name", list(SHAPES))
def test_guided_shapes_survive_odd_shapes(name, capsys):
    for label, value in shape_answers(SHAPES[name]):
        line = assert_survives(capsys, check_guided_shapes, {**SHAPES, name: value}, 28, "cross")
        assert line.startswith("Check passed") == (label in ("size", "list")), (name, label, line)
    for odd in ({**SHAPES, "extra": (1,)}, {k: v for k, v in SHAPES.items() if k != name}, list(SHAPES),
                tuple(SHAPES.values()), torch.zeros(8, 3)):
        assert_survives(capsys, check_guided_shapes, odd, 28, "cross")


@pytest.mark.parametrize("value", ["CROSS", " cross ", "Cross-Attention", "crossattention", "", "c",
                                   "cross!", ["cross"], {"cross"}, 3, torch.tensor(1.0), b"cross"])
def test_guided_shapes_survive_odd_words(value, capsys):
    assert_survives(capsys, check_guided_shapes, SHAPES, 28, value)


def test_cross_weights_shape_survives_odd_shapes(capsys):
    for label, value in shape_answers((3, 4, 6, 5)):
        line = assert_survives(capsys, check_cross_weights_shape, value)
        assert line.startswith("Check passed") == (label in ("size", "list")), (label, line)


CHOICE_ANSWERS = ["B", "b ", "'b'", "(b)", "b.", "bb", "", "e", ["b"], {"b"}, ("b",), 2, 1.0, True,
                  torch.tensor(1.0), b"b", {"b": 1}]
SET_ANSWERS = [{"a", "b"}, ["a", "b"], ("a", "b"), frozenset("ab"), "a,b", "a; b", "ab", "a b", "",
               set(), {"a", "b", "e"}, {"A", "B"}, {1, 2}, {("a",)}, [["a"], ["b"]], {"a": 1, "b": 2},
               "a", torch.tensor([1, 2]), 3, {None}, [...]]


@pytest.mark.parametrize("value", CHOICE_ANSWERS, ids=[f"answer{i}" for i in range(len(CHOICE_ANSWERS))])
def test_where_qkv_come_from_survives_odd_answers(value, capsys):
    assert_survives(capsys, check_where_qkv_come_from, value)


@pytest.mark.parametrize("value", SET_ANSWERS, ids=[f"answer{i}" for i in range(len(SET_ANSWERS))])
def test_decoder_masks_survives_odd_answers(value, capsys):
    assert_survives(capsys, check_decoder_masks, value)
