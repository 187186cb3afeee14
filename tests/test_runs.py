"""helpers.tasks.runs: a run stopped and started again ends with the same weights and rows as one
that never stopped; two processes never own the same run."""

import torch

from helpers import seed_all
from helpers.model import Transformer
from helpers.recipe import adam_with_warmup, smoothed_loss, train_step
from helpers.tasks import runs


def _setup():
    seed_all(3)
    gen = torch.Generator().manual_seed(3)
    model = Transformer(vocab=11, d=16, h=2, d_ff=32, n_layers=1, p=0.1)
    opt, sched = adam_with_warmup(model, d_model=16, warmup=10)
    loss_fn = smoothed_loss(0, 0.1)
    data = [(torch.randint(1, 11, (4, 5), generator=torch.Generator().manual_seed(i)),) * 3
            for i in range(6)]
    order = []

    def next_batch():
        if not order:
            order.extend(torch.randperm(len(data), generator=gen).tolist())
        return data[order.pop()]
    next_batch.order = order

    def step(batch):
        return train_step(model, opt, sched, loss_fn, *batch)

    def on_milestone(done, last, averaged, seconds):
        return {"step": done, "norm": float(sum(v.float().norm() for v in averaged.values()))}
    return model, opt, sched, step, next_batch, gen, on_milestone


def _run(folder, steps):
    model, opt, sched, step, next_batch, gen, on_milestone = _setup()
    rows, averaged, losses, _ = runs.train_resumable(
        folder, model, opt, sched, step, next_batch, gen, steps, every=5, keep=2,
        milestones=(10, 20, 30), on_milestone=on_milestone, save_every=10, progress=False)
    return rows, averaged, losses


def test_a_resumed_run_equals_an_unbroken_one(tmp_path):
    rows, averaged, losses = _run(tmp_path / "straight", 30)
    _run(tmp_path / "broken", 20)                      # stops after step 20 (saved at 20)
    again = _run(tmp_path / "broken", 30)              # a new process: model and state made anew
    assert again[0] == rows and again[2] == losses
    assert all(torch.equal(averaged[k], again[1][k]) for k in averaged)


def test_two_processes_never_own_one_run(tmp_path):
    assert runs.claim(tmp_path / "a")
    assert not runs.claim(tmp_path / "a")
    runs.release(tmp_path / "a", finished=True)
    assert not runs.claim(tmp_path / "a")              # finished: nobody takes it again
    assert runs.claim(tmp_path / "b")
    runs.release(tmp_path / "b", finished=False)
    assert runs.claim(tmp_path / "b")                  # stopped unfinished: it can be taken up


def test_a_queue_skips_what_is_finished_or_taken(tmp_path):
    states, out, ran = tmp_path / "states", tmp_path / "out", []
    out.mkdir()
    (out / "a_s0.json").write_text("{}")               # finished earlier
    assert runs.claim(states / "a_s2")                 # another process has it
    runs.work_down(["a_s0", "a_s1", "a_s2", "b_x_s3"], lambda v, s: ran.append((v, s)), states, out)
    assert ran == [("a", 1), ("b_x", 3)]
    assert (states / "a_s1" / "done").exists() and not (states / "a_s1" / "lock").exists()


def test_a_milestone_row_in_one_line():
    part = {"perplexity": 6.5, "greedy": {"bleu_all": 30.0}, "beam": {"bleu_all": 33.5}}
    line = runs.summary({"step": 500, "minutes": 1.5, "last": part, "averaged": part})
    assert line == ('{"step": 500, "minutes": 1.5, "last": {"ppl": 6.5, "greedy": 30.0, "beam": 33.5}, '
                    '"averaged": {"ppl": 6.5, "greedy": 30.0, "beam": 33.5}}')
