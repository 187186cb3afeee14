"""helpers.recipe: the warmup schedule, Adam and LambdaLR, label smoothing, the training loop."""

import math

import pytest
import torch
from torch import nn

from helpers.model import Transformer
from helpers.recipe import (
    adam_with_warmup,
    average_weights,
    cross_entropy,
    lrate,
    smoothed_loss,
    train,
    train_step,
)
from helpers.tasks.reversal import PAD, VOCAB, batch


def test_warmup_schedule_of_the_paper():
    table = {1: "1.747e-07", 100: "1.747e-05", 1000: "1.747e-04", 4000: "6.988e-04",
             10000: "4.419e-04", 100000: "1.398e-04"}
    assert {step: f"{lrate(step):.3e}" for step in table} == table
    assert max(lrate(s) for s in range(1, 40_001)) == lrate(4000)


def test_tiny_schedule():
    assert lrate(400, 64, 400) == pytest.approx(0.00625)
    assert lrate(100, 64, 400) == pytest.approx(0.0015625)
    assert lrate(1600, 64, 400) == pytest.approx(0.003125)          # half the peak: 1600 = 4 · 400


def test_adam_settings_and_the_rate_each_step_uses():
    w = nn.Parameter(torch.ones(3))
    model = nn.Module()
    model.w = w
    opt, sched = adam_with_warmup(model, 64, 400)
    group = opt.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    used = []
    for _ in range(3):
        used.append(group["lr"])
        w.sum().backward()
        opt.step()
        opt.zero_grad()
        sched.step()
    assert used == pytest.approx([lrate(s, 64, 400) for s in (1, 2, 3)])
    assert group["lr"] == pytest.approx(lrate(4, 64, 400))          # a log now shows the next step's


def test_label_smoothing_floor_and_sure_model():
    n_vocab, eps_ls, right = 13, 0.1, 5
    target = torch.full((n_vocab,), eps_ls / n_vocab)
    target[right] += 1 - eps_ls
    loss_fn = smoothed_loss(PAD, eps_ls)
    best = loss_fn(target.log()[None], torch.tensor([right])).item()
    entropy = -(target * target.log()).sum().item()
    assert best == pytest.approx(entropy, abs=1e-6) and round(best, 3) == 0.537
    sure = torch.zeros(1, n_vocab)
    sure[0, right] = 20.0
    assert round(loss_fn(sure, torch.tensor([right])).item(), 3) == 1.846
    assert loss_fn(torch.zeros(2, n_vocab), torch.tensor([PAD, PAD])).isnan()   # all ignored


def test_cross_entropy_ignores_padding_and_keeps_the_mode():
    torch.manual_seed(0)
    model = Transformer(VOCAB, 64, 4, 256, 2).train()
    src, tgt_in, tgt_out = batch(8, torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.eval()
        logits = model(src, tgt_in)
    keep = tgt_out != PAD
    by_hand = nn.functional.cross_entropy(logits[keep], tgt_out[keep]).item()
    model.train()
    assert cross_entropy(model, src, tgt_in, tgt_out, PAD) == pytest.approx(by_hand, rel=1e-5)
    assert model.training


@pytest.mark.cpu_sensitive
def test_training_lowers_the_loss_and_logs_a_history():
    torch.manual_seed(0)
    model = Transformer(VOCAB, 64, 4, 256, 2)
    opt, sched = adam_with_warmup(model, 64, 400)
    gen = torch.Generator().manual_seed(0)
    first = train_step(model, opt, sched, smoothed_loss(PAD), *batch(64, gen))
    assert math.log(VOCAB) - 1 < first < 6
    history = train(model, opt, sched, smoothed_loss(PAD), 60, lambda: batch(64, gen),
                    evaluate=lambda m, step: {"twice": 2 * step}, every=20, progress=False)
    assert len(history["train_loss"]) == 60 and history["checkpoints"] == []
    assert history["evals"] == [{"step": s, "twice": 2 * s} for s in (1, 20, 40, 60)]
    assert history["lr"] == pytest.approx([lrate(s, 64, 400) for s in range(2, 62)])
    assert sum(history["train_loss"][-10:]) / 10 < first - 0.5


def test_keep_and_average_the_last_checkpoints():
    torch.manual_seed(0)
    model = Transformer(VOCAB, 64, 4, 256, 2)
    opt, sched = adam_with_warmup(model, 64, 400)
    gen = torch.Generator().manual_seed(0)
    history = train(model, opt, sched, smoothed_loss(PAD), 12, lambda: batch(16, gen), every=2, keep=3,
                    progress=False)
    states = history["checkpoints"]
    assert len(states) == 3                                      # steps 8, 10 and 12
    now = model.state_dict()
    assert all(torch.equal(states[-1][key], now[key]) for key in now)
    mean = average_weights(states)
    w = "encoder_layers.0.linear1.weight"
    assert torch.allclose(mean[w], (states[0][w] + states[1][w] + states[2][w]) / 3)
    assert not torch.equal(mean[w], states[-1][w])
    model.load_state_dict(mean)                                  # loads like any state dict


def test_the_progress_bar_shows_the_current_loss(capsys):
    torch.manual_seed(0)
    model = Transformer(VOCAB, 16, 2, 32, 1)
    opt, sched = adam_with_warmup(model, 16, 400)
    gen = torch.Generator().manual_seed(0)
    history = train(model, opt, sched, smoothed_loss(PAD), 7, lambda: batch(8, gen),
                    evaluate=lambda m, step: {}, every=5)
    last_state = capsys.readouterr().err.strip().split("\r")[-1]
    assert "7/7" in last_state and f"loss={history['train_loss'][-1]:.3f}" in last_state, last_state
    assert history["train_loss"][-1] != history["train_loss"][4]          # not the one of step 5
