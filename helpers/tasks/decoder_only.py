"""Notebook 12's world: 11's sentences (helpers.tasks.tatoeba) as one sequence per pair, for a
decoder-only model (helpers.decoder_only), trained and measured like 11's encoder–decoder.

- ``join(encoded, source_loss)``: encoded pairs -> ``ids`` (``source, <s>, target``), the source
  lengths and ``labels`` (the next piece at each position: ``target, </s>`` after the separator;
  PAD, which the loss ignores, on the source positions, or with source_loss the source's own next
  pieces); ``batches``: 11's training batches (tatoeba.batches: the same pairs in each step, in the
  same order, drawn with the same generator), each joined; ``train_step``: one update, the output
  layer computed only where the loss reads it.
- ``VARIANTS``: the prefix and causal LMs at equal non-embedding parameters with 11's 2 + 2
  encoder–decoder (4 blocks, d_ff 640), the causal LM with the loss on the source too, and the
  prefix and causal LMs at equal compute per pair (2 blocks, d_ff 512). ``parameter_counts``.
- ``perplexity``, ``decodings``: on the development split exactly as tatoeba.decodings measures
  the encoder–decoder (target tokens only; greedy and beam 4, α 0.6, at most input + 50 pieces).
- ``run_variant`` / ``run_queue`` (``python -m helpers.tasks.decoder_only --runs``): 11's recipe,
  STEPS steps, measured at MILESTONES on the dev split, resumable (helpers.tasks.runs), one JSON per
  run in ``data/decoder_only_runs/``; the seed-0 averaged model at 2,000 steps of each variant in
  ``<states>/<variant>_s0/averaged_2000.pt`` (float16). The encoder–decoder it is compared with is
  11's recipe run at its milestone 2000 (tatoeba.run_variant), not trained again here.
- ``time_steps`` (``--time``): milliseconds per training step of each variant and of 11's model.
"""

import argparse
import json
import math
import os
import pathlib
import time

import torch

from helpers import counting, seed_all
from helpers.decoder_only import DecoderOnly, beam_search, greedy_decode
from helpers.distributed import token_batches
from helpers.recipe import adam_with_warmup, cross_entropy, smoothed_loss
from helpers.recipe import train_step as recipe_train_step
from helpers.tasks import tatoeba
from helpers.tasks.runs import summary, train_resumable, work_down
from helpers.vocabulary import BOS, EOS, PAD

HERE = pathlib.Path(__file__).resolve().parent
RUNS = HERE / "data" / "decoder_only_runs"      # one JSON per run of VARIANTS x RUN_SEEDS
RUN_STATES = pathlib.Path(os.environ.get("COURSE_RUN_STATES", HERE.parents[2] / ".runs")) / "decoder_only"
D, H = tatoeba.SIZE["d"], tatoeba.SIZE["h"]
VARIANTS = {
    "prefix_4x640": {"prefix": True, "n_layers": 4, "d_ff": 640, "source_loss": False},
    "causal_4x640": {"prefix": False, "n_layers": 4, "d_ff": 640, "source_loss": False},
    "causal_srcloss_4x640": {"prefix": False, "n_layers": 4, "d_ff": 640, "source_loss": True},
    "prefix_2x512": {"prefix": True, "n_layers": 2, "d_ff": 512, "source_loss": False},
    "causal_2x512": {"prefix": False, "n_layers": 2, "d_ff": 512, "source_loss": False},
}
EPS_LS, P_DROP = 0.1, 0.1       # 11's recipe
STEPS = 2000
MILESTONES = (500, 1000, 1500, 2000)
TEXT_AT = (1500, 2000)          # milestones whose decodings are stored (for BLEU, chrF, bootstrap)
RUN_SEEDS = (0, 1, 2)
SAVE_AT = 2000                  # the seed-0 averaged model of each variant is kept at this step


# --- one sequence per pair ---------------------------------------------------------------------

def join(encoded, source_loss=False):
    """Encoded pairs (source ids, target ids) -> ids, src_lengths, labels.

    ids (batch, n): each row ``source, <s>, target``, padded at the end with PAD; src_lengths
    (batch,); labels (batch, n): the piece each position must predict, ``target, </s>`` from the
    separator on, PAD (ignored by the loss) on the source positions — or, with source_loss, the
    source's next pieces there (``source[1:], <s>``). The order suits train_step and helpers.recipe's
    cross_entropy: model(ids, src_lengths) against labels."""
    rows, targets = [], []
    for source, target in encoded:
        rows.append(torch.tensor([*source, BOS, *target]))
        before = [*source[1:], BOS] if source_loss else [PAD] * len(source)
        targets.append(torch.tensor([*before, *target, EOS]))
    pad = torch.nn.utils.rnn.pad_sequence
    return (pad(rows, batch_first=True, padding_value=PAD),
            torch.tensor([len(s) for s, _ in encoded]),
            pad(targets, batch_first=True, padding_value=PAD))


def pairs_of(src, tgt_out):
    """11's padded batch (src, tgt_out) -> its encoded pairs (source ids, target ids), in order."""
    return [(s[s != PAD].tolist(), t[t != PAD].tolist()[:-1]) for s, t in zip(src, tgt_out, strict=True)]


def batches(encoded, generator, budget=tatoeba.BUDGET, source_loss=False):
    """11's training batches (tatoeba.batches, the same generator draws), each joined once: the
    same pairs in each step, in the same order, as the encoder–decoder trains on."""
    inner = tatoeba.batches(encoded, generator, budget)
    made = {}

    def next_batch():
        src, _, tgt_out = batch = inner()
        if id(batch) not in made:
            made[id(batch)] = (batch, join(pairs_of(src, tgt_out), source_loss))
        return made[id(batch)][1]
    next_batch.order = inner.order          # the batches left in this epoch (saved by a resumable run)
    return next_batch


def train_step(model, opt, sched, loss_fn, ids, src_lengths, labels):
    """One update, as helpers.recipe.train_step, with the output layer computed only at the scored
    positions (labels not PAD): the same loss (ignore_index drops the others) for less work."""
    model.train()
    scored = labels != PAD
    logits = model.stack(ids, src_lengths)[scored] @ model.embedding.weight.T
    loss = loss_fn(logits, labels[scored])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


# --- the models and their sizes ---------------------------------------------------------------

def new_model(n_vocab, variant, p=P_DROP):
    cfg = VARIANTS[variant]
    return DecoderOnly(n_vocab, D, H, cfg["d_ff"], cfg["n_layers"], p, prefix=cfg["prefix"])


def load_model(pieces, variant, path):
    """A saved state (float16 on disk) as a float32 model of the variant, in eval mode."""
    model = new_model(len(pieces.vocab), variant)
    model.load_state_dict({k: v.float() for k, v in torch.load(path, weights_only=True).items()})
    return model.eval()


def parameter_counts(n_vocab):
    """Non-embedding parameters of 11's encoder–decoder and of each variant, by 06's formulas
    (helpers.counting) and by counting the built models' tensors: {name: (formula, counted)}."""
    size = tatoeba.SIZE
    encoder_decoder = tatoeba.new_model(n_vocab)
    counts = {"encoder_decoder_2+2": (
        counting.transformer_params(n_vocab, D, size["d_ff"], size["n_layers"]) - n_vocab * D,
        counting.count(encoder_decoder) - encoder_decoder.embedding.weight.numel())}
    for name, cfg in VARIANTS.items():
        model = new_model(n_vocab, name)
        counts[name] = (cfg["n_layers"] * counting.encoder_layer_params(D, cfg["d_ff"]),
                        counting.count(model) - model.embedding.weight.numel())
    return counts


def check_counts(n_vocab):
    """Print the counts; assert the formulas equal the models and the equal-parameter variants
    (4 blocks) are within 1 % of the encoder–decoder."""
    counts = parameter_counts(n_vocab)
    for name, (formula, counted) in counts.items():
        print(f"{name}: {formula:,} non-embedding parameters by 06's formulas, {counted:,} counted")
        assert formula == counted, name
    reference = counts["encoder_decoder_2+2"][0]
    for name, cfg in VARIANTS.items():
        if cfg["n_layers"] == 4:
            assert abs(counts[name][0] / reference - 1) < 0.01, name
    return counts


# --- measured like tatoeba.decodings -------------------------------------------------------------

@torch.no_grad()
def perplexity(model, encoded, budget=tatoeba.BUDGET):
    """exp of the mean cross-entropy per target token (``target, </s>``, as the encoder–decoder's
    tgt_out; no smoothing), teacher forced, eval mode, in 11's token batches."""
    total = count = 0.0
    for b in token_batches(encoded, budget, tatoeba.lengths):
        ids, src_lengths, labels = join(b)
        n = int((labels != PAD).sum())
        total += cross_entropy(model, ids, src_lengths, labels, PAD) * n
        count += n
    return math.exp(total / count)


def decodings(state, pieces, pairs, variant, text=True):
    """A state dict's perplexity on pairs and its greedy and beam-4 decodings of their English
    sentences (each once, first-seen order), as tatoeba.decodings: {"perplexity", "greedy":
    {"looped", "bleu_all", "text"}, "beam": ...}."""
    model = new_model(len(pieces.vocab), variant)
    model.load_state_dict(state)
    model.eval()
    groups = tatoeba.references_of(pairs)
    english = list(groups)
    row = {"perplexity": perplexity(model, tatoeba.encode_pairs(pairs, pieces))}
    for name, k in (("greedy", 1), ("beam", 4)):
        out, looped = tatoeba.translate(model, english, pieces, beam=k, greedy=greedy_decode,
                                        search=beam_search)
        row[name] = {"looped": looped, "bleu_all": tatoeba.bleu_all(out, list(groups.values()))}
        if text:
            row[name]["text"] = out
    return row


# --- the runs ------------------------------------------------------------------------------------

def recipe(variant):
    cfg = VARIANTS[variant]
    model = {"d": D, "h": H, "d_ff": cfg["d_ff"], "n_layers": cfg["n_layers"],
             "mask": "prefix" if cfg["prefix"] else "causal", "loss_on_source": cfg["source_loss"]}
    return {**tatoeba.recipe(EPS_LS), "model": model, "dropout": P_DROP, "steps": STEPS}


def setup(variant, seed, pieces, train_pairs):
    """What run_variant trains, made in tatoeba.run_variant's order (seed_all, the batch
    generator, the model, Adam with warmup, the loss, the batches): (model, opt, sched, loss_fn,
    next_batch, generator)."""
    seed_all(seed)
    gen = torch.Generator().manual_seed(seed)
    model = new_model(len(pieces.vocab), variant)
    opt, sched = adam_with_warmup(model, d_model=D, warmup=tatoeba.WARMUP)
    loss_fn = smoothed_loss(PAD, EPS_LS)
    next_batch = batches(tatoeba.encode_pairs(train_pairs, pieces), gen,
                         source_loss=VARIANTS[variant]["source_loss"])
    return model, opt, sched, loss_fn, next_batch, gen


def run_variant(variant, seed, steps=STEPS, threads=1, states=RUN_STATES, out=RUNS, world=None,
                milestones=MILESTONES, progress=True):
    """One run of VARIANTS[variant] with this seed, 11's recipe otherwise. Measured on the
    development split at milestones (perplexity, greedy and beam of the last and the averaged
    weights; the decodings kept at TEXT_AT); resumable from states/<variant>_s<seed>. Writes
    out/<variant>_s<seed>.json, and for seed 0 the averaged model at SAVE_AT."""
    torch.set_num_threads(threads)
    w = tatoeba.world() if world is None else world
    train_pairs, dev, _ = w["split"]
    pieces = w["pieces"]
    name = f"{variant}_s{seed}"
    model, opt, sched, loss_fn, next_batch, gen = setup(variant, seed, pieces, train_pairs)

    def step(batch):
        return train_step(model, opt, sched, loss_fn, *batch)

    def on_milestone(done, last, averaged, seconds):
        text = done in TEXT_AT
        if seed == 0 and done == SAVE_AT:
            torch.save({k: v.half() for k, v in averaged.items()},
                       pathlib.Path(states) / name / f"averaged_{SAVE_AT}.pt")
        row = {"step": done, "minutes": seconds / 60,
               "last": decodings(last, pieces, dev, variant, text),
               "averaged": decodings(averaged, pieces, dev, variant, text)}
        if progress:
            print(name, done, summary(row), flush=True)
        return row

    rows, _, losses, seconds = train_resumable(
        pathlib.Path(states) / name, model, opt, sched, step, next_batch, gen, steps,
        every=tatoeba.EVERY, keep=tatoeba.KEEP, milestones=milestones, on_milestone=on_milestone,
        progress=progress)
    counted = counting.count(model) - model.embedding.weight.numel()
    result = {"variant": variant, "seed": seed, "steps": steps, "recipe": recipe(variant),
              "non_embedding_parameters": counted, "threads": threads, "torch": torch.__version__,
              "train_loss_per_100": losses, "minutes": seconds / 60, "milestones": rows}
    pathlib.Path(out).mkdir(parents=True, exist_ok=True)
    (pathlib.Path(out) / f"{name}.json").write_text(json.dumps(result) + "\n")
    return result


def run_names(seeds=RUN_SEEDS, variants=VARIANTS):
    """Every variant for seed 0, then for seed 1, ...: the queue's default order."""
    return [f"{v}_s{s}" for s in seeds for v in variants]


def run_queue(names, threads=1, states=RUN_STATES, out=RUNS):
    """Work down the list of runs ("variant_sN"), skipping those another process has or finished."""
    w = tatoeba.world()
    check_counts(len(w["pieces"].vocab))
    work_down(names, lambda variant, seed: run_variant(variant, seed, threads=threads, states=states,
                                                       out=out, world=w), states, out)


# --- how long a training step takes ----------------------------------------------------------------

def time_steps(names=(*VARIANTS, "encoder_decoder"), steps=100, threads=1, seed=0):
    """Milliseconds per training step (mean over `steps` steps after 5 unmeasured ones) of each
    variant and of 11's encoder–decoder ("encoder_decoder", tatoeba.run_variant's setup), on the
    same batches. Under other load the numbers grow: say so when quoting them."""
    torch.set_num_threads(threads)
    w = tatoeba.world()
    train_pairs, pieces = w["split"][0], w["pieces"]
    times = {}
    for name in names:
        if name == "encoder_decoder":
            seed_all(seed)
            gen = torch.Generator().manual_seed(seed)
            model = tatoeba.new_model(len(pieces.vocab))
            opt, sched = adam_with_warmup(model, d_model=D, warmup=tatoeba.WARMUP)
            loss_fn = smoothed_loss(PAD, EPS_LS)
            next_batch = tatoeba.batches(tatoeba.encode_pairs(train_pairs, pieces), gen)
        else:
            model, opt, sched, loss_fn, next_batch, _ = setup(name, seed, pieces, train_pairs)
        update = recipe_train_step if name == "encoder_decoder" else train_step
        for _ in range(5):
            update(model, opt, sched, loss_fn, *next_batch())
        start = time.perf_counter()
        for _ in range(steps):
            update(model, opt, sched, loss_fn, *next_batch())
        times[name] = (time.perf_counter() - start) / steps * 1e3
        print(f"{name}: {times[name]:.0f} ms per step", flush=True)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description="Notebook 12's decoder-only runs.")
    parser.add_argument("--runs", nargs="*", metavar="VARIANT_sSEED",
                        help=f"train these runs (default: every variant x seeds {RUN_SEEDS}, seeds first), "
                        f"{STEPS:,} steps each, measured on the development split, resumable; several "
                        "commands can work down the same list")
    parser.add_argument("--time", type=int, metavar="STEPS",
                        help="time STEPS training steps of each variant and of 11's encoder-decoder")
    parser.add_argument("--counts", action="store_true", help="print the non-embedding parameter counts")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.runs is None and args.time is None and not args.counts:
        parser.error("nothing to do: pass --runs, --time or --counts")
    if args.counts:
        check_counts(len(tatoeba.world()["pieces"].vocab))
    if args.time is not None:
        time_steps(steps=args.time, threads=args.threads)
    if args.runs is not None:
        names = args.runs or run_names()
        unknown = [n for n in names if n.rsplit("_s", 1)[0] not in VARIANTS]
        if unknown:
            parser.error(f"unknown runs {unknown}: the variants are {list(VARIANTS)}")
        run_queue(names, threads=args.threads)


if __name__ == "__main__":
    main()
