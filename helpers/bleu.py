"""BLEU (Papineni et al., 2002), the metric of the paper's Table 2, computed over a whole corpus.

For n = 1 to 4, the clipped n-gram precision p_n: over every sentence, each n-gram of the
hypothesis counts at most as often as it appears in that sentence's reference; the sum of these
counts over the corpus, divided by the number of n-grams of all the hypotheses. Then

    BLEU = 100 · BP · exp(Σ_n ¼ log p_n),   BP = 1 if ℓ_hyp > ℓ_ref else exp(1 - ℓ_ref / ℓ_hyp),

ℓ_hyp and ℓ_ref the corpus's total hypothesis and reference lengths in tokens (``c`` and ``r``
in the dictionaries below, Papineni et al.'s letters). A precision of 0 (no matching n-gram of
some order, or no n-gram of that order at all) makes BLEU 0, and so does ℓ_hyp = 0.
This equals ``sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none")`` on
the same tokens joined by spaces (sacrebleu's default smoothing, "exp", only differs where a
precision is 0).

Sentences are lists of tokens; one reference per hypothesis.
"""

import math
import re
from collections import Counter

MAX_N = 4


def ngrams(tokens, n):
    """Counter of the n-grams (tuples of n tokens) of a token list."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def statistics(hypotheses, references, max_n=MAX_N):
    """What BLEU is computed from: matches[n - 1] (clipped) and totals[n - 1], summed over the
    corpus for n = 1 .. max_n, and the corpus lengths c = ℓ_hyp (hypotheses) and r = ℓ_ref
    (references)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    matches, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        hyp, ref = list(hyp), list(ref)
        c, r = c + len(hyp), r + len(ref)
        for n in range(1, max_n + 1):
            h, g = ngrams(hyp, n), ngrams(ref, n)
            matches[n - 1] += sum(min(count, g[gram]) for gram, count in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    return {"matches": matches, "totals": totals, "c": c, "r": r}


def brevity_penalty(c, r):
    """1 when the hypotheses are longer than the references (c = ℓ_hyp > r = ℓ_ref), else
    exp(1 - r / c)."""
    if c > r:
        return 1.0
    return math.exp(1 - r / c) if c > 0 else 0.0


def bleu_parts(hypotheses, references, max_n=MAX_N):
    """The precisions, the brevity penalty and BLEU (0 to 100) of a corpus, as a dict."""
    stats = statistics(hypotheses, references, max_n)
    precisions = [m / t if t else 0.0 for m, t in zip(stats["matches"], stats["totals"], strict=True)]
    bp = brevity_penalty(stats["c"], stats["r"])
    if min(precisions) == 0:
        score = 0.0
    else:
        score = 100 * bp * math.exp(sum(math.log(p) for p in precisions) / max_n)
    return {**stats, "precisions": precisions, "bp": bp, "bleu": score}


def corpus_bleu(hypotheses, references, max_n=MAX_N):
    """BLEU of a corpus, 0 to 100: hypotheses and references are lists of token lists."""
    return bleu_parts(hypotheses, references, max_n)["bleu"]


def sacrebleu_score(hypotheses, references, tokenize="none", smooth_method="none"):
    """sacrebleu's corpus BLEU (None when sacrebleu is not installed). Sentences are token lists
    (joined by spaces) or strings. By default tokenize="none" scores the tokens as given (split
    on spaces) and smooth_method="none" keeps a zero precision a zero; sacrebleu's own defaults
    are "13a" (which splits punctuation but not the hyphens between letters: "quatre-vingt-dix"
    stays one token) and "exp" (a zero precision p_n becomes 1 / (2^k · totals[n]), k counting
    the zero precisions so far, but an order with no n-gram at all stays 0)."""
    try:
        import sacrebleu
    except ImportError:
        return None

    def text(sentence):
        return sentence if isinstance(sentence, str) else " ".join(sentence)
    result = sacrebleu.corpus_bleu([text(h) for h in hypotheses], [[text(r) for r in references]],
                                   tokenize=tokenize, smooth_method=smooth_method)
    return result.score


# --- several references per sentence, and sacrebleu's default tokenizer ----------------------

_13A = [(re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),    # punctuation apart
        (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),                 # . and , unless after a digit
        (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),                 # . and , unless before a digit
        (re.compile(r"([0-9])(-)"), r"\1 \2 ")]                      # a dash after a digit


def tokenize_13a(text):
    """sacrebleu's default tokenizer ("13a", mteval-v13a's, used by WMT) as a list of tokens:
    punctuation apart, except "." and "," next to a digit, the apostrophe and the hyphen between
    letters ("c'est", "peut-être" stay one token)."""
    line = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for pattern, replacement in _13A:
        line = pattern.sub(replacement, line)
    return line.split()


def closest_length(c, lengths):
    """The reference length closest to a hypothesis of c tokens; a tie goes to the shorter."""
    return min(lengths, key=lambda r: (abs(c - r), r))


def statistics_several(hypotheses, references, max_n=MAX_N):
    """statistics with several references per hypothesis (references[i]: a list of token lists):
    each n-gram clipped by its largest count in any one reference; r sums, over the sentences,
    the reference length closest to the hypothesis's (a tie: the shorter)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    matches, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for hyp, refs in zip(hypotheses, references, strict=True):
        hyp, refs = list(hyp), [list(ref) for ref in refs]
        c, r = c + len(hyp), r + closest_length(len(hyp), [len(ref) for ref in refs])
        for n in range(1, max_n + 1):
            most = Counter()
            for ref in refs:
                most |= ngrams(ref, n)                 # | keeps the larger count of each n-gram
            matches[n - 1] += sum(min(count, most[gram]) for gram, count in ngrams(hyp, n).items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    return {"matches": matches, "totals": totals, "c": c, "r": r}


def corpus_bleu_several(hypotheses, references, max_n=MAX_N):
    """BLEU (0 to 100) against several references per sentence, from statistics_several; 0 when
    a precision is 0 (sacrebleu's default smoothing differs only there)."""
    stats = statistics_several(hypotheses, references, max_n)
    if min(stats["matches"]) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(stats["matches"], stats["totals"], strict=True))
    return 100 * brevity_penalty(stats["c"], stats["r"]) * math.exp(log_p / max_n)
