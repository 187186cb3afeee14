"""Every route to a reference is refused, in every exercise that has one, built here automatically.

The exercises come from helpers.checks.EXERCISES (each check module registers its own with
helpers.checks.exercise: the reference, and how an answer borrows it), so a new exercise is
covered by registering it. For each one, every route of ROUTES is built around its reference (the
same function under another module's name, wrapped, held, rebuilt from its code, its module
reloaded or loaded again from its file, pulled out of a wrapper's closure) and the answer that
borrows it must be refused; a tampered checker (the check module's comparisons set to agree) is
refused too. Two right answers of each exercise, written differently (tests/right_answers.py),
still pass. With the watch switched off (helpers.checks.WATCH = False), routes pass again: the
test would fail without the mechanism. Torch's operations under other names (class 3 of issue 48)
have their own tests below.
"""

import contextlib
import functools
import importlib
import importlib.util
import io
import math
import pkgutil
import sys
import types

import pytest
import torch
import torch.nn.functional as F

import helpers.checks
from helpers.checks import PASSED
from right_answers import ANSWERS, answers

for _module in pkgutil.walk_packages(helpers.checks.__path__, "helpers.checks."):
    importlib.import_module(_module.name)          # every check module registers its exercises
EXERCISES = dict(helpers.checks.EXERCISES)

REFUSED = "the very reference this check compares your answer with"
UNHASHABLE = "unhashable type"      # functools.cache of a function given lists: the route cannot run
CHANGED = "changes the check itself"


def learner(fn):
    """fn as a notebook cell would call it: a function of the learner's own namespace."""
    namespace = {"__name__": "__main__", "inner": fn}
    exec("def answer(*args, **kwargs):\n    return inner(*args, **kwargs)\n", namespace)
    return namespace["answer"]


def run(ex, answer):
    """The line the exercise's check prints for answer (a function, or a tuple of them)."""
    given = answer if isinstance(answer, tuple) else (answer,)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ex.check(*[learner(a) for a in given], *ex.inputs())
    text = out.getvalue()
    assert text.count("\n") == 1, text
    return text.strip()


def borrowed(ex, route):
    return run(ex, ex.borrow(route))


# --- the routes: each makes, from the reference f, a callable that runs f's code -----------------

def _owner_module(f):
    return sys.modules[f.__module__]


def _find(module, f):
    """The function at f's qualified name in module (a class's method for a method)."""
    return functools.reduce(getattr, f.__qualname__.split("."), module)


def another_module(f):
    """f as another module holds it after `from f's module import f` (a real one when the course has
    one, e.g. helpers.model's sinusoidal_positions; else a module made here)."""
    for name, module in list(sys.modules.items()):
        if module is not None and module is not _owner_module(f) and name.startswith("helpers."):
            for value in list(vars(module).values()):
                if value is f:
                    return value
    module = types.ModuleType("elsewhere")
    exec(f"from {f.__module__} import {f.__qualname__.split('.')[0]} as top", vars(module))
    return _find(types.SimpleNamespace(**{f.__qualname__.split(".")[0]: module.top}), f)


def lru_cache(f):
    return functools.lru_cache(maxsize=None)(f)


def cache(f):
    return functools.cache(f)


def partial(f):
    return functools.partial(f)


class Holder:
    def __init__(self, f):
        self.f = f

    def __call__(self, *args, **kwargs):
        return self.f(*args, **kwargs)


def holder(f):
    return Holder(f)


def namespace(f):
    return types.SimpleNamespace(f=f).f


def class_attribute(f):
    box = type("Box", (), {"f": f})
    return box.f


def static_method(f):
    box = type("Box", (), {"f": staticmethod(f)})
    return box().f


def from_code(f):
    g = types.FunctionType(f.__code__, f.__globals__, "mine", f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


def reloaded(f):
    """f from its module reloaded (the module's namespace is put back by the fixture)."""
    return _find(importlib.reload(_owner_module(f)), f)


def from_file(f):
    """f from a fresh module executed from its module's file, under another name."""
    module = _owner_module(f)
    spec = importlib.util.spec_from_file_location(module.__name__ + "_copy", module.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return _find(copy, f)


def from_closure(f):
    """f pulled out of the closure of a function that wraps it."""
    def wrap(g):
        def wrapper(*args, **kwargs):
            return g(*args, **kwargs)
        return wrapper
    return wrap(f).__closure__[0].cell_contents


def from_wrapped(f):
    """f pulled out of functools.wraps's __wrapped__."""
    return functools.wraps(f)(lambda *args, **kwargs: None).__wrapped__


ROUTES = [another_module, lru_cache, cache, partial, holder, namespace, class_attribute, static_method,
          from_code, reloaded, from_file, from_closure, from_wrapped]


@pytest.fixture
def restored():
    """Put back every module namespace and the exercise registry a route changed (reload, a copy
    of a check module registering its exercise again)."""
    saved = {name: dict(vars(m)) for name, m in list(sys.modules.items())
             if m is not None and (name.startswith("helpers") or name == "torch.nn.modules.transformer")}
    yield
    for name, state in saved.items():
        vars(sys.modules[name]).clear()
        vars(sys.modules[name]).update(state)
    helpers.checks.EXERCISES.clear()
    helpers.checks.EXERCISES.update(EXERCISES)


def test_every_function_exercise_with_a_reference_is_registered():
    """Each check that calls call(..., reference=...) (directly or through a check package's
    runner) is in the registry, with two right answers in tests/right_answers.py."""
    import inspect
    import re
    registered = set(EXERCISES)
    for _, module in sorted(sys.modules.items()):
        if module is None or not module.__name__.startswith("helpers.checks."):
            continue
        for name, value in vars(module).items():
            if (name.startswith("check_") and getattr(value, "__module__", "") == module.__name__
                    and re.search(r"\breference(s)?=", inspect.getsource(value))):
                assert name in registered, f"{module.__name__}.{name} has a reference but no exercise()"
    assert registered <= set(ANSWERS)
    assert all(len(ANSWERS[name]) >= 2 for name in registered)
    assert len(registered) >= 19


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_right_answers_written_differently_pass(name):
    ex = EXERCISES[name]
    made = answers(name)
    assert len(made) >= 2 and len(set(ANSWERS[name])) == len(ANSWERS[name])
    for answer in made:
        line = run(ex, answer)
        assert line.startswith(PASSED), line


@pytest.mark.parametrize("route", ROUTES, ids=[r.__name__ for r in ROUTES])
@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_route_to_the_reference_is_refused(name, route, restored):
    ex = EXERCISES[name]
    line = borrowed(ex, route(ex.reference))
    assert REFUSED in line or UNHASHABLE in line, line
    assert not line.startswith(PASSED), line


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_a_tampered_checker_is_refused_and_put_back(name, monkeypatch):
    """A right answer that also sets the check module's comparisons (and torch's) to always agree
    is refused, and the check's module is as it was after."""
    ex = EXERCISES[name]
    module = sys.modules[ex.check.__module__]
    before = dict(vars(module))
    real_allclose = torch.allclose

    def tamper(fn):
        def tampered(*args, **kwargs):
            for owner in (module, helpers.checks):
                for what in ("close", "_same", "_matches", "tensor"):
                    if hasattr(owner, what):
                        setattr(owner, what, lambda *a, **k: True)
            torch.allclose = lambda *a, **k: True
            return fn(*args, **kwargs)
        return tampered

    right = answers(name)[0]
    line = run(ex, tuple(tamper(f) for f in right) if isinstance(right, tuple) else tamper(right))
    monkeypatch.setattr(torch, "allclose", real_allclose)       # in case the check did not
    assert CHANGED in line, line
    assert torch.allclose is real_allclose
    assert all(vars(module)[k] is v for k, v in before.items() if not k.startswith("__"))


def test_the_issues_tampered_checker_returning_zeros_is_refused(capsys):
    from helpers.checks import positions

    def my_sinusoidal_positions(n, d):
        positions.close = lambda *a: True
        return torch.zeros(n, d)
    close = positions.close
    positions.check_sinusoidal_positions(my_sinusoidal_positions)
    line = capsys.readouterr().out.strip()
    assert CHANGED in line and "helpers.checks.positions.close" in line, line
    assert positions.close is close


def test_a_caught_refusal_is_still_refused(capsys):
    from helpers.checks import positions
    from helpers.positions import sinusoidal_positions

    def my_sinusoidal_positions(n, d):
        try:
            return sinusoidal_positions(n, d)
        except BaseException:
            return sinusoidal_positions(n, d)       # the watch is off by now: refused all the same
    positions.check_sinusoidal_positions(my_sinusoidal_positions)
    assert REFUSED in capsys.readouterr().out


def test_switching_the_watch_off_is_refused(capsys):
    from helpers.checks import positions
    right = answers("check_sinusoidal_positions")[0]

    def my_sinusoidal_positions(n, d):
        sys.settrace(None)
        return right(n, d)
    positions.check_sinusoidal_positions(my_sinusoidal_positions)
    assert "sys.settrace" in capsys.readouterr().out


def test_a_transformers_position_table_is_refused(capsys):
    """01: the table a Transformer holds was built by sinusoidal_positions: reading it is refused,
    whether the Transformer is built inside the answer or before it."""
    from helpers.checks.positions import check_sinusoidal_positions
    from helpers.model import Transformer
    built = {d: Transformer(10, d, 2, 16, 1) for d in (8, 64)}

    def inside(n, d):
        return Transformer(10, d, 2, 16, 1, max_len=max(n, 1)).pe[:n].clone()

    def before(n, d):
        return built[d].pe[:n].clone() if d in built else torch.zeros(n, d)
    for fn, words in ((inside, "sinusoidal_positions"), (before, "helpers.model.Transformer")):
        check_sinusoidal_positions(fn)
        line = capsys.readouterr().out
        assert REFUSED in line and words in line, line


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_with_the_watch_off_routes_pass_again(name, restored, monkeypatch):
    """The mechanism is what refuses the routes: switched off, some route of every exercise is not
    refused (only the identity test of a held reference is left)."""
    monkeypatch.setattr(helpers.checks, "WATCH", False)
    ex = EXERCISES[name]
    lines = []
    for route in (holder, namespace, from_code, from_file):
        lines.append(borrowed(ex, route(ex.reference)))
        if REFUSED not in lines[-1] and UNHASHABLE not in lines[-1]:
            break
    assert REFUSED not in lines[-1] and UNHASHABLE not in lines[-1], lines


# --- Torch's operation under another name (class 3) ----------------------------------------------

def _layer_norm_routes():
    def native(x, g, b, eps=1e-5):
        return torch.native_layer_norm(x, (x.shape[-1],), g, b, eps)[0]

    def aten(x, g, b, eps=1e-5):
        return torch.ops.aten.native_layer_norm.default(x, [x.shape[-1]], g, b, eps)[0]

    def group_norm(x, g, b, eps=1e-5):
        return F.group_norm(x.reshape(-1, 1, x.shape[-1]), 1, eps=eps).reshape(x.shape) * g + b

    def instance_norm(x, g, b, eps=1e-5):
        return F.instance_norm(x.reshape(-1, 1, x.shape[-1]), eps=eps).reshape(x.shape) * g + b

    def batch_norm(x, g, b, eps=1e-5):
        flat = x.reshape(-1, x.shape[-1]).T            # tokens as channels: each normalised over d
        return F.batch_norm(flat, None, None, training=True, eps=eps).T.reshape(x.shape) * g + b
    return [native, aten, group_norm, instance_norm, batch_norm]


def _rms_norm_routes():
    def rms(x, g, eps=1e-5):
        return torch.rms_norm(x, (x.shape[-1],), g, eps)

    def aten(x, g, eps=1e-5):
        return torch.ops.aten.rms_norm.default(x, [x.shape[-1]], g, eps)
    routes = [rms, aten]
    if hasattr(torch, "_fused_rms_norm"):
        def fused(x, g, eps=1e-5):
            return torch._fused_rms_norm(x, [x.shape[-1]], g, eps)[0]
        routes.append(fused)
    return routes


def _multi_head(x, W_Q, W_K, W_V, W_O, h):
    d = x.shape[-1]
    zeros = torch.zeros(3 * d, dtype=x.dtype)
    return torch._native_multi_head_attention(x, x, x, d, h, torch.cat([W_Q.T, W_K.T, W_V.T]), zeros,
                                              W_O.T, torch.zeros(d, dtype=x.dtype), need_weights=False)[0]


def _encoder_layer_fwd(x, L):
    a = L.self_attn
    return torch._transformer_encoder_layer_fwd(
        x, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight, a.out_proj.bias,
        False, True, L.norm1.eps, L.norm1.weight, L.norm1.bias, L.norm2.weight, L.norm2.bias,
        L.linear1.weight, L.linear1.bias, L.linear2.weight, L.linear2.bias, None)


OP_ROUTES = ([("check_layer_norm", f) for f in _layer_norm_routes()]
             + [("check_rms_norm", f) for f in _rms_norm_routes()]
             + [("check_self_attention", _multi_head), ("check_pre_norm", _encoder_layer_fwd)])


@pytest.mark.parametrize("name, fn", OP_ROUTES, ids=[f"{n}-{f.__name__}" for n, f in OP_ROUTES])
def test_torch_operations_under_other_names_are_refused(name, fn, monkeypatch):
    ex = EXERCISES[name]
    line = run(ex, fn)
    assert REFUSED in line, line
    monkeypatch.setattr(helpers.checks, "WATCH", False)        # right answers: only the watch refuses
    line = run(ex, fn)
    assert line.startswith(PASSED), line


def test_the_decoder_layer_refuses_torchs_fused_attention(capsys):
    """04: the self-attention of my_decoder_layer done by torch._native_multi_head_attention."""
    ex = EXERCISES["check_decoder_layer"]

    def my_decoder_layer(y, memory, src_pad, L):
        a = L.self_attn
        n = y.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        out = torch._native_multi_head_attention(y, y, y, a.embed_dim, a.num_heads, a.in_proj_weight,
                                                 a.in_proj_bias, a.out_proj.weight, a.out_proj.bias,
                                                 causal, need_weights=False)[0]
        return L.norm3(L.norm2(L.norm1(y + out)))
    line = run(ex, my_decoder_layer)
    assert REFUSED in line and "_native_multi_head_attention" in line, line


def test_sacrebleus_private_methods_are_refused():
    """09 and 11: any function of the sacrebleu package, private ones included, by its code."""
    pytest.importorskip("sacrebleu")
    from sacrebleu.metrics.bleu import BLEU
    for name in ("check_bleu", "check_bleu_several"):
        ex = EXERCISES[name]

        def via_private(hyps, refs):
            several = refs and isinstance(refs[0][0], list)
            streams = [[" ".join(g) for g in r] for r in refs] if several else [[" ".join(g)] for g in refs]
            metric = object.__new__(BLEU)                 # no __init__: only the private counting runs
            metric.max_ngram_order = 4
            stats = [metric._compute_segment_statistics(" ".join(h), metric._extract_reference_info(s))
                     for h, s in zip(hyps, streams, strict=True)]
            total = [sum(col) for col in zip(*stats, strict=True)]
            c, r, m, t = total[0], total[1], total[2:6], total[6:]
            if min(m) == 0:
                return 0.0
            log_p = sum(math.log(a / b) for a, b in zip(m, t, strict=True)) / 4
            return 100 * min(1, math.exp(1 - r / c)) * math.exp(log_p)
        line = run(ex, via_private)
        assert REFUSED in line and "sacrebleu's BLEU._" in line, line


# --- The issue's examples of class 1: the reference under another module's name ----------------

def _issue_examples():
    import helpers.decoding
    import helpers.gpt2
    import helpers.model
    import helpers.tasks.ablation
    from helpers.attention import causal_mask, padding_mask
    from helpers.tasks.reversal import EOS, PAD

    def padded(ys):
        return ys.masked_fill((ys == EOS).cumsum(1) - (ys == EOS).long() > 0, PAD)

    split, merge = answers("check_split_merge")[0]
    return [
        ("check_sinusoidal_positions", lambda n, d: helpers.model.sinusoidal_positions(n, d)),
        ("check_sinusoidal_positions", lambda n, d: helpers.tasks.ablation.sinusoidal_positions(n, d)),
        ("check_split_merge", (lambda t, h: helpers.decoding.split_heads(t, h), merge)),
        ("check_split_merge", (split, lambda t: helpers.decoding.merge_heads(t))),
        ("check_decoder_mask", lambda ids, pad: helpers.model.additive_mask(causal_mask(ids.shape[1]),
                                                                            padding_mask(ids, pad))),
        ("check_decoder_mask", lambda ids, pad: helpers.gpt2.additive_mask(causal_mask(ids.shape[1]),
                                                                           padding_mask(ids, pad))),
        ("check_greedy_decode", lambda model, src: padded(helpers.decoding.sample_decode(
            model, src, top_k=1, max_len=src.shape[1] + 50))),
        ("check_greedy_decode", lambda model, src: padded(helpers.decoding._write(
            model, src, lambda logits: logits.argmax(-1), src.shape[1] + 50))),
        ("check_bleu", lambda hyps, refs: _bleu_from(
            helpers.bleu.statistics_several(hyps, [[r] for r in refs]))),
    ]


def _bleu_from(stats):
    if min(stats["matches"]) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(stats["matches"], stats["totals"], strict=True)) / 4
    return 100 * min(1.0, math.exp(1 - stats["r"] / stats["c"])) * math.exp(log_p)


@pytest.mark.parametrize("k", range(9))
def test_the_issues_other_names_are_refused(k, monkeypatch):
    import helpers.bleu  # noqa: F401  (statistics_several)
    name, answer = _issue_examples()[k]
    line = run(EXERCISES[name], answer)
    assert REFUSED in line, line
    monkeypatch.setattr(helpers.checks, "WATCH", False)      # right answers: the watch is what refuses
    line = run(EXERCISES[name], answer)
    assert line.startswith(PASSED), line


def test_a_copy_of_the_source_is_not_refused(capsys):
    """A reference's source run in a cell is a copy by hand (out of the checks' reach, as the README
    says): the watch knows code by its object and its place, never by its likeness."""
    import inspect

    import helpers.positions
    from helpers.checks.positions import check_sinusoidal_positions
    namespace = {"__name__": "__main__"}
    exec("import math, torch\n" + inspect.getsource(helpers.positions.sinusoidal_positions), namespace)
    check_sinusoidal_positions(namespace["sinusoidal_positions"])
    assert capsys.readouterr().out.startswith(PASSED)
