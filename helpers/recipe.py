"""The paper's training recipe (§5.3, §5.4): Adam (β₁ 0.9, β₂ 0.98, Adam's ε 1e-9), the warmup
schedule, dropout P_drop 0.1 (inside the model) and label smoothing ε_ls 0.1 — and a small training
loop.
"""

import torch
from torch import nn
from tqdm import tqdm


def lrate(step, d_model=512, warmup=4000):
    """d_model^-0.5 · min(step^-0.5, step · warmup^-1.5): a linear rise for `warmup` steps,
    then a decay as 1/√step. Steps count from 1; the peak is at step = warmup."""
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def adam_with_warmup(model, d_model, warmup):
    """Adam with the paper's settings (Adam's eps = 1e-9), and LambdaLR multiplying the base rate
    1.0 by lrate().

    LambdaLR calls the lambda with the number of sched.step() calls so far (0 for the first
    step), hence ``s + 1``: the first update uses lrate(1), the n-th lrate(n).
    ``fused=True`` updates all the parameters in one pass instead of one small step per tensor
    (the same Adam, several times faster for a model of many small tensors).
    """
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lrate(s + 1, d_model, warmup))
    return opt, sched


def smoothed_loss(pad, eps_ls=0.1):
    """Cross-entropy against the smoothed target (1 - eps_ls on the right token, eps_ls spread
    over all n_vocab tokens, PyTorch's convention), ignoring padding positions."""
    return nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=eps_ls)


def train_step(model, opt, sched, loss_fn, src, tgt_in, tgt_out):
    """One update with teacher forcing: the decoder reads tgt_in, must write tgt_out."""
    model.train()
    logits = model(src, tgt_in)                                   # (batch, n_tgt, vocab)
    loss = loss_fn(logits.flatten(0, 1), tgt_out.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()                                                  # the rate of the next step
    return loss.item()


@torch.no_grad()
def cross_entropy(model, src, tgt_in, tgt_out, pad):
    """Plain cross-entropy (no smoothing) over the non-padding positions, in eval mode."""
    was_training = model.training
    model.eval()
    logits = model(src, tgt_in)
    model.train(was_training)
    return nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=pad).item()


def train(model, opt, sched, loss_fn, steps, next_batch, evaluate=None, every=100, keep=0,
          progress=True):
    """Run `steps` training steps on batches from next_batch(), with a progress bar.

    At step 1 and every `every` steps, call evaluate(model, step) -> dict of numbers. With
    keep > 0, also keep a copy of the weights every `every` steps during the last keep · every
    steps (the checkpoints to average, see average_weights). Returns the history: "train_loss"
    and "lr" (the rate each step used), one entry per step; "evals", one dict per evaluation
    with its "step"; "checkpoints", a list of state dicts.
    """
    history = {"train_loss": [], "lr": [], "evals": [], "checkpoints": []}
    bar = tqdm(range(1, steps + 1), desc="training", disable=not progress, mininterval=1.0)
    for step in bar:
        history["lr"].append(opt.param_groups[0]["lr"])           # the rate this step uses
        loss = train_step(model, opt, sched, loss_fn, *next_batch())
        history["train_loss"].append(loss)
        bar.set_postfix(loss=f"{loss:.3f}", refresh=False)    # the current loss, shown at the next refresh
        if evaluate is not None and (step == 1 or step % every == 0):
            history["evals"].append({"step": step, **evaluate(model, step)})
        if keep and step % every == 0 and step > steps - keep * every:
            history["checkpoints"].append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return history


def average_weights(states):
    """The element-wise mean of several state dicts: the paper's base model is "a single model
    obtained by averaging the last 5 checkpoints" (§6.1)."""
    return {key: sum(state[key] for state in states) / len(states) for key in states[0]}
