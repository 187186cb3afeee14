"""The paired bootstrap (Koehn, 2004): how much a corpus score owes to which sentences happen to be
in the test set, and whether one system's lead over another survives that.

Draw as many sentences as the test set has, with replacement, from its sentences; score both
systems on that draw; repeat. The middle 95 % of the scores is an interval for each system, and
the middle 95 % of the differences (the same draw for both: paired) an interval for the
difference. When the difference's interval holds 0, another test set of the same kind could have
ranked the two systems the other way round.

Corpus scores are not means of sentence scores: BLEU and chrF are computed from counts summed over
the sentences, so each sentence's counts are computed once (``sentence_stats``) and every draw sums
them. The draws come from torch's generator with a fixed seed: the same on every machine.
"""

import math

import torch

from helpers.bleu import MAX_N, statistics_several, tokenize_13a
from helpers.chrf import f_score, sentence_counts

SAMPLES = 1000
SEED = 12345


def sentence_stats(hypotheses, references, metric="bleu"):
    """One row of counts per sentence, (n, k) float64: BLEU's matches, totals, c and r on 13a
    tokens (metric "bleu"), or chrF's [hyp, ref, match] per order ("chrf"). (For "perplexity" the
    rows are each sentence's [summed cross-entropy, tokens], given as they are.)"""
    rows = []
    for hyp, refs in zip(hypotheses, references, strict=True):
        if metric == "bleu":
            s = statistics_several([tokenize_13a(hyp)], [[tokenize_13a(r) for r in refs]])
            rows.append([*s["matches"], *s["totals"], s["c"], s["r"]])
        else:
            rows.append(sentence_counts(hyp, refs))
    return torch.tensor(rows, dtype=torch.float64)


def bleu_of(sums):
    """BLEU (0 to 100) of summed counts, one per row: 0 where a precision is 0 (the course's BLEU,
    no smoothing)."""
    matches, totals, c, r = sums[:, :MAX_N], sums[:, MAX_N:2 * MAX_N], sums[:, -2], sums[:, -1]
    log_p = (matches.clamp(min=1e-300) / totals.clamp(min=1)).log().mean(1)
    bp = torch.where(c > r, torch.ones_like(c), (1 - r / c.clamp(min=1e-300)).exp())
    score = 100 * bp * log_p.exp()
    return torch.where((matches == 0).any(1) | (c == 0), torch.zeros_like(score), score)


def score_of(sums, metric):
    """The score of each row of summed counts: "bleu", "chrf", or "perplexity" (rows of [summed
    cross-entropy, tokens]: exp of their ratio)."""
    if metric == "bleu":
        return bleu_of(sums)
    if metric == "perplexity":
        return (sums[:, 0] / sums[:, 1]).exp()
    return torch.tensor([f_score(row.tolist()) for row in sums], dtype=torch.float64)


def draws(n, samples=SAMPLES, seed=SEED):
    """(samples, n) indices, each row n sentences drawn with replacement."""
    return torch.randint(0, n, (samples, n), generator=torch.Generator().manual_seed(seed))


def interval(values, level=0.95):
    """The middle `level` of the values: (low, high) percentiles."""
    ordered = sorted(values.tolist())
    tail = (1 - level) / 2
    low = ordered[math.floor(tail * (len(ordered) - 1))]
    high = ordered[math.ceil((1 - tail) * (len(ordered) - 1))]
    return low, high


def paired(stats_a, stats_b, metric="bleu", samples=SAMPLES, seed=SEED):
    """Scores of systems a and b on the whole set, their 95 % intervals and the interval of b - a,
    over the same draws; "b_better": the share of draws where b scores higher."""
    idx = draws(len(stats_a), samples, seed)
    a = score_of(stats_a[idx].sum(1), metric)
    b = score_of(stats_b[idx].sum(1), metric)
    whole_a = float(score_of(stats_a.sum(0, keepdim=True), metric)[0])
    whole_b = float(score_of(stats_b.sum(0, keepdim=True), metric)[0])
    return {"a": whole_a, "b": whole_b, "difference": whole_b - whole_a,
            "a_interval": interval(a), "b_interval": interval(b), "difference_interval": interval(b - a),
            "b_better": float((b > a).double().mean())}


def verdict(results):
    """What several seeds' paired() results say about b - a: "real" when every seed's difference has
    the same sign and every interval leaves 0 out; "same sign, within the noise" when the signs agree
    but some interval holds 0; "seeds disagree" otherwise."""
    signs = {r["difference"] > 0 for r in results}
    outside = all(lo > 0 or hi < 0 for lo, hi in (r["difference_interval"] for r in results))
    if len(signs) == 1 and outside:
        return "real"
    return "same sign, within the noise" if len(signs) == 1 else "seeds disagree"
