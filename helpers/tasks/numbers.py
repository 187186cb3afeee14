"""The task of notebooks 09 and 10: English number words -> French number words, for 1-999,999.

"seventy-one" -> "soixante et onze", "two hundred" -> "deux cents", "ninety-seven" ->
"quatre-vingt-dix-sept", as the ``num2words`` library writes them. The pairs are shipped in
``helpers/tasks/data/numbers_en_fr.tsv`` (so the notebook needs neither num2words nor a download),
made by

    python -m helpers.tasks.numbers --make-data

with one row per number: its split, the number, the English and the French. The split is by
number: no test number is ever in the training rows.

- ``tokenize(text)`` / ``detokenize(tokens)``: words, with hyphens and commas as tokens of their
  own, and back to the same text.
- ``vocabulary(pairs)``: one ``helpers.vocabulary.Vocabulary`` for both languages (the paper
  shares one between source and target, §3.4): ``<pad>`` 0, ``<s>`` 1, ``</s>`` 2, then every
  word of the data, sorted.
- ``load_pairs(split)``: the shipped rows of one split as ``Pair(number, english, french)``.
- ``make_batch(pairs, vocab)``: pairs of token lists -> padded ``src``, ``tgt_in`` (``<s>`` +
  target) and ``tgt_out`` (target + ``</s>``); ``training_batches``: batches of one number of digits.
- ``rule_of_mistake``: what a wrong translation gets wrong (a rule of French numbers, a loop, a
  digit word, a misplaced group); ``hits_limit``: outputs that never wrote ``</s>``.
- ``attention_maps``: every attention's weights, head by head; ``mean_weight``: how much a kind
  of token reads another, head by head.
- ``train_numbers``: the notebook's training run; the second model of the notebook, trained on the
  numbers below 100,000 only, is shipped in ``helpers/tasks/checkpoints/numbers_below_100000.pt``, made by

      python -m helpers.tasks.numbers --save-model

  and the model on byte-pair pieces, ``numbers_bpe_50.pt``, by ``--save-bpe-model``.
"""

import argparse
import pathlib
import random
import re
import time
from typing import NamedTuple

import torch

from helpers import bpe, seed_all
from helpers.model import Transformer
from helpers.recipe import adam_with_warmup, average_weights, smoothed_loss, train
from helpers.tasks.reversal import TINY, load_tiny
from helpers.vocabulary import BOS, EOS, PAD, SPECIALS, Vocabulary  # noqa: F401  (re-exported)

DATA = pathlib.Path(__file__).resolve().parent / "data" / "numbers_en_fr.tsv"
BELOW = 100_000             # the second model trains on numbers below this, and is tested above
SEED = 2017                 # the draw of the shipped split
# numbers the notebook looks at closely: always in the test split, never trained on
SHOWN = (71_080, 97, 201)
# how many numbers of each number of digits: (test, train); None = all the others
P_ZERO = 0.25            # how often a digit of a training number (after the first) is 0
PLAN = {1: (2, None), 2: (10, None), 3: (100, None), 4: (200, 4_000), 5: (300, 8_000), 6: (400, 8_000)}


class Pair(NamedTuple):
    number: int
    english: str
    french: str


# --- tokens ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\s,\-]+|[,\-]")


def tokenize(text):
    """'two hundred thousand, ninety-one' -> ['two', 'hundred', 'thousand', ',', 'ninety', '-', 'one']."""
    return _TOKEN.findall(text)


def detokenize(tokens):
    """The inverse of tokenize: a hyphen joins its neighbours, a comma sticks to the word before."""
    text = ""
    for token in tokens:
        if token in ("-", ","):
            text += token
        else:
            text += ("" if not text or text.endswith("-") else " ") + token
    return text


# --- the vocabulary -------------------------------------------------------------------------

def vocabulary(pairs=None):
    """The shared vocabulary of every token in pairs (by default the shipped training rows)."""
    pairs = load_pairs("train") if pairs is None else pairs
    return Vocabulary(t for p in pairs for text in (p.english, p.french) for t in tokenize(text))


# --- the shipped split ----------------------------------------------------------------------

def read_rows(path=DATA):
    """Every row of the data file: (split, Pair)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == ["split", "number", "english", "french"], header
        for line in f:
            split, number, english, french = line.rstrip("\n").split("\t")
            rows.append((split, Pair(int(number), english, french)))
    return rows


def load_pairs(split, path=DATA, below=None):
    """The rows of one split ("train" or "test") as Pairs, in file order; with `below`, only the
    numbers below it."""
    return [p for s, p in read_rows(path) if s == split and (below is None or p.number < below)]


def split_numbers(seed=SEED, p_zero=P_ZERO):
    """The numbers of the two splits: {"train": [...], "test": [...]}, each sorted.

    For each number of digits, PLAN gives how many test numbers (drawn uniformly, the SHOWN
    numbers always among them) and how many training numbers: all the others for 1 to 3
    digits; for 4 to 6 digits, numbers whose digits after the first are 0 with probability
    p_zero (1/10 in a uniform draw), so that round numbers, where most French rules apply
    (cents, quatre-vingts, mille alone), are common enough to be learnt. Never the same
    number twice, and never a test number in training.
    """
    rng = random.Random(seed)
    train, test = [], []
    for digits, (n_test, n_train) in PLAN.items():
        low, high = 10 ** (digits - 1), 10 ** digits
        shown = [n for n in SHOWN if low <= n < high]
        pool = [n for n in range(low, high) if n not in shown]
        drawn = shown + rng.sample(pool, n_test - len(shown))
        test += drawn
        taken = set(drawn)
        if n_train is None:
            train += [n for n in range(low, high) if n not in taken]
            continue
        chosen = []
        while len(chosen) < n_train:
            n = rng.randint(1, 9)
            for _ in range(digits - 1):
                n = 10 * n + (0 if rng.random() < p_zero else rng.randint(1, 9))
            if n not in taken:
                taken.add(n)
                chosen.append(n)
        train += chosen
    return {"train": sorted(train), "test": sorted(test)}


def make_rows(seed=SEED):
    """The data file's lines (header first), with num2words writing every number."""
    from num2words import num2words

    lines = ["split\tnumber\tenglish\tfrench"]
    for split, numbers in split_numbers(seed).items():
        for n in numbers:
            lines.append(f"{split}\t{n}\t{num2words(n, lang='en')}\t{num2words(n, lang='fr')}")
    return lines


def write_data(path=DATA, seed=SEED):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(make_rows(seed)) + "\n", encoding="utf-8")
    return path


# --- batches --------------------------------------------------------------------------------

def make_batch(pairs, vocab):
    """pairs: (source tokens, target tokens) -> src, tgt_in, tgt_out, long tensors padded with
    <pad> at the end: src (batch, longest source); tgt_in = <s> + target and tgt_out = target +
    </s>, both (batch, longest target + 1)."""
    return padded([(vocab.encode(s), vocab.encode(t)) for s, t in pairs])


def padded(encoded):
    """encoded: (source ids, target ids) pairs -> src, tgt_in, tgt_out as make_batch makes them."""
    n_src = max(len(s) for s, _ in encoded)
    n_tgt = max(len(t) for _, t in encoded) + 1
    src = torch.full((len(encoded), n_src), PAD)
    tgt_in = torch.full((len(encoded), n_tgt), PAD)
    tgt_out = torch.full((len(encoded), n_tgt), PAD)
    for row, (s, t) in enumerate(encoded):
        src[row, : len(s)] = torch.tensor(s, dtype=torch.long)
        tgt_in[row, : len(t) + 1] = torch.tensor([BOS, *t])
        tgt_out[row, : len(t) + 1] = torch.tensor([*t, EOS])
    return src, tgt_in, tgt_out


def token_pairs(pairs):
    """Pairs -> (English tokens, French tokens), the form make_batch takes."""
    return [(tokenize(p.english), tokenize(p.french)) for p in pairs]


def digits(n):
    """How many digits n has: 71,080 -> 5."""
    return len(str(n))


# how often a training batch holds numbers of each number of digits (see training_batches)
DIGIT_WEIGHTS = {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3}


def training_batches(pairs, vocab, size, generator, weights=DIGIT_WEIGHTS, tokens=token_pairs):
    """A function that returns a new random training batch of `size` pairs at each call.

    Batched by approximate length, as the paper does (§5.1): each batch holds numbers of one
    number of digits (so of similar lengths, and little padding), drawn with `weights` (longer
    numbers more often: there are more of them and they are harder), then `size` random
    pairs of that many digits. The pairs are turned into ids once; a batch is rows of them.
    tokens: pairs -> (source tokens, target tokens), token_pairs by default (words; helpers.bpe's
    Segmenter.piece_pairs gives byte-pair pieces).
    """
    groups = {}
    for p in pairs:
        groups.setdefault(digits(p.number), []).append(p)
    keys = sorted(d for d in groups if weights.get(d, 0) > 0)
    w = torch.tensor([float(weights[d]) for d in keys])
    tensors = {d: make_batch(tokens(groups[d]), vocab) for d in keys}

    def next_batch():
        d = keys[int(torch.multinomial(w, 1, generator=generator))]
        src, tgt_in, tgt_out = tensors[d]
        rows = torch.randint(len(src), (size,), generator=generator)
        src, tgt_in, tgt_out = src[rows], tgt_in[rows], tgt_out[rows]
        n_src, n_tgt = int((src != PAD).sum(1).max()), int((tgt_out != PAD).sum(1).max())
        return src[:, :n_src], tgt_in[:, :n_tgt], tgt_out[:, :n_tgt]
    return next_batch


# --- the rules of French numbers, for grouping a model's mistakes ------------------------------

RULES = ["the s of vingts and cents", "et in 21, 31, ..., 71", "70 to 99 (base 20)",
         "a word repeated (a loop)", "another digit word", "cent, mille or the end misplaced"]
IRREGULAR = RULES[:3]       # the rules that make French numbers irregular; the others are not rules
LOOP = 3                    # a word (or words) written this many times in a row: no French number does


def first_difference(right, wrong):
    """The index of the first token where two token lists differ (the shorter's length if one
    is the start of the other), or None if they are equal."""
    for i, (a, b) in enumerate(zip(right, wrong, strict=False)):
        if a != b:
            return i
    return None if len(right) == len(wrong) else min(len(right), len(wrong))


def repeats(tokens, times=LOOP):
    """True when some word, or some run of up to 3 words, comes `times` times in a row (hyphens
    and commas aside), as in "quarante quarante quarante" or "neuf cent neuf cent neuf cent": no
    French number does it."""
    words = [t for t in tokens if t not in ("-", ",")]
    for n in (1, 2, 3):
        for i in range(len(words) - n * times + 1):
            if all(words[i + k * n: i + (k + 1) * n] == words[i: i + n] for k in range(1, times)):
                return True
    return False


def parts(number, tokens):
    """The part of the number each French token writes: ("tens", group), ("hundreds", group),
    "cent" or "mille", where group is the three-digit group (number // 1000 before "mille",
    number % 1000 after). "tens" is the last two digits of a group, hyphens included
    ("quatre-vingt-dix-sept"); "hundreds" the digit word before "cent"."""
    before = "mille" in tokens
    labels = []
    for i, token in enumerate(tokens):
        group = number // 1000 if before else number % 1000
        if token == "mille":
            labels.append("mille")
            before = False
        elif token in ("cent", "cents"):
            labels.append("cent")
        elif i + 1 < len(tokens) and tokens[i + 1] in ("cent", "cents"):
            labels.append(("hundreds", group))
        else:
            labels.append(("tens", group))
    return labels


def rule_of_mistake(number, right, wrong):
    """What a wrong translation gets wrong (right and wrong are token lists): one of RULES.

    A loop is a word repeated (``repeats``). Otherwise the mistake is judged at the first token
    where the two differ, in the part of the number that token writes (``parts``): a missing or
    extra s of cent/vingt, a missing or extra et, a group whose last two digits are 70 to 99
    written wrong (base 20), another tens, units or hundreds word wrong, or a cent, a mille or
    the end in the wrong place (a group left out, added or stopped early)."""
    if repeats(wrong):
        return RULES[3]
    i = first_difference(right, wrong)
    a = right[i] if i < len(right) else "</s>"
    b = wrong[i] if i < len(wrong) else "</s>"
    pair = {a, b}
    if pair in ({"cent", "cents"}, {"vingt", "vingts"}):
        return RULES[0]
    if "et" in pair:
        return RULES[1]
    labels = parts(number, right)
    if a == "-" or (b == "-" and i > 0):    # a compound cut short or written on: its own part
        part = labels[i] if a == "-" else labels[i - 1]
    elif b in ("</s>", "cent", "cents", "mille"):   # stopped early, or a group word out of place
        part = "end"
    else:
        part = labels[i] if i < len(right) else "end"
    if part in ("cent", "mille", "end"):
        return RULES[5]
    kind, group = part
    if kind == "tens" and 70 <= group % 100 <= 99:
        return RULES[2]
    return RULES[4]


def hits_limit(outputs):
    """(batch,) booleans: the decoded rows (ids, starting with <s>) that never wrote </s>, so ran
    on to the length limit."""
    return ~(outputs == EOS).any(1)


# --- what each attention reads ----------------------------------------------------------------

@torch.no_grad()
def attention_maps(model, src, tgt_in):
    """Every attention's weights, head by head, with the decoder reading tgt_in (teacher forcing):
    {"encoder": [(batch, h, n_src, n_src) per layer], "decoder": [(batch, h, n_tgt, n_tgt)],
    "cross": [(batch, h, n_tgt, n_src)]}. Rows are the reading positions, columns the read ones."""
    from helpers.model import keep_attention_weights

    keep_attention_weights(model)
    try:
        model(src, tgt_in)
        return {"encoder": [layer.self_attn.weights for layer in model.encoder_layers],
                "decoder": [layer.self_attn.weights for layer in model.decoder_layers],
                "cross": [layer.cross_attn.weights for layer in model.decoder_layers]}
    finally:
        keep_attention_weights(model, False)


def mean_weight(weights, tokens, reader, read):
    """The mean weight, head by head, that a reading token gives the tokens it reads, over a batch.

    weights: one layer's (batch, h, n, n) self-attention; tokens: each row's tokens (lists);
    reader(t, i) says whether position i of the tokens t reads, read(t, i) the positions it reads
    (their weights added). Returns (h,): the mean over every reading position of the batch (NaN
    if there is none)."""
    pick = torch.zeros(weights.shape[0], weights.shape[2], weights.shape[3])
    for row, t in enumerate(tokens):
        for i in range(len(t)):
            if reader(t, i):
                pick[row, i, read(t, i)] = 1.0
    readers = int((pick.sum(-1) > 0).sum())
    return torch.einsum("bhij,bij->h", weights.float(), pick) / readers if readers else \
        torch.full((weights.shape[1],), float("nan"))


# --- training (the notebook's training cell as a function) and the shipped second model -------

STEPS, BATCH, WARMUP = 1000, 64, 400
CHECKPOINTS = pathlib.Path(__file__).resolve().parent / "checkpoints"
BELOW_MODEL = "numbers_below_100000.pt"


def train_numbers(pairs, vocab, seed=0, steps=STEPS, weights=DIGIT_WEIGHTS, progress=True,
                  tokens=token_pairs):
    """Notebook 09's training run: one thread, the tiny model, the paper's recipe (Adam with
    warmup 400, dropout 0.1, label smoothing 0.1), `steps` batches of 64 from training_batches,
    the last 5 checkpoints (every 100 steps) averaged. Returns (averaged model in eval mode,
    history of helpers.recipe.train). tokens: as in training_batches."""
    torch.set_num_threads(1)
    seed_all(seed)
    gen = torch.Generator().manual_seed(seed)
    model = Transformer(vocab=len(vocab), p=0.1, **TINY)
    opt, sched = adam_with_warmup(model, d_model=TINY["d"], warmup=WARMUP)
    history = train(model, opt, sched, smoothed_loss(PAD), steps=steps,
                    next_batch=training_batches(pairs, vocab, BATCH, gen, weights, tokens), every=100, keep=5,
                    progress=progress)
    model.load_state_dict(average_weights(history["checkpoints"]))
    return model.eval(), history


def train_below_model(folder=CHECKPOINTS, seed=0, progress=True):
    """The second model of notebook 09: the same run on the training numbers below 100,000 only
    (1 to 5 digits), saved as a state dict in folder/BELOW_MODEL. Returns the model."""
    vocab = vocabulary()
    pairs = load_pairs("train", below=BELOW)
    weights = {d: w for d, w in DIGIT_WEIGHTS.items() if d < 6}
    model, _ = train_numbers(pairs, vocab, seed=seed, weights=weights, progress=progress)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / BELOW_MODEL)
    return model


def bpe_model_name(n_merges=bpe.MERGES):
    return f"numbers_bpe_{n_merges}.pt"


def train_bpe_model(n_merges=bpe.MERGES, folder=CHECKPOINTS, seed=0, progress=True):
    """Notebook 09's training run (train_numbers: same recipe, same steps) on the training
    numbers cut into pieces by n_merges merges learnt from their texts; saves the averaged
    model's state dict as folder/bpe_model_name(n_merges). Returns (model, segmenter, vocab)."""
    pairs = load_pairs("train")
    segmenter = bpe.Segmenter(bpe.learn_merges(bpe.texts_of(pairs), n_merges))
    vocab = segmenter.vocabulary(pairs)
    model, _ = train_numbers(pairs, vocab, seed=seed, progress=progress, tokens=segmenter.piece_pairs)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / bpe_model_name(n_merges))
    return model, segmenter, vocab


def load_model(path, vocab):
    """A tiny Transformer for this vocabulary with the state dict saved at path, in eval mode."""
    return load_tiny(path, len(vocab))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Notebook 09's data and its two shipped models.")
    parser.add_argument("--make-data", action="store_true",
                        help="write helpers/tasks/data/numbers_en_fr.tsv with num2words")
    parser.add_argument("--out", default=str(DATA), help="where to write it (default: %(default)s)")
    parser.add_argument("--save-model", metavar="FOLDER", nargs="?", const=str(CHECKPOINTS),
                        help=f"train the model of numbers below 100,000 and save it as FOLDER/{BELOW_MODEL} "
                        "(default folder: helpers/tasks/checkpoints)")
    parser.add_argument("--save-bpe-model", metavar="FOLDER", nargs="?", const=str(CHECKPOINTS),
                        help="train the model on byte-pair pieces and save it as "
                        "FOLDER/numbers_bpe_<merges>.pt (default folder: helpers/tasks/checkpoints)")
    parser.add_argument("--merges", type=int, default=bpe.MERGES,
                        help="the merge count of --save-bpe-model (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the training seed (default 0)")
    args = parser.parse_args(argv)
    if not (args.make_data or args.save_model or args.save_bpe_model):
        parser.error("nothing to do: pass --make-data, --save-model and/or --save-bpe-model")
    if args.make_data:
        path = write_data(args.out)
        rows = read_rows(path)
        counts = {s: sum(1 for split, _ in rows if split == s) for s in ("train", "test")}
        print(f"wrote {path} ({path.stat().st_size:,} bytes): {counts['train']:,} training and "
              f"{counts['test']:,} test numbers")
    if args.save_model:
        train_below_model(args.save_model, seed=args.seed)
        path = pathlib.Path(args.save_model) / BELOW_MODEL
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    if args.save_bpe_model:
        start = time.time()
        _, _, vocab = train_bpe_model(args.merges, args.save_bpe_model, seed=args.seed)
        path = pathlib.Path(args.save_bpe_model) / bpe_model_name(args.merges)
        print(f"wrote {path} ({path.stat().st_size:,} bytes; {len(vocab)} tokens) "
              f"in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
