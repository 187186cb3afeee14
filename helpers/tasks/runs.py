"""Long offline trainings that survive being stopped: a run saves its whole state every few
hundred steps and, started again, goes on from there with the same numbers.

``train_resumable(folder, ...)`` trains in stretches of ``every`` steps, keeps the last ``keep``
checkpoints (for averaging, paper §6.1), calls ``on_milestone(step, last, averaged, seconds)`` at
each milestone and stores what it returns, and saves into ``folder/state.pt`` (atomically) the
model, the optimizer, the schedule, the random generators, the batch order and its rows.
Resumed from that file a run writes exactly what it would have written without the stop: the
measurements draw no random number (eval mode, deterministic decoding).

``claim(folder)`` takes a run for this process (a lock file made with O_EXCL), so two commands
working down the same list of runs never train the same one; ``work_down(names, run, states, out)``
is such a command's loop.
"""

import json
import os
import pathlib
import time

import torch

from helpers.recipe import average_weights


def _clone(state):
    return {k: v.detach().clone() for k, v in state.items()}


def claim(folder):
    """True if this process now owns the run in folder (creates folder/lock), False if another
    process has it or it is finished (folder/done)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "done").exists():
        return False
    try:
        fd = os.open(folder / "lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def release(folder, finished):
    """Remove the lock; mark the run done if it finished."""
    folder = pathlib.Path(folder)
    if finished:
        (folder / "done").write_text("done\n")
    (folder / "lock").unlink(missing_ok=True)


def work_down(names, run, states, out):
    """Train the runs named ("variant_sN") in order with run(variant, seed), skipping those finished
    (out/<name>.json exists) or owned by another process (claim on states/<name>)."""
    for name in names:
        variant, seed = name.rsplit("_s", 1)
        folder = pathlib.Path(states) / name
        if (pathlib.Path(out) / f"{name}.json").exists() or not claim(folder):
            continue
        finished = False
        try:
            start = time.time()
            run(variant, int(seed))
            finished = True
            print(f"{name}: done in {(time.time() - start) / 60:.1f} min", flush=True)
        finally:
            release(folder, finished)


def summary(row):
    """A milestone row's numbers in one line: step, minutes, and for the last and the averaged
    weights the perplexity and the greedy and beam BLEU."""
    return json.dumps({k: (v if k in ("step", "minutes") else
                           {"ppl": v["perplexity"], "greedy": v["greedy"]["bleu_all"],
                            "beam": v["beam"]["bleu_all"]}) for k, v in row.items()})


def train_resumable(folder, model, opt, sched, step, next_batch, generator, steps, every=100,
                    keep=5, milestones=(), on_milestone=None, save_every=500, progress=True):
    """Train `steps` steps, resuming from folder/state.pt if it exists.

    step(batch) -> loss (a float) does one update; next_batch() gives the batches and has a list
    ``order`` (the batches left in this epoch) that is saved with the run; generator is the one
    next_batch draws its orders from. Returns (rows, averaged state, train losses per stretch of
    `every` steps, seconds of training)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "state.pt"
    done, seconds, kept, rows, losses = 0, 0.0, [], [], []
    if path.exists():
        saved = torch.load(path, weights_only=False)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        sched.load_state_dict(saved["sched"])
        generator.set_state(saved["generator"])
        torch.set_rng_state(saved["rng"])
        next_batch.order[:] = saved["order"]
        done, seconds, kept, rows, losses = (saved[k] for k in ("done", "seconds", "kept", "rows", "losses"))
        if progress:
            print(f"resumed at step {done} ({seconds / 60:.1f} min of training so far)", flush=True)
    while done < steps:
        start = time.time()
        model.train()
        total = 0.0
        for _ in range(every):
            total += step(next_batch())
        seconds += time.time() - start
        done += every
        losses.append(total / every)
        kept = (kept + [_clone(model.state_dict())])[-keep:]
        if on_milestone is not None and done in milestones:
            rows.append(on_milestone(done, model.state_dict(), average_weights(kept), seconds))
        if progress and done % 500 == 0:
            print(f"step {done}: {seconds:.0f} s of training, loss {losses[-1]:.3f}", flush=True)
        if done % save_every == 0 or done == steps:
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                     "generator": generator.get_state(), "rng": torch.get_rng_state(),
                     "order": list(next_batch.order), "done": done, "seconds": seconds, "kept": kept,
                     "rows": rows, "losses": losses}
            torch.save(state, folder / "state.tmp")
            os.replace(folder / "state.tmp", path)
    return rows, average_weights(kept), losses, seconds
