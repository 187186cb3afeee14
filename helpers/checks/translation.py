"""Checks for notebook 09 (translation): the data pipeline, BLEU, and the questions of "Check your
understanding"."""

import math
from collections import Counter

import torch

from helpers import bleu as course_bleu
from helpers.tasks import numbers
from helpers.checks import ALL, Hint, Passed, call, checker, choice, choices, exercise, number
from helpers.tasks.reversal import BOS, EOS, PAD

# --- Your turn 1: pairs -> src, tgt_in, tgt_out -----------------------------------------------

BATCH = "my_make_batch(pairs, vocab)"

# (English, French) of the check's batches: short and long, one word and nineteen tokens
CHECK_PAIRS = [
    [("seventy-one", "soixante et onze"), ("two hundred", "deux cents"),
     ("nine hundred and ninety-nine thousand, nine hundred and ninety-nine",
      "neuf cent quatre-vingt-dix-neuf mille neuf cent quatre-vingt-dix-neuf"), ("six", "six")],
    [("eighty thousand", "quatre-vingt mille"), ("four", "quatre"),
     ("twenty-one thousand and one", "vingt et un mille un")],
]


def _pairs(texts):
    return [(numbers.tokenize(en), numbers.tokenize(fr)) for en, fr in texts]


def _batch_mistakes(pairs, vocab):
    """(hint, (src, tgt_in, tgt_out)) of each typical mistake, computed from the pairs."""
    def build(src_of, tin_of, tout_of, side="end", pad=PAD):
        rows = [(src_of(s, t), tin_of(s, t), tout_of(s, t)) for s, t in pairs]
        out = []
        for k in range(3):
            seqs = [r[k] for r in rows]
            n = max(len(x) for x in seqs)
            padded = [(x + [pad] * (n - len(x))) if side == "end" else ([pad] * (n - len(x)) + x)
                      for x in seqs]
            out.append(torch.tensor(padded, dtype=torch.long))
        return tuple(out)

    def ids(tokens):
        return vocab.encode(tokens)

    right = (lambda s, t: ids(s), lambda s, t: [BOS, *ids(t)], lambda s, t: [*ids(t), EOS])
    yield ("tgt_in and tgt_out are swapped: the decoder reads <s> + target (tgt_in) and must write "
           "target + </s> (tgt_out).", build(right[0], right[2], right[1]))
    yield ("Source and target are swapped: src is the English, the target is the French.",
           build(lambda s, t: ids(t), lambda s, t: [BOS, *ids(s)], lambda s, t: [*ids(s), EOS]))
    yield ("The padding is at the start of the rows: the course's model expects it at the end "
           "(<pad> after the last real token), as in notebook 05.", build(*right, side="start"))
    yield ("tgt_in has no <s>: the decoder input is the target shifted right, <s> first.",
           build(right[0], lambda s, t: ids(t), right[2]))
    yield ("tgt_out has no </s>: the decoder must learn to write </s> after the last word, or it "
           "never stops.", build(right[0], right[1], lambda s, t: ids(t)))
    yield ("tgt_in ends with </s> too: tgt_in = <s> + target only (the decoder never reads </s>), "
           "tgt_out = target + </s>.", build(right[0], lambda s, t: [BOS, *ids(t), EOS], right[2]))
    yield ("tgt_out starts with <s>: tgt_out = target + </s>, the target shifted one to the left "
           "of tgt_in.", build(right[0], right[1], lambda s, t: [BOS, *ids(t), EOS]))
    yield ("src has <s> and </s>: in this course the source is the English tokens alone, as in "
           "notebook 05.", build(lambda s, t: [BOS, *ids(s), EOS], right[1], right[2]))
    yield ("src starts with <s>: in this course the source is the English tokens alone.",
           build(lambda s, t: [BOS, *ids(s)], right[1], right[2]))
    yield ("src ends with </s>: in this course the source is the English tokens alone.",
           build(lambda s, t: [*ids(s), EOS], right[1], right[2]))
    for pad, name in ((EOS, "</s>"), (-100, "-100")):
        yield (f"The padding is {name}: pad with <pad> (id {PAD}), the id the masks and the loss ignore.",
               build(*right, pad=pad))


def _sliced(pairs, vocab):
    """The batch as <s> t </s> padded, then sliced: tgt_in = full[:, :-1], tgt_out = full[:, 1:].
    Its tgt_in holds </s> where make_batch's holds <pad> (in rows shorter than the longest), at a
    position whose tgt_out is <pad>: the loss skips it and the causal mask hides it from every real
    position, so the model trains exactly as on make_batch's tensors."""
    src, _, _ = numbers.make_batch(pairs, vocab)
    rows = [[BOS, *vocab.encode(t), EOS] for _, t in pairs]
    n = max(len(r) for r in rows)
    full = torch.tensor([r + [PAD] * (n - len(r)) for r in rows], dtype=torch.long)
    return src, full[:, :-1], full[:, 1:]


def _as_three(out):
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        kind = f"a {type(out).__name__} of {len(out)} items" if isinstance(out, (tuple, list)) else \
            f"a {type(out).__name__}"
        raise Hint(f"my_make_batch should return three tensors (src, tgt_in, tgt_out), got {kind}.")
    names = ("src", "tgt_in", "tgt_out")
    result = []
    for name, t in zip(names, out, strict=True):
        if isinstance(t, (list, tuple)):
            raise Hint(f"{name} should be a tensor, got a {type(t).__name__}: turn the padded rows into "
                       "one tensor with torch.tensor(rows).")
        if not isinstance(t, torch.Tensor):
            raise Hint(f"{name} should be a tensor of token ids, got {type(t).__name__}.")
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise Hint(f"{name} has dtype {t.dtype}: token ids are whole numbers (torch.long), which "
                       "the embedding needs.")
        if t.dtype != torch.long:
            raise Hint(f"{name} has dtype {t.dtype}: token ids must be torch.long (int64). The "
                       "embedding takes indices of type long or int32 only (uint8 fails there), the "
                       "loss (cross-entropy) targets of type long (int32 fails there): torch.long fits "
                       "both. torch.tensor(rows) of Python ints gives it, or add dtype=torch.long.")
        if t.dim() != 2:
            raise Hint(f"{name} should have 2 axes (batch, positions), got shape {tuple(t.shape)}.")
        result.append(t.long())
    return result


def _same(a, b):
    return tuple(a.shape) == tuple(b.shape) and bool((a == b).all())


def _show(vocab, row):
    return " ".join(vocab.itos[i] if 0 <= i < len(vocab) else str(i) for i in row.tolist())


@checker
def check_make_batch(my_make_batch, vocab):
    """my_make_batch(pairs, vocab) -> src, tgt_in, tgt_out, against helpers.tasks.numbers.make_batch."""
    names = ("src", "tgt_in", "tgt_out")
    sliced = False
    for texts in CHECK_PAIRS:
        pairs = _pairs(texts)
        out = call(my_make_batch, BATCH, pairs, vocab,
                   reference=[(numbers, "make_batch", "helpers.tasks.numbers.make_batch"),
                              (numbers, "padded", "helpers.tasks.numbers.padded")],
                   instead="build the three tensors from the pairs with vocab.encode (or vocab.stoi).")
        got = _as_three(out)
        right = numbers.make_batch(pairs, vocab)
        if all(_same(g, r) for g, r in zip(got, right, strict=True)):
            continue
        if all(_same(g, r) for g, r in zip(got, _sliced(pairs, vocab), strict=True)):
            sliced = True
            continue
        for hint, wrong in _batch_mistakes(pairs, vocab):
            if all(_same(g, w) for g, w in zip(got, wrong, strict=True)):
                return hint
        for name, g, r in zip(names, got, right, strict=True):
            if g.shape[0] != r.shape[0]:
                return f"{name} should have one row per pair ({r.shape[0]}), got {g.shape[0]}."
            longer = g.shape[1] > r.shape[1]
            if longer and _same(g[:, : r.shape[1]], r) and bool((g[:, r.shape[1]:] == PAD).all()):
                return (f"{name} has {g.shape[1]} columns where {r.shape[1]} are enough: pad each batch "
                        "to its own longest sequence, not to a fixed length.")
        for name, g, r in zip(names, got, right, strict=True):
            if not _same(g, r):
                for i in range(r.shape[0]):
                    if g.shape[1:] != r.shape[1:] or not bool((g[i] == r[i]).all()):
                        en, fr = texts[i]
                        return (f"{name} for the pair \"{en}\" -> \"{fr}\" should be "
                                f"[{_show(vocab, r[i])}], shape {tuple(r.shape)} for the batch; got "
                                f"[{_show(vocab, g[i]) if g.shape[0] > i else '?'}], shape {tuple(g.shape)}.")
    if sliced:
        return Passed("You built <s> target </s>, padded, and sliced it: your tgt_in holds </s> where "
                      "helpers.tasks.numbers.make_batch has <pad>, in the rows shorter than the longest, "
                      "at positions whose tgt_out is <pad>. The loss skips those positions and the "
                      "causal mask hides them from every real one, so the model trains the same.")
    return Passed("Your three tensors equal helpers.tasks.numbers.make_batch on two batches of mixed "
                  "lengths, one-word numbers and the longest one included.")


# --- Your turn 2: BLEU ------------------------------------------------------------------------

BLEU = "my_bleu(hypotheses, references)"


def _bleu_variant(hyps, refs, clip=True, max_n=4, mean="geometric", bp="right", scale=100.0,
                  per_sentence=False, smooth=False, clip_corpus=False, swap=False, totals_from="hypothesis",
                  orders=None, precisions_from="corpus", joined=False):
    """BLEU with one mistake (or none), as a float. clip: True (min), False (no clipping), "max",
    "max of all" or "distinct" (each distinct n-gram once); totals_from: "hypothesis", "reference",
    "distinct" (the hypothesis's distinct n-grams) or "minus n" (len - n, one short); orders: the n
    of the n-grams (default 1 to max_n), each weighted 1 / len(orders); precisions_from: "corpus"
    or "sentences" (each sentence's m / t, averaged); joined: the corpus as one long sentence;
    mean: "geometric", "arithmetic", "arithmetic, zero rule", "product" (no 1/4 root), "log10"
    (log10 then exp) or "skip zeros" (the geometric mean of the non-zero precisions); bp: "right",
    "chars", "none", "upside down", "long", "sentences", "always" (also above 1) or "ratio" (c / r)."""
    if swap:
        hyps, refs = refs, hyps
    if joined:
        hyps, refs = [[t for h in hyps for t in h]], [[t for g in refs for t in g]]
    if per_sentence:
        scores = [_bleu_variant([h], [r], clip, max_n, mean, bp, scale, smooth=smooth)
                  for h, r in zip(hyps, refs, strict=True)]
        return sum(scores) / len(scores)
    orders = list(range(1, max_n + 1)) if orders is None else list(orders)
    max_n = len(orders)
    matches, totals = [0] * max_n, [0] * max_n
    c = r = 0
    corpus_h, corpus_r = [Counter() for _ in range(max_n)], [Counter() for _ in range(max_n)]
    sentence_bps, sentence_p = [], [[] for _ in range(max_n)]
    for h, g in zip(hyps, refs, strict=True):
        c, r = c + len(h), r + len(g)
        sentence_bps.append(1.0 if len(h) > len(g) else (math.exp(1 - len(g) / len(h)) if h else 0.0))
        for i, n in enumerate(orders):
            hn, gn = course_bleu.ngrams(h, n), course_bleu.ngrams(g, n)
            corpus_h[i].update(hn)
            corpus_r[i].update(gn)
            if clip == "max":
                matches[i] += sum(max(k, gn[x]) for x, k in hn.items() if x in gn)
            elif clip == "max of all":
                matches[i] += sum(max(k, gn[x]) for x, k in hn.items())
            elif clip == "distinct":
                matches[i] += sum(1 for x in hn if x in gn)
            elif clip:
                matches[i] += sum(min(k, gn[x]) for x, k in hn.items())
            else:
                matches[i] += sum(k for x, k in hn.items() if x in gn)
            if totals_from == "distinct":
                totals[i] += len(hn)
            elif totals_from == "minus n":
                totals[i] += max(len(h) - n, 0)
            else:
                totals[i] += max(len(g if totals_from == "reference" else h) - n + 1, 0)
            if len(h) >= n:                      # this sentence's own precision of order n
                sentence_p[i].append(sum(min(k, gn[x]) for x, k in hn.items()) / (len(h) - n + 1))
    if clip_corpus:
        matches = [sum(min(k, corpus_r[n][x]) for x, k in corpus_h[n].items()) for n in range(max_n)]
    if smooth:                                   # sacrebleu's default, "exp"
        precisions, factor = [], 1.0
        if not any(matches):
            return 0.0
        for m, t in zip(matches, totals, strict=True):
            if t == 0:
                precisions.append(0.0)
            elif m == 0:
                factor *= 2
                precisions.append(1 / (factor * t))
            else:
                precisions.append(m / t)
    elif precisions_from == "sentences":
        precisions = [sum(ps) / len(ps) if ps else 0.0 for ps in sentence_p]
    else:
        precisions = [m / t if t else 0.0 for m, t in zip(matches, totals, strict=True)]
    chars = (sum(len("".join(h)) for h in hyps), sum(len("".join(g)) for g in refs))
    lengths = {"right": (c, r), "chars": chars}
    if bp in ("right", "chars"):
        cc, rr = lengths[bp]
        penalty = 1.0 if cc > rr else (math.exp(1 - rr / cc) if cc else 0.0)
    elif bp == "none":
        penalty = 1.0
    elif bp == "upside down":                    # exp(1 - c / r): a bonus for short output
        penalty = 1.0 if c > r else (math.exp(1 - c / r) if r else 0.0)
    elif bp == "long":                           # penalises long output instead of short
        penalty = 1.0 if c < r else (math.exp(1 - c / r) if r else 0.0)
    elif bp == "sentences":                      # each sentence's own penalty, averaged
        penalty = sum(sentence_bps) / len(sentence_bps)
    elif bp == "always":                         # exp(1 - r / c) even when c > r: a bonus for long output
        penalty = math.exp(1 - r / c) if c else 0.0
    elif bp == "ratio":                          # c / r instead of exp(1 - r / c)
        penalty = 1.0 if c > r else c / r
    if mean == "arithmetic":
        return scale * penalty * sum(precisions) / max_n
    if mean == "arithmetic, zero rule":
        return 0.0 if min(precisions) == 0 else scale * penalty * sum(precisions) / max_n
    if mean == "skip zeros":
        kept = [p for p in precisions if p > 0]
        return scale * penalty * math.exp(sum(math.log(p) for p in kept) / len(kept)) if kept else 0.0
    if min(precisions) == 0:
        return 0.0
    if mean == "product":
        return scale * penalty * math.prod(precisions)
    if mean == "log10":
        return scale * penalty * math.exp(sum(math.log10(p) for p in precisions) / max_n)
    return scale * penalty * math.exp(sum(math.log(p) for p in precisions) / max_n)


BLEU_MISTAKES = [
    ("Your counts are not clipped: an n-gram of the hypothesis counts at most as often as it appears "
     "in the reference (\"quatre quatre quatre\" has one matching quatre, not three).", {"clip": False}),
    ("You clipped against the whole corpus's counts: clip each sentence's n-grams against its own "
     "reference, then add the clipped counts over the corpus.", {"clip_corpus": True}),
    ("You averaged the sentences' BLEU scores: BLEU is computed over the whole corpus (add the "
     "clipped counts, the n-gram totals and the lengths of all sentences first, then one formula).",
     {"per_sentence": True}),
    ("You took the arithmetic mean of the precisions: BLEU uses their geometric mean, "
     "exp(¼ Σ log p_n).", {"mean": "arithmetic"}),
    ("You took the arithmetic mean of the precisions (returning 0 when one is 0, as the geometric mean "
     "does): BLEU uses their geometric mean, exp(¼ Σ log p_n), pulled down by the weakest.",
     {"mean": "arithmetic, zero rule"}),
    ("Hypotheses and references are swapped: my_bleu(hypotheses, references) counts the n-grams of "
     "each hypothesis, clips them by its reference, and divides by the hypothesis's n-grams.",
     {"swap": True}),
    ("Your totals count the reference's n-grams: p_n divides the clipped matches by the number of "
     "n-grams of the hypotheses, len(hyp) − n + 1 per sentence.", {"totals_from": "reference"}),
    ("Your n-grams run from n = 0 to 3, one off: BLEU uses n = 1, 2, 3 and 4 (range(1, 5)).",
     {"orders": (0, 1, 2, 3)}),
    ("Your n-grams run from n = 2 to 5, one off: BLEU uses n = 1, 2, 3 and 4 (range(1, 5)).",
     {"orders": (2, 3, 4, 5)}),
    ("You clipped with max: an n-gram counts at most as often as the reference has it, "
     "min(count in the hypothesis, count in the reference).", {"clip": "max"}),
    ("You clipped with max: an n-gram counts at most as often as the reference has it, "
     "min(count in the hypothesis, count in the reference).", {"clip": "max of all"}),
    ("The brevity penalty is missing: when the hypotheses are shorter than the references (c ≤ r), "
     "multiply by exp(1 - r / c).", {"bp": "none"}),
    ("The brevity penalty is upside down: it is exp(1 - r / c) (at most 1, a penalty), not "
     "exp(1 - c / r).", {"bp": "upside down"}),
    ("Your brevity penalty punishes long hypotheses: it applies when the hypotheses are shorter "
     "(c ≤ r), as exp(1 - r / c); precision already punishes extra words.", {"bp": "long"}),
    ("Your brevity penalty comes from each sentence's lengths, averaged: use the corpus's total "
     "lengths, c = all hypothesis tokens and r = all reference tokens.", {"bp": "sentences"}),
    ("Your brevity penalty counts characters: c and r are numbers of tokens.", {"bp": "chars"}),
    ("Your n-grams stop at 3: BLEU uses n = 1, 2, 3 and 4, each with weight ¼.", {"max_n": 3}),
    ("Your n-grams go up to 5: BLEU uses n = 1, 2, 3 and 4, each with weight ¼.", {"max_n": 5}),
    ("Your score is between 0 and 1: BLEU is reported from 0 to 100 (the paper's 27.3): multiply "
     "by 100.", {"scale": 1.0}),
    ("You smoothed the zero precisions (as sacrebleu does by default, smooth_method=\"exp\"): the "
     "course's BLEU, like the paper's, is 0 when some precision is 0.", {"smooth": True}),
    ("You multiplied the four precisions: their geometric mean is the fourth root of the product, "
     "exp(¼ Σ log p_n).", {"mean": "product"}),
    ("Your logarithm and your exponential do not match: exp of a mean of log10 is not a mean. Use "
     "math.log with math.exp (or log10 with 10 ** ...).", {"mean": "log10"}),
    ("You left out the precisions of 0 and averaged the others: a precision of 0 makes the geometric "
     "mean, and BLEU, 0.", {"mean": "skip zeros"}),
    ("You counted each distinct n-gram once (a set): count every occurrence, clipped by how often the "
     "reference has it (\"vingt vingt\" against \"vingt vingt\" matches twice).", {"clip": "distinct"}),
    ("Your totals count the distinct n-grams of the hypotheses: p_n divides by all of them, "
     "len(hyp) − n + 1 per sentence, repeats included.", {"totals_from": "distinct"}),
    ("Your totals are one short per sentence: a sentence of L tokens has L − n + 1 n-grams of "
     "order n, not L − n.", {"totals_from": "minus n"}),
    ("You averaged each sentence's precision: p_n adds the clipped matches of all sentences, then "
     "divides by the sum of their n-gram totals, once for the corpus.", {"precisions_from": "sentences"}),
    ("You joined the sentences into one long sequence: n-grams then run from the end of one sentence "
     "into the next. Count each sentence's n-grams apart, then add the counts.", {"joined": True}),
    ("Your brevity penalty rewards long hypotheses: it is 1 when c > r, and exp(1 - r / c) only when "
     "c ≤ r.", {"bp": "always"}),
    ("Your brevity penalty is the ratio of the lengths, c / r: it is exp(1 - r / c) when c ≤ r.",
     {"bp": "ratio"}),
]


def bleu_corpora():
    """The check's corpora: (what it is, hypotheses, references). The first has every precision
    above 0 and hypotheses shorter than their references; then a zero 4-gram precision, short
    hypotheses (no 4-gram at all), an empty hypothesis, and longer hypotheses (no penalty)."""
    t = numbers.tokenize
    return [
        ("a corpus of four sentences",
         [t("quatre-vingt mille deux cent un"), t("cent vingt-trois"), t("soixante et onze mille"),
          t("quatre quatre quatre quatre quatre-vingt-dix-sept")],
         [t("quatre-vingt mille deux cent un"), t("cent vingt-trois mille quatre cent cinquante-six"),
          t("soixante et onze mille quatre-vingts"), t("quatre-vingt-dix-sept")]),
        ("a corpus whose hypotheses share no 4-gram with their references",
         [t("deux cent mille un"), t("trois cents mille")],
         [t("deux cent un mille"), t("trois cent mille")]),
        ("a corpus of hypotheses shorter than 4 tokens",
         [t("cent un"), t("deux cents"), t("mille")],
         [t("cent un"), t("deux cent un"), t("mille")]),
        ("a corpus with an empty hypothesis",
         [[], t("deux cent mille deux cents"), t("vingt et un mille un")],
         [t("sept"), t("deux cent mille deux cents"), t("vingt et un mille un")]),
        ("a corpus of hypotheses longer than their references",
         [t("deux cent mille deux cent deux"), t("vingt et un mille un cent")],
         [t("deux cent mille deux cents"), t("vingt et un mille un")]),
    ]


def _bleu_references():
    """Everything that computes BLEU, or the part of it the exercise asks for: the course's
    helpers.bleu (all but ngrams, the counting the exercise text gives, and the tokenizer) and
    sacrebleu (every function of its package: its private methods too)."""
    refs = [(course_bleu, name, f"helpers.bleu.{name}")
            for name in ("corpus_bleu", "bleu_parts", "statistics", "brevity_penalty", "sacrebleu_score",
                         "statistics_several", "corpus_bleu_several", "closest_length")]
    try:
        import sacrebleu
        from sacrebleu.metrics import BLEU as SacreBLEU
    except ImportError:
        return refs
    refs += [(sacrebleu, ALL, "sacrebleu")]
    refs += [(sacrebleu, name, f"sacrebleu.{name}")
             for name in ("corpus_bleu", "sentence_bleu", "raw_corpus_bleu") if hasattr(sacrebleu, name)]
    return refs + [(SacreBLEU, name, f"sacrebleu's BLEU.{name}")
                   for name in ("corpus_score", "sentence_score", "compute_bleu", "_compute_score_from_stats",
                                "_extract_corpus_statistics", "_compute_f_score") if hasattr(SacreBLEU, name)]


def _score(my_bleu, hyps, refs, what):
    try:
        out = call(my_bleu, BLEU, hyps, refs, reference=_bleu_references(),
                   instead="count the n-grams and compute the formula yourself.")
    except Hint as h:
        text = str(h)
        if ("ValueError" in text and "math domain" in text) or "ZeroDivisionError" in text:
            raise Hint(f"On {what}, {text.split(' raised ')[0]} raised {text.split(' raised ')[1][:60]}: "
                       "a precision of 0 (or no n-gram of some order at all, or no hypothesis token) "
                       "makes BLEU 0; return 0.0 there instead of taking log(0) or dividing by 0.") from None
        raise
    if isinstance(out, (tuple, list, dict)):
        raise Hint(f"my_bleu should return one number, the corpus's BLEU, got a {type(out).__name__}.")
    value = out if not isinstance(out, torch.Tensor) or out.numel() != 1 else out.item()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise Hint(f"On {what}, my_bleu returned {value}: a precision of 0 (or no n-gram of some "
                   "order at all) makes BLEU 0; return 0.0 there instead of taking log(0).")
    return number(value, "my_bleu's result")


def _close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


@checker
def check_bleu(my_bleu):
    """my_bleu(hypotheses, references) -> corpus BLEU from 0 to 100, on the check's corpora."""
    corpora = bleu_corpora()
    got = [_score(my_bleu, hyps, refs, what) for what, hyps, refs in corpora]
    right = [course_bleu.corpus_bleu(hyps, refs) for _, hyps, refs in corpora]
    if all(_close(g, r) for g, r in zip(got, right, strict=True)):
        return Passed("Your BLEU equals the course's on five corpora, including a zero 4-gram "
                      "precision, hypotheses shorter than 4 tokens, an empty hypothesis and hypotheses "
                      "longer than their references.")
    for hint, flags in BLEU_MISTAKES:                 # a mistake gives its own numbers on every corpus
        wrong = [_bleu_variant(hyps, refs, **flags) for _, hyps, refs in corpora]
        if all(_close(w, g) for w, g in zip(wrong, got, strict=True)):
            return hint
    if all(abs(g - r) <= 0.0051 for g, r in zip(got, right, strict=True)):
        return ("Your BLEU is rounded: return it as computed, unrounded (round only to print it); the "
                "check compares to 1e-6.")
    for (what, _, _), g, r in zip(corpora, got, right, strict=True):
        if _close(g, r):
            continue
        if r == 0.0:
            return (f"On {what}, BLEU should be 0 (some precision is 0), got {g:.4g}: a precision of 0 "
                    "makes the geometric mean, and BLEU, 0.")
        return (f"On {what}, BLEU should be {r:.4f}, got {g:.4f}: check the clipped counts and totals "
                "of each n, the geometric mean and the brevity penalty against the formula.")


# --- Check your understanding ----------------------------------------------------------------

# A one-sentence corpus whose hypothesis equals its reference: its BLEU is computed, not written here.
SHORT = ("cent un", "cent un")
_SHORT_WHY = ("Two tokens have no 3-gram and no 4-gram, so p_3 and p_4 are 0 (0 matches out of 0): the "
              "geometric mean, and BLEU, are 0, although the translation is perfect. Over a whole corpus of "
              "longer sentences this cannot happen.")
_SHORT_MISTAKES = [
    ((100, 1), "A perfect translation scores 100 only if it has n-grams of every order 1 to 4: how many "
               "3-grams and 4-grams do two tokens have?"),
    ((50,), "p_1 and p_2 are 1, but p_3 and p_4 are not 1 (nor left out): BLEU's geometric mean uses all "
            "four, and a two-token sentence has no 3-gram or 4-gram."),
]


@checker
def check_short_bleu(answer):
    """BLEU of a one-sentence corpus where the hypothesis "cent un" equals its reference."""
    value = number(answer, "answer_1")
    right = course_bleu.corpus_bleu([numbers.tokenize(SHORT[0])], [numbers.tokenize(SHORT[1])])
    if abs(value - right) < 1e-9:
        return Passed(_SHORT_WHY)
    for wrong, hint in _SHORT_MISTAKES:
        if any(abs(value - w) < 1e-6 for w in wrong):
            return hint
    return "Count the n-grams of each order 1 to 4 in a two-token sentence, then use the formula."


# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_BLEU_MEANING = dict(
    right="easier task",
    why="One right answer per number, a vocabulary of 60 words, and mostly word-for-word "
        "alignments: a sentence of the news has many good translations, and BLEU against one "
        "reference scores even a good one far below 100.",
    wrong={
        "better model": "BLEU compares systems on the same test set; on different tasks its "
                        "numbers do not compare: the paper's model on our numbers would score "
                        "near 100 too.",
        "sentence average": "Both are corpus BLEU, computed the same way (section 5); the "
                            "difference is in the task, not in the formula.",
        "seen in training": "The split is by number: no test number is in the training rows "
                            "(section 1 checks it).",
    },
)


@checker
def check_bleu_meaning(answer):
    """Why BLEU near 100 here does not compare with the paper's 27.3."""
    return choice(answer, "answer_2", **_BLEU_MEANING)


_ABOVE_QUESTION = dict(
    right="unseen combinations",
    why="Every word and every position is known, but never \"hundred\" before \"thousand\": "
        "the model learnt what its examples show, not the rule that builds French numbers.",
    wrong={
        "unknown words": "Every token of the numbers above 100,000 appears in the training rows "
                         "below 100,000 (section 9 prints it).",
        "positions": "The position table has 256 rows and extends to any length (notebook 01); "
                     "even short inputs such as \"two hundred thousand\", shorter than many training "
                     "inputs, come out wrong (section 9).",
        "too few steps": "The same model writes almost every unseen number below 100,000 right "
                         "after the same training: it learnt its range, not beyond.",
    },
)


@checker
def check_above_question(answer):
    """Why the model trained below 100,000 fails above it."""
    return choice(answer, "answer_3", **_ABOVE_QUESTION)


# --- Check your understanding (the questions that apply each section to a new case) ----------

# Question 1: a corpus whose first hypothesis stops one word early, the second is right
EARLY_STOP = [("vingt et un mille", "vingt et un mille un"),
              ("deux cent mille deux cents", "deux cent mille deux cents")]


def _early_stop_values():
    """The right BLEU of EARLY_STOP and what each typical mistake gives, computed from the corpus."""
    t = numbers.tokenize
    hyps, refs = [t(h) for h, _ in EARLY_STOP], [t(r) for _, r in EARLY_STOP]
    right = course_bleu.corpus_bleu(hyps, refs)
    l_hyp, l_ref = sum(map(len, hyps)), sum(map(len, refs))
    sentences = [course_bleu.corpus_bleu([h], [r]) for h, r in zip(hyps, refs, strict=True)]
    return right, [
        (100.0, f"Every n-gram of the hypotheses is in its reference (all four p_n are 1), but the "
                f"hypotheses have {l_hyp} tokens and the references {l_ref}: the brevity penalty applies."),
        (sum(sentences) / len(sentences), "That is the mean of the two sentences' BLEU: BLEU adds the "
                                          "counts and the lengths over the corpus first, then one formula."),
        (sentences[0], "That is the first sentence's BLEU alone: the brevity penalty uses the corpus's "
                       "total lengths, both sentences together."),
        (100 * math.exp(1 - l_hyp / l_ref), "The brevity penalty is exp(1 - l_ref / l_hyp), at most 1: "
                                            "yours is upside down (above 100)."),
        (100 * l_hyp / l_ref, "The brevity penalty is exp(1 - l_ref / l_hyp), not the ratio of the lengths."),
        (0.0, "No precision is 0 here: the first hypothesis has a 4-gram (vingt et un mille), the second "
              "two, all in their references, and the precisions are counted over the corpus."),
    ]


_EARLY_STOP_WHY = ("All four precisions are 1 (a hypothesis that stops early writes only n-grams of its "
                   "reference); only the brevity penalty, exp(1 - 10/9) = 0.8948, lowers the score: stopping "
                   "early costs through the penalty, writing on costs through the precisions.")


@checker
def check_early_stop_bleu(answer):
    """BLEU of a two-sentence corpus in which one hypothesis stops one word early."""
    value = number(answer, "answer_1")
    right, mistakes = _early_stop_values()
    if abs(value - right) < 0.006:
        return Passed(_EARLY_STOP_WHY)
    if abs(value - right / 100) < 0.006:               # 0.89 or 0.8948: the 0-1 scale, to 2 decimals or more
        return "BLEU is reported from 0 to 100: multiply by 100."
    for wrong, hint in mistakes:
        if abs(value - wrong) < 0.006:
            return hint
    if abs(value - right) < 0.06:
        return ("Right but for the rounding: give BLEU to two decimals, rounded from the value the formula "
                "gives (round(bleu, 2)), not from a rounded brevity penalty or a cut third decimal.")
    return ("Count the n-grams of each order in both sentences (which of the hypotheses' n-grams are in the "
            "references?), add them over the corpus, then the brevity penalty from the total lengths.")


_TOKENISED_BLEU = dict(
    right="cannot tell",
    why="The two scores are counted on different tokens. On WMT English–German, splitting compounds "
        "alone is worth about 0.7 to 1 BLEU, and scoring configurations in common use differ by up to "
        "1.8 (section 10): more than the 0.5 between A and B. Score both systems the same way before "
        "comparing them.",
    wrong={
        "B is better": "B's 27.4 and A's 26.9 are counted on different tokens: on WMT English–German, "
                       "splitting compounds alone is worth about 0.7 to 1 BLEU (section 10), more than "
                       "the 0.5 between them.",
        "A is better": "Splitting compounds alone would lower B's score by about 0.7 to 1 on A's tokens, but "
                       "B's scoring differs from A's in more than the compounds (its own tokenizer and "
                       "options), and configurations in common use differ by up to 1.8 (section 10): the "
                       "two numbers do not say which system is better.",
        "equal": "Nothing says the two systems are equally good: the numbers are counted on different "
                 "tokens, so they say nothing either way until both are scored the same way.",
    },
)


@checker
def check_tokenised_bleu(answer):
    """Two BLEU scores on one test set, from two tokenisations: what can be concluded."""
    return choice(answer, "answer_2", **_TOKENISED_BLEU)


BELOW_INPUTS = ["eighty-one thousand", "one hundred thousand and one",
                "ninety thousand, nine hundred and nine", "three hundred thousand and three"]


_FAILS_ABOVE = ("It has \"hundred\" before \"thousand\", which no training source below 100,000 has "
                "(section 9): the model writes a number below 100,000 instead")
_BELOW_ANSWER = dict(
    right={"eighty-one thousand", "ninety thousand, nine hundred and nine"},
    why="Below 100,000 the model writes almost every unseen number right; above, every input has "
        "\"hundred\" before \"thousand\", however short (\"three hundred thousand and three\" is 5 "
        "tokens), and fails.",
    hints={
        "eighty-one thousand": "\"eighty-one thousand\" is below 100,000 and made of patterns the "
                               "training rows have: the model gets it right, as it gets almost every "
                               "unseen number below 100,000.",
        "ninety thousand, nine hundred and nine": "90,909 is below 100,000: its length (7 tokens) and "
                                                  "its words are all in the training rows' patterns, "
                                                  "and the model gets it right.",
        "one hundred thousand and one": _FAILS_ABOVE + ".",
        "three hundred thousand and three": _FAILS_ABOVE + ", short as it is (5 tokens, fewer than most "
                                            "training sources).",
    }
)


@checker
def check_below_inputs(answer):
    """Which inputs the model trained below 100,000 translates right."""
    return choices(answer, "answer_3", BELOW_INPUTS, **_BELOW_ANSWER)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_make_batch, numbers.make_batch, lambda f: lambda pairs, vocab: f(pairs, vocab),
         lambda: (numbers.vocabulary(),))
exercise(check_bleu, course_bleu.corpus_bleu, lambda f: lambda hyps, refs: f(hyps, refs))
