"""Every checker survives any wrong input: it prints one line and never raises."""

import importlib
import inspect
import math
import pkgutil

import pytest
import torch

import helpers.checks
from helpers.checks import PASSED, Hint, call, checker, choice, choices, not_answered

WRONG = [None, ..., [], [1.0, 2.0], "0.5", True, float("nan"), math.inf, {"a": 1},
         torch.tensor(float("nan")), torch.full((3, 3), float("nan")), torch.zeros(2, 3, 4),
         torch.zeros(7, dtype=torch.bool), torch.tensor([1, 2, 3]), lambda *a: None, lambda *a: 1 / 0]


def all_checkers():
    """Every checker of every check module, those of a check package's modules too (encoder.ffn)."""
    found = []
    for info in pkgutil.walk_packages(helpers.checks.__path__, "helpers.checks."):
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if callable(fn) and hasattr(fn, "__wrapped__") and fn.__module__ == module.__name__:
                found.append(pytest.param(fn, id=f"{info.name.removeprefix('helpers.checks.')}.{name}"))
    return found


CHECKERS = all_checkers()


def test_there_are_checkers():
    assert len(CHECKERS) >= 3


@pytest.mark.parametrize("check", CHECKERS)
def test_checker_never_raises_and_prints_one_hint(check, capsys):
    n_args = len(inspect.signature(check.__wrapped__).parameters)
    for position in range(max(n_args, 1)):
        for wrong in WRONG:
            args = [None] * n_args
            if n_args:
                args[position] = wrong
            assert check(*args) is None
            printed = capsys.readouterr().out
            assert printed.count("\n") == 1, printed
            assert not printed.startswith(PASSED), (wrong, printed)
            assert "Could not check" not in printed, printed
    check()                                 # too few arguments: still one line
    assert capsys.readouterr().out.count("\n") == 1


# --- the machinery every checker shares ------------------------------------------------------

def placeholder(x, gamma):
    # your code here
    ...


def documented_placeholder(x):
    """A docstring and pass: still untouched."""
    pass


def forgot_return(x):
    y = x * 2  # noqa: F841


def prints_and_doubles(x):
    print("debugging", x)
    return x * 2


def mutates(x):
    x *= 2
    return x


def raises(x):
    raise ValueError("boom\nsecond line")


def not_implemented(x):
    raise NotImplementedError


def test_not_answered_recognises_untouched_placeholders():
    assert not_answered(None) and not_answered(...) and not_answered(placeholder)
    assert not_answered(documented_placeholder)
    assert not not_answered(forgot_return) and not not_answered(prints_and_doubles)
    assert not not_answered(print) and not not_answered(0)


@pytest.mark.parametrize("fn, start", [
    (None, "Not answered yet: write the body of f "),
    (placeholder, "Not answered yet: write the body of f "),
    (not_implemented, "Not answered yet: write the body of f "),
    (forgot_return, "f(x) returned None: end it with `return`"),
    (mutates, "f changed its argument number 1 in place"),
    (raises, "f(x) raised ValueError: boom second line"),
    (3, "Pass your function itself (f, without parentheses), not a int"),
])
def test_call_names_what_went_wrong_in_one_line(fn, start):
    with pytest.raises(Hint) as hint:
        call(fn, "f(x)", torch.ones(3))
    assert str(hint.value).startswith(start), str(hint.value)


def test_call_silences_the_learners_prints_and_keeps_inputs(capsys):
    x = torch.ones(3)
    assert torch.equal(call(prints_and_doubles, "f(x)", x), 2 * x)
    assert capsys.readouterr().out == "" and torch.equal(x, torch.ones(3))


@checker
def question(answer):
    return choice(answer, "answer", "memory", "Keys and values come from the encoder's output.",
                  {"decoder": "Only the queries come from the decoder (section 2)."})


@checker
def which(answer):
    return choices(answer, "answer", ["a", "b", "c"], {"a", "c"}, "a and c changed.",
                   {"a": "a changed (section 1).", "b": "b did not change (section 2).",
                    "c": "c changed (section 3)."})


@pytest.mark.parametrize("answer, printed", [
    ("memory", "Check passed. Keys and values come from the encoder's output."),
    (" Memory ", "Check passed. Keys and values come from the encoder's output."),
    ("decoder", "Only the queries come from the decoder (section 2)."),
    (None, "Not answered yet: set answer to one of 'decoder', 'memory'."),
    ("encoder", "answer should be one of 'decoder', 'memory', got 'encoder'."),
    (3, "answer should be one of the strings 'decoder', 'memory', got int."),
])
def test_choice_question(answer, printed, capsys):
    question(answer)
    assert capsys.readouterr().out == printed + "\n"


@pytest.mark.parametrize("answer, printed", [
    ({"a", "c"}, "Check passed. a and c changed."),
    (["c", "A"], "Check passed. a and c changed."),
    ("a, c", "Check passed. a and c changed."),
    ({"a"}, "c changed (section 3)."),
    ({"a", "b", "c"}, "b did not change (section 2)."),
    (None, "Not answered yet: set answer to the set of the options you pick among 'a', 'b', 'c'."),
    ({"d"}, "each item of answer should be one of 'a', 'b', 'c', got 'd'."),
])
def test_choices_question(answer, printed, capsys):
    which(answer)
    assert capsys.readouterr().out == printed + "\n"


# --- Issue 29: no answer in what `?` shows ----------------------------------------------------

ANSWERS_IN_DOCSTRINGS = ["(768, 64)", "50 layers", "2,457,600", "4,915,200", "473,118,720", "= 4.", "0.243",
                         "(3, 4, 6, 5)", '("a")', '("b")', '"a"', '{"a", "b"}', "(100, 512)", "5.0625",
                         "−1.069", "0.909", "−0.416",
                         "(2, 120)", "only γ and β", "returns β", "still holds more parameters",
                         "but not its FFN output", "turns each pair by ω·k", "the token drowns"]


@pytest.mark.parametrize("check", CHECKERS)
def test_no_checker_docstring_holds_an_answer(check):
    doc = check.__doc__ or ""
    assert not [a for a in ANSWERS_IN_DOCSTRINGS if a in doc], doc


def test_the_named_answers_are_not_literals_in_their_checkers():
    from helpers.checks import decoding
    from helpers.checks.encoder import questions
    for fn, answer in ((questions.check_path_length, "== 50"),
                       (decoding.check_cache_bytes, "4,915,200")):
        assert answer not in inspect.getsource(fn.__wrapped__), fn.__name__


def test_no_question_checker_writes_its_answer_in_its_own_source():
    """`check_x??` shows a checker's source: a question's right option is not a literal there (it
    lives in a module constant above the checker, or is computed)."""
    import ast
    import pathlib

    import helpers.checks
    found = []
    for path in sorted(pathlib.Path(helpers.checks.__file__).parent.glob("*.py")):
        for fn in ast.parse(path.read_text()).body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call) or getattr(node.func, "id", None) not in ("choice",
                                                                                            "choices"):
                    continue
                at = 2 if node.func.id == "choice" else 3
                right = (node.args[at] if len(node.args) > at and not any(isinstance(a, ast.Starred)
                                                                          for a in node.args[:at + 1])
                         else next((k.value for k in node.keywords if k.arg == "right"), None))
                literal = (ast.Constant, ast.Set, ast.List, ast.Tuple, ast.Load)
                if right is not None and all(isinstance(n, literal) for n in ast.walk(right)):
                    found.append(f"{path.stem}.{fn.name}")
    assert not found, found


# --- Issue 39: no number, shape or Passed text of a question or exercise in what `check_x??` shows ---

FUNCTION_ARGUMENTS = {"fn", "cls", "model", "vocab", "ffn", "pre_norm_layer"}


def value_checkers():
    """(module, name, function node, source) of every checker whose answers are values (numbers, shapes,
    options), not functions: `check_x??` shows its source, which must not give them away."""
    import ast
    import pathlib

    import helpers.checks
    found = []
    root = pathlib.Path(helpers.checks.__file__).parent
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        dotted = ".".join(path.relative_to(root).with_suffix("").parts)     # encoder.questions
        for fn in ast.parse(source).body:
            if not isinstance(fn, ast.FunctionDef) or not any(
                    getattr(d, "id", None) == "checker" for d in fn.decorator_list):
                continue
            names = [a.arg for a in fn.args.args]
            if any(n in FUNCTION_ARGUMENTS or n.startswith("my_") for n in names):
                continue
            found.append((dotted, fn.name, fn, ast.get_source_segment(source, fn)))
    return found


def test_no_value_checker_writes_its_passed_text_in_its_own_source():
    """A Passed text explains the answer: it lives in a module constant (or is built from one), not as a
    string literal in the checker (06 Q2 and Q4 gave the work and the capacity whose ratio is the answer)."""
    import ast
    found = []
    for module, name, fn, _ in value_checkers():
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Passed" and any(
                    isinstance(a, (ast.JoinedStr, ast.Constant)) for a in node.args):
                found.append(f"{module}.{name}")
    assert not found, found


# Each value exercise's and question's right answers, as a learner would look for them in the source.
RIGHT_ANSWERS = {
    "recipe.check_passes_question": [6], "recipe.check_smoothing_floor": [1.377],
    "counting.check_width_factor": [4], "counting.check_gpu_share": [0.243],
    "masks.check_padding_question": [(2, 120)], "decoding.check_penalised_scores": [1, -0.521],
    "decoding.check_cache_bytes": [4_915_200],
    "encoder.shapes.check_shapes": [(2, 4, 7, 7), (2, 7, 256), (2, 7, 64)],
    "encoder.questions.check_path_length": [50], "distributed.check_micro_question": [4],
    "distributed.check_ring_question": [473_118_720], "translation.check_early_stop_bleu": [89.48],
    "translation.check_short_bleu": [0], "cross_attention.check_cross_weights_shape": [(3, 4, 6, 5)],
    "norms.check_shortcut_factor": [5.0625],
    "positions.check_table_shape_question": [(100, 512), (1, 100, 512)],
    "tatoeba.check_tie_length": [5],
}


def _written(answer):
    """How a number or a shape would read in a source: 473118720, 473_118_720, 473,118,720, 1.377."""
    if isinstance(answer, tuple):
        return {str(answer)}
    if isinstance(answer, float):
        return {f"{answer:g}"}
    if abs(answer) < 10:                 # a small whole number shows only in a comparison (AST test)
        return set()
    return {str(answer), f"{answer:,}", f"{answer:_}"}


def test_no_value_checker_writes_its_answer_in_its_own_source():
    """Neither as a literal the checker compares with (value == 6, a (B, H, N, N) tuple), nor in a comment
    (# 1.377): the answer is computed, or sits in a module constant above the checker."""
    import ast
    import importlib
    checkers = {f"{m}.{n}": (fn, src) for m, n, fn, src in value_checkers()}
    assert set(RIGHT_ANSWERS) <= set(checkers), set(RIGHT_ANSWERS) - set(checkers)
    found = []
    for key, answers in RIGHT_ANSWERS.items():
        fn, source = checkers[key]
        module = vars(importlib.import_module(f"helpers.checks.{key.rsplit('.', 1)[0]}"))
        # the names that hold the learner's answer: the parameters, and what is computed from them
        params = {a.arg for a in fn.args.args}
        held = set(params)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(a, ast.Name) and a.id in params for a in node.value.args):
                held |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for answer in answers:
            found += [f"{key}: {text}" for text in _written(answer) if text in source]
            for node in ast.walk(fn):
                if isinstance(node, ast.Compare):
                    sides = (node.left, *node.comparators)
                    if not any(isinstance(side, ast.Name) and side.id in held for side in sides):
                        continue
                    for side in sides:
                        try:
                            value = eval(compile(ast.Expression(side), "<side>", "eval"), dict(module))
                        except Exception:
                            continue
                        if isinstance(value, (int, float, tuple)) and not isinstance(value, bool) and \
                                value == answer and not isinstance(side, ast.Name):
                            found.append(f"{key}: {ast.unparse(side)}")
                elif isinstance(node, ast.Tuple) and isinstance(answer, tuple):
                    try:
                        value = eval(compile(ast.Expression(node), "<tuple>", "eval"), dict(module))
                    except Exception:
                        continue
                    if value == answer:
                        found.append(f"{key}: {ast.unparse(node)}")
    assert not found, found
