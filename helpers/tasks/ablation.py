"""What each design choice is worth (the paper's Table 3), on the tiny model.

Each row of ``ROWS`` changes one thing of notebook 05's tiny model (d_model 64, h 4, d_ff 256,
2 + 2 layers, P_drop 0.1, ε_ls 0.1, sinusoidal positions): the number of heads at fixed d_model
(row A), a smaller d_k (row B), no dropout or no label smoothing (row D), learned positions (E),
and two more starts of the learned table (E′, E″) that tell its initial scale from its content.
``run(row, seed)`` trains it once on a task that does not saturate — notebook 05's reversal with
a fixed training set of ``SETTINGS["train_size"]`` sequences instead of fresh ones — and measures
it on notebook 05's 500 test sequences: the exact match (greedy decoding) and the perplexity,
exp of the mean per-token cross-entropy on the test targets (teacher forcing, no smoothing).

The maintainers' command ``python tests/ablations.py`` runs every row over several seeds and
writes ``RESULTS``; ``load_results``, ``ranges``, ``scales_at_end``, ``table`` and ``plot`` read it.
"""

import json
import math
import pathlib
import time

import torch

from helpers import seed_all
from helpers.decoding import exact_matches, greedy_decode
from helpers.model import Transformer
from helpers.positions import sinusoidal_positions
from helpers.recipe import adam_with_warmup, average_weights, cross_entropy, smoothed_loss, train
from helpers.tasks.reversal import PAD, TINY, VOCAB, batch

RESULTS = pathlib.Path(__file__).resolve().parent / "data" / "ablations.json"

BASE = {"h": 4, "d_k": None, "p_drop": 0.1, "eps_ls": 0.1, "positions": "sinusoidal"}
ROWS = {                                  # row name -> what it changes in BASE
    "base": {},
    "A: h = 1": {"h": 1},                 # d_k = d_v = 64 / 1
    "A: h = 16": {"h": 16},               # d_k = d_v = 64 / 16 = 4
    "B: d_k = 8": {"d_k": 8},             # h = 4, d_v = 16 still
    "B: d_k = 4": {"d_k": 4},
    "D: P_drop = 0": {"p_drop": 0.0},
    "D: eps_ls = 0": {"eps_ls": 0.0},
    "E: learned positions": {"positions": "learned"},                 # starts like E: std 1/√d_model
    "E′: learned, sinusoid scale": {"positions": "learned, sinusoid scale"},  # same draw, × √(d_model/2)
    "E″: learned, from sinusoids": {"positions": "learned, from sinusoids"},  # starts as the PE table
}
LEARNED = {        # a row's "positions" -> how the learned table starts (helpers.model draws it like E)
    "learned": "random, std 1/√d_model (like E): each row's length about 1",
    "learned, sinusoid scale": "the same random numbers × √(d_model/2): RMS 1/√2, as the sinusoids",
    "learned, from sinusoids": "the sinusoids of notebook 01, then trained",
}
SETTINGS = {
    "train_size": 200,      # fixed training sequences (3 to 8 letters), none of them in the test set
    "train_seed": 2017,     # the generator that draws them
    "steps": 1000,          # training steps of 64 sequences of one length, as in notebook 05
    "batch": 64,
    "warmup": 400,          # notebook 05's schedule: lrate with d_model 64, warmup 400
    "every": 100,           # keep the weights every 100 steps ...
    "keep": 5,              # ... over the last 500, and evaluate their average (notebook 05, §6)
    "test_size": 500,       # notebook 05's test set
    "test_seed": 1234,
}


def config(row):
    """The full configuration of a row: BASE with the row's changes."""
    return {**BASE, **ROWS[row]}


def test_set(settings=SETTINGS):
    """Notebook 05's test set: (src, tgt_in, tgt_out) of 500 sequences."""
    return batch(settings["test_size"], torch.Generator().manual_seed(settings["test_seed"]))


def training_set(settings=SETTINGS):
    """The fixed training set: train_size sequences, none equal to a test sequence, grouped by
    length -> {length: (src, tgt_in, tgt_out)} without padding."""
    test = {tuple(row) for row in test_set(settings)[0].tolist()}
    drawn = torch.Generator().manual_seed(settings["train_seed"])
    src, tgt_in, tgt_out = batch(2 * settings["train_size"], drawn)
    new = torch.tensor([tuple(row) not in test for row in src.tolist()])
    src, tgt_in, tgt_out = (t[new][: settings["train_size"]] for t in (src, tgt_in, tgt_out))
    lengths = (src != PAD).sum(1)
    return {int(n): (src[lengths == n, :n], tgt_in[lengths == n, : n + 1], tgt_out[lengths == n, : n + 1])
            for n in lengths.unique()}


def batches(groups, size, generator):
    """A next_batch() for helpers.recipe.train: a random length, then `size` sequences of that
    length drawn with replacement from the training set (one length per batch, no padding)."""
    lengths = sorted(groups)

    def next_batch():
        n = lengths[int(torch.randint(len(lengths), (1,), generator=generator))]
        src, tgt_in, tgt_out = groups[n]
        pick = torch.randint(len(src), (size,), generator=generator)
        return src[pick], tgt_in[pick], tgt_out[pick]
    return next_batch


def build(row):
    """The tiny Transformer of a row (untrained). Every learned row draws the same random numbers
    (helpers.model's table, std 1/√d_model); E′ only rescales them, E″ overwrites them."""
    c = config(row)
    learned = c["positions"] in LEARNED
    model = Transformer(VOCAB, TINY["d"], c["h"], TINY["d_ff"], TINY["n_layers"], c["p_drop"],
                        d_k=c["d_k"], positions="learned" if learned else c["positions"])
    with torch.no_grad():
        if c["positions"] == "learned, sinusoid scale":
            model.pe.mul_(math.sqrt(model.d / 2))
        elif c["positions"] == "learned, from sinusoids":
            model.pe.copy_(sinusoidal_positions(*model.pe.shape))
    return model


def rms(table):
    """Root mean square of a table's numbers: the typical size of one of them."""
    return table.detach().pow(2).mean().sqrt().item()


def scales(model, n=8):
    """The typical size (RMS) of one number of the token signal √d_model · E and of the first n
    rows of the position table (the positions the reversal uses: 8 source, 9 target)."""
    return {"token_rms": rms(model.embedding.weight * math.sqrt(model.d)), "pe_rms": rms(model.pe[: n + 1])}


def perplexity(model, src, tgt_in, tgt_out):
    """exp(mean per-token cross-entropy) on the targets, padding left out, no smoothing, eval mode."""
    return math.exp(cross_entropy(model, src, tgt_in, tgt_out, PAD))


def exact_match(model, src, tgt_out):
    """Share of the sequences whose greedy output is right up to and including </s>.
    Without the key/value cache, which assumes h · d_k = h · d_v = d_model (rows B do not)."""
    ys = greedy_decode(model, src, max_len=tgt_out.shape[1], use_cache=False)
    return exact_matches(ys, tgt_out).float().mean().item()


def run(row, seed, settings=SETTINGS, progress=False):
    """Train the row's model once (one thread) and measure it on the test set.

    Returns {"exact_match", "perplexity", "token_rms", "pe_rms", "seconds"}: the two measures, the
    averaged model's ``scales`` and the seconds of training and evaluation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.perf_counter()
        groups, test = training_set(settings), test_set(settings)
        seed_all(seed)
        model = build(row)
        opt, sched = adam_with_warmup(model, model.d, settings["warmup"])
        loss_fn = smoothed_loss(PAD, config(row)["eps_ls"])     # positional: ε_ls
        next_batch = batches(groups, settings["batch"], torch.Generator().manual_seed(seed))
        history = train(model, opt, sched, loss_fn, settings["steps"], next_batch, None,
                        settings["every"], settings["keep"], progress)
        model.load_state_dict(average_weights(history["checkpoints"]))
        model.eval()
        result = {"exact_match": exact_match(model, test[0], test[2]), "perplexity": perplexity(model, *test),
                  **scales(model)}
        return {**result, "seconds": time.perf_counter() - start}
    finally:
        torch.set_num_threads(threads)


# --- the results file --------------------------------------------------------------------------

def load_results(path=RESULTS):
    """The results file: {"settings", "torch", "seeds", "runs": {row: {seed: {...}}}}."""
    return json.loads(pathlib.Path(path).read_text())


def ranges(results):
    """{row: {"exact_match": (min, max), "perplexity": (min, max), "seeds": n}}, rows in ROWS' order."""
    out = {}
    for row in (r for r in ROWS if r in results["runs"]):
        runs = list(results["runs"][row].values())
        out[row] = {key: (min(r[key] for r in runs), max(r[key] for r in runs))
                    for key in ("exact_match", "perplexity")}
        out[row]["seeds"] = len(runs)
    return out


def scales_at_end(results):
    """{row: {"token_rms": (min, max), "pe_rms": (min, max), "ratio": (min, max)}} over the seeds,
    for the rows whose runs recorded the averaged model's ``scales`` (the learned tables')."""
    out = {}
    for row, runs in results["runs"].items():
        runs = [r for r in runs.values() if "pe_rms" in r]
        if runs and config(row)["positions"] in LEARNED:
            values = {"token_rms": [r["token_rms"] for r in runs], "pe_rms": [r["pe_rms"] for r in runs],
                      "ratio": [r["token_rms"] / r["pe_rms"] for r in runs]}
            out[row] = {key: (min(v), max(v)) for key, v in values.items()}
    return out


def parameters(row):
    """The number of parameters of a row's model (the paper's Table 3 lists them too)."""
    return sum(p.numel() for p in build(row).parameters())


def table(results):
    """The table of ranges as text: one line per row, with its number of parameters."""
    lines = [f"{'row':<30}{'params':>9}{'seeds':>7}{'exact match (min–max)':>24}{'perplexity (min–max)':>23}"]
    for row, r in ranges(results).items():
        (em_lo, em_hi), (pp_lo, pp_hi) = r["exact_match"], r["perplexity"]
        lines.append(f"{row:<30}{parameters(row):>9,}{r['seeds']:>7}{f'{em_lo:.1%} – {em_hi:.1%}':>24}"
                     f"{f'{pp_lo:.3f} – {pp_hi:.3f}':>23}")
    return "\n".join(lines)


def plot(results):
    """Two panels, one line per row: the range over the seeds (a bar) and each seed's run (dots),
    of the test exact match and of the test perplexity; the base row's range shaded in both."""
    import matplotlib.pyplot as plt
    found = ranges(results)
    rows = list(found)
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.5 * len(rows) + 1.8), sharey=True, constrained_layout=True)
    for ax, key, label, scale, corner in ((axes[0], "exact_match", "test exact match (%)", 100, "upper left"),
                                          (axes[1], "perplexity", "test perplexity (per token)", 1,
                                           "upper right")):
        lo, hi = found["base"][key]
        ax.axvspan(lo * scale, hi * scale, color="tab:blue", alpha=0.12, label="range of the base row")
        for y, row in enumerate(rows):
            a, b = found[row][key]
            color = "tab:blue" if row == "base" else "tab:orange"
            ax.plot([a * scale, b * scale], [y, y], color=color, linewidth=7, alpha=0.6,
                    solid_capstyle="butt")
            values = [run[key] * scale for run in results["runs"][row].values()]
            ax.scatter(values, [y] * len(values), color="black", s=14, zorder=3,
                       label="one seed" if y == 0 else None)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(loc=corner, fontsize=8)
    axes[0].set_yticks(range(len(rows)), rows)
    axes[0].invert_yaxis()
    axes[0].set_ylabel("row of Table 3 (what changes from the base)")
    axes[0].set_title("Exact match: higher is better")
    axes[1].set_title("Perplexity: lower is better")
    seeds, settings = found["base"]["seeds"], results["settings"]
    fig.suptitle(f"The tiny model's Table 3: each row's range over {seeds} seeds "
                 f"({settings['train_size']} training sequences, {settings['steps']} steps)")
    return fig
