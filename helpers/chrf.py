"""chrF (Popović, 2015): the character n-gram F-score that WMT reports beside BLEU.

For n = 1 to 6, the character n-grams of a sentence with its spaces removed; per order, the
hypothesis's n-grams, the reference's and the matches (each n-gram counted at most as often as in
the reference). Over a corpus the three counts are summed, then per order a precision and a
recall, averaged over the orders where both sentences have n-grams, and

    chrF = 100 · (1 + β²) · P · R / (β² · P + R),   β = 2 (recall weighs twice as much).

A sentence with several references takes the counts of the reference that gives it the highest
F-score alone. A word with a wrong ending still shares most of its character n-grams with the
right word, so chrF gives it most of the credit that BLEU, counting whole words, takes away.
This equals ``sacrebleu.corpus_chrf`` with its defaults (chrF2, char order 6, no word n-grams).
"""

from collections import Counter

ORDER = 6
BETA = 2


def char_ngrams(text, n):
    """Counter of the character n-grams of text with its white space removed."""
    line = "".join(text.split())
    return Counter(line[i:i + n] for i in range(len(line) - n + 1))


def _counts(hypothesis, reference):
    """[hyp, ref, match] for each order 1..ORDER, one flat list. As sacrebleu counts them, an
    order of which the reference has no n-gram counts none of the hypothesis's either."""
    out = []
    for n in range(1, ORDER + 1):
        h, r = char_ngrams(hypothesis, n), char_ngrams(reference, n)
        out += [sum(h.values()) if r else 0, sum(r.values()), sum(min(k, r[g]) for g, k in h.items())]
    return out


def f_score(counts, beta=BETA):
    """chrF (0 to 100) from summed [hyp, ref, match] counts per order."""
    precision = recall = 0.0
    orders = 0
    for n in range(len(counts) // 3):
        n_hyp, n_ref, n_match = counts[3 * n: 3 * n + 3]
        if n_hyp > 0 and n_ref > 0:
            precision, recall, orders = precision + n_match / n_hyp, recall + n_match / n_ref, orders + 1
    if orders == 0:
        return 0.0
    precision, recall = precision / orders, recall / orders
    if precision + recall == 0:
        return 0.0
    return 100 * (1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall)


def sentence_counts(hypothesis, references):
    """The counts of the reference whose F-score with the hypothesis is highest (the first on a tie)."""
    best, best_f = None, -1.0
    for reference in references:
        counts = _counts(hypothesis, reference)
        f = f_score(counts)
        if f > best_f:
            best, best_f = counts, f
    return best


def corpus_chrf(hypotheses, references):
    """chrF (0 to 100) of strings against several references each (references[i]: a list of strings)."""
    total = [0] * (3 * ORDER)
    for hypothesis, refs in zip(hypotheses, references, strict=True):
        total = [a + b for a, b in zip(total, sentence_counts(hypothesis, refs), strict=True)]
    return f_score(total)
