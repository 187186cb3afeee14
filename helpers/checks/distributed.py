"""Checks for notebook 10 (training on many workers): gradient accumulation (Your turn 1), the
all-reduce by hand in two worker processes (Your turn 2), and the three questions of "Check your
understanding"."""

import torch
import torch.distributed as dist
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from helpers import distributed
from helpers.checks import (Hint, Passed, _borrowed, _ReferenceCalled, _Watch, blocked, call, checker, choice,
                            close, exercise, not_answered, number)
from helpers.distributed import n_tokens, one_batch, token_loss
from helpers.tasks import workers

# --- Your turn 1: gradient accumulation ------------------------------------------------------

LR_CHECK = 0.1          # the SGD rate of the check: a plain step shows every change of the gradient
WEIGHT_TOLERANCE = 1e-6  # float32 rounding moves these weights by about 1e-8; the nearest mistake by 1e-3


_CACHE = {}


def _micro_batches():
    """The three micro-batches of the check, of very different sizes: the first 6 training numbers
    (one digit), the 2 with the longest French, and the first 4 four-digit ones."""
    from helpers.tasks.numbers import load_pairs, make_batch, token_pairs
    pairs = load_pairs("train")
    longest = sorted(pairs, key=lambda p: (-workers.lengths(p)[1], p.number))
    chosen = (pairs[:6], longest[:2], [p for p in pairs if 1000 <= p.number < 10_000][:4])
    return [make_batch(token_pairs(group), workers.vocab()) for group in chosen]


def micro_batches():
    """Copies of the three micro-batches of the check: (src, tgt_in, tgt_out) each."""
    if "micro" not in _CACHE:
        _CACHE["micro"] = _micro_batches()
    return [tuple(t.clone() for t in batch) for batch in _CACHE["micro"]]


def _counts():
    """'a, b and c', the target tokens of the three micro-batches."""
    a, b, c = (n_tokens(batch[2]) for batch in micro_batches())
    return f"{a}, {b} and {c}"


def _setup(seed=1):
    """A model (seed 1), its SGD optimizer, and gradients left over from another batch in .grad
    (as a training loop leaves them after its previous step)."""
    torch.manual_seed(seed)
    model = workers.new_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR_CHECK)
    leftover = micro_batches()[1]
    token_loss(model, *leftover).backward()
    return model, optimizer


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _simulate(micro, scale="tokens", zero_inside=False, step_inside=False, zero_start=True,
              step_end=True):
    """The weights after one accumulation step written with these choices, and its loss value."""
    torch.set_num_threads(1)
    model, optimizer = _setup()
    if zero_start:
        optimizer.zero_grad()
    total = sum(n_tokens(b[2]) for b in micro)
    rows = sum(b[0].shape[0] for b in micro)
    positions = sum(b[2].numel() for b in micro)
    reported, seen = 0.0, 0
    for k, (src, tgt_in, tgt_out) in enumerate(micro):
        if zero_inside:
            optimizer.zero_grad()
        loss = token_loss(model, src, tgt_in, tgt_out)
        n = n_tokens(tgt_out)
        seen += n
        factor = {"tokens": n / total, "mean": 1 / len(micro), "none": 1.0, "rows": src.shape[0] / rows,
                  "positions": tgt_out.numel() / positions, "tokens twice": (n / total) ** 2,
                  "tokens and mean": n / total / len(micro), "sum": n, "running": n / seen,
                  "last unscaled": 1.0 if k == len(micro) - 1 else n / total}[scale]
        (loss * factor).backward()
        reported += loss.item() * factor
        if step_inside:
            optimizer.step()
    if step_end and not step_inside:
        optimizer.step()
    return _weights(model), reported


ACCUMULATION_MISTAKES = [
    ("You averaged the micro-batches' mean losses with equal weights (loss / n_micro): the loss is a "
     "mean over tokens, and these micro-batches hold {counts} target tokens, so each must count "
     "by its tokens: loss · n_tokens / total_tokens.", {"scale": "mean"}),
    ("You weighted each micro-batch by its number of sentences (rows): the loss is a mean over target "
     "tokens, so weight by tokens, n_tokens(tgt_out) / total_tokens.", {"scale": "rows"}),
    ("The losses are not scaled: backward() of each micro-batch's mean adds n_micro mean gradients, "
     "about n_micro times too large; multiply each loss by n_tokens / total_tokens first.",
     {"scale": "none"}),
    ("optimizer.zero_grad() is inside the loop: it erases the gradients of the earlier micro-batches, "
     "so only the last one counts. Zero once, before the loop.", {"zero_inside": True}),
    ("optimizer.zero_grad() is inside the loop and the losses are averaged with equal weights: zero "
     "once before the loop, and weight each loss by its tokens.", {"zero_inside": True, "scale": "mean"}),
    ("optimizer.zero_grad() is inside the loop and the losses are not scaled: zero once before the "
     "loop, and weight each loss by n_tokens / total_tokens.", {"zero_inside": True, "scale": "none"}),
    ("optimizer.step() is inside the loop: that takes n_micro small steps, each on part of the "
     "batch, not one step on all of it. Step once, after the loop.", {"step_inside": True}),
    ("optimizer.step() is inside the loop, with zero_grad() there too: n_micro separate small steps. "
     "Zero once before the loop, step once after it.", {"step_inside": True, "zero_inside": True}),
    ("optimizer.step() is inside the loop and the losses are averaged with equal weights: step once, "
     "after the loop, and weight each loss by its tokens.", {"step_inside": True, "scale": "mean"}),
    ("optimizer.step() is inside the loop and the losses are not scaled: step once, after the loop, "
     "and weight each loss by n_tokens / total_tokens.", {"step_inside": True, "scale": "none"}),
    ("The gradients left by the previous step are still in .grad: call optimizer.zero_grad() once, "
     "before the loop (a training loop always leaves them there).", {"zero_start": False}),
    ("The weights did not change: call optimizer.step() once, after the loop.", {"step_end": False}),
    ("You weighted each micro-batch by its positions, padding included (tgt_out.numel()): the loss is a "
     "mean over the real target tokens, so weight by n_tokens(tgt_out) / total_tokens.",
     {"scale": "positions"}),
    ("Each loss is scaled twice, by n_tokens / total_tokens and again (by the same factor, or by "
     "1 / n_micro): scale it once, loss · n_tokens / total_tokens.", {"scale": "tokens twice"}),
    ("Each loss is scaled twice, by n_tokens / total_tokens and again (by the same factor, or by "
     "1 / n_micro): scale it once, loss · n_tokens / total_tokens.", {"scale": "tokens and mean"}),
    ("Your losses are sums over the tokens (reduction=\"sum\"), never divided: the gradient is "
     "total_tokens times too large. Divide each summed loss by total_tokens (or use token_loss, a mean, "
     "times n_tokens / total_tokens).", {"scale": "sum"}),
    ("You divided each micro-batch's tokens by a running total, the tokens seen so far: every share "
     "must use the same total, all the micro-batches' target tokens, counted before the loop.",
     {"scale": "running"}),
    ("The last micro-batch's loss is not scaled: every micro-batch's loss, the last one too, is "
     "multiplied by its n_tokens / total_tokens before backward().", {"scale": "last unscaled"}),
]

ACCUMULATE = "my_accumulated_step(model, optimizer, micro_batches)"
ACCUMULATE_REFERENCE = [(distributed, "accumulated_step", "helpers.distributed.accumulated_step")]


def _gap(a, b):
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


def _uniform_factor(got, right, start):
    """c when every weight's change in got is c times its change in right (within float32 rounding),
    else None: what clipping the gradient's norm before a plain SGD step does."""
    moved = {k: got[k].double() - start[k].double() for k in got}
    wanted = {k: right[k].double() - start[k].double() for k in right}
    norm = sum(float((w * w).sum()) for w in wanted.values())
    if norm == 0:
        return None
    c = sum(float((m * w).sum()) for m, w in zip(moved.values(), wanted.values(), strict=True)) / norm
    if any(float((moved[k] - c * wanted[k]).abs().max()) > WEIGHT_TOLERANCE for k in wanted):
        return None
    return c


class _Counting:
    """Counts, while the learner's step runs, the optimizer steps and the backward passes that reach
    the model's first parameter."""

    def __init__(self, model):
        self.model = model
        self.steps = self.backwards = 0

    def _stepped(self, *args):
        self.steps += 1

    def _backward(self, *args):
        self.backwards += 1

    def __enter__(self):
        first = next(self.model.parameters())
        self.hooks = [register_optimizer_step_post_hook(self._stepped),
                      first.register_post_accumulate_grad_hook(self._backward)]
        return self

    def __exit__(self, *exc):
        for hook in self.hooks:
            hook.remove()
        return False


@checker
def check_accumulation(fn):
    """The learner's my_accumulated_step against one step on the three micro-batches as one batch."""
    micro = micro_batches()
    torch.set_num_threads(1)
    model, optimizer = _setup()
    start = _weights(model)
    with _Counting(model) as counted:
        returned = call(fn, ACCUMULATE, model, optimizer, [tuple(t.clone() for t in b) for b in micro],
                        no_grad=False, reference=ACCUMULATE_REFERENCE,
                        instead="zero the gradients, then for each micro-batch scale its loss and call "
                                "backward(), then step.")
    got = _weights(model)
    big, optimizer_big = _setup()
    optimizer_big.zero_grad()
    loss = token_loss(big, *one_batch(micro))
    loss.backward()
    optimizer_big.step()
    right = _weights(big)
    if _gap(got, right) > WEIGHT_TOLERANCE:
        if _gap(got, start) == 0 and counted.steps:
            return ("optimizer.step() ran but no weight moved: every gradient was 0. The usual cause is an "
                    "integer division, n_tokens // total_tokens, which is 0 for every micro-batch: scale "
                    "with /, loss · n_tokens / total_tokens.")
        if counted.backwards == 1 and len(micro) > 1 and \
                _gap(got, _simulate(micro, zero_inside=True)[0]) <= WEIGHT_TOLERANCE:
            return ("loss.backward() ran once, after the loop: only the last micro-batch's loss reaches the "
                    "gradients. Call backward() inside the loop, once per micro-batch (or add the scaled "
                    "losses up and call backward() once on their sum).")
        for hint, kwargs in ACCUMULATION_MISTAKES:
            if _gap(got, _simulate(micro, **kwargs)[0]) <= WEIGHT_TOLERANCE:
                return hint.replace("{counts}", _counts())
        if counted.steps > 1:
            return (f"optimizer.step() ran {counted.steps} times in one call: each step moves the weights "
                    "by the whole gradient again. Call it once, after the loop.")
        factor = _uniform_factor(got, right, start)
        if factor is not None and 0 < factor < 1:
            return ("Your step points the right way but is shorter: every weight moved by the same fraction "
                    "of the right change, as clipping the gradient's norm (clip_grad_norm_) before the step "
                    "does. One step on the big batch is not clipped here: leave clipping out.")
        return ("The step differs from one step on the three micro-batches as one batch: zero the "
                "gradients once, backward() each micro-batch's token_loss times n_tokens(tgt_out) / "
                "total_tokens, then one optimizer.step().")
    if isinstance(returned, torch.Tensor) and returned.requires_grad:
        returned = returned.detach()
    value = number(returned, "the value my_accumulated_step returns")
    if not close(value, loss.item(), 1e-4):
        for kwargs in ({"scale": "mean"}, {"scale": "none"}, {"scale": "rows"}):
            if close(value, _simulate(micro, **kwargs)[1], 1e-4):
                return ("The step is right, but the loss returned is not the big batch's: return the sum "
                        "of the scaled losses (each loss · n_tokens / total_tokens, as a number).")
        return (f"The step is right, but it returned {value:.4f}; return the loss of the whole batch, "
                f"the sum of the scaled micro-batch losses ({loss.item():.4f} here).")
    return Passed("Your step moves every weight as one step on the three micro-batches as one batch "
                  f"does (within {WEIGHT_TOLERANCE:g}; float32 rounding is about 1e-8 here), and returns "
                  "its loss.")


# --- Your turn 2: the all-reduce by hand, in worker processes -----------------------------------

# (workers, steps, compare with DistributedDataParallel) of each run: more than one, none announced by
# the exercise, so that a fixed range(3), a division by 2 or a loop written for one size shows. With 2
# workers DDP's sum is bit for bit the learner's; with 3 its buckets add in another order.
RUNS = ((2, 4, True), (3, 2, False))
FINAL_TOLERANCE = 1e-5    # one process on the whole batch vs the workers: float32 rounding, about 1e-7

# The collectives a worker may use to average its gradients (all_reduce; reduce then broadcast;
# all_gather then a mean; ...): each call is recorded with what it reduced.
COLLECTIVES = ("all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
               "reduce_scatter_tensor")
DDP = "DistributedDataParallel (it averages the gradients itself)"
# What the check compares with, refused inside the worker process too.
WORKER_REFERENCES = [(distributed, "average_gradients", "helpers.distributed.average_gradients"),
                     (workers, "train_worker", "helpers.tasks.workers.train_worker"),
                     (workers, "one_process", "helpers.tasks.workers.one_process"),
                     (torch.nn.parallel.DistributedDataParallel, "__init__", DDP)]
WORKER_INSTEAD = ("after loss.backward(), dist.all_reduce every p.grad yourself and divide it by world_size, "
                  "then optimizer.step().")


def _checked_worker(rank, world_size, fn, steps, with_ddp=True):
    """Run the learner's worker function with its collectives, backward passes and optimizer steps
    recorded and the references blocked; then (with_ddp) DistributedDataParallel's run of the same steps."""
    events, first_grads, models, local = [], [], [], []
    real_new_model = workers.new_model
    namespace = getattr(fn, "__globals__", {})

    def recording_new_model():
        model = real_new_model()
        models.append((model, {k: v.clone() for k, v in model.state_dict().items()}))
        first = next(model.parameters())
        first.register_post_accumulate_grad_hook(backward_done)
        return model

    def backward_done(p):
        """After a backward(): the event, and the first one's gradient of this worker's own (before
        any all-reduce)."""
        events.append("backward")
        if not local and p.grad is not None:
            local.append(p.grad.detach().clone())

    def kind(tensor):
        for model, _ in models:
            for p in model.parameters():
                if p.grad is not None and tensor.data_ptr() == p.grad.data_ptr():
                    return "grad"
                if tensor.data_ptr() == p.data_ptr():
                    return "weight"
            if any(tensor.data_ptr() == b.data_ptr() for b in model.buffers()):
                return "buffer"
        return "other"

    def recording(name, real):
        def collective(*args, **kwargs):
            given = [a if isinstance(a, (list, tuple)) else [a] for a in (*args, *kwargs.values())]
            tensors = [t for group in given for t in group if isinstance(t, torch.Tensor)]
            if name == "all_reduce" and (not args or args[0] is None):
                raise ValueError("dist.all_reduce got None instead of a tensor")
            kinds = {kind(t) for t in tensors}
            events.append(f"{name} {next((k for k in ('grad', 'weight', 'buffer') if k in kinds), 'other')}")
            return real(*args, **kwargs)
        return collective

    def before_step(optimizer, args, kwargs):
        if not first_grads and models:
            first_grads.append({n: (None if p.grad is None else p.grad.clone())
                                for n, p in models[0][0].named_parameters()})

    def zeroing(real):
        def zero_grad(self, *args, **kwargs):
            events.append("zero_grad")
            return real(self, *args, **kwargs)
        return zero_grad

    swaps = [(dist, name, getattr(dist, name), recording(name, getattr(dist, name)))
             for name in COLLECTIVES if hasattr(dist, name)]
    swaps += [(owner, "zero_grad", owner.zero_grad, zeroing(owner.zero_grad))
              for owner in (torch.optim.Optimizer, torch.nn.Module)]
    swaps.append((workers, "new_model", real_new_model, recording_new_model))
    for name, value in list(namespace.items()):
        for _, _, real, fake in list(swaps):
            if value is real:
                swaps.append((namespace, name, real, fake))
    for owner, attr, _, fake in swaps:
        if isinstance(owner, dict):
            owner[attr] = fake
        else:
            setattr(owner, attr, fake)
    pre = register_optimizer_step_pre_hook(before_step)
    post = register_optimizer_step_post_hook(lambda o, a, k: events.append("step"))
    error = returned = reference = None
    try:
        with blocked(WORKER_REFERENCES, namespace):
            returned = fn(rank, world_size, steps)
    except _ReferenceCalled as e:
        reference = e.args[0]
    except Exception as e:
        message = " ".join(str(e).split())[:200]
        error = f"{type(e).__name__}: {message}"
    finally:
        pre.remove()
        post.remove()
        for owner, attr, real, _ in swaps:
            if isinstance(owner, dict):
                owner[attr] = real
            else:
                setattr(owner, attr, real)
    ddp = None
    if error is None and reference is None and with_ddp:
        dist.barrier()
        ddp = workers.train_worker(rank, world_size, steps, "ddp")["final"]
    model = returned if isinstance(returned, torch.nn.Module) else (models[-1][0] if models else None)
    return {"error": error, "reference": reference, "events": events, "returned": type(returned).__name__,
            "models": len(models), "initial": models[0][1] if models else None,
            "grads": first_grads[0] if first_grads else None, "local": local[0] if local else None,
            "final": None if model is None else {k: v.detach().clone()
                                                 for k, v in model.state_dict().items()},
            "ddp": ddp}


def _reference_grads(world):
    """The gradient of step 0 in one process on the whole batch (all shards), at the seeded start, and
    each worker's own gradient on its shard."""
    torch.set_num_threads(1)
    torch.manual_seed(workers.SEED)
    model = workers.new_model()
    token_loss(model, *workers.step_batch(0, world)).backward()
    local = []
    for rank in range(world):
        torch.manual_seed(workers.SEED)
        m = workers.new_model()
        token_loss(m, *distributed.shard(workers.step_batch(0, world), rank, world)).backward()
        local.append({n: p.grad.clone() for n, p in m.named_parameters()})
    return {n: p.grad.clone() for n, p in model.named_parameters()}, local


def _scaled_like(got, right, factor, tolerance=1e-4):
    """True when every gradient in got is factor · right (within tolerance relative to the largest)."""
    if got is None or any(got[n] is None for n in right):
        return False
    scale = max(float(v.abs().max()) for v in right.values())
    return all(float((got[n] - factor * right[n]).abs().max()) <= tolerance * scale for n in right)


WORKER = "my_worker(rank, world_size, steps)"


def _error_hint(message):
    if "got None instead of a tensor" in message:
        return ("dist.all_reduce got None: a parameter's .grad is None until loss.backward() has run "
                "(and again after zero_grad()). Reduce the gradients after backward().")
    if "AVG" in message or "ReduceOp" in message and "Gloo" in message:
        return ("This torch's gloo backend has no ReduceOp.AVG: all-reduce with the default (a sum), then "
                "divide each gradient by world_size.")
    if "in-place" in message or "leaf Variable" in message:
        return ("A weight that requires a gradient cannot be changed in place: reduce p.grad (the "
                "gradient), not p (the weight).")
    return f"{WORKER.split('(')[0]} raised, in a worker, {message}"


def _first_step(events):
    """The events of the first training step: up to the first optimizer step, and the collectives
    right after it (before the next backward)."""
    if "step" not in events:
        return events, []
    at = events.index("step")
    rest = events[at + 1:]
    return events[:at], rest[:rest.index("backward")] if "backward" in rest else rest


def _diagnose(results, world, steps):
    """None when the workers of one run are right, else the hint."""
    references = [r["reference"] for r in results if r["reference"]]
    if references:
        return (f"my_worker calls {references[0]}, the very reference this check compares your answer with, "
                f"so it checks nothing: {WORKER_INSTEAD}")
    errors = [r["error"] for r in results if r["error"]]
    if errors:
        first = [e for e in errors if not any(g in e for g in distributed.PEER_GONE)] or errors
        return _error_hint(first[0])
    r0 = results[0]
    if r0["models"] == 0:
        return ("my_worker built no model with new_model(): build the model there (after "
                "torch.manual_seed(SEED)), so that every worker has its own copy.")
    if r0["returned"] not in ("Transformer", "DistributedDataParallel"):
        return f"my_worker returned {r0['returned']}: end it with `return model`."
    if not all(distributed.identical(r0["initial"], r["initial"]) for r in results[1:]):
        return ("The workers started from different weights: each seeded its generator differently "
                "(with its rank?). Every worker must call torch.manual_seed(SEED), the same seed, before "
                "new_model(), or the averaged gradients are applied to different models.")
    torch.manual_seed(workers.SEED)
    if not distributed.identical(r0["initial"], workers.new_model().state_dict()):
        return ("The workers agree with each other but did not start from the weights of seed SEED: call "
                "torch.manual_seed(SEED) just before new_model().")
    events = r0["events"]
    if "all_reduce weight" in events or "all_reduce buffer" in events:
        return ("You all-reduced the weights (p, p.data, or model.state_dict()'s tensors, which are the "
                "weights and buffers), not the parameters' gradients: after backward() the workers have "
                "the same weights and different gradients, so it is each p.grad that must be averaged.")
    if not any(e.split()[0] in COLLECTIVES for e in events):
        return ("No dist.all_reduce was called: each worker stepped on its own shard's gradient. After "
                "loss.backward(), all-reduce every p.grad and divide by world_size.")
    if "backward" not in events or "step" not in events:
        return "my_worker must call loss.backward() and optimizer.step() at each step."
    before, after = _first_step(events)
    reduced = [i for i, e in enumerate(before) if e.split()[0] in COLLECTIVES]
    if "backward" in before and reduced and reduced[0] < before.index("backward"):
        return ("You all-reduced before loss.backward(): the gradients of this step do not exist yet "
                "(what you reduced was zero or the last step's). Reduce after backward(), before "
                "optimizer.step().")
    reduced_after_backward = "backward" in before and any(i > before.index("backward") for i in reduced)
    if "backward" in before and not reduced_after_backward and any(e.endswith("grad") for e in after):
        return ("You called optimizer.step() before the all-reduce: each worker stepped on its own "
                "shard's gradient, and the average came too late. Order each step: backward(), the "
                "all-reduce and division, then optimizer.step().")
    last_reduce = max((i for i, e in enumerate(before) if e.split()[0] in COLLECTIVES), default=-1)
    zeroed_after = "zero_grad" in before[last_reduce:]
    if "backward" in before and before.index("backward") < last_reduce and zeroed_after:
        return ("zero_grad() ran between the all-reduce and optimizer.step(): it erased the averaged "
                "gradients, so the step had none to apply. Zero the gradients at the start of each step, "
                "before loss.backward().")
    right, local = _reference_grads(world)
    grads = r0["grads"]
    if grads is None or any(grads[n] is None for n in right):
        return "Some parameters had no gradient at optimizer.step(): call loss.backward() before it."
    if not _scaled_like(grads, right, 1.0):
        for factor, hint in ((world, "The gradients are the sum over the workers, not the mean: divide "
                                     "each by world_size after the all-reduce."),
                             (world / 2, f"With {world} workers the gradients are {world}/2 times the mean: "
                                         "you divided by 2, not by world_size."),
                             (1 / world, "The gradients are divided by world_size twice (or by "
                                         "world_size²): all_reduce sums, then divide once."),
                             (1 / world ** 2, "The gradients are divided by world_size too often: "
                                              "all_reduce sums, then divide once.")):
            if factor != 1 and _scaled_like(grads, right, factor):
                return hint
        if all(_scaled_like(r["grads"], local[0], 1.0) for r in results):
            return ("Every worker computed its loss on worker 0's shard: shard_loss(model, step, rank, "
                    "world_size) with the worker's own rank, so that each worker reads its part of the "
                    "batch.")
        if all(_scaled_like(r["grads"], local[rank], 1.0) for rank, r in enumerate(results)):
            return ("Each worker kept its own shard's gradient: the all-reduce did not reach p.grad "
                    "(reduce p.grad itself, in place, after backward()).")
        return ("At the first optimizer.step() the gradients are not the mean of the workers' "
                "gradients: after backward(), dist.all_reduce(p.grad) then p.grad /= world_size.")
    first = next(iter(right))
    if all(r["local"] is not None and _scaled_like({first: r["local"]}, {first: right[first]}, 1.0)
           for r in results):
        return ("Every worker computed the gradient of the whole batch, so the all-reduce averaged "
                f"{world} copies of one gradient: the right step, with no work shared. Each worker "
                "computes shard_loss(model, step, rank, world_size), its own shard's loss.")
    if not all(distributed.identical(r0["final"], r["final"]) for r in results[1:]):
        return ("The first step's gradients are right, but the workers end with different weights: "
                "average the gradients at every step, and step every copy the same way.")
    one = workers.one_process(steps, world)["final"]
    gap = distributed.largest_difference(r0["final"], one)
    if gap > FINAL_TOLERANCE:
        return (f"Asked for steps = {steps}, the workers' weights differ from one process on the whole batch "
                f"after {steps} steps by {gap:.1e}: run exactly `steps` steps (range(steps)) of zero_grad, "
                "shard_loss, backward, the all-reduce and step.")
    return None


@checker
def check_worker(fn):
    """The learner's my_worker run in worker processes (two runs of different sizes and step counts),
    against one process on the whole batch and against DistributedDataParallel."""
    if not_answered(fn):
        raise Hint("Not answered yet: write the body of my_worker and run its cell.")
    if not callable(fn) or isinstance(fn, (bool, str, torch.Tensor, type)):
        raise Hint(f"Pass your function itself (my_worker, without parentheses), not a {type(fn).__name__}.")
    held = _borrowed(fn, WORKER_REFERENCES, _Watch(WORKER_REFERENCES))
    if held is not None:
        return (f"my_worker calls {held}, the very reference this check compares your answer with, so it "
                f"checks nothing: {WORKER_INSTEAD}")
    like_ddp = True
    for number_, (world, steps, with_ddp) in enumerate(RUNS):
        try:
            results = distributed.launch(_checked_worker, world, fn, steps, with_ddp, timeout=90)
        except distributed.WorkerError as e:
            return f"Could not run my_worker in {world} workers: {e}"
        hint = _diagnose(results, world, steps)
        if hint:
            if number_ == 0 or "the very reference" in hint:
                return hint
            first_world, first_steps, _ = RUNS[0]
            return (f"Right with {first_world} workers for {first_steps} steps, but not with {world} workers "
                    f"for {steps} steps: {hint[:1].lower()}{hint[1:]}")
        if with_ddp:
            like_ddp = like_ddp and all(distributed.identical(r["final"], r["ddp"]) for r in results)
    # the tolerance, not the measured gap: the gap's digits are float32 rounding, and differ by CPU
    ddp_world = next(w for w, _, with_ddp in RUNS if with_ddp)
    return Passed(_WORKER_WHY.format(
        worlds=" and ".join(str(w) for w, _, _ in RUNS), steps=" and ".join(str(n) for _, n, _ in RUNS),
        tolerance=FINAL_TOLERANCE, ddp_world=ddp_world,
        ddp="bit for bit equal to" if like_ddp else f"within {FINAL_TOLERANCE:g} of"))


_WORKER_WHY = ("In {worlds} worker processes, after {steps} steps, every copy is identical and within "
               "{tolerance:g} of one process on the whole batch (float32 rounding); with {ddp_world} workers "
               "{ddp} DistributedDataParallel's.")


# --- Check your understanding ----------------------------------------------------------------

# Question 1: the paper's step holds about 25,000 target tokens; 2 workers, each fits 3,125 a pass.
Q1_TOKENS, Q1_WORKERS, Q1_FITS = 25_000, 2, 3_125


_MICRO_WHY = ("W · n_micro · 3,125 = 25,000 tokens a step: 2 workers × 4 micro-batches × 3,125. "
              "With 8 workers, as the paper had GPUs, none would be needed: 8 × 3,125 = 25,000 "
              "(the paper mentions no accumulation).")


@checker
def check_micro_question(answer_1):
    """Question 1: the micro-batches each of 2 workers accumulates to reach the paper's step."""
    value = number(answer_1, "answer_1")
    right = Q1_TOKENS / (Q1_WORKERS * Q1_FITS)
    if close(value, right, 1e-9):
        return Passed(_MICRO_WHY)
    if close(value, Q1_TOKENS / Q1_FITS, 1e-9):
        return ("8 micro-batches on one worker would make 25,000 tokens; there are 2 workers, and each step "
                "adds up the tokens of all of them: n_micro = 25,000 / (W · 3,125).")
    if close(value, 1, 1e-9) or close(value, Q1_TOKENS / (8 * Q1_FITS), 1e-9):
        return ("That is the case of 8 workers of 3,125 tokens, as the paper had 8 GPUs: here there are "
                "only 2, so each must accumulate several micro-batches to reach 25,000 tokens.")
    if close(value, 2, 1e-9):
        return ("With 2 micro-batches, 2 workers process 2 · 2 · 3,125 = 12,500 tokens a step, half the "
                "paper's: n_micro = 25,000 / (W · 3,125).")
    return "Count the tokens of one step: W workers × n_micro micro-batches × 3,125 tokens = 25,000."


# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_SEEDS_QUESTION = (
    "stays",
    "Both copies apply the same averaged update −lr · ḡ at every step, so w₀ − w₁ never changes "
    "(to float rounding): the copies never meet, and neither is the model the "
    "averaged gradients belong to. DistributedDataParallel avoids it by copying rank 0's weights "
    "to every worker when it is built.",
    {"identical": "Averaging makes the gradients equal, not the weights: each copy subtracts the same "
                  "update from the weights it had, so the difference of the start is carried along "
                  "(section 3, the run with seed = rank).",
     "grows": "The two copies receive exactly the same update at every step, so nothing can make "
              "their difference grow: it stays the same (section 3, the run with seed = rank).",
     "shrinks": "Nothing pulls the copies together: averaging the gradients gives both the same "
                "update, so the difference of the start stays as it was (section 3, the run with "
                "seed = rank)."},
)


@checker
def check_seeds_question(answer_2):
    """Two copies with different initial weights, gradients averaged by hand, plain SGD: their
    difference stays what it was at the start ("stays")."""
    return choice(answer_2, "answer_2", *_SEEDS_QUESTION)


Q3_PARAMETERS, Q3_WORKERS = 63_082_496, 16
Q3_PAPER_PARAMETERS = 65_000_000          # Table 3's "65 M" for the base model
Q3_RIGHT = 2 * (Q3_WORKERS - 1) * 4 * Q3_PARAMETERS // Q3_WORKERS


_RING_WHY = ("2 · (16 − 1)/16 · 252,329,984 bytes: a little under twice the gradient, hardly more than the "
             "1.75 times of 8 workers; the ring's cost per worker barely grows with W.")


@checker
def check_ring_question(answer_3):
    """Question 3: the bytes one of 16 workers sends per step in a ring all-reduce of the base model's
    float32 gradients."""
    value = number(answer_3, "answer_3")
    full = 4 * Q3_PARAMETERS
    if close(value, Q3_RIGHT, 0.5):
        return Passed(_RING_WHY)
    mistakes = [
        (full, "That is the gradient itself (4 bytes × 63,082,496): in a ring all-reduce each worker "
               "sends 2 · (W − 1)/W of it, the reduce-scatter half then the all-gather half."),
        (full * (Q3_WORKERS - 1) / Q3_WORKERS, "That is one of the two halves, the reduce-scatter: the "
                                               "all-gather sends as much again, 2 · (W − 1)/W in all."),
        (2 * full, "Close: the factor is 2 · (W − 1)/W = 1.875 for 16 workers, not 2."),
        (2 * 7 * full // 8, "That is the 8 workers of section 4 (1.75 times the gradient): here there "
                            "are 16, 2 · 15/16 = 1.875 times."),
        (full * (Q3_WORKERS - 1), "That is what a worker would send if it sent its whole gradient to each "
                                  "of the 15 others; the ring sends 2 · (W − 1)/W of it."),
        (2 * (Q3_WORKERS - 1) * Q3_PARAMETERS / Q3_WORKERS, "That counts numbers, not bytes: each float32 "
                                                            "takes 4 bytes."),
    ]
    for wrong, hint in mistakes:
        if close(value, wrong, 0.5 if wrong > 1000 else 1e-3):
            return hint
    # the right count in another unit, to 2 significant digits or more (a unit, not a value, is named)
    for factor, unit in ((1e3, "kilobytes (kB)"), (2 ** 10, "kibibytes (KiB)"), (1e6, "megabytes (MB)"),
                         (2 ** 20, "mebibytes (MiB)"), (1e9, "gigabytes (GB)"), (2 ** 30, "gibibytes (GiB)")):
        if abs(value * factor - Q3_RIGHT) <= 0.01 * Q3_RIGHT:
            return f"That is in {unit}: the question asks for bytes, the exact number."
    paper = 2 * (Q3_WORKERS - 1) * 4 * Q3_PAPER_PARAMETERS / Q3_WORKERS
    for factor in (1, 1e3, 2 ** 10, 1e6, 2 ** 20, 1e9, 2 ** 30):
        if abs(value * factor - paper) <= 0.01 * paper:
            return ("You counted the paper's 65 M parameters (Table 3, rounded, and its vocabulary): the "
                    "base model as the course builds it, whose gradient is all-reduced here, has "
                    "63,082,496 (notebook 06); count in bytes, 4 per float32.")
    if abs(value - Q3_RIGHT) <= 0.01 * Q3_RIGHT:
        return "Close: give the exact number of bytes, 2 · (16 − 1)/16 · 4 · 63,082,496."
    return ("Each worker sends 2 · (W − 1)/W times the gradient's bytes (section 4): here W = 16 and the "
            "gradient is 4 bytes × 63,082,496 parameters.")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_accumulation, distributed.accumulated_step, lambda f: lambda *args: f(*args))
