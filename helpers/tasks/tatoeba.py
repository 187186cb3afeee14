"""The task of notebook 11: real English sentences into French, from the Tatoeba Project.

Sentences from the Tatoeba Project (tatoeba.org), CC BY 2.0 FR, paired by manythings.org/anki.
``helpers/tasks/data/tatoeba_en_fr.tsv`` holds 18,065 lines ``English<TAB>French``: the shortest
pairs of the English–French file manythings.org/anki distributed (about 2018–2019), ordered by
length, French typography as written (a narrow no-break space before ``?`` and ``!`` in some
lines, ``’`` and ``'`` both). Many English sentences have several French translations: a test
sentence has several references.

- ``normalise(text)``: the course's normalisation (every kind of space a plain space, ``’`` and
  ``‘`` an ASCII apostrophe, spaces collapsed); ``load_pairs()``: the distinct normalised pairs,
  in file order, as ``Pair(english, french)``.
- ``split_by_english(pairs, n_test, seed)``: the split by English sentence (notebook 11's first
  exercise): ``n_test`` English sentences drawn from the sorted distinct ones; the test pairs are
  all their pairs (every reference); the training pairs are the others, less those whose French
  is a test reference. ``split()``: the shipped split, (train, dev, test): 500 test sentences
  (seed ``SEED``), then 500 development sentences drawn the same way from what is left
  (``DEV_SEED``). Every choice is made on dev; the test split is scored once.
- ``words(text)`` / ``detokenize(words, french)``: words with punctuation apart, and back.
- ``merges()`` and ``pieces_for()``: byte-pair merges learnt on the training split's texts (English
  and French together, paper §5.1; shipped in ``data/tatoeba_merges.txt``, made by ``--merges``)
  and ``Pieces``, sentences to ids and back with one shared vocabulary, ``<unk>`` for a piece never
  seen in training.
- ``batches(pairs, ...)``: batches by tokens (``helpers.distributed.token_batches``), a new
  random order of them each epoch.
- ``translate(model, english, pieces, beam)``: sentences in, French text out (greedy or beam 4,
  α 0.6, input + 50); ``references_of(pairs)``: each sentence's references; ``bleu_all`` /
  ``bleu_first``: sacrebleu with its defaults against all references or the first.
- ``run_queue`` (``python -m helpers.tasks.tatoeba --runs``): the runs of VARIANTS (the recipe,
  no label smoothing, dropout 0.3) for seeds 0-2, 4,000 steps each on one thread (about 16
  minutes of training each on the course's 2-core CPU), resumable, measured on the development
  split at RUN_MILESTONES into ``data/tatoeba_runs/<variant>_s<seed>.json``; the recipe's seed-0
  run's last 5 checkpoints, averaged, are the shipped model (float16).
"""

import argparse
import json
import math
import os
import pathlib
import random
import re
from typing import NamedTuple

import torch

from helpers import bpe, seed_all
from helpers.bleu import sacrebleu_score, tokenize_13a
from helpers.decoding import beam_search, greedy_decode
from helpers.distributed import token_batches
from helpers.model import Transformer
from helpers.recipe import adam_with_warmup, cross_entropy, smoothed_loss, train_step
from helpers.tasks import numbers
from helpers.tasks.runs import summary, train_resumable, work_down
from helpers.vocabulary import EOS, PAD, Vocabulary

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data" / "tatoeba_en_fr.tsv"
CHECKPOINTS = HERE / "checkpoints"
MODEL = "tatoeba_en_fr.pt"                      # the shipped averaged model, float16
MERGES_FILE = HERE / "data" / "tatoeba_merges.txt"
SOURCE = ("Sentences from the Tatoeba Project (tatoeba.org), CC BY 2.0 FR, "
          "paired by manythings.org/anki")
SEED = 2017            # the draw of the shipped test split
N_TEST = 500           # English sentences held out for the test
N_DEV = 500            # and for development, drawn like the test sentences from the rest
DEV_SEED = 2018
MERGES = 2000          # byte-pair merges learnt on the training texts
UNK = "<unk>"          # a piece never seen in training (a character no training text has)
SIZE = {"d": 128, "h": 4, "d_ff": 512, "n_layers": 2}
BUDGET = 1000          # positions per side in a batch (padding included)
WARMUP = 1000
STEPS = 4000
EVERY = 100            # a checkpoint every EVERY steps; the last KEEP are averaged
KEEP = 5
RUNS = HERE / "data" / "tatoeba_runs"           # one JSON per run of VARIANTS × seeds
RUN_STATES = pathlib.Path(os.environ.get("COURSE_RUN_STATES", HERE.parents[2] / ".runs")) / "tatoeba"
VARIANTS = {"recipe": {"eps_ls": 0.1, "p": 0.1},            # the shipped recipe
            "no_smoothing": {"eps_ls": 0.0, "p": 0.1},      # Table 3 row D: eps_ls 0
            "dropout_0.3": {"eps_ls": 0.1, "p": 0.3}}       # the big model's P_drop (Table 3)
RUN_SEEDS = (0, 1, 2)
RUN_MILESTONES = (500, 1000, 2000, 3000, 4000)
TEXT_AT = (2000, 3000, 4000)    # milestones whose decodings are stored (for bootstrap and chrF)


class Pair(NamedTuple):
    english: str
    french: str


# --- the data ------------------------------------------------------------------------------

SPACES = re.compile(r"[\s\u00a0\u2009\u202f]+")


def normalise(text):
    """Every kind of space (narrow no-break, thin, no-break) one plain space; the typographic
    apostrophes ’ and ‘ the ASCII one; no space at either end."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return SPACES.sub(" ", text).strip()


def read_lines(path=DATA):
    """The file's pairs as written: (English, French) tuples, in file order."""
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if line.strip()]


def load_pairs(path=DATA):
    """The distinct normalised pairs, as Pair(english, french), in file order."""
    seen, pairs = set(), []
    for english, french in read_lines(path):
        pair = Pair(normalise(english), normalise(french))
        if pair not in seen:
            seen.add(pair)
            pairs.append(pair)
    return pairs


def split_by_english(pairs, n_test, seed):
    """(train, test): n_test English sentences, drawn with random.Random(seed) from the sorted
    distinct English sentences (so the draw does not depend on the pairs' order); test = every
    pair of theirs, each once; train = the other pairs, less those whose French is a test
    reference. Both lists keep the pairs' order."""
    english = sorted({p[0] for p in pairs})
    chosen = set(random.Random(seed).sample(english, n_test))
    test = [p for p in pairs if p[0] in chosen]
    references = {p[1] for p in test}
    train = [p for p in pairs if p[0] not in chosen and p[1] not in references]
    return train, test


def split():
    """The shipped split, (train, dev, test) by English sentence: the N_TEST test sentences drawn
    from load_pairs(), then N_DEV development sentences drawn the same way from what they leave."""
    rest, test = split_by_english(load_pairs(), N_TEST, SEED)
    train, dev = split_by_english(rest, N_DEV, DEV_SEED)
    return train, dev, test


def references_of(pairs):
    """{English: [its French references, in file order]}, the English in first-seen order."""
    groups = {}
    for english, french in pairs:
        groups.setdefault(english, []).append(french)
    return groups


# --- words and pieces ----------------------------------------------------------------------

_WORD = re.compile(r"\w+(?:['\-]\w+)*'?|[^\w\s]")
NO_SPACE_BEFORE = {".", ",", ")", "'"}
FRENCH_SPACE_BEFORE = {"!", "?", ":", ";", "»"}


def words(text):
    """A sentence's words, punctuation apart: "Qu'est-ce que c'est ?" -> ["Qu'est-ce", "que",
    "c'est", "?"]."""
    return _WORD.findall(text)


def detokenize(tokens, french=True):
    """Words back to a sentence: no space before . , ) and after ( «; before ! ? : ; a space in
    French (its typography, as the normalised data writes it), none in English."""
    text = ""
    for token in tokens:
        glued = token in NO_SPACE_BEFORE or (not french and token in FRENCH_SPACE_BEFORE)
        if text and not glued and not text.endswith(("(", "«")):
            text += " "
        text += token
    return text


def texts(pairs):
    """The English and the French of each pair as words joined by spaces: what the merges learn."""
    return [" ".join(words(t)) for p in pairs for t in (p[0], p[1])]


def merges(train=None, n_merges=MERGES):
    """The byte-pair merges learnt on the training texts (helpers.bpe.learn_merges); for the
    shipped split (train None), the first n_merges of the shipped MERGES_FILE (learning 2,000
    merges takes about 2 minutes), made by ``python -m helpers.tasks.tatoeba --merges``."""
    if train is None and MERGES_FILE.exists() and n_merges <= MERGES:
        lines = MERGES_FILE.read_text(encoding="utf-8").splitlines()
        return [tuple(line.split(" ")) for line in lines[:n_merges]]
    train = split()[0] if train is None else train
    return bpe.learn_merges(texts(train), n_merges)


def write_merges(path=None):
    path = MERGES_FILE if path is None else pathlib.Path(path)
    learnt = bpe.learn_merges(texts(split()[0]), MERGES)
    path.write_text("".join(f"{a} {b}\n" for a, b in learnt), encoding="utf-8")
    return path


class Pieces:
    """Sentences to pieces and back, with a shared vocabulary of the training pieces plus <unk>."""

    def __init__(self, learnt, train):
        self.segmenter = bpe.Segmenter(learnt)
        known = {piece for text in texts(train) for word in text.split()
                 for piece in self.segmenter.word(word)}
        self.vocab = Vocabulary([*known, UNK])

    def pieces(self, text):
        return self.segmenter.pieces(" ".join(words(text)))

    def ids(self, text):
        unk = self.vocab.stoi[UNK]
        return [self.vocab.stoi.get(piece, unk) for piece in self.pieces(text)]

    def text(self, ids, french=True):
        """Ids (maybe starting with <s>, up to </s>) -> the sentence."""
        joined = bpe.Segmenter.join(self.vocab.decode(ids))
        return detokenize(joined.split(), french)


def pieces_for(train=None, n_merges=MERGES):
    """Pieces of the shipped split's merges (train None) or of merges learnt on train."""
    return Pieces(merges(train, n_merges), split()[0] if train is None else train)


# --- batches ---------------------------------------------------------------------------------

def encode_pairs(pairs, pieces):
    """Pairs -> (source ids, target ids) lists."""
    return [(pieces.ids(p[0]), pieces.ids(p[1])) for p in pairs]


def lengths(pair):
    """The columns an encoded pair needs in src and in tgt_out (its target + </s>)."""
    return len(pair[0]), len(pair[1]) + 1


def tensors(encoded):
    """Encoded pairs -> src, tgt_in, tgt_out padded at the end (09's pipeline:
    helpers.tasks.numbers.padded; the name notebook 11 imports)."""
    return numbers.padded(encoded)


def batches(encoded, generator, budget=BUDGET):
    """A function returning the next training batch: the token batches of helpers.distributed
    (pairs sorted by length, at most `budget` positions per side), as tensors, made once; each
    epoch visits them all in a new random order."""
    made = [tensors(b) for b in token_batches(encoded, budget, lengths)]
    order = []

    def next_batch():
        if not order:
            order.extend(torch.randperm(len(made), generator=generator).tolist())
        return made[order.pop()]
    next_batch.order = order            # the batches left in this epoch (saved by a resumable run)
    return next_batch


# --- the model, decoding, scores ---------------------------------------------------------------

def new_model(n_vocab, p=0.1):
    return Transformer(vocab=n_vocab, p=p, **SIZE)


def load_model(pieces, path=None):
    """The shipped model (float16 on disk) as float32, in eval mode."""
    path = CHECKPOINTS / MODEL if path is None else path
    model = new_model(len(pieces.vocab))
    state = torch.load(path, weights_only=True)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.eval()


@torch.no_grad()
def translate(model, english, pieces, beam=1, chunk=100, greedy=greedy_decode, search=beam_search):
    """English sentences -> (French sentences, how many of them ran to the length limit):
    greedy (beam=1, at most input + 50 pieces) or beam search (k = beam, α 0.6, input + 50).
    greedy and search: the decoding functions (another kind of model brings its own)."""
    out, looped = [], 0
    for i in range(0, len(english), chunk):
        part = english[i: i + chunk]
        src = tensors([(pieces.ids(e), []) for e in part])[0]
        if beam == 1:
            ys = greedy(model, src, max_len=int((src != PAD).sum(1).max()) + 50)
        else:
            ys = search(model, src, k=beam, alpha=0.6, extra=50)
        for row, n_src in zip(ys.tolist(), (src != PAD).sum(1).tolist(), strict=True):
            written = row[1:]
            if EOS not in written[: n_src + 50]:
                looped += 1
            out.append(pieces.text(written[: n_src + 50]))
    return out, looped


def bleu_all(hypotheses, references):
    """sacrebleu's BLEU with its defaults (13a tokenizer, exp smoothing) against every reference
    of each sentence (references: a list of lists of strings); None without sacrebleu."""
    try:
        import sacrebleu
    except ImportError:
        return None
    most = max(len(r) for r in references)
    streams = [[r[j] if j < len(r) else None for r in references] for j in range(most)]
    return sacrebleu.corpus_bleu(hypotheses, streams).score


def bleu_first(hypotheses, references):
    """sacrebleu's BLEU with its defaults against the first reference of each sentence."""
    return sacrebleu_score(hypotheses, [r[0] for r in references], tokenize="13a", smooth_method="exp")


def teacher_forced(encoded):
    """Encoded pairs -> (the model's inputs, the labels): ((src, tgt_in), tgt_out), 09's pipeline."""
    src, tgt_in, tgt_out = tensors(encoded)
    return (src, tgt_in), tgt_out


@torch.no_grad()
def perplexity(model, encoded, budget=BUDGET, batch=teacher_forced):
    """exp of the mean cross-entropy per target token (no smoothing), teacher forced, eval mode.
    batch: encoded pairs -> (the model's inputs, the labels), PAD where nothing is scored (another
    kind of model, notebook 12's, brings its own)."""
    total = count = 0.0
    for b in token_batches(encoded, budget, lengths):
        inputs, labels = batch(b)
        n = int((labels != PAD).sum())
        total += cross_entropy(model, *inputs, labels, PAD) * n
        count += n
    return math.exp(total / count)


@torch.no_grad()
def sentence_losses(model, pairs, pieces, chunk=64, batch=teacher_forced):
    """For each English sentence of pairs (first-seen order): [the summed cross-entropy of all its
    references' target tokens, their number] (teacher forced, eval mode, no smoothing), so that a
    bootstrap over sentences can recompute the perplexity of any draw. batch: as perplexity's."""
    model.eval()
    index = {e: i for i, e in enumerate(references_of(pairs))}
    sums = [[0.0, 0] for _ in index]
    for i in range(0, len(pairs), chunk):
        part = pairs[i: i + chunk]
        inputs, labels = batch(encode_pairs(part, pieces))
        logits = model(*inputs)
        nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=PAD,
                                                reduction="none").double().sum(1)
        for pair, loss, n in zip(part, nll.tolist(), (labels != PAD).sum(1).tolist(), strict=True):
            sums[index[pair[0]]][0] += loss
            sums[index[pair[0]]][1] += n
    return sums


def exact_share(hypotheses, references):
    """The share of hypotheses equal to one of their references (after 13a tokenization)."""
    return sum(tuple(tokenize_13a(h)) in {tuple(tokenize_13a(r)) for r in refs}
               for h, refs in zip(hypotheses, references, strict=True)) / len(hypotheses)


def recipe(eps_ls, p=0.1):
    return {"model": SIZE, "dropout": p, "label_smoothing": eps_ls, "adam": [0.9, 0.98, 1e-9],
            "warmup": WARMUP, "budget": BUDGET, "merges": MERGES, "checkpoints_every": EVERY,
            "averaged": KEEP}


# --- the development runs: VARIANTS x RUN_SEEDS, chosen on dev, resumable ----------------------

def world():
    """The shipped split and its pieces, made once for a run."""
    train_pairs, dev, test = split()
    return {"split": (train_pairs, dev, test), "pieces": pieces_for()}


def measured(model, pieces, pairs, text=True, losses=True, batch=teacher_forced, greedy=greedy_decode,
             search=beam_search):
    """A model's perplexity on pairs and its greedy and beam-4 decodings of their English sentences
    (each once, first-seen order): {"perplexity", "greedy": {"looped", "bleu_all", "text"}, "beam":
    ...}; with text (and losses), also each sentence's "losses" (sentence_losses). batch, greedy and
    search: another kind of model's (notebook 12's) teacher-forced form and decoders."""
    model.eval()
    english = list(references_of(pairs))
    row = {"perplexity": perplexity(model, encode_pairs(pairs, pieces), batch=batch)}
    if text and losses:
        row["losses"] = sentence_losses(model, pairs, pieces, batch=batch)
    for name, k in (("greedy", 1), ("beam", 4)):
        out, looped = translate(model, english, pieces, beam=k, greedy=greedy, search=search)
        row[name] = {"looped": looped, "bleu_all": bleu_all(out, list(references_of(pairs).values()))}
        if text:
            row[name]["text"] = out
    return row


def decodings(state, pieces, pairs, p, text=True):
    """measured() for a state dict of the model with dropout p (text: the decodings and each
    sentence's losses too)."""
    model = new_model(len(pieces.vocab), p)
    model.load_state_dict(state)
    return measured(model, pieces, pairs, text)


def setup(variant, seed, pieces, train_pairs):
    """What run_variant trains, in its order (seed_all, the batch generator, the model, Adam with
    warmup, the loss, the batches): (model, opt, sched, loss_fn, next_batch, generator)."""
    cfg = VARIANTS[variant]
    seed_all(seed)
    gen = torch.Generator().manual_seed(seed)
    model = new_model(len(pieces.vocab), cfg["p"])
    opt, sched = adam_with_warmup(model, d_model=SIZE["d"], warmup=WARMUP)
    loss_fn = smoothed_loss(PAD, cfg["eps_ls"])
    next_batch = batches(encode_pairs(train_pairs, pieces), gen)
    return model, opt, sched, loss_fn, next_batch, gen


def run_variant(variant, seed, steps=STEPS, threads=1, states=RUN_STATES, out=RUNS, world=None):
    """One run of VARIANTS[variant] with this seed: the shipped recipe otherwise. Measured on the
    development split at RUN_MILESTONES (perplexity, greedy and beam of the last and the averaged
    weights; the decodings kept at TEXT_AT); resumable from states/<variant>_s<seed>. Writes
    out/<variant>_s<seed>.json, and for the shipped run (recipe, seed 0) the averaged model."""
    torch.set_num_threads(threads)
    w = world() if world is None else world
    train_pairs, dev, _ = w["split"]
    pieces, cfg = w["pieces"], VARIANTS[variant]
    name = f"{variant}_s{seed}"
    model, opt, sched, loss_fn, next_batch, gen = setup(variant, seed, pieces, train_pairs)

    def step(batch):
        return train_step(model, opt, sched, loss_fn, *batch)

    def on_milestone(done, last, averaged, seconds):
        text = done in TEXT_AT
        if variant == "recipe" and done == 2000:      # notebook 12 compares at 2,000 steps
            torch.save({k: v.half() for k, v in averaged.items()},
                       pathlib.Path(states) / name / "averaged_2000.pt")
        row = {"step": done, "minutes": seconds / 60,
               "last": decodings(last, pieces, dev, cfg["p"], text),
               "averaged": decodings(averaged, pieces, dev, cfg["p"], text)}
        print(name, done, summary(row), flush=True)
        return row

    rows, averaged, losses, seconds = train_resumable(
        pathlib.Path(states) / name, model, opt, sched, step, next_batch, gen, steps, every=EVERY,
        keep=KEEP, milestones=RUN_MILESTONES, on_milestone=on_milestone)
    result = {"variant": variant, "seed": seed, "steps": steps,
              "recipe": recipe(cfg["eps_ls"], cfg["p"]),
              "threads": threads, "torch": torch.__version__, "train_loss_per_100": losses,
              "minutes": seconds / 60, "milestones": rows}
    pathlib.Path(out).mkdir(parents=True, exist_ok=True)
    (pathlib.Path(out) / f"{name}.json").write_text(json.dumps(result) + "\n")
    if variant == "recipe" and seed == 0:      # the shipped model
        torch.save({k: v.half() for k, v in averaged.items()}, CHECKPOINTS / MODEL)
    return result


def load_runs(folder=RUNS):
    """{"variant_sN": the run's JSON} for every finished run in folder."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(pathlib.Path(folder).glob("*.json"))}


def run_queue(names, threads=1, states=RUN_STATES, out=RUNS):
    """Work down the list of runs ("variant_sN"), skipping those another process has or finished."""
    w = world()
    work_down(names, lambda variant, seed: run_variant(variant, seed, threads=threads, states=states,
                                                       out=out, world=w), states, out)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Notebook 11's merges, runs and shipped model.")
    parser.add_argument("--merges", action="store_true",
                        help=f"learn the {MERGES:,} merges on the training split's texts (about 2 min): "
                        "helpers/tasks/data/tatoeba_merges.txt")
    parser.add_argument("--runs", nargs="*", metavar="VARIANT_sSEED",
                        help="train these runs (default: every variant for seeds 0-2, seed by seed), "
                        f"{STEPS:,} steps each on one thread, measured on the development split, "
                        "resumable; two commands at once share the list. Writes "
                        "helpers/tasks/data/tatoeba_runs/ and, for recipe_s0, the shipped model")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if not (args.merges or args.runs is not None):
        parser.error("nothing to do: pass --merges and/or --runs")
    if args.merges:
        print(f"wrote {write_merges()}")
    if args.runs is not None:
        run_queue(args.runs or [f"{v}_s{s}" for s in RUN_SEEDS for v in VARIANTS], threads=args.threads)


if __name__ == "__main__":
    main()
