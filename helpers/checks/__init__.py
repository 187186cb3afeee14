"""Check cells: print ``Check passed.`` or a one-line hint, and never raise.

A checker is a function decorated with :func:`checker` that returns ``None`` when
the answer is right and a hint (one line naming the likely mistake) otherwise.
It may also return :class:`Passed` ("Check passed." followed by one sentence of why),
which the questions of "Check your understanding" use.
The decorator prints the result and turns any unexpected error into a hint, so a
check cell survives whatever the learner typed: None, a list, a wrong shape, NaN.
One module per notebook holds its checkers (``helpers.checks.positions``, ...).

Conventions every checker follows (tested in ``tests/test_checks.py``):

- an untouched placeholder (``None``, ``...``, or a function whose body is only
  ``...`` / ``pass``) prints ``Not answered yet: ...``;
- a learner's function is run by :func:`call`: on copies of its inputs, its own
  prints silenced, and a one-line hint when it raises, returns nothing or changes
  its inputs in place;
- the reference a check compares with is not an answer: ``call(..., reference=...)``
  runs the learner's function with that reference made unusable, and names it when
  the function calls it, is it (assigned, ``my_f = f``), wraps it (``functools.partial``,
  a bound method, the module itself) or holds it (a default argument, a closure cell, a
  global name it reads). The functions of the check module itself (which build the right
  answers) count as references too, except those the learner's function is handed. A reference
  that is one of torch's own functions (``torch.*``, ``torch.nn.functional.*``,
  ``torch._C._nn.*``) is also watched where every route reaches it, torch's function dispatch:
  a module's forward, a functional form, a default argument or a partial all end there.
"""

import contextlib
import dis
import functools
import inspect
import io
import math
import sys
import types
import warnings

import torch
from torch.overrides import TorchFunctionMode

PASSED = "Check passed."


class Hint(Exception):
    """Raised inside a checker to stop at the first mistake with this hint."""


class Passed(str):
    """A checker's return value for a right answer that comes with one sentence of why."""


class _ReferenceCalled(BaseException):
    """Raised by a blocked reference (a BaseException, so a learner's `except Exception` lets it by)."""


def _op_name(owner, attr):
    """The name torch's function dispatch gives owner.attr when it is one of torch's own functions
    (an attribute of torch, torch.nn.functional, torch._C._nn, ...), else None."""
    if isinstance(owner, types.ModuleType) and owner.__name__.split(".")[0] == "torch":
        return attr
    return None


class _Watch(TorchFunctionMode):
    """Within it, a call of one of torch's functions named in ops (name -> [(label, when)]) raises
    _ReferenceCalled(label), whatever route reached it (a module's forward, the functional form,
    torch._C, torch.ops.aten); when(name, args, kwargs), if given, says whether this call counts."""

    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "").split(".")[0]       # aten's conv1d.default: conv1d
        for label, when in self.ops.get(name, ()):
            if when is None or when(name, args, kwargs):
                raise _ReferenceCalled(label)
        return func(*args, **kwargs)


@contextlib.contextmanager
def blocked(targets, namespace=None):
    """Within the block, calling any of targets raises _ReferenceCalled(label).

    targets: (owner, attribute, label) triples, or (owner, attribute, label, when) where
    when(name, args, kwargs) says which calls count (e.g. only those with label_smoothing > 0);
    owner is a module, a class or an object (an nn.Module instance, say), label is how the learner
    would write it, e.g. ``(torch.nn.CrossEntropyLoss, "forward", "nn.CrossEntropyLoss")``. Names
    in namespace (a learner function's ``__globals__``) bound to a blocked object are blocked too,
    so ``from m import f`` does not get around it. One of torch's own functions is also watched in
    torch's function dispatch (:class:`_Watch`), which every route to it reaches.
    """
    undo, ops = [], {}

    def refuse(label, original, attr, when):
        def stub(*args, **kwargs):
            if when is None or when(attr, args, kwargs):
                raise _ReferenceCalled(label)
            return original(*args, **kwargs)
        return stub

    try:
        for owner, attr, label, *rest in targets:
            when = rest[0] if rest else None
            original = getattr(owner, attr)
            own = getattr(owner, "__dict__", {})
            had = attr in own
            raw = own[attr] if had else original   # a staticmethod is restored as one
            setattr(owner, attr, refuse(label, original, attr, when))
            undo.append((owner, attr, raw, had))
            for name, value in list((namespace or {}).items()):
                if value is original:
                    namespace[name] = refuse(label, original, attr, when)
                    undo.append((namespace, name, original, None))
            op = _op_name(owner, attr)
            if op is not None:
                ops.setdefault(op, []).append((label, when))
        with _Watch(ops) if ops else contextlib.nullcontext():
            yield
    finally:
        for owner, attr, original, had in reversed(undo):
            if had is None:
                owner[attr] = original
            elif had:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)


# --- Borrowed answers: a learner's function that is, wraps or holds a reference ---------------

_DEPTH = 6   # how deep a partial of a partial, a closure in a closure, ... is followed


def _parts(obj, namespace):
    """What obj holds that runs when it runs: a partial's function and arguments, a bound
    method's function, a function's defaults, closure cells, ``__wrapped__`` and the global
    names its code reads (only for functions written where namespace is, the learner's)."""
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.MethodType):
        return [obj.__func__]
    if isinstance(obj, (list, tuple)):               # a short one: a long list holds data
        return list(obj) if len(obj) <= 64 else []
    if isinstance(obj, dict):
        return list(obj.values()) if len(obj) <= 64 else []
    if not isinstance(obj, types.FunctionType):
        return []
    held = [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
    for cell in obj.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:      # an empty cell (a name assigned later)
            pass
    if hasattr(obj, "__wrapped__"):
        held.append(obj.__wrapped__)
    if namespace is not None and obj.__globals__ is namespace:
        codes, names = [obj.__code__], set()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        # A global bound to a reference itself is blocked when called (blocked() rebinds it), which
        # names the first one called; here only what the call cannot see: partials, methods, the
        # learner's own functions (their defaults and closures), short containers.
        held += [value for n in sorted(names) if n in namespace
                 for value in [namespace[n]] if not isinstance(value, (types.FunctionType,
                                                                       types.BuiltinFunctionType))
                 or getattr(value, "__globals__", None) is namespace]
    return held


def _walk(obj, namespace):
    """obj and everything _parts reaches from it, to a depth of _DEPTH (each object once)."""
    seen, todo = {}, [(obj, 0)]
    while todo:
        item, depth = todo.pop()
        if id(item) in seen or depth > _DEPTH:
            continue
        seen[id(item)] = item
        if isinstance(item, (types.ModuleType, type, str, bytes, int, float, torch.Tensor)):
            continue
        todo += [(part, depth + 1) for part in _parts(item, namespace)]
    return seen.values()


def _borrowed(fn, targets):
    """The label of the reference fn is, wraps or holds (see :func:`call`), else None."""
    wanted = {}
    for owner, attr, label, *when in targets:
        if when:                  # only some calls count: watched when it runs (blocked), not held
            continue
        value = getattr(owner, attr, None)
        if value is None:
            continue
        wanted.setdefault(id(value), (value, label))
        func = getattr(value, "__func__", None)           # a method taken from an instance
        if func is not None:
            wanted.setdefault(id(func), (func, label))
        if attr == "forward" and not isinstance(owner, (type, types.ModuleType)):
            wanted.setdefault(id(owner), (owner, label))   # the module instance itself
    for item in _walk(fn, getattr(fn, "__globals__", None)):
        hit = wanted.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        func = getattr(item, "__func__", None)
        hit = wanted.get(id(func)) if func is not None else None
        if hit is not None and hit[0] is func:
            return hit[1]
    return None


def _check_module():
    """The helpers.checks module whose code called call(), or None (a test calling it). A module of a
    check package (helpers.checks.encoder.ffn) stands for its package: see :func:`_own_functions`."""
    frame = inspect.currentframe()
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("helpers.checks.") and name != __name__:
            return sys.modules.get(name)
        frame = frame.f_back
    return None


def _own_functions(module, handed):
    """(module, name, label) of the check module's own functions (they build its right answers
    and its mistakes), except those the learner's function is handed (reachable from handed)."""
    if module is None:
        return []
    given = {id(item) for arg in handed for item in _walk(arg, getattr(arg, "__globals__", None))}
    for arg in handed:                                # the methods of an object handed over
        if isinstance(arg, torch.nn.Module):
            for item in vars(type(arg)).values():
                given.update(id(x) for x in _walk(item, getattr(item, "__globals__", None)))
    package = ".".join(module.__name__.split(".")[:3])   # helpers.checks.encoder for .encoder.ffn
    modules = [m for name, m in list(sys.modules.items())
               if m is not None and (name == package or name.startswith(package + "."))]
    return [(m, name, f"{m.__name__}.{name}, the check's own computation")
            for m in modules for name, value in vars(m).items()
            if isinstance(value, types.FunctionType) and value.__module__ == m.__name__
            and id(value) not in given]


def checker(fn):
    """Print PASSED when fn returns None, else the hint it returns; never raise."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                hint = fn(*args, **kwargs)
        except Hint as h:
            hint = str(h)
        except Exception as e:  # a checker must never raise, whatever it is given
            hint = f"Could not check this answer ({type(e).__name__}: {e})."
        if hint is None:
            print(PASSED)
        elif isinstance(hint, Passed):
            print(" ".join(f"{PASSED} {hint}".split()))
        else:
            print(" ".join(str(hint).split()))

    return run


def not_answered(x):
    """True for an untouched placeholder: None, ..., or a function whose body does nothing."""
    if x is None or x is Ellipsis:
        return True
    code = getattr(x, "__code__", None)
    if code is None:
        return False
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)
           if i.opname not in ("RESUME", "NOP", "CACHE")]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def _copy(a, grad=False):
    """A deep copy of tensors (also inside lists, tuples and dicts); anything else as it is. With
    grad, a tensor that requires a gradient is copied as a new leaf that requires one."""
    if isinstance(a, torch.Tensor):
        return a.detach().clone().requires_grad_(grad and a.requires_grad)
    if isinstance(a, (list, tuple)) and type(a) in (list, tuple):
        return type(a)(_copy(v, grad) for v in a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):       # a named tuple
        return type(a)(*(_copy(v, grad) for v in a))
    if isinstance(a, dict):
        return {k: _copy(v, grad) for k, v in a.items()}
    return a


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and bool(((a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else (a == b)).all()))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (bool, int, float, str, type(None))):
        return type(a) is type(b) and (a == b or a != a)      # a != a: NaN stays NaN
    return True


def call(fn, name, *args, no_grad=True, reference=(), instead="", **kwargs):
    """fn(*args, **kwargs) as a check runs a learner's function, or raise Hint.

    name is how the learner wrote it, e.g. ``"my_layer_norm(x, gamma, beta, eps)"``.
    The function gets copies of the tensors, its prints are silenced, and the hint
    names an untouched placeholder, a function that raises (with its error's first
    line), one that returns None (a forgotten ``return``) and one that changes a
    tensor argument in place. reference: the (owner, attribute, label) triples of what
    the check compares with (see :func:`blocked`); a function that calls one of them, is
    one (``my_f = f``), wraps one (``functools.partial``, a bound method, the module) or
    holds one (a default argument, a closure cell, a global name its code reads) is told
    so, with instead (what to write instead). The calling check module's own functions are
    references too, except those reachable from the arguments the learner is handed.
    """
    short = name.split("(")[0]
    if not_answered(fn):
        raise Hint(f"Not answered yet: write the body of {short} and run its cell.")
    if not callable(fn) or isinstance(fn, (bool, str, torch.Tensor, type)):
        raise Hint(f"Pass your function itself ({short}, without parentheses), "
                   f"not a {type(fn).__name__}.")
    given = [_copy(a, not no_grad) for a in args]
    kept = [_copy(a) for a in args]
    given_kw = {k: _copy(v, not no_grad) for k, v in kwargs.items()}
    module = _check_module()
    if (getattr(fn, "__module__", None) == getattr(module, "__name__", None)
            and getattr(module, getattr(fn, "__name__", ""), None) is not fn):
        module = None                                 # a wrapper the check itself wrote
    reference = [*reference, *_own_functions(module, [*args, *kwargs.values()])]

    def refused(label):
        return Hint(f"{short} calls {label}, the very reference this check compares your answer "
                    f"with, so it checks nothing: {instead or 'write the computation yourself.'}")

    label = _borrowed(fn, reference)
    if label is not None:
        raise refused(label)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                (torch.no_grad() if no_grad else contextlib.nullcontext()), \
                blocked(reference, getattr(fn, "__globals__", None)):
            out = fn(*given, **given_kw)
    except _ReferenceCalled as e:
        raise refused(e.args[0]) from None
    except NotImplementedError:
        raise Hint(f"Not answered yet: write the body of {short} and run its cell.") from None
    except Exception as e:  # the learner's code may fail in any way: say how, in one line
        message = " ".join(str(e).split())[:200]
        raise Hint(f"{name} raised {type(e).__name__}: {message}") from None
    if out is None:
        raise Hint(f"{name} returned None: end it with `return` and the result.")
    for new, old, pos in zip(given, kept, range(len(args)), strict=True):
        if not _same(new, old):
            if isinstance(old, dict):
                raise Hint(f"{short} changed the dict it was given (argument number {pos + 1}: a key "
                           "added, removed or set, e.g. config[...] = ... or config.pop(...)): read from "
                           "it, or change a copy, dict(config); the caller's dict must stay as it was.")
            if isinstance(old, (list, tuple)) and not any(isinstance(v, torch.Tensor) for v in old):
                raise Hint(f"{short} changed the list it was given (argument number {pos + 1}: e.g. "
                           ".append, .sort, .pop or x[i] = ...): build a new list, the caller's must stay "
                           "as it was.")
            raise Hint(f"{short} changed its argument number {pos + 1} in place (e.g. x -= ..., "
                       "x[...] = ..., or a method ending in _): build new tensors instead, the caller's "
                       "inputs must stay as they were.")
    return out


def number(x, name):
    """x as a float, or raise Hint saying why it is not a usable number."""
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: replace the placeholder for {name} with your answer.")
    if isinstance(x, bool) or isinstance(x, str):
        raise Hint(f"{name} should be a number, got {type(x).__name__} {x!r}.")
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise Hint(f"{name} should be one number, got a tensor of shape {tuple(x.shape)}.")
        x = x.item()
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise Hint(f"{name} should be a number, got {type(x).__name__}.") from None
    if math.isnan(value) or math.isinf(value):
        raise Hint(f"{name} is {value}: check for a division by zero or a log of 0.")
    return value


def _dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def tensor(x, name, shape=None, tuple_hint=None, dtype=None):
    """x as a float64 tensor (of the given shape), or raise Hint saying what is wrong.

    tuple_hint: what to add when x is a tuple or list of tensors, where a likely cause is
    known (e.g. nn.MultiheadAttention returns (output, weights)). dtype: the inputs' dtype, which
    x must keep (a float64 answer to float32 inputs is refused: a model would not compute in it).
    """
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: {name} is still the placeholder.")
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        raise Hint(f"{name} should be one tensor, got a {type(x).__name__} of {len(x)} items: "
                   f"{tuple_hint or 'return the result tensor alone.'}")
    if not isinstance(x, torch.Tensor):
        raise Hint(f"{name} should be a torch tensor, got {type(x).__name__}.")
    if x.is_complex() or x.dtype == torch.bool:
        raise Hint(f"{name} should hold real numbers, got dtype {x.dtype}.")
    if dtype is not None and x.dtype != dtype:
        raise Hint(f"{_sentence(name)} is {_dtype_name(x.dtype)}, the inputs are {_dtype_name(dtype)}: "
                   "keep the inputs' dtype (no .double(), .half(), .long() or .to(...) on the way).")
    x = x.detach().to(torch.float64)
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise Hint(f"{name} should have shape {tuple(shape)}, got {tuple(x.shape)}.")
    if torch.isnan(x).any():
        raise Hint(f"{name} contains NaN: look for a division by zero or 0/0.")
    return x


def _sentence(text):
    """text with a capital first letter (an ASCII one only: γ must stay γ)."""
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


def shape(x, name):
    """x as a tuple of ints (from a tuple, list, torch.Size), or raise Hint."""
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: write the shape of {name} as a tuple, e.g. (1, 5, 64).")
    if isinstance(x, torch.Tensor):
        raise Hint(f"Give the shape of {name} as a tuple such as (1, 5, 64), not a tensor.")
    if isinstance(x, int) and not isinstance(x, bool):
        x = (x,)
    if not isinstance(x, (tuple, list, torch.Size)) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in x
    ):
        raise Hint(f"Write the shape of {name} as a tuple of whole numbers, e.g. (1, 5, 64).")
    return tuple(x)


def close(a, b, tol=1e-3):
    """True when a and b (numbers or tensors) agree within tol."""
    return bool(abs(torch.as_tensor(a, dtype=torch.float64)
                    - torch.as_tensor(b, dtype=torch.float64)).max() <= tol)


# --- "Check your understanding": questions with a choice, a number or a shape ------------------

def _option(x, name, options):
    """x as one of options (case and spaces ignored), or raise Hint listing them."""
    listed = ", ".join(repr(o) for o in options)
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: set {name} to one of {listed}.")
    if not isinstance(x, str):
        raise Hint(f"{name} should be one of the strings {listed}, got {type(x).__name__}.")
    key = " ".join(x.strip().strip("'\"").lower().split())
    for option in options:
        if key == option.lower():
            return option
    raise Hint(f"{name} should be one of {listed}, got {x!r}.")


def choice(x, name, right, why, wrong):
    """A one-choice question: Passed(why) for right, wrong[x] (the misconception) otherwise.

    wrong maps every other option to the hint it prints (which says where the notebook
    shows the answer). Raises Hint for a placeholder or an answer that is not an option.
    """
    picked = _option(x, name, sorted([right, *wrong]))  # sorted: the order gives nothing away
    return Passed(why) if picked == right else wrong[picked]


def _split_options(text, options):
    """A comma-separated answer as its items; an option that holds a comma itself ("ninety thousand,
    nine hundred and nine") stays whole: the longest run of parts that makes an option is one item."""
    parts = [part for part in text.replace(";", ",").split(",") if part.strip()]
    known = {" ".join(o.lower().split()) for o in options}
    items, i = [], 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            joined = ",".join(parts[i:j])
            if " ".join(joined.strip().strip("'\"").lower().split()) in known or j == i + 1:
                items.append(joined)
                i = j
                break
    return items


def choices(x, name, options, right, why, hints):
    """A 'which of these' question: x is a set (or list, or comma-separated string) of options.

    right is the set of right options. hints maps an option to the hint shown when it is
    wrongly picked, or wrongly left out. Passed(why) when x equals right.
    """
    listed = ", ".join(repr(o) for o in options)
    if x is None or x is Ellipsis:
        raise Hint(f"Not answered yet: set {name} to the set of the options you pick among {listed}.")
    if isinstance(x, str):
        x = _split_options(x, options)
    if not isinstance(x, (set, frozenset, list, tuple)):
        raise Hint(f"{name} should be a set of options, written like {{'...', '...'}}, "
                   f"got {type(x).__name__}.")
    picked = {_option(item, f"each item of {name}", options) for item in x}
    for option in options:
        if (option in picked) != (option in right):
            return hints[option]
    return Passed(why)
