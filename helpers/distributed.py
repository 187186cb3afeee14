"""Notebook 10: one model trained on several workers, as the paper trained on 8 GPUs (§5.1, §5.2).

- ``token_batches(pairs, budget, lengths)``: batches filled up to a token budget from length-sorted pairs
  (the paper's "approximately 25000 source tokens and 25000 target tokens"); ``fixed_batches``
  for comparison; ``batch_stats``: padding share, batches, tokens per batch.
- ``token_loss`` (the mean over target tokens) and ``accumulated_step``: several micro-batches,
  one optimizer step, each micro-batch weighted by its number of target tokens.
- ``launch(target, world_size, *args)``: start ``world_size`` worker processes, each running
  ``target(rank, world_size, *args)`` in a gloo process group (``torch.distributed``), and return
  their results in rank order. The group meets through a file in a fresh temporary folder
  (``init_method="file://..."``), so two runs never collide on a port. The workers are forked
  where the system can fork (Linux, Colab, Kaggle: a function defined in a notebook works as
  it is), spawned elsewhere; they are always ended, also when one raises or hangs.
- ``shard`` and ``average_gradients``: one worker's rows of a batch, and the all-reduce by hand;
  ``allreduce_seconds``: the time of one all-reduce of growing tensors.

What a worker runs lives in importable modules (a spawned process imports them): here, and
notebook 10's training runs in ``helpers.tasks.workers``.
"""

import contextlib
import datetime
import importlib
import io
import marshal
import multiprocessing
import os
import pathlib
import re
import sys
import tempfile
import time
import types

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from helpers.vocabulary import PAD

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = "course-worker"          # the name a worker process takes (/proc/PID/comm on Linux)
TIMEOUT = 60.0                    # seconds a launch may take before its workers are ended
GROUP_TIMEOUT = 30.0              # seconds a collective may wait for the other workers


# --- 1. batches by tokens ------------------------------------------------------------------

def token_batches(pairs, budget, lengths):
    """Pairs sorted by length, cut into batches of at most `budget` positions per side.

    lengths(pair) gives (source tokens, target tokens + 1): the columns the pair needs in src
    and tgt_out. Pairs of equal lengths keep their order (the sort is stable).

    A batch of b pairs whose longest source has n_src tokens and longest target n_tgt takes
    b · n_src positions in src and b · n_tgt in tgt_out, padding included; a pair joins the
    current batch while both stay within the budget. Returns lists of pairs, shortest first.
    """
    batches, current, n_src, n_tgt = [], [], 0, 0
    for pair in sorted(pairs, key=lengths):
        s, t = lengths(pair)
        if current and (len(current) + 1) * max(n_src, s) > budget or \
                current and (len(current) + 1) * max(n_tgt, t) > budget:
            batches.append(current)
            current, n_src, n_tgt = [], 0, 0
        current.append(pair)
        n_src, n_tgt = max(n_src, s), max(n_tgt, t)
    if current:
        batches.append(current)
    return batches


def fixed_batches(pairs, size, seed=0):
    """The pairs in a random order (Python's random, the same on every machine), `size` a batch."""
    import random
    order = list(pairs)
    random.Random(seed).shuffle(order)
    return [order[i: i + size] for i in range(0, len(order), size)]


def batch_stats(batches, lengths):
    """Batches, pairs per batch, real target tokens per batch (mean, min, max) and the share of
    padding among all src and tgt_out positions (lengths: as in token_batches)."""
    real = padded = 0
    targets = []
    for batch in batches:
        ls = [lengths(p) for p in batch]
        n_src, n_tgt = max(s for s, _ in ls), max(t for _, t in ls)
        real += sum(s + t for s, t in ls)
        padded += len(batch) * (n_src + n_tgt)
        targets.append(sum(t for _, t in ls))
    return {"batches": len(batches), "pairs per batch": sum(map(len, batches)) / len(batches),
            "target tokens per batch": sum(targets) / len(targets), "fewest": min(targets),
            "most": max(targets), "padding share": 1 - real / padded}


# --- 2. the loss over tokens, and gradient accumulation ---------------------------------------

def token_loss(model, src, tgt_in, tgt_out):
    """Cross-entropy averaged over the target tokens that are not padding (the course's loss)."""
    logits = model(src, tgt_in)
    return nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)


def n_tokens(tgt_out):
    """How many target tokens count in the loss: the positions that are not padding."""
    return int((tgt_out != PAD).sum())


def accumulated_step(model, optimizer, micro_batches):
    """One optimizer step on the union of micro_batches, each (src, tgt_in, tgt_out): each
    micro-batch's mean loss weighted by its share of the target tokens, so that the summed
    gradients are those of the mean over all the tokens, as one big batch gives. Returns that
    batch's loss, the sum of the weighted losses, as a number."""
    optimizer.zero_grad()
    total = sum(n_tokens(tgt_out) for _, _, tgt_out in micro_batches)
    whole = 0.0
    for src, tgt_in, tgt_out in micro_batches:
        loss = token_loss(model, src, tgt_in, tgt_out) * n_tokens(tgt_out) / total
        loss.backward()
        whole += loss.item()
    optimizer.step()
    return whole


def one_batch(micro_batches):
    """The micro-batches as one batch, padded to the longest source and target of all of them."""
    width_src = max(b[0].shape[1] for b in micro_batches)
    width_tgt = max(b[1].shape[1] for b in micro_batches)

    def pad(t, width):
        return nn.functional.pad(t, (0, width - t.shape[1]), value=PAD)
    return (torch.cat([pad(b[0], width_src) for b in micro_batches]),
            torch.cat([pad(b[1], width_tgt) for b in micro_batches]),
            torch.cat([pad(b[2], width_tgt) for b in micro_batches]))


# --- 3. data parallel ----------------------------------------------------------------------

def shard(batch, rank, world_size):
    """Worker `rank`'s rows of a batch: the rank-th of world_size equal slices."""
    per = batch[0].shape[0] // world_size
    return tuple(t[rank * per: (rank + 1) * per] for t in batch)


def average_gradients(model, world_size):
    """After loss.backward(): each parameter's gradient replaced by its mean over the workers."""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)            # the sum over the workers, on every worker
            p.grad /= world_size


def largest_difference(a, b):
    """The largest absolute difference between two state dicts of one model."""
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def identical(a, b):
    """True when two state dicts hold exactly the same numbers."""
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- 4. what it costs ------------------------------------------------------------------------

def allreduce_seconds(rank, world_size, sizes, repeats=10):
    """The shortest of `repeats` times of one all-reduce of a float32 tensor of each size (numbers),
    in seconds: the shortest is the least disturbed by other programs."""
    times = []
    for n in sizes:
        x = torch.ones(n)
        dist.all_reduce(x)                     # once to warm up the connection
        taken = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(x)
            taken.append(time.perf_counter() - start)
        times.append(min(taken))
    return times


# --- starting the workers --------------------------------------------------------------------

class WorkerError(RuntimeError):
    """A worker raised, or the workers did not finish in time: the message says which, in one line."""


def start_method():
    """'fork' where the system has it (Linux, macOS), else 'spawn' (Windows)."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


class _Shipped:
    """A function defined in a notebook, sent to a spawned process by value: its code object
    (marshal) and the globals it names (modules by name, other values as they pickle)."""

    def __init__(self, fn):
        self.code, self.name = marshal.dumps(fn.__code__), fn.__name__
        self.defaults, self.env = fn.__defaults__, {}
        names, stack = set(), [fn.__code__]
        while stack:
            code = stack.pop()
            names.update(code.co_names)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        import pickle
        for name in names & set(fn.__globals__):
            value = fn.__globals__[name]
            if isinstance(value, types.ModuleType):
                self.env[name] = ("module", value.__name__)
                continue
            with contextlib.suppress(Exception):
                pickle.dumps(value)
                self.env[name] = ("value", value)

    def function(self):
        """The function itself, rebuilt in this process (its globals: the names it was shipped with)."""
        env = {"__builtins__": __builtins__, "__name__": "__main__"}
        for name, (kind, value) in self.env.items():
            env[name] = importlib.import_module(value) if kind == "module" else value
        return types.FunctionType(marshal.loads(self.code), env, self.name, self.defaults)

    def __call__(self, *args, **kwargs):
        return self.function()(*args, **kwargs)


def _portable(fn, method):
    """fn as it can travel to a worker: a function defined in a notebook (__main__) goes by value to a
    spawned process, which could not find it by name; anything else as it is."""
    if method == "fork" or not isinstance(fn, types.FunctionType) or \
            getattr(fn, "__module__", None) not in ("__main__", None):
        return fn
    return _Shipped(fn)


def _name_process():
    """Call this worker MARKER in /proc/PID/comm (Linux), so that a leftover one can be found."""
    with contextlib.suppress(Exception):
        import ctypes
        ctypes.CDLL(None).prctl(15, MARKER.encode(), 0, 0, 0)      # PR_SET_NAME


def _worker(rank, world_size, folder, target, args, root):
    """What each worker process runs: join the group, run target, save its result or error."""
    _name_process()
    if root not in sys.path:
        sys.path.insert(0, root)
    out = pathlib.Path(folder)
    log = open(out / f"output_{rank}.txt", "w")          # a worker's prints go to its own file,
    for fd in (1, 2):                                    # C++ prints too (some torch versions' Gloo
        os.dup2(log.fileno(), fd)                        # announces each connection on stdout)
    sys.stdout = sys.stderr = log
    torch.set_num_threads(1)
    args = tuple(a.function() if isinstance(a, _Shipped) else a for a in args)   # a notebook's function
    result = {}
    try:
        dist.init_process_group("gloo", init_method=(out / "group").as_uri(), rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=GROUP_TIMEOUT))
        try:
            result["value"] = target(rank, world_size, *args)
        finally:
            dist.destroy_process_group()
    except BaseException as e:                                        # reported by launch
        message = " ".join(str(e).split())[:300]
        result = {"error": f"{type(e).__name__}: {message}" if message else type(e).__name__}
    log.flush()
    torch.save(result, out / f"result_{rank}.pt")


PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "Broken pipe",
              "Socket Timeout", "Timed out", "timed out")


def launch(target, world_size=2, *args, timeout=TIMEOUT, method=None):
    """Run target(rank, world_size, *args) in world_size new processes; their results, in rank
    order. Raises WorkerError with a one-line message when a worker raises (the first error that
    is not only "the other worker left") or when they take more than `timeout` seconds; the
    processes are ended in every case (a KeyboardInterrupt too)."""
    method = method or start_method()
    target = _portable(target, method)
    args = tuple(_portable(a, method) for a in args)     # a function handed to the target travels too
    with tempfile.TemporaryDirectory(prefix="workers-") as folder:
        context = None
        env = os.environ.get("PYTHONPATH")
        try:
            if method != "fork":                        # a spawned worker must find helpers
                os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env) if p)
            with contextlib.redirect_stderr(io.StringIO()):
                context = mp.start_processes(_worker, args=(world_size, folder, target, args, str(ROOT)),
                                             nprocs=world_size, join=False, start_method=method)
            deadline = time.monotonic() + timeout
            while not context.join(timeout=max(0.0, min(1.0, deadline - time.monotonic()))):
                if time.monotonic() > deadline:
                    raise WorkerError(f"the {world_size} workers did not finish within {timeout:.0f} s "
                                      "(one may be waiting for a collective the others never call)")
        except mp.ProcessExitedException as e:
            raise WorkerError(f"worker {e.error_index} stopped with exit code {e.exit_code}") from None
        finally:
            if env is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = env
            for process in (context.processes if context else []):
                if process.is_alive():
                    process.terminate()
                    process.join(5)
                if process.is_alive():
                    process.kill()
                    process.join(5)
        results = []
        for rank in range(world_size):
            path = pathlib.Path(folder) / f"result_{rank}.pt"
            results.append(torch.load(path, weights_only=False) if path.exists()
                           else {"error": "it ended without a result"})
        errors = [(rank, r["error"]) for rank, r in enumerate(results) if "error" in r]
        if errors:
            first = [e for e in errors if not any(g in e[1] for g in PEER_GONE)] or errors
            rank, message = first[0]
            raise WorkerError(f"worker {rank} raised {message}")
        return [r["value"] for r in results]


# Printed on stdout by the Gloo of some torch versions (2.10) when a worker connects; not the script's:
# "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n".
# It reaches the pipe in these pieces, one write each ("#": a number), so two workers' notices can
# interleave piece by piece, and the script's lines can land between pieces.
_PIECES = ("[Gloo] Rank ", "#", " is connected to ", "#", " peer ranks. ",
           "Expected number of connected peer ranks is : ", "#", "\n")
_DIGITS = re.compile(r"[0-9]+")


def without_gloo_notice(text):
    """text without Gloo's connection notices, wherever their pieces landed: read left to right, each
    piece goes to the earliest notice that expects it; anything else is the script's, up to its line's
    end. Only notices read to their last number are removed; the lines between their pieces are kept,
    in their order."""
    notices, at = [], 0                    # each notice: [index of the piece it waits for, its spans]

    def waiting(piece):
        return [n for n in notices if n[0] < len(_PIECES) and _PIECES[n[0]] == piece]

    while at < len(text):
        if text.startswith(_PIECES[0], at):
            notices.append([1, [(at, at + len(_PIECES[0]))]])
            at += len(_PIECES[0])
            continue
        literal = next((p for p in _PIECES[2:7] if p != "#" and text.startswith(p, at) and waiting(p)), None)
        digits, for_a_number = _DIGITS.match(text, at), waiting("#")
        if literal:
            notice, end = waiting(literal)[0], at + len(literal)
        elif digits and for_a_number:
            # one number each when several notices wait for one ("01"), the whole run when one does ("10")
            notice = for_a_number[0]
            end = digits.end() if len(for_a_number) == 1 else at + 1
        elif text[at] == "\n" and waiting("\n"):
            notice, end = waiting("\n")[0], at + 1
        else:                              # the script's text, to its line's end or the next notice
            next_notice = text.find(_PIECES[0], at + 1)
            at = min(text.find("\n", at) + 1 or len(text), len(text) if next_notice == -1 else next_notice)
            continue
        notice[0] += 1
        notice[1].append((at, end))
        at = end
    removed = sorted(span for n in notices if n[0] >= len(_PIECES) - 1 for span in n[1])
    if not removed:
        return text
    out, last = [], 0
    for begin, end in removed:
        out.append(text[last:begin])
        last = end
    out.append(text[last:])
    return "".join(out)


def torchrun(script, nproc=2, timeout=120.0):
    """Run a script with torchrun on this machine (``python -m torch.distributed.run --standalone``,
    which picks a free port itself): the finished process (stdout, stderr, returncode). Its whole
    process group is ended after `timeout` seconds."""
    import signal
    import subprocess
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               str(script)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                                       if p), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise
    return subprocess.CompletedProcess(command, child.returncode, without_gloo_notice(out),
                                       without_gloo_notice(err))



def leftover_workers():
    """The ids of processes named MARKER still running that are this process's children, or
    orphans (their parent gone): another program's live workers are not ours (Linux; an empty
    list elsewhere)."""
    found = []
    for entry in pathlib.Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError):
            if (entry / "comm").read_text().strip() != MARKER:
                continue
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if state != "Z" and int(parent) in (os.getpid(), 0, 1):
                found.append(int(entry.name))
    return found
