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
- the reference a check compares with is not an answer: ``call(..., reference=...)`` names
  it when the learner's function is it, wraps it or holds it (:func:`_borrowed`), and when it
  runs during the call, whatever reached it (:class:`_Watch`): a Python function is known by its
  code object and its place (file, first line, qualified name), so another module's name for it,
  a cache or partial, a holder, a class attribute, a function rebuilt from its ``__code__`` and
  its module reloaded or loaded again from its file all end there (a trace hook sees every
  frame start: ``sys.settrace``, Python 3.11 to 3.13); a package (``ALL``: sacrebleu) by its
  folder; one of torch's own functions by name in torch's function dispatch; a family of torch's
  operations (:class:`Ops`: every normalisation, every fused attention) also in ATen's dispatch,
  where composites arrive as the operation they run; an object the reference built
  (:class:`Built`: a Transformer's position table) when the function holds one. The check
  module's own functions count as references too, except those the learner's function is handed.
  Each function exercise registers its check with :func:`exercise` for tests/test_routes.py;
- the check cannot be changed by the answer: :class:`_Guard` compares what the check reads
  (helpers.checks and the check's package, and torch's, F's, math's and builtins' names) before
  and after the learner's call, puts back a change and refuses the answer;
- :data:`WATCH` (``COURSE_CHECK_WATCH=0``) switches the watch and the guard off, for the tests.

A learner who copies the solution by hand (typed, or ``exec`` of the reference's source) is not
stopped: that is a copy, not a route, and an answer is never refused for resembling the reference.
"""

import codecs
import contextlib
import dis
import functools
import inspect
import io
import math
import os
import re
import sys
import types
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

PASSED = "Check passed."


class Hint(Exception):
    """Raised inside a checker to stop at the first mistake with this hint."""


class Passed(str):
    """A checker's return value for a right answer that comes with one sentence of why."""


class _ReferenceCalled(BaseException):
    """Raised when a reference runs during a learner's call (a BaseException, so a learner's
    `except Exception` lets it by; one that catches it anyway is refused all the same)."""


WATCH = os.environ.get("COURSE_CHECK_WATCH", "1") != "0"
"""The switch of the watch (:class:`_Watch`) and of the guard (:class:`_Guard`): with it off
(``COURSE_CHECK_WATCH=0``, or this name set to False) only the identity test of :func:`_borrowed`
is left; tests/test_routes.py shows that routes to the references then pass."""

ALL = "*"
"""In a reference list, ``(package, ALL, label)``: every function of that package's files (sacrebleu)."""


class Ops:
    """A family of torch's operations that compute what an exercise asks, refused wherever they
    are reached: by name in torch's function dispatch (F.rms_norm, torch.native_layer_norm,
    torch.ops.aten.native_layer_norm.default) and in ATen's dispatch below it, where a composite
    arrives as the operation it runs (F.group_norm as native_group_norm, F.instance_norm as
    native_batch_norm). pattern: a regular expression searched in the operation's name."""

    def __init__(self, pattern, label):
        self.pattern, self.label = re.compile(pattern), label

    def __repr__(self):
        return f"Ops({self.pattern.pattern!r})"


NORMALISATION = Ops(r"(layer|group|instance|batch|rms)_norm", "a normalisation")
FUSED_ATTENTION = Ops(r"multi_head_attention|_transformer_(encoder|decoder)", "a fused attention")
FUSED_LAYER = Ops(r"_transformer_(encoder|decoder)", "a fused Transformer layer")
SCALED_DOT_PRODUCT = Ops(r"scaled_dot_product", "a scaled dot-product attention")


class Built:
    """In a reference list: an object of class cls (built by the reference: helpers.model.Transformer
    builds its position table with sinusoidal_positions) that the learner's function may not hold."""

    def __init__(self, cls, label):
        self.cls, self.label = cls, label


def _op_name(owner, attr):
    """The name torch's function dispatch gives owner.attr when it is one of torch's own functions
    (an attribute of torch, torch.nn.functional, torch._C._nn, ...), else None."""
    if isinstance(owner, types.ModuleType) and owner.__name__.split(".")[0] == "torch":
        return attr
    return None


def _code_of(value):
    """The code object that runs when value is called (a function, a method, a staticmethod, a
    function under decorators that keep __wrapped__), or None (a C function, a class)."""
    value = getattr(value, "__func__", value)
    try:
        value = inspect.unwrap(value)
    except ValueError:                  # a cycle of __wrapped__
        pass
    value = getattr(value, "__func__", value)
    code = getattr(value, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def _file(name):
    """A code object's file name as a resolved path (its module reloaded or loaded from another
    spelling of the same path gives the same one), or None for code typed in a cell."""
    if not name or name.startswith("<"):
        return None
    return os.path.realpath(name)


_UNSEEN = object()


class _Watch:
    """Within running(), any run of a reference's code raises _ReferenceCalled(label).

    A reference is known by its code object, and by its place (file, first line, qualified name),
    so that every route to it is seen: another module's name for it, a wrapper (functools.cache, a
    partial), a holder (an object, a namespace, a class attribute, a staticmethod), a function
    rebuilt from its __code__, its module reloaded or loaded again from its file. A trace hook
    (sys.settrace: Python 3.11 to 3.13) sees every Python frame start; it returns None, so no line
    is traced (cheaper than sys.setprofile, which also sees every call of a C function: 09's BPE
    check, pure Python, took about 1.7 times as long under the trace hook, 2 to 3 under a profile hook; a
    check whose answer spends its time in torch, barely longer). A package (ALL) is known by
    its folder. torch's own functions are watched by name in torch's function dispatch, and the
    families of :class:`Ops` there and in ATen's dispatch."""

    def __init__(self, targets):
        self.codes, self.places, self.packages = {}, {}, []
        self.names, self.families, self.built = {}, [], []
        self.rules, self.seen_ops = {}, {}
        self.hit, self.paused = None, False
        for target in targets:
            if isinstance(target, Ops):
                self.families.append(target)
                continue
            if isinstance(target, Built):
                self.built.append(target)
                continue
            owner, attr, label, *rest = target
            when = rest[0] if rest else None
            if attr == ALL:
                where = getattr(owner, "__file__", None) or next(iter(getattr(owner, "__path__", [])), None)
                if where is not None:
                    folder = os.path.dirname(_file(where)) if where.endswith(".py") else _file(where)
                    self.packages.append((folder + os.sep, label))
                continue
            value = getattr(owner, attr, None)
            if value is None:
                continue
            op = _op_name(owner, attr)
            if op is not None:
                self.names.setdefault(op, []).append((label, when))
                if when is not None:     # only some calls count: torch's dispatch decides, with args
                    continue
            code = _code_of(value)
            if code is not None:
                # a method of one object (L.forward): only its calls on that object count
                instance = owner if isinstance(value, types.MethodType) and value.__self__ is owner else None
                entry = (label, when, instance)
                self.codes.setdefault(id(code), (code, []))[1].append(entry)
                where = _file(code.co_filename)
                if where is not None:
                    self.places.setdefault((where, code.co_firstlineno, code.co_qualname), []).append(entry)
        self.files = {where for where, _, _ in self.places}

    def match(self, code):
        """The (label, when, instance) of each reference whose code is code (itself, or the same
        place), or None."""
        found = self.codes.get(id(code))
        if found is not None and found[0] is code:
            return found[1]
        rule = self.rules.get(code.co_filename, _UNSEEN)
        if rule is _UNSEEN:            # (the file when it holds references, the package's label), once
            where, rule = _file(code.co_filename), None
            if where is not None:
                package = next((label for folder, label in self.packages if where.startswith(folder)), None)
                rule = (where if where in self.files else None, package)
                rule = None if rule == (None, None) else rule
            self.rules[code.co_filename] = rule
        if rule is None:
            return None
        found = self.places.get((rule[0], code.co_firstlineno, code.co_qualname)) if rule[0] else None
        if found is None and rule[1] and code.co_flags & inspect.CO_NEWLOCALS:
            found = [(f"{rule[1]}'s {code.co_qualname}", None, None)]   # a function, not a module body
        return found

    def refuse(self, label):
        if self.hit is None:
            self.hit = label
        raise _ReferenceCalled(label)

    def counts(self, when, name, args, kwargs):
        """when(name, args, kwargs), run with the watch paused (it is the check's own code)."""
        if when is None:
            return True
        self.paused = True
        try:
            return when(name, args, kwargs)
        finally:
            self.paused = False

    def _hook(self):
        """The trace function: on each frame's start, a look at two dicts (its file, its code)
        decides whether it can be a reference's; only then :meth:`_called` looks closer."""
        ids, known, called = set(self.codes), self.rules.get, self._called

        def profile(frame, event, arg, unseen=_UNSEEN):
            if event == "call":
                code = frame.f_code
                if known(code.co_filename, unseen) is not None or id(code) in ids:
                    called(frame)
        return profile

    def _called(self, frame):
        if self.paused:
            return
        found = self.match(frame.f_code)
        if found is None:
            return
        code = frame.f_code
        for label, when, instance in found:
            if instance is not None or when is not None:
                args = tuple(frame.f_locals.get(n) for n in code.co_varnames[:code.co_argcount])
                if instance is not None and not (args and args[0] is instance):
                    continue
                if not self.counts(when, code.co_name, args[1:] if instance is not None else args, {}):
                    continue
            self.refuse(label)

    def family(self, name):
        """The label of the family (Ops) that torch's operation name belongs to, else None."""
        label = self.seen_ops.get(name, _UNSEEN)
        if label is _UNSEEN:
            label = next((f"torch's {name} ({ops.label} operation)" for ops in self.families
                          if ops.pattern.search(name)), None)
            self.seen_ops[name] = label
        return label

    @contextlib.contextmanager
    def running(self):
        """Within the block, the references are watched (see the class)."""
        stack = contextlib.ExitStack()
        if WATCH and (self.names or self.families):
            stack.enter_context(_TorchWatch(self))
        if WATCH and self.families:
            stack.enter_context(_AtenWatch(self))
        hook = self._hook() if WATCH and (self.codes or self.packages) else None
        previous = sys.gettrace()
        with stack:
            if hook is not None:
                sys.settrace(hook)
            try:
                yield self
            finally:
                if hook is not None:
                    now = sys.gettrace()
                    sys.settrace(previous)
                    if now is not hook and self.hit is None:
                        self.hit = "sys.settrace, which switches off the check's watch of the references"


class _TorchWatch(TorchFunctionMode):
    """Torch's function dispatch under a _Watch: a call of one of torch's functions named in its
    references, or of a family (Ops), raises _ReferenceCalled, whatever route reached it (a module's
    forward, the functional form, torch._C, torch.ops.aten)."""

    def __init__(self, watch):
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        watch = self.watch
        if not watch.paused:
            name = getattr(func, "__name__", "").split(".")[0]      # aten's conv1d.default: conv1d
            for label, when in watch.names.get(name, ()):
                if watch.counts(when, name, args, kwargs):
                    watch.refuse(label)
            if watch.families:
                label = watch.family(name)
                if label is not None:
                    watch.refuse(label)
        return func(*args, **kwargs)


class _AtenWatch(TorchDispatchMode):
    """ATen's dispatch under a _Watch: an operation of one of its families (Ops) raises
    _ReferenceCalled, the composites having become the operations they run."""

    def __init__(self, watch):
        super().__init__()
        self.watch = watch

    @classmethod
    def _should_skip_dynamo(cls):
        """False: torch (2.12 and later) would otherwise wrap __torch_dispatch__ in
        torch._disable_dynamo, whose first call imports torch._dynamo (seconds, for nothing here)."""
        return False

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        if not self.watch.paused:
            label = self.watch.family(func._schema.name.split("::")[-1])
            if label is not None:
                self.watch.refuse(label)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def blocked(targets, namespace=None):
    """Within the block, running any of targets raises _ReferenceCalled(label); yields the
    :class:`_Watch`, whose ``hit`` names the first one run even when the learner's code caught it.

    targets: (owner, attribute, label) triples, or (owner, attribute, label, when) where
    when(name, args, kwargs) says which calls count (e.g. only those with label_smoothing > 0);
    owner is a module, a class or an object (an nn.Module instance, say), label is how the learner
    would write it, e.g. ``(torch.nn.CrossEntropyLoss, "forward", "nn.CrossEntropyLoss")``;
    ``(package, ALL, label)`` stands for every function of a package; an :class:`Ops` for a family
    of torch's operations; a :class:`Built` for objects built by a reference. A Python function is
    known by its code, whatever name, wrapper or copy of its module reaches it (namespace, the
    learner's globals, is not needed for that: kept for the callers that pass it).
    """
    watch = _Watch(targets)
    with watch.running():
        yield watch


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


def _borrowed(fn, targets, watch=None):
    """The label of the reference fn is, wraps or holds (see :func:`call`), else None. With watch
    (the :class:`_Watch` of targets), a function it holds is also known by its code (rebuilt from
    the reference's __code__, or from its module loaded again), and an object it holds by its class
    (a :class:`Built`)."""
    wanted = {}
    for owner, attr, label, *when in [t for t in targets if isinstance(t, tuple)]:
        if when or attr == ALL:   # only some calls count: watched when it runs (blocked), not held
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
    watch = watch if WATCH else None
    for item in _walk(fn, getattr(fn, "__globals__", None)):
        hit = wanted.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        func = getattr(item, "__func__", None)
        hit = wanted.get(id(func)) if func is not None else None
        if hit is not None and hit[0] is func:
            return hit[1]
        if watch is None:
            continue
        if isinstance(item, types.FunctionType):
            found = [label for label, when, instance in watch.match(item.__code__) or ()
                     if when is None and instance is None]
            if found:
                return found[0]
        for built in watch.built:
            if isinstance(item, built.cls):
                return built.label
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


def _package_modules(module):
    """The modules of the check package that module belongs to (helpers.checks.encoder for
    helpers.checks.encoder.ffn; helpers.checks.positions alone), or [] for None."""
    if module is None:
        return []
    package = ".".join(module.__name__.split(".")[:3])
    known = _PACKAGES.get(package)
    if known is None or known[0] != len(sys.modules):      # a module imported since: look again
        known = _PACKAGES[package] = len(sys.modules), [
            m for name, m in list(sys.modules.items())
            if m is not None and (name == package or name.startswith(package + "."))]
    return known[1]


_PACKAGES = {}


def _tampered(guard, short):
    """Raise Hint when the learner's call changed what the check reads (guard: a _Guard or None)."""
    changed = guard.changes() if guard is not None else []
    if changed:
        raise Hint(f"{short} changes the check itself ({', '.join(changed[:3])}): an answer that "
                   "changes how it is checked checks nothing. Leave helpers.checks and torch as they "
                   "are (the check has put them back).")


def _own_functions(module, handed):
    """(module, name, label) of the check module's own functions (they build its right answers
    and its mistakes), except those the learner's function is handed (reachable from handed)."""
    if module is None:
        return []
    reached = [item for arg in handed for item in _walk(arg, getattr(arg, "__globals__", None))]
    for arg in handed:                                # the methods of an object handed over
        if isinstance(arg, torch.nn.Module):
            for item in vars(type(arg)).values():
                reached += _walk(item, getattr(item, "__globals__", None))
    given = {id(item) for item in reached} | {id(_code_of(item)) for item in reached if callable(item)}
    return [(m, name, f"{m.__name__}.{name}, the check's own computation")
            for m in _package_modules(module) for name, value in vars(m).items()
            if isinstance(value, types.FunctionType) and value.__module__ == m.__name__
            and id(value) not in given and id(_code_of(value)) not in given]


_ROOTS = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                       os.path.dirname(os.path.dirname(__file__)))})


def _installed(value):
    """True when value is the library's own: no Python code (a C function, a class), or code from a
    file of the installed packages, the standard library or the course's helpers (torch replaces a
    few of its functions when it imports a part of itself: torch._dynamo wraps torch.manual_seed),
    not code typed in a notebook or a test."""
    while isinstance(value, functools.partial):
        value = value.func
    code = _code_of(value)
    where = _file(code.co_filename) if code is not None else None
    return code is None or (where is not None and where.startswith(_ROOTS))


class _Guard:
    """What a check reads, as it was before a learner's call: the namespaces of helpers.checks and
    of the calling check's package (every name; a function's code and defaults; a list's, dict's or
    set's items; a tensor's version counter), and those of torch, torch.Tensor, F, math and builtins
    (their names). changes() puts back whatever the learner's call changed, and names it."""

    _LIBRARIES = ("torch", "torch.nn.functional", "math", "builtins")

    def __init__(self, modules):
        self.full = [(m.__name__, vars(m), self._state(vars(m))) for m in modules]
        owners = [sys.modules[name] for name in self._LIBRARIES] + [
            cls for cls in (torch.Tensor, getattr(torch._C, "TensorBase", None)) if cls is not None]
        self.names = [(getattr(o, "__name__", str(o)), o, dict(vars(o))) for o in owners]

    @staticmethod
    def _state(namespace):
        state = {}
        for name, value in list(namespace.items()):
            if isinstance(value, types.FunctionType):
                state[name] = (value, value.__code__, value.__defaults__, value.__kwdefaults__)
            elif type(value) in (list, dict, set):
                state[name] = (value, value.copy())
            elif isinstance(value, torch.Tensor):
                copy = value.detach().clone() if value.numel() <= 10_000 else None
                state[name] = (value, value._version, copy)
            else:
                state[name] = (value,)
        return state

    @staticmethod
    def _same_items(old, new):
        if isinstance(old, list):
            return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))
        if isinstance(old, dict):
            return old.keys() == new.keys() and all(old[k] is new[k] for k in old)
        return old == new

    def changes(self):
        """The qualified names the learner's call changed (each put back as it was)."""
        changed = []
        for module_name, namespace, state in self.full:
            for name, value in list(namespace.items()):
                if (name not in state and not (name.startswith("__") and name.endswith("__"))
                        and not isinstance(value, types.ModuleType)):
                    changed.append(f"{module_name}.{name}")
                    del namespace[name]
            for name, (value, *rest) in state.items():
                if name.startswith("__") and name.endswith("__"):      # __warningregistry__, ...
                    continue
                now = namespace.get(name, _UNSEEN)
                if now is not value:
                    changed.append(f"{module_name}.{name}")
                    namespace[name] = value
                elif isinstance(value, types.FunctionType):
                    if (value.__code__, value.__defaults__, value.__kwdefaults__) != tuple(rest):
                        changed.append(f"{module_name}.{name}")
                        value.__code__, value.__defaults__, value.__kwdefaults__ = rest
                elif isinstance(value, torch.Tensor):
                    if value._version != rest[0]:
                        changed.append(f"{module_name}.{name}")
                        if rest[1] is not None:
                            with torch.no_grad():
                                value.copy_(rest[1])
                elif rest and not self._same_items(rest[0], value):
                    changed.append(f"{module_name}.{name}")
                    if isinstance(value, list):
                        value[:] = rest[0]
                    else:
                        value.clear()
                        value.update(rest[0])
        for owner_name, owner, state in self.names:
            get = vars(owner).get
            for name, value in [(n, v) for n, v in state.items() if get(n, _UNSEEN) is not v]:
                if name == "_" or name.startswith("__") or isinstance(value, types.ModuleType):
                    continue
                if not _installed(get(name, _UNSEEN)):
                    changed.append(f"{owner_name}.{name}")
                    try:
                        setattr(owner, name, value)
                    except (AttributeError, TypeError):
                        pass
        return changed


EXERCISES = {}
"""Every function exercise whose check compares with references, by its checker's name: what
tests/test_routes.py needs to build every route to a reference and check that each is refused."""


def exercise(check, reference, borrow, inputs=tuple):
    """Register check (a checker) in EXERCISES. reference: a function the check compares with;
    borrow(f): the learner's function(s) (a tuple for several) that return what f returns, called
    as the check calls them, f standing for the reference; inputs(): the check's other arguments,
    after the learner's functions."""
    EXERCISES[check.__name__] = types.SimpleNamespace(check=check, reference=reference, borrow=borrow,
                                                      inputs=inputs)


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

    watch = _Watch(reference)
    label = _borrowed(fn, reference, watch)
    if label is not None:
        raise refused(label)
    guard = _Guard([sys.modules[__name__], *_package_modules(module)]) if WATCH else None
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                (torch.no_grad() if no_grad else contextlib.nullcontext()), watch.running():
            out = fn(*given, **given_kw)
    except _ReferenceCalled as e:
        raise refused(e.args[0]) from None
    except NotImplementedError:
        raise Hint(f"Not answered yet: write the body of {short} and run its cell.") from None
    except Exception as e:  # the learner's code may fail in any way: say how, in one line
        message = " ".join(str(e).split())[:200]
        raise Hint(f"{name} raised {type(e).__name__}: {message}") from None
    finally:
        _tampered(guard, short)
    if watch.hit is not None:              # run, then caught by the learner's code
        raise refused(watch.hit)
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


def plain(question):
    """A question's dict (right, why, wrong) written in rot13, decoded for choice(**plain(...)).

    A module may write its questions' answers, explanations and hints in rot13
    (codecs.encode(text, "rot13") makes them): `check_x??` leads to the module, which then does not
    show the answers at a glance."""
    def text(s):
        return codecs.decode(s, "rot13")
    return {"right": text(question["right"]), "why": text(question["why"]),
            "wrong": {text(k): text(v) for k, v in question["wrong"].items()}}


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
