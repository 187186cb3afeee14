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
- ``time_steps`` (``--time``): milliseconds per training step of each variant and of 11's model,
  stored in the measures JSON (``store_step_times``).
- ``SHIPPED`` / ``load_shipped``: the one decoder-only model shipped (the prefix LM at equal
  parameters, seed 0, averaged at 2,000 steps, float16, 2.4 MB); ``load_measures``.
- Measured after the runs, on their averaged weights at 2,000 steps (``averaged_state``):
  ``flops_per_pair`` (06's counting), ``cache_bytes`` (the KV caches' tensors), ``decoding_times``,
  ``sentence_losses``, ``joined_pairs`` (longer inputs) and helpers.decoder_only.source_share;
  ``measure`` (``python -m helpers.tasks.decoder_only --measure``) writes them for every finished
  run, the encoder–decoder's ("encoder_decoder_sN": 11's recipe_sN) included, into
  ``data/decoder_only_measures.json``.
"""

import argparse
import json
import math
import os
import pathlib
import statistics
import time

import torch

from helpers import counting, decoding, seed_all
from helpers.decoder_only import DecoderOnly, beam_search, greedy_decode, source_share, start, step
from helpers.recipe import adam_with_warmup, average_weights, smoothed_loss
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
SHIPPED = ("prefix_4x640", tatoeba.CHECKPOINTS / "tatoeba_prefix_lm.pt")   # the shipped decoder-only model:
# prefix_4x640 seed 0, its last 5 checkpoints at 2,000 steps averaged, float16 (averaged_2000.pt)


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


def load_shipped(pieces):
    """The shipped decoder-only model (SHIPPED: the prefix LM at equal parameters, seed 0, averaged
    at 2,000 steps), float32, eval mode."""
    return load_model(pieces, *SHIPPED)


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

def teacher_forced(encoded):
    """Encoded pairs -> (the model's inputs, the labels): ((ids, src_lengths), labels), as join
    makes them: the form tatoeba.perplexity and tatoeba.sentence_losses take."""
    ids, src_lengths, labels = join(encoded)
    return (ids, src_lengths), labels


def perplexity(model, encoded, budget=tatoeba.BUDGET):
    """exp of the mean cross-entropy per target token (``target, </s>``, as the encoder–decoder's
    tgt_out; no smoothing), teacher forced, eval mode, in 11's token batches (tatoeba.perplexity)."""
    return tatoeba.perplexity(model, encoded, budget, batch=teacher_forced)


def decodings(state, pieces, pairs, variant, text=True):
    """A state dict's perplexity on pairs and its greedy and beam-4 decodings of their English
    sentences, as tatoeba.decodings (tatoeba.measured with this model's batches and decoders; no
    per-sentence losses: --measure adds them): {"perplexity", "greedy": {"looped", "bleu_all",
    "text"}, "beam": ...}."""
    model = new_model(len(pieces.vocab), variant)
    model.load_state_dict(state)
    return tatoeba.measured(model, pieces, pairs, text, losses=False, batch=teacher_forced,
                            greedy=greedy_decode, search=beam_search)


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
    variant and of 11's encoder–decoder ("encoder_decoder", tatoeba.setup of its recipe), on the
    same batches. Under other load the numbers grow: say so when quoting them."""
    torch.set_num_threads(threads)
    w = tatoeba.world()
    train_pairs, pieces = w["split"][0], w["pieces"]
    times = {}
    for name in names:
        model, opt, sched, loss_fn, next_batch, _ = (
            tatoeba.setup("recipe", seed, pieces, train_pairs) if name == "encoder_decoder"
            else setup(name, seed, pieces, train_pairs))
        update = recipe_train_step if name == "encoder_decoder" else train_step
        for _ in range(5):
            update(model, opt, sched, loss_fn, *next_batch())
        start = time.perf_counter()
        for _ in range(steps):
            update(model, opt, sched, loss_fn, *next_batch())
        times[name] = (time.perf_counter() - start) / steps * 1e3
        print(f"{name}: {times[name]:.0f} ms per step", flush=True)
    return times


# --- measured on the averaged weights at 2,000 steps ------------------------------------------------

MEASURES = HERE / "data" / "decoder_only_measures.json"
ED_STATES = tatoeba.RUN_STATES          # 11's runs: recipe_sN/averaged_2000.pt
ENCODER_DECODER = "encoder_decoder"     # 11's recipe runs, under this name here
KINDS = (ENCODER_DECODER, *VARIANTS)
N_VOCAB = 2102                          # len(tatoeba.pieces_for().vocab), checked by a test
JOINED = (1, 2, 3, 4)                   # test sentences per input for source_share
MAX_POSITIONS = 256                     # DecoderOnly's max_len


def kind_of(name):
    """"prefix_4x640_s1" -> ("prefix_4x640", 1); "encoder_decoder_s0" -> ("encoder_decoder", 0)."""
    kind, seed = name.rsplit("_s", 1)
    if kind not in KINDS:
        raise ValueError(f"unknown run {name!r}: the kinds are {list(KINDS)}")
    return kind, int(seed)


def finished(name, states=RUN_STATES, ed_states=ED_STATES):
    """True when the run's folder says done (and, for the encoder–decoder, holds averaged_2000.pt)."""
    kind, seed = kind_of(name)
    if kind == ENCODER_DECODER:
        folder = pathlib.Path(ed_states) / f"recipe_s{seed}"
        return (folder / "done").exists() and (folder / "averaged_2000.pt").exists()
    return (pathlib.Path(states) / name / "done").exists()


def averaged_state(name, states=RUN_STATES, ed_states=ED_STATES):
    """The averaged weights at 2,000 steps of a finished run, float32: for a variant the mean of
    the last 5 checkpoints its state.pt keeps (the run ends at 2,000: the very weights its JSON
    measured); for "encoder_decoder_sN", 11's recipe_sN/averaged_2000.pt (saved in float16)."""
    kind, seed = kind_of(name)
    if not finished(name, states, ed_states):
        raise FileNotFoundError(f"{name} has not finished")
    if kind == ENCODER_DECODER:
        path = pathlib.Path(ed_states) / f"recipe_s{seed}" / "averaged_2000.pt"
        return {k: v.float() for k, v in torch.load(path, weights_only=True).items()}
    saved = torch.load(pathlib.Path(states) / name / "state.pt", weights_only=True)
    assert saved["done"] == STEPS and len(saved["kept"]) == tatoeba.KEEP, name
    return {k: v.float() for k, v in average_weights(saved["kept"]).items()}


def model_of(kind, state=None, n_vocab=N_VOCAB):
    """A model of the kind (ENCODER_DECODER or a variant), with the state if given, in eval mode."""
    model = tatoeba.new_model(n_vocab) if kind == ENCODER_DECODER else new_model(n_vocab, kind)
    if state is not None:
        model.load_state_dict(state)
    return model.eval()


def decoders(model):
    """(greedy, beam search) for the model's kind: helpers.decoding's or helpers.decoder_only's."""
    if isinstance(model, DecoderOnly):
        return greedy_decode, beam_search
    return decoding.greedy_decode, decoding.beam_search


def flops_per_pair(kind, src_len, tgt_len, n_vocab=N_VOCAB):
    """Forward-pass FLOPs of one training pair of src_len and tgt_len pieces, counted 06's way: every
    matrix product, 2 FLOPs per multiply-add (helpers.counting.encoder_decoder_flops and
    decoder_only_flops): the projections, the FFNs, the attention's Q Kᵀ and weights × V (and the
    encoder–decoder's cross-attention), the output layer at the scored positions only, as
    train_step computes it (target and </s>; the whole sequence with the loss on the source).
    The pair alone, no padding; the backward pass costs about twice as much again."""
    if kind == ENCODER_DECODER:
        s = tatoeba.SIZE
        return counting.encoder_decoder_flops(src_len, tgt_len, s["d"], s["d_ff"], s["n_layers"], n_vocab)
    cfg = VARIANTS[kind]
    scored = src_len + 1 + tgt_len if cfg["source_loss"] else None
    return counting.decoder_only_flops(src_len, tgt_len, D, cfg["d_ff"], cfg["n_layers"], n_vocab, scored)


def mean_flops(kind, encoded, n_vocab=N_VOCAB):
    """The mean of flops_per_pair over encoded pairs (their real lengths in pieces)."""
    return statistics.fmean(flops_per_pair(kind, len(s), len(t), n_vocab) for s, t in encoded)


@torch.no_grad()
def cache_bytes(model, src, steps=4):
    """The key/value cache of a batch, measured on its tensors (float32, 4 bytes a number) while
    greedy decoding writes `steps` pieces after src (batch, n): {"once": bytes per row held for
    the whole decoding (the encoder–decoder's cross-attention keys and values of the memory,
    KVCache.cross, n source positions; the decoder-only model's source and separator in every
    block, PrefixCache, n + 1 positions), "once_positions": those positions per row (padding
    included, as the tensors hold it), "per_piece": bytes per row each written piece adds (the
    self-attention keys and values of one more position in every decoder layer or block),
    "formula_per_position": helpers.counting.kv_cache_bytes for one position}."""
    rows = src.shape[0]
    if isinstance(model, DecoderOnly):
        logits, cache = start(model, src)
        once = cache.numbers()
        positions = src.shape[1] + 1
        for _ in range(steps):
            logits = step(model, logits.argmax(-1), cache)
        grown = cache.numbers() - once
        layers, attn = len(model.layers), model.layers[0].self_attn
    else:
        mask = model.memory_mask(src)
        cache = decoding.KVCache(model, model.encode(src, mask), mask)
        once = sum(t.numel() for pair in cache.cross for t in pair)
        positions = src.shape[1]
        token = torch.full((rows,), decoding.BOS)
        for _ in range(steps):
            token = decoding.decode_step(model, token, cache).argmax(-1)
        grown = cache.self_attention_numbers()
        layers, attn = len(model.decoder_layers), model.decoder_layers[0].self_attn
    return {"once": once * 4 / rows, "once_positions": positions, "per_piece": grown * 4 / (rows * steps),
            "formula_per_position": counting.kv_cache_bytes(layers, attn.h, attn.d_k, 1, 1, 4)}


@torch.no_grad()
def decoding_times(models, english, pieces, repeats=3, k=4, extra=50):
    """Milliseconds per sentence to decode the English sentences (one batch, with each kind's
    cache) greedily and with beam search (k beams, α 0.6, at most input + extra pieces), for each
    model of {name: model}: the median of `repeats` runs. 16 dev sentences, 3 repeats, the
    encoder–decoder and one decoder-only model of 4 blocks: about 2-5 s here. Other programs
    running slow it down: compare models timed together."""
    src = tatoeba.tensors([(pieces.ids(e), []) for e in english])[0]
    limit = int((src != PAD).sum(1).max()) + extra
    times = {}
    for name, model in models.items():
        greedy, search = decoders(model)
        runs = {"greedy": [], "beam": []}
        for _ in range(repeats):
            for how in runs:
                begin = time.perf_counter()
                if how == "greedy":
                    greedy(model, src, max_len=limit)
                else:
                    search(model, src, k=k, alpha=0.6, extra=extra)
                runs[how].append((time.perf_counter() - begin) * 1e3 / len(english))
        times[name] = {how: statistics.median(ms) for how, ms in runs.items()}
    return times


@torch.no_grad()
def sentence_losses(model, pairs, pieces, chunk=64):
    """tatoeba.sentence_losses for either kind: for each English sentence of pairs (first-seen
    order), [the summed cross-entropy of all its references' target tokens (target, </s>), their
    number], teacher forced, eval mode, no smoothing: the rows bootstrap.paired(metric=
    "perplexity") draws from."""
    batch = teacher_forced if isinstance(model, DecoderOnly) else tatoeba.teacher_forced
    return tatoeba.sentence_losses(model, pairs, pieces, chunk, batch=batch)


def joined_pairs(pairs, k):
    """Longer inputs from the pairs: each English sentence with its first reference (first-seen
    order), then k consecutive ones joined, English by a space and French by a space (sentences
    1-k, k+1-2k, ...; a last incomplete group is dropped). k = 1: the sentences themselves."""
    firsts = [(e, refs[0]) for e, refs in tatoeba.references_of(pairs).items()]
    return [tatoeba.Pair(" ".join(p[0] for p in firsts[i: i + k]), " ".join(p[1] for p in firsts[i: i + k]))
            for i in range(0, len(firsts) - k + 1, k)]


def joined_inputs(pairs, pieces, sizes=JOINED):
    """{k: the encoded joined_pairs(pairs, k)}, each within MAX_POSITIONS positions (checked)."""
    out = {}
    for k in sizes:
        encoded = tatoeba.encode_pairs(joined_pairs(pairs, k), pieces)
        assert max(len(s) + 1 + len(t) for s, t in encoded) <= MAX_POSITIONS, k
        out[k] = encoded
    return out


def _round(x, digits=5):
    """Floats to `digits` significant digits, through lists and dicts (a small JSON)."""
    if isinstance(x, float):
        return float(f"{x:.{digits}g}")
    if isinstance(x, list):
        return [_round(v, digits) for v in x]
    if isinstance(x, dict):
        return {k: _round(v, digits) for k, v in x.items()}
    return x


def measure_run(name, w, state=None, runs=RUNS, text=True):
    """What --measure keeps of one run, on its averaged weights at 2,000 steps: "dev_losses" and
    "test_losses" (sentence_losses, sums rounded to 4 decimals), "dev_perplexity" (from them), the
    runs JSON's ("runs_perplexity", None if its JSON is not in `runs`) and "vs_runs", dev / runs - 1
    (under 1e-5 for a variant, asserted; the encoder–decoder's float16 weights move it), "test": greedy and
    beam 4 texts (with text), BLEU (all references) and looped counts; for a decoder-only run
    "source_share" on the joined test inputs {k: source_share}; "flops_per_pair" (mean over dev)."""
    kind, seed = kind_of(name)
    state = averaged_state(name) if state is None else state
    pieces, (_, dev, test) = w["pieces"], w["split"]
    model = model_of(kind, state, len(pieces.vocab))
    row = {"kind": kind, "seed": seed,
           "weights": "11's averaged_2000.pt (float16)" if kind == ENCODER_DECODER else
           "mean of the last 5 checkpoints (float32)"}
    for split_name, pairs in (("dev", dev), ("test", test)):
        losses = sentence_losses(model, pairs, pieces)
        row[f"{split_name}_perplexity"] = math.exp(sum(s for s, _ in losses) / sum(n for _, n in losses))
        row[f"{split_name}_losses"] = [[round(s, 4), n] for s, n in losses]
    source = pathlib.Path(runs) / f"{name}.json"
    if kind == ENCODER_DECODER:
        source = tatoeba.RUNS / f"recipe_s{seed}.json"
    row["runs_perplexity"] = row["vs_runs"] = None
    if source.exists():
        at = [m for m in json.loads(source.read_text())["milestones"] if m["step"] == 2000]
        if at:
            row["runs_perplexity"] = at[0]["averaged"]["perplexity"]
            row["vs_runs"] = row["dev_perplexity"] / row["runs_perplexity"] - 1
            # the same float32 weights, summed per sentence instead of per token batch
            assert kind == ENCODER_DECODER or abs(row["vs_runs"]) < 1e-5, (name, row["vs_runs"])
    english = list(tatoeba.references_of(test))
    references = list(tatoeba.references_of(test).values())
    greedy, search = decoders(model)
    row["test"] = {}
    for how, k in (("greedy", 1), ("beam", 4)):
        out, looped = tatoeba.translate(model, english, pieces, beam=k, greedy=greedy, search=search)
        row["test"][how] = {"looped": looped, "bleu_all": tatoeba.bleu_all(out, references),
                            **({"text": out} if text else {})}
    if kind != ENCODER_DECODER:
        row["source_share"] = {str(k): source_share(model, encoded)
                               for k, encoded in w["joined"].items()}
        for curves in row["source_share"].values():
            del curves["uniform"], curves["pairs"]          # the same for every run: kept once
    row["flops_per_pair"] = mean_flops(kind, tatoeba.encode_pairs(dev, pieces), len(pieces.vocab))
    return _round(row)


def kinds_section(w):
    """What depends only on the kinds, not on the weights: FLOPs per pair (mean over dev), the KV
    cache's bytes (measured on 8 dev sentences), and the joined test inputs' uniform shares."""
    pieces, dev = w["pieces"], w["split"][1]
    encoded_dev = tatoeba.encode_pairs(dev, pieces)
    src = tatoeba.tensors([(pieces.ids(e), []) for e in list(tatoeba.references_of(dev))[:8]])[0]
    kinds = {}
    for kind in KINDS:
        seed_all(0)
        cache = cache_bytes(model_of(kind, n_vocab=len(pieces.vocab)), src)
        positions = statistics.fmean(len(s) + (kind != ENCODER_DECODER) for s, _ in encoded_dev)
        kinds[kind] = {"flops_per_pair_dev": mean_flops(kind, encoded_dev, len(pieces.vocab)), **cache,
                       "once_mean_dev": cache["formula_per_position"] * positions}
    model = model_of("prefix_2x512", n_vocab=len(pieces.vocab))     # uniform and pairs need no weights
    inputs = {}
    for k, encoded in w["joined"].items():
        share = source_share(model, encoded)
        inputs[str(k)] = {"uniform": share["uniform"], "pairs": share["pairs"], "n": len(encoded),
                          "mean_positions": statistics.fmean(len(s) + 1 + len(t) for s, t in encoded)}
    return _round({"kinds": kinds, "joined_test_inputs": inputs})


def load_measures(path=MEASURES):
    """The JSON --measure and --time write: {"runs": {name: ...}, "kinds": ..., "joined_test_inputs":
    ..., "ms_per_step": ...}."""
    return json.loads(pathlib.Path(path).read_text())


def store_step_times(times, steps, threads, out=MEASURES):
    """Add time_steps' result to the measures JSON under "ms_per_step" (with how it was measured)."""
    out = pathlib.Path(out)
    data = json.loads(out.read_text()) if out.exists() else {"runs": {}}
    data["ms_per_step"] = {"steps": steps, "threads": threads, "torch": torch.__version__,
                           "ms": {k: round(v, 1) for k, v in times.items()}}
    out.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")


def measure(names=None, out=MEASURES, runs=RUNS, threads=1, states=RUN_STATES, ed_states=ED_STATES):
    """Measure every finished run of names (default: every kind x RUN_SEEDS) not yet in `out`,
    adding each to the JSON as it is done (rerun it when more runs have finished)."""
    torch.set_num_threads(threads)
    names = names or [f"{k}_s{s}" for s in RUN_SEEDS for k in KINDS]
    out = pathlib.Path(out)
    data = json.loads(out.read_text()) if out.exists() else {"runs": {}}
    w = None
    for name in names:
        if name in data["runs"]:
            print(f"{name}: measured already", flush=True)
            continue
        if not finished(name, states, ed_states):
            print(f"{name}: not finished, skipped", flush=True)
            continue
        if w is None:
            w = tatoeba.world()
            w["joined"] = joined_inputs(w["split"][2], w["pieces"])
            if "kinds" not in data:
                data.update(kinds_section(w))
        begin = time.time()
        data["runs"][name] = measure_run(name, w, averaged_state(name, states, ed_states), runs)
        r = data["runs"][name]
        print(f"{name}: {time.time() - begin:.0f} s; dev perplexity {r['dev_perplexity']} "
              f"(runs JSON {r['runs_perplexity']}), test BLEU greedy {r['test']['greedy']['bleu_all']:.2f} "
              f"beam {r['test']['beam']['bleu_all']:.2f}", flush=True)
        data["runs"] = dict(sorted(data["runs"].items()))
        out.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    if out.exists():
        print(f"{out}: {len(data['runs'])} runs, {out.stat().st_size / 1e3:.0f} kB", flush=True)
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(description="Notebook 12's decoder-only runs.")
    parser.add_argument("--runs", nargs="*", metavar="VARIANT_sSEED",
                        help=f"train these runs (default: every variant x seeds {RUN_SEEDS}, seeds first), "
                        f"{STEPS:,} steps each, measured on the development split, resumable; several "
                        "commands can work down the same list")
    parser.add_argument("--time", type=int, metavar="STEPS",
                        help="time STEPS training steps of each variant and of 11's encoder-decoder "
                        "(on a machine doing nothing else), into the measures JSON")
    parser.add_argument("--counts", action="store_true", help="print the non-embedding parameter counts")
    parser.add_argument("--measure", nargs="*", metavar="KIND_sSEED",
                        help="measure these finished runs (default: every variant and encoder_decoder x "
                        f"seeds {RUN_SEEDS}) on their averaged weights at 2,000 steps, skipping those "
                        "measured already or not finished: helpers/tasks/data/decoder_only_measures.json")
    parser.add_argument("--runs-json", default=str(RUNS),
                        help="the folder of the runs' JSONs whose dev perplexity --measure compares with")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.runs is None and args.time is None and not args.counts and args.measure is None:
        parser.error("nothing to do: pass --runs, --time, --counts or --measure")
    if args.measure is not None:
        measure(args.measure or None, runs=args.runs_json, threads=args.threads)
    if args.counts:
        check_counts(len(tatoeba.world()["pieces"].vocab))
    if args.time is not None:
        store_step_times(time_steps(steps=args.time, threads=args.threads), args.time, args.threads)
    if args.runs is not None:
        names = args.runs or run_names()
        unknown = [n for n in names if n.rsplit("_s", 1)[0] not in VARIANTS]
        if unknown:
            parser.error(f"unknown runs {unknown}: the variants are {list(VARIANTS)}")
        run_queue(names, threads=args.threads)


if __name__ == "__main__":
    main()
