"""Checks for notebook 08 (decoding): the length-penalised score, one step of beam search, the cached
attention step, and the questions (1 in section 6, 2 in section 7 on sampling, 3 and 4 in "Check your
understanding")."""

import itertools
import math

import torch

from helpers import decoding
from helpers.attention import additive_mask, attention, causal_mask
from helpers.checks import Hint, Passed, call, checker, choice, close, exercise, number, tensor
from helpers.decoding import beam_step, length_penalty

PAD = 0

# The three hypotheses of "Your turn 1": the probability of each token, </s> included.
HYPOTHESES = {
    "d e b a c </s>": [0.9, 0.9, 0.8, 0.9, 0.9, 0.9],
    "d e </s>": [0.9, 0.9, 0.6],
    "d e b a c c </s>": [0.9, 0.9, 0.8, 0.9, 0.9, 0.5, 0.9],
}


def _score_mistakes(probs, alpha=0.6):
    """(hint, the three scores a learner with that mistake gets), the likely mistakes first."""
    logs = [[math.log(p) for p in ps] for ps in probs]
    total = [sum(lg) for lg in logs]
    n = [len(ps) for ps in probs]

    def each(f):
        return [f(t, m, lg) for t, m, lg in zip(total, n, logs, strict=True)]

    yield ("These are the log-probabilities log P(Y) without the length penalty: divide each by "
           "lp(Y) = ((5 + |Y|) / 6)^0.6.", total)
    yield ("You applied the penalty per token, dividing each token's log-probability by lp of its own "
           "position: add the log-probabilities first, then divide the sum once by lp(|Y|).",
           each(lambda t, m, lg: sum(v / length_penalty(i + 1) for i, v in enumerate(lg))))
    yield ("You divided by the length (the mean log-probability per token): the paper divides by "
           "lp(Y) = ((5 + |Y|) / 6)^0.6, which grows more slowly than |Y|.", each(lambda t, m, lg: t / m))
    yield ("α is in the wrong place: you computed (5 + |Y|)^0.6 / 6; the whole ratio is raised to "
           "the power: ((5 + |Y|) / 6)^0.6.", each(lambda t, m, lg: t / ((5 + m) ** alpha / 6)))
    yield ("α is in the wrong place: you multiplied by 0.6 instead of raising to the power 0.6: "
           "lp = ((5 + |Y|) / 6)^0.6.", each(lambda t, m, lg: t / (alpha * (5 + m) / 6)))
    yield ("α is in the wrong place: you raised only the 6 to the power 0.6; the whole ratio is: "
           "((5 + |Y|) / 6)^0.6.", each(lambda t, m, lg: t / ((5 + m) / 6 ** alpha)))
    yield ("You used the exponent 1/α: lp = ((5 + |Y|) / 6)^0.6, not to the power 1/0.6.",
           each(lambda t, m, lg: t / ((5 + m) / 6) ** (1 / alpha)))
    yield ("You multiplied log P(Y) by lp(Y): the score divides by it, score = log P(Y) / lp(Y).",
           each(lambda t, m, lg: t * length_penalty(m)))
    yield ("|Y| counts every token written, </s> included: with |Y| one less, lp is too small.",
           each(lambda t, m, lg: t / length_penalty(m - 1)))
    yield ("|Y| counts the tokens written after <s>, </s> included but not <s>: with |Y| one more, "
           "lp is too large.", each(lambda t, m, lg: t / length_penalty(m + 1)))
    yield ("You divided the probability P(Y) instead of its logarithm: score = log P(Y) / lp(Y), "
           "a negative number.", each(lambda t, m, lg: math.exp(t) / length_penalty(m)))
    yield ("You used log base 10: the log-probabilities are natural logs (math.log, torch.log).",
           each(lambda t, m, lg: t / math.log(10) / length_penalty(m)))
    yield ("You used log base 2: the log-probabilities are natural logs (math.log, torch.log).",
           each(lambda t, m, lg: t / math.log(2) / length_penalty(m)))
    yield ("Check the sign: log-probabilities are negative, so the scores are negative too "
           "(the best is the one closest to 0).", each(lambda t, m, lg: -t / length_penalty(m)))
    yield ("You used α = 1: the paper's α is 0.6, lp(Y) = ((5 + |Y|) / 6)^0.6.",
           each(lambda t, m, lg: t / length_penalty(m, 1.0)))


TOLERANCE = 6e-3   # scores worked out by hand to 2 decimals are right (the nearest mistake is 0.04 away)


def _three_numbers(scores):
    if scores is None or scores is Ellipsis:
        raise Hint("Not answered yet: set scores to the list of the three penalised scores.")
    if isinstance(scores, dict):
        scores = list(scores.values())
    if type(scores).__module__ == "numpy" and hasattr(scores, "tolist"):   # a numpy array
        scores = torch.as_tensor(scores)
    if isinstance(scores, torch.Tensor):
        if scores.numel() != 3:
            raise Hint(f"scores should hold 3 numbers, one per hypothesis; got a tensor of shape "
                       f"{tuple(scores.shape)}.")
        scores = scores.flatten().tolist()
    if isinstance(scores, (str, bytes)) or not isinstance(scores, (list, tuple)):
        raise Hint(f"scores should be a list of 3 numbers, e.g. [-0.1, -0.2, -0.3]; got "
                   f"{type(scores).__name__}.")
    if len(scores) != 3:
        raise Hint(f"scores should hold 3 numbers, one per hypothesis in the order given; got {len(scores)}.")
    return [number(s, f"scores[{i}]") for i, s in enumerate(scores)]


def _best_hypothesis(right):
    """The hypothesis beam search keeps (computed from the right scores), why, and the hint for each
    other pick: what each hypothesis has that might tempt a learner."""
    totals = [sum(math.log(p) for p in ps) for ps in HYPOTHESES.values()]
    kept = max(range(3), key=lambda i: right[i]) + 1
    likeliest = max(range(3), key=lambda i: totals[i]) + 1
    hints = {i: f"Hypothesis {i} has the lowest score of the three: the best score is the one closest to 0."
             for i in (1, 2, 3)}
    hints[likeliest] = (f"Hypothesis {likeliest} has the highest log P(Y) (fewest tokens to pay for), but "
                        "beam search ranks by the penalised score: compare your three scores.")
    words = {3: "three", 6: "six", 7: "seven"}

    def minus(x):
        return f"{x:.3f}".replace("-", "−")
    why = (f"With the penalty the {words[len(list(HYPOTHESES.values())[kept - 1])]}-token answer "
           f"({minus(right[kept - 1])}) beats the short one ({minus(right[likeliest - 1])}), although "
           "the short one has the higher log P(Y).")
    return kept, why, hints


@checker
def check_penalised_scores(scores, best):
    """scores: log P(Y) / lp(Y) of the three HYPOTHESES (α = 0.6); best: the number (1, 2 or 3) of
    the hypothesis beam search keeps."""
    got = _three_numbers(scores)
    probs = list(HYPOTHESES.values())
    right = [sum(math.log(p) for p in ps) / length_penalty(len(ps)) for ps in probs]
    if not all(close(g, r, TOLERANCE) for g, r in zip(got, right, strict=True)):
        for hint, wrong in _score_mistakes(probs):
            if all(close(g, w, TOLERANCE) for g, w in zip(got, wrong, strict=True)):
                return hint
        if all(close(g, r, TOLERANCE) for g, r in zip(sorted(got), sorted(right), strict=True)):
            return ("The three numbers are right, but not in the order given: scores[0] belongs to "
                    "hypothesis 1 (\"d e b a c </s>\"), scores[1] to 2, scores[2] to 3.")
        ok = [i + 1 for i, (g, r) in enumerate(zip(got, right, strict=True)) if close(g, r, TOLERANCE)]
        if ok:
            wrong = [i for i in (1, 2, 3) if i not in ok]
            said = (f"Hypothesis {ok[0]} is right" if len(ok) == 1 else
                    f"Hypotheses {' and '.join(map(str, ok))} are right")
            return (f"{said}, not {' and '.join(map(str, wrong))}: for each, add the natural logs of "
                    "its token probabilities, then divide by ((5 + |Y|) / 6)^0.6 with |Y| its number "
                    "of tokens.")
        return ("Not yet: for each hypothesis add the natural logs of its token probabilities "
                "(log P(Y)), count its tokens |Y| (</s> included), and divide: "
                "log P(Y) / ((5 + |Y|) / 6)^0.6.")
    if best is None or best is Ellipsis:
        raise Hint("Not answered yet: the scores are right; now set best to 1, 2 or 3.")
    if isinstance(best, str) and best.strip() in HYPOTHESES:
        best = list(HYPOTHESES).index(best.strip()) + 1
    pick = number(best, "best")
    if pick not in (1, 2, 3):
        return "best should be 1, 2 or 3: the number of the hypothesis, in the order given."
    kept, why, hints = _best_hypothesis(right)
    return Passed(why) if pick == kept else hints[int(pick)]


# --- one step of beam search ---------------------------------------------------------------

STEP = "my_beam_step(log_p, lengths, finished, next_log_probs, alpha)"


# What the check compares with: a step that calls it checks nothing.
STEP_REFERENCE = [(decoding, "beam_step", "helpers.decoding.beam_step"),
                  (decoding, "search", "helpers.decoding.search")]
STEP_INSTEAD = ("build the candidates' log P and scores yourself with tensor operations and keep the "
                "k best of each source.")


def _step_inputs(seed, batch=8, k=3, vocab=5):
    """Beams with log P, lengths from 1 to 14, some finished, and next-token log-probabilities:
    log P of about -0.1 to -0.4 per token, so that finished hypotheses of every length compete
    with the alive ones and every typical mistake keeps other survivors in some row."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 15, (batch, k), generator=g)
    log_p = -(torch.rand(batch, k, generator=g) * 0.3 + 0.1) * lengths
    finished = torch.rand(batch, k, generator=g) < 0.5
    finished[:, 0] = True
    finished[:, 1] = False
    next_log_probs = (torch.randn(batch, k, vocab, generator=g) * 1.5).log_softmax(-1)
    return log_p, lengths, finished, next_log_probs


def _reference(log_p, lengths, finished, nlp, alpha, *, extend_finished=False, drop_finished=False,
               combine="add", lp="right", length_step=1, per_beam=False, only_first=False,
               largest=True, penalty_per_token=False, copied_finished=False):
    """One beam-search step, right by default, or with one mistake; returns (beam, token, log_p).
    copied_finished: a finished beam stays with its log P under every token, not under PAD only."""
    batch, k, vocab = nlp.shape
    alive_next = lengths + length_step
    if combine == "add":
        extended = log_p[..., None] + nlp
    else:                                                        # log-probabilities multiplied
        extended = log_p[..., None] * nlp
    keep = torch.full_like(extended, float("-inf"))
    keep[..., PAD] = log_p
    if copied_finished:
        keep = log_p[..., None].expand_as(extended).clone()
    if extend_finished:
        total, length = extended, alive_next[..., None].expand_as(extended)
    else:
        total = torch.where(finished[..., None], keep, extended)
        length = torch.where(finished, lengths, alive_next)[..., None].expand_as(extended)
    if drop_finished:
        total = total.masked_fill(finished[..., None], float("-inf"))
    penalty = {"right": lambda n: ((5 + n) / 6) ** alpha,
               "none": lambda n: torch.ones_like(n, dtype=torch.float),
               "outside": lambda n: (5 + n) ** alpha / 6,
               "times": lambda n: alpha * (5 + n) / 6}[lp](length.float())
    score = total / penalty
    if penalty_per_token:                                        # only the new token divided
        score = torch.where(finished[..., None], keep, log_p[..., None] + nlp / penalty)
    if per_beam:                                                 # each beam keeps its own best
        best_token = score.argmax(-1)
        beam = torch.arange(k).expand(batch, k)
        return beam, best_token, total.gather(2, best_token[..., None])[..., 0]
    if only_first:
        best = score[:, 0].topk(k, dim=1, largest=largest).indices
        return torch.zeros_like(best), best, total[:, 0].gather(1, best)
    best = score.flatten(1).topk(k, dim=1, largest=largest).indices
    return best // vocab, best % vocab, total.flatten(1).gather(1, best)


STEP_MISTAKES = [
    ("Finished hypotheses are still extended: a beam that wrote </s> is complete; it stays once, "
     "as it is (token PAD, its log P and length unchanged), and competes with its final score.",
     {"extend_finished": True}),
    ("You kept each beam's own best token (one survivor per beam): take the top k over all "
     "k × vocab candidates together, so a good beam may give two survivors and a poor one none.",
     {"per_beam": True}),
    ("You multiplied the log-probabilities: probabilities multiply, so log-probabilities add, "
     "log P(new) = log P(beam) + log p(token).", {"combine": "times"}),
    ("The length penalty divides the whole log P of a candidate, not only the new token's "
     "log-probability: score = (log P(beam) + log p(token)) / lp(new length).",
     {"penalty_per_token": True}),
    ("α is in the wrong place: lp = ((5 + |Y|) / 6)^α is a power, not a product with α.",
     {"lp": "times"}),
    ("You ranked by log P without the length penalty, or divided the probability P(Y) itself (a "
     "number below 1 divided by lp gets smaller: that penalises the longer candidates instead of "
     "helping them): rank all candidates by log P / ((5 + |Y|) / 6)^α.", {"lp": "none"}),
    ("The length of an extended candidate is its beam's length + 1 (it has one token more); "
     "a finished one keeps its length.", {"length_step": 0}),
    ("Finished hypotheses are missing: they stay in the running (once each, token PAD) and compete "
     "with the extended ones by their final score.", {"drop_finished": True}),
    ("A finished beam is copied under every token: it stays once, under token PAD only (the other "
     "tokens of a finished beam get -inf), or one finished answer fills several of the k places.",
     {"copied_finished": True}),
    ("Only the first beam was extended: every alive beam gives vocab candidates.", {"only_first": True}),
    ("You kept the k worst candidates: take the largest scores (topk keeps the largest by default).",
     {"largest": False}),
]


def _as_step_output(out, batch, k, dtype=torch.float32):
    """The learner's (beam, token, new_log_p) as tensors (long, long, float64) of shape (batch, k): torch
    tensors, beam and token of an integer dtype, new_log_p of the given log-probabilities' dtype."""
    if isinstance(out, torch.Tensor) or not isinstance(out, (tuple, list)) or len(out) != 3:
        what = f"a tensor of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else (
            f"{len(out)} items" if isinstance(out, (tuple, list)) else type(out).__name__)
        raise Hint(f"{STEP.split('(')[0]} should return three tensors (beam, token, new_log_p), "
                   f"each (batch, k); got {what}.")
    names = ("beam", "token", "new_log_p")
    tensors = []
    for name, value in zip(names, out, strict=True):
        if not isinstance(value, torch.Tensor):
            kind = type(value).__module__.split(".")[0] + "." + type(value).__name__
            raise Hint(f"{name} should be a torch tensor of shape ({batch}, {k}), got "
                       f"{kind.removeprefix('builtins.')}: keep the whole step in torch (topk, // and %), "
                       "so that the next step can index the caches and add to log P with it.")
        if value.dtype == torch.bool or value.is_complex():
            raise Hint(f"{name} should hold numbers, got dtype {value.dtype}.")
        if tuple(value.shape) != (batch, k):
            raise Hint(f"{name} should have shape ({batch}, {k}), one number per survivor; got "
                       f"{tuple(value.shape)}.")
        tensors.append(value.detach())
    beam, token, new_log_p = tensors
    if new_log_p.dtype in (torch.float16, torch.bfloat16):
        raise Hint(f"new_log_p is {str(new_log_p.dtype).replace('torch.', '')}, the log-probabilities "
                   "you are given are float32: keep their dtype (half precision keeps about 3 "
                   "significant digits, and the next steps add to these numbers).")
    if new_log_p.dtype != dtype:
        raise Hint(f"new_log_p is {str(new_log_p.dtype).replace('torch.', '')}, the log-probabilities you "
                   f"are given are {str(dtype).replace('torch.', '')}: keep their dtype (no .double(), "
                   ".long() or .to(...)); the next step adds to these numbers.")
    for name, value in (("beam", beam), ("token", token)):
        if value.is_floating_point() and bool((value == value.round()).all()):
            raise Hint(f"{name} holds whole numbers as {str(value.dtype).replace('torch.', '')}: indices "
                       "are integers (torch.long), as topk's indices and // and % on them are; a float "
                       "cannot index the beams.")
    for name, value in (("beam", beam), ("token", token)):
        if value.is_floating_point() and not bool((value == value.round()).all()):
            raise Hint(f"{name} should hold whole numbers (indices); use // and % on the flat index "
                       "that topk returns.")
    if torch.isnan(new_log_p.double()).any():
        raise Hint("new_log_p contains NaN: look for -inf · 0 or -inf - -inf.")
    return beam.long(), token.long(), new_log_p.double()


def _canonical(beam, token, log_p, vocab):
    """The survivors of each row in one fixed order (by beam, then token), so that any order of the
    k survivors counts as the same answer."""
    order = (beam * vocab + token).argsort(dim=1)
    return beam.gather(1, order), token.gather(1, order), log_p.double().gather(1, order)


def _same_survivors(a, b, vocab, check_log_p=True):
    a, b = _canonical(*a, vocab), _canonical(*b, vocab)
    same = torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    return same and (not check_log_p or close(a[2], b[2], 1e-4))


@checker
def check_beam_step(fn):
    """The learner's my_beam_step against helpers.decoding.beam_step on batches with finished beams."""
    for number_, (seed, alpha) in enumerate(((5, 0.6), (1, 1.0))):
        log_p, lengths, finished, nlp = _step_inputs(seed)
        batch, k, vocab = nlp.shape
        got = _as_step_output(call(fn, STEP, log_p, lengths, finished, nlp, alpha, reference=STEP_REFERENCE,
                                   instead=STEP_INSTEAD), batch, k, log_p.dtype)
        want = beam_step(log_p, lengths, finished, nlp, alpha)
        if _same_survivors((got[1], got[0], got[2]), want, vocab, check_log_p=False):
            return "beam and token are swapped: return (beam, token, new_log_p) in this order."
        if ((got[0] < 0) | (got[0] >= k)).any() or ((got[1] < 0) | (got[1] >= vocab)).any():
            return (f"beam should be in 0..{k - 1} (which beam each survivor extends) and token in "
                    f"0..{vocab - 1}: from the flat index i over k × vocab, beam = i // vocab and "
                    "token = i % vocab.")
        if _same_survivors(got, want, vocab):
            continue
        if _same_survivors(got, want, vocab, check_log_p=False):
            score = want[2] / length_penalty(torch.where(finished, lengths, lengths + 1)
                                             .gather(1, want[0]).double(), alpha)
            if _same_survivors(got, (want[0], want[1], score), vocab):
                return ("The right survivors, but new_log_p holds their penalised scores: return "
                        "log P itself; the penalty only ranks, and the next step adds to log P.")
            return ("The right survivors, but new_log_p is off: it is log P(beam) + log p(token) "
                    "for an extended beam and log P(beam) unchanged for a finished one.")
        for hint, mistake in STEP_MISTAKES:
            wrong = _reference(log_p, lengths, finished, nlp, alpha, **mistake)
            if _same_survivors(got, wrong, vocab, check_log_p=False):
                return hint
        if number_ > 0:
            return ("Right with α = 0.6 but not with α = 1.0 (another batch): use the alpha you are "
                    "given, lp = ((5 + |Y|) / 6)^alpha.")
        return ("Not yet: build every candidate's log P (alive beam + each token; finished beam once, "
                "as token PAD), divide by ((5 + length) / 6)^alpha, and keep the top k over the flattened "
                "k × vocab candidates of each row.")
    return Passed("Your step keeps the same k survivors as helpers.decoding.beam_step on two batches "
                  "with finished hypotheses.")


# --- the cached attention step -----------------------------------------------------------------

CACHED = "my_cached_attention(q_new, k_new, v_new, k_cache, v_cache)"
ARGUMENTS = ("q_new", "k_new", "v_new", "k_cache", "v_cache")
CACHED_REFERENCE = [(decoding, "cached_self_attention", "helpers.decoding.cached_self_attention"),
                    (decoding, "decode_step", "helpers.decoding.decode_step")]
CACHED_INSTEAD = ("append the new key and value to the caches yourself and let the one new query attend "
                  "over all t + 1 positions.")

# (seed, batch, heads, cached positions t, d_k): four sizes that differ in every case, so that a
# shape says which axis it grew on; the last case is the first step, with an empty cache.
CACHE_CASES = ((0, 2, 4, 3, 8), (1, 3, 2, 5, 6), (2, 2, 3, 1, 8), (3, 3, 2, 0, 4))


def _cache_inputs(seed, batch, heads, t, d_k):
    """The queries, keys and values of t + 1 positions in every head (what the full computation
    reads) and the same numbers cut as the cached step sees them: (q_new, k_new, v_new, k_cache,
    v_cache), the new position last."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, t + 1, d_k, generator=g) * 1.5 for _ in range(3))
    step = tuple(x.clone() for x in (q[:, :, -1:], k[:, :, -1:], v[:, :, -1:], k[:, :, :-1], v[:, :, :-1]))
    return (q, k, v), step


def _full_last_position(q, k, v):
    """The full computation: causally masked attention over all positions at once, the last one's
    output, (batch, heads, 1, d_k)."""
    n = q.shape[2]
    out, _ = attention(q, k, v, additive_mask(causal=causal_mask(n)).to(q.dtype))
    return out[:, :, -1:]


def _attend(q, k, v, scale=None, dim=-1, hidden=None):
    """softmax(q kᵀ / scale) v over the axis dim, with the positions of hidden (True) left out."""
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    return scores.softmax(dim) @ v


def _error(f):
    """The line call() prints when a learner's function fails the way f does (None if f runs)."""
    try:
        f()
    except Exception as e:  # what torch says for that mistake, to compare with the learner's error
        return f"{CACHED} raised {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return None


def _failing_mistakes(qn, kn, vn, kc, vc):
    """(hint, the error line) of the mistakes that make a step raise on these inputs."""
    axes = {0: "the batch (dim 0)", 1: "the heads (dim 1)", 3: "d_k (dim 3, the last)"}
    for dim, axis in axes.items():
        for order in ((kc, kn), (kn, kc)):
            yield (f"The cache is appended on the wrong axis: torch.cat(..., dim={dim}) joins along "
                   f"{axis}. Keys and values are (batch, heads, positions, d_k): the new position joins "
                   "the cached ones along the positions, dim=2 (or dim=-2).",
                   _error(lambda order=order, dim=dim: torch.cat(list(order), dim=dim)))
    k, v = torch.cat([kc, kn], dim=2), torch.cat([vc, vn], dim=2)
    for values in (vc, vn):
        yield ("The keys are appended but not the values: the new value joins v_cache on the positions "
               "axis exactly as the new key joins k_cache (one key and one value per position).",
               _error(lambda values=values: _attend(qn, k, values)))
    for keys in (kc, kn):
        yield ("The values are appended but not the keys: the new key joins k_cache on the positions "
               "axis exactly as the new value joins v_cache (one key and one value per position).",
               _error(lambda keys=keys: _attend(qn, keys, v)))


def _computed(mistakes):
    """(hint, *tensors) of each mistake whose tensors can be computed on these inputs: a mistake
    that cannot happen at these sizes (a torch.cat of mismatched shapes) is left out."""
    for hint, make in mistakes:
        try:
            yield (hint, *make())
        except RuntimeError:
            continue


def _cache_mistakes(kn, vn, kc, vc):
    """(hint, the k cache, the v cache) that a step with that mistake returns."""
    k, v = torch.cat([kc, kn], dim=2), torch.cat([vc, vn], dim=2)
    root = math.sqrt(kn.shape[-1])
    mistakes = [
        ("You returned the old caches, not the updated ones: return the caches with the new key "
         "and value appended, so that the next step reads this position too.", lambda: (kc, vc)),
        ("The keys are appended but not the values: return v_cache with the new value appended "
         "as well (one key and one value per position).", lambda: (k, vc)),
        ("The values are appended but not the keys: return k_cache with the new key appended "
         "as well (one key and one value per position).", lambda: (kc, v)),
        ("You returned only the new position's key and value: the caches hold every position so "
         "far, the t cached ones followed by the new one, t + 1 in all.", lambda: (kn, vn)),
        ("The new key and value are prepended: the cache keeps the positions in order, the oldest "
         "first, so the new one goes last, torch.cat([k_cache, k_new], dim=2). The output cannot "
         "show it (attention sums over the keys in any order), but index i of the cache must stay "
         "position i.", lambda: (torch.cat([kn, kc], dim=2), torch.cat([vn, vc], dim=2))),
        ("The two caches are swapped: return (output, the new k cache, the new v cache) in this "
         "order.", lambda: (v, k)),
        ("The returned k_cache holds the keys transposed, (batch, heads, d_k, positions): keep the "
         "cache as (batch, heads, positions, d_k), like the cache you were given, and transpose "
         "only inside the product q kᵀ.", lambda: (k.transpose(-2, -1), v)),
        ("The returned k_cache holds keys divided by √d_k: the cache keeps each key as the layer "
         "computed it (the next step appends to it and reads it again); divide the scores "
         "q kᵀ by √d_k instead.", lambda: (k / root, v)),
        ("The new key is divided by √d_k before it joins the cache, the cached ones are not: the "
         "cache keeps every key as the layer computed it; divide the scores q kᵀ by √d_k "
         "instead.", lambda: (torch.cat([kc, kn / root], dim=2), v)),
    ]
    for dim, axis in ((1, "the heads (dim 1)"), (3, "d_k (dim 3, the last)")):
        mistakes.append((f"The cache is appended on the wrong axis, {axis}: keys and values are "
                         "(batch, heads, positions, d_k), the new position joins the cached ones "
                         "along the positions, dim=2.",
                         lambda dim=dim: (torch.cat([kc, kn], dim=dim), torch.cat([vc, vn], dim=dim))))
    return _computed(mistakes)


def _output_mistakes(qn, kn, vn, kc, vc):
    """(hint, the output) that a step with that mistake returns, for inputs in float64."""
    batch, heads, t, d_k = kc.shape
    k, v = torch.cat([kc, kn], dim=2), torch.cat([vc, vn], dim=2)
    yield ("You divided the scores by √d_model (heads · d_k): each head compares vectors of d_k "
           "numbers, so divide by √d_k = √(q_new.shape[-1]).", _attend(qn, k, v, math.sqrt(heads * d_k)))
    yield "The scores are not scaled: divide q kᵀ by √d_k before the softmax.", _attend(qn, k, v, 1.0)
    yield "You divided the scores by d_k: divide by its square root, √d_k.", _attend(qn, k, v, d_k)
    yield ("You multiplied the scores by √d_k: divide by it.", _attend(qn, k, v, 1 / math.sqrt(d_k)))
    yield ("The softmax runs over the wrong axis, dim=-2, the single query: every weight becomes 1 and "
           "the output is the sum of the values. Normalise over the last axis, the t + 1 keys.",
           _attend(qn, k, v, dim=-2))
    for dim, axis in ((1, "the heads (dim 1)"), (0, "the batch (dim 0)")):
        yield (f"The softmax runs over the wrong axis, {axis}: the weights of one query must sum to 1 "
               "over its t + 1 keys, the last axis (dim=-1).", _attend(qn, k, v, dim=dim))
    yield ("A causal mask built for a single query (is_causal=True, or triu of a (1, t + 1) matrix) "
           "lines the new query up with the first position, so it reads position 1 only. No mask is "
           "needed: the new position is the last one and may read every cached position and itself "
           "(a mask aligned on the last position hides nothing).",
           _attend(qn, k, v, hidden=torch.ones(1, t + 1, dtype=torch.bool).triu(1)))
    if t > 0:
        yield ("The new position reads only the cached positions: append its own key and value first, "
               "then attend over all t + 1 positions (it may read itself).", _attend(qn, kc, vc))
    yield ("The output reads only the new position (a softmax over one key gives its value): attend "
           "over the cached keys and values too, all t + 1 positions.", vn)
    yield ("Keys and values are in different orders (one appended, the other prepended): each "
           "position's key and value must sit at the same index.",
           _attend(qn, torch.cat([kn, kc], dim=2), v))
    yield ("Keys and values are in different orders (one appended, the other prepended): each "
           "position's key and value must sit at the same index.",
           _attend(qn, k, torch.cat([vn, vc], dim=2)))


def _same_tensor(got, want, tol=1e-6):
    """got has want's shape and its numbers (two empty tensors of one shape count as the same)."""
    return got.shape == want.shape and (want.numel() == 0 or close(got, want, tol))


def _call_cached(fn, args):
    """call(fn, ...) with the hints of this exercise for a step that raises or changes its inputs."""
    try:
        return call(fn, CACHED, *args, reference=CACHED_REFERENCE, instead=CACHED_INSTEAD)
    except Hint as hint:
        text = str(hint)
        for name_, position in zip(ARGUMENTS, range(1, 6), strict=True):
            if f"changed its argument number {position} in place" in text:
                if name_.endswith("cache"):
                    raise Hint(f"my_cached_attention changed the caller's {name_} in place (e.g. "
                               f"{name_}.data = ..., {name_}[...] = ..., or a method ending in _): build "
                               "the longer cache with torch.cat, a new tensor, and return it; the cache "
                               "you were given must stay as it was.") from None
                raise Hint(f"my_cached_attention changed {name_} in place: compute new tensors, the "
                           "caller's inputs must stay as they were.") from None
        for hint_, line in _failing_mistakes(*args):
            if line is not None and text == line:
                raise Hint(hint_) from None
        raise


def _three_tensors(out, dtype=torch.float32):
    """The learner's (out, k_cache, v_cache) as float64 tensors, or raise Hint: a tuple of three
    floating-point tensors of dtype, the inputs' (float32)."""
    if isinstance(out, torch.Tensor) or not isinstance(out, (tuple, list)) or len(out) != 3:
        what = f"a tensor of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else (
            f"{len(out)} items" if isinstance(out, (tuple, list)) else type(out).__name__)
        raise Hint("my_cached_attention should return three tensors (out, k_cache, v_cache): the new "
                   f"position's output and the two longer caches; got {what}.")
    names = ("out", "The returned k_cache", "The returned v_cache")
    got = []
    for name, value in zip(names, out, strict=True):
        if not isinstance(value, torch.Tensor):
            raise Hint(f"{name} should be a torch tensor, got {type(value).__name__}.")
        kind = str(value.dtype).replace("torch.", "")
        if value.dtype in (torch.float16, torch.bfloat16):
            raise Hint(f"{name} is {kind}, the inputs are float32: keep their dtype (no .half() "
                       "or .to(...)); half precision keeps about 3 significant digits, so the cache "
                       "would no longer hold the layer's keys and values.")
        if not value.is_floating_point() and value.dtype != torch.bool and not value.is_complex():
            raise Hint(f"{name} holds whole numbers (dtype {kind}): keys, values and outputs are "
                       "float32 like the inputs; nothing needs rounding or .long().")
        got.append(tensor(value, name, dtype=dtype))
    return got


def _order_hint(returned, right):
    """The hint for the right three tensors returned in another order than (out, k_cache, v_cache)."""
    if not isinstance(returned, (tuple, list)) or len(returned) != 3 or \
            not all(isinstance(x, torch.Tensor) for x in returned):
        return None
    names = ("out", "k_cache", "v_cache")

    def fits(order):
        try:
            return all(_same_tensor(returned[i].detach().double(), right[j])
                       for i, j in zip(range(3), order, strict=True))
        except (RuntimeError, TypeError):       # complex numbers, say: not the right tensors anyway
            return False
    if fits((0, 1, 2)):
        return None
    for order in itertools.permutations(range(3)):
        if order not in ((0, 1, 2), (0, 2, 1)) and fits(order):     # (0, 2, 1): the caches' own hint
            said = ", ".join(names[j] for j in order)
            return (f"The three tensors are right but in another order, ({said}): return (out, k_cache, "
                    "v_cache), the new position's output first, then the longer key and value caches.")
    return None


def _largest_gap(got, want):
    """The largest difference between two tensors of one shape (0 for empty ones)."""
    return float((got - want).abs().max()) if want.numel() else 0.0


def _output_shape_hint(shape, batch, heads, t, d_k):
    """A hint for an output of the wrong shape."""
    if shape == (batch, heads, d_k):
        return (f"out has shape {shape}: keep the position axis, out is (batch, heads, 1, d_k) = "
                f"{(batch, heads, 1, d_k)}, one new position.")
    if shape == (batch, 1, heads * d_k):
        return (f"out has shape {shape}, the heads merged: return them apart, (batch, heads, 1, d_k) = "
                f"{(batch, heads, 1, d_k)}; the layer merges them afterwards.")
    if shape == (batch, heads, 1, t + 1):
        return (f"out has the shape of the attention weights, {shape}: multiply the weights by the "
                "values to get (batch, heads, 1, d_k).")
    return f"out should have shape (batch, heads, 1, d_k) = {(batch, heads, 1, d_k)}, got {shape}."


@checker
def check_cached_attention(fn):
    """The learner's my_cached_attention against the full computation (causally masked attention over
    all t + 1 positions, the last one) on random batches with 3, 5, 1 and 0 cached positions."""
    for number_, (seed, batch, heads, t, d_k) in enumerate(CACHE_CASES):
        full, args = _cache_inputs(seed, batch, heads, t, d_k)
        returned = _call_cached(fn, args)
        qn, kn, vn, kc, vc = (a.double() for a in args)
        k_right, v_right = torch.cat([kc, kn], dim=2), torch.cat([vc, vn], dim=2)
        right = _full_last_position(*(x.double() for x in full))
        order = _order_hint(returned, (right, k_right, v_right))
        if order:
            return order
        got, k_got, v_got = _three_tensors(returned, args[0].dtype)
        when = "on an empty cache (t = 0, the first step)" if t == 0 else f"with {t} cached positions"
        if not (_same_tensor(k_got, k_right) and _same_tensor(v_got, v_right)):
            for hint, k_wrong, v_wrong in _cache_mistakes(kn, vn, kc, vc):
                if _same_tensor(k_got, k_wrong) and _same_tensor(v_got, v_wrong):
                    return hint
            if number_ > 0:
                return (f"The caches are right with {CACHE_CASES[0][3]} cached positions but not {when}: "
                        "torch.cat([k_cache, k_new], dim=2) works for any t, 0 included.")
            for name, got_, want in (("k_cache", k_got, k_right), ("v_cache", v_got, v_right)):
                if got_.shape != want.shape:
                    return (f"The returned {name} should have shape (batch, heads, t + 1, d_k) = "
                            f"{tuple(want.shape)}, the {t} cached positions and the new one; got "
                            f"{tuple(got_.shape)}.")
            for name, got_, want in (("k_cache", k_got, k_right), ("v_cache", v_got, v_right)):
                gap = _largest_gap(got_, want)
                if 1e-6 < gap <= 1e-2 * max(1.0, float(want.abs().max())):
                    return (f"The returned {name} is close to the right one but not equal (off by up to "
                            f"{gap:.1e}): a cache keeps the keys and values it is given exactly as they "
                            "are, the cached ones followed by the new one; no scaling, rounding or "
                            "recomputing.")
            return ("The returned caches have the right shape but not the right numbers: the old cache "
                    "followed by the new key (value) on the positions axis, torch.cat([k_cache, k_new], "
                    "dim=2), nothing else changed.")
        if got.shape != right.shape:
            return _output_shape_hint(tuple(got.shape), batch, heads, t, d_k)
        if close(got, right, 1e-4):
            continue
        for hint, wrong in _output_mistakes(qn, kn, vn, kc, vc):
            if _same_tensor(got, wrong, 1e-4):
                return hint
        gap = _largest_gap(got, right)
        if gap <= 3e-2 * max(1.0, float(right.abs().max())):
            return (f"out is close to the full computation but off by up to {gap:.1e}, far more than "
                    "float32's rounding (about 1e-7 here): compute in the inputs' dtype throughout (no "
                    "float16 or bfloat16 on the way) and add no small constant to the scores or weights.")
        if number_ > 0:
            return (f"Right with {CACHE_CASES[0][3]} cached positions but not {when}: use the shapes of "
                    "the tensors you are given (q_new.shape[-1] for d_k), no fixed sizes.")
        return ("The caches are right but not the output: softmax(q_new kᵀ / √d_k) over the last axis "
                "(the t + 1 keys), times the t + 1 values, with the appended caches as k and v.")
    return Passed("Your step gives the new position the same output as the full causally masked "
                  "attention over all positions, and returns caches one position longer, with 0 to 5 "
                  "cached positions.")


# --- Check your understanding -----------------------------------------------------------------

# Each question's answer, its explanation and its hints live in a constant above its checker,
# out of the checker's own source (which ?? shows).
_BEAM_ONE = (
    "a",
    "With one beam the candidates of a step all extend the same hypothesis, so they have the same "
    "length and the same lp: the best score is the most probable next token, greedy's choice. The "
    "next cell measures it on the 500 test sequences.",
    {"b": "The length penalty only reorders hypotheses of different lengths. With one beam every "
          "candidate of a step extends the one hypothesis kept, so all have the same length, and "
          "dividing them by the same lp changes no ranking.",
     "c": "One beam keeps one hypothesis, exactly as greedy does: it cannot come back to a prefix "
          "it dropped (section 4's toy: beam 1 ends with greedy's a a </s>), so it is not a better "
          "search, it is the same one."},
)


@checker
def check_beam_one(answer_1):
    """Question 1, asked before section 6 measures it: beam search with k = 1 against greedy decoding."""
    return choice(answer_1, "answer_1", *_BEAM_ONE)


_TEMPERATURE_ZERO = (
    "a",
    "Dividing the logits by a tiny T stretches every gap between them, so the most likely token's "
    "probability tends to 1 and all the others to 0: every draw is the argmax, greedy's choice.",
    {"b": "That is the other end, T → ∞: dividing by a huge T makes all the logits nearly equal, so the "
          "distribution becomes uniform. A small T does the opposite: compare the plot's T = 0.5 with "
          "T = 1.",
     "c": "The order of the tokens stays, but not their probabilities: softmax(z / T) with a small T "
          "stretches the gaps between the logits, and the largest takes nearly all the probability "
          "(the plot's T = 0.5 bars against T = 1).",
     "d": "Sampling keeps no alternative hypotheses: at T → 0 it takes the single most likely token at "
          "each step, one step at a time. That is greedy decoding, which differs from beam search "
          "where the model is unsure (section 6, the model of step 500)."},
)


@checker
def check_temperature_zero(answer_2):
    """Question 2: what sampling writes as the temperature T goes to 0."""
    return choice(answer_2, "answer_2", *_TEMPERATURE_ZERO)


_CONFIDENT_GREEDY = (
    "a",
    "Any other answer leaves greedy's path at some step with a token of probability at most 0.07, "
    "so its log P is at most ln 0.07 = −2.66, while greedy's is 6 · ln 0.93 = −0.44; even the "
    "largest penalty within input + 50 tokens cannot close that gap.",
    {"b": "Beam search keeps 4 hypotheses while it searches, but it returns the one with the best "
          "score, and here nothing can beat greedy's: any other answer contains a token of "
          "probability ≤ 0.07 (section 4, the toy; section 6, the trained model).",
     "c": "The penalty helps longer answers, but not that much: an answer with log P ≤ −2.66 needs "
          "lp ≥ 8.8 to reach greedy's score −0.30, that is about 220 tokens, and the search "
          "stops at input + 50 (section 3 has the formula)."},
)


@checker
def check_confident_greedy(answer_3):
    """Question 3: greedy chose a token of probability 0.93 at each of 6 steps: can beam 4 change it?"""
    return choice(answer_3, "answer_3", *_CONFIDENT_GREEDY)


# Question 4: the big model's decoder (Table 3: N = 6 layers, h = 16 heads of d_k = 64, d_model = 1024, each
# head with its own keys and values), one sequence, 100 target positions, float32. Section 8 printed the base
# model's bytes per token (8 heads): the question asks for another model, so the answer is not in sight.
Q4_LAYERS, Q4_HEADS, Q4_D_K, Q4_POSITIONS, Q4_BYTES = 6, 16, 64, 100, 4
CACHE_BYTES = 2 * Q4_LAYERS * Q4_HEADS * Q4_D_K * Q4_POSITIONS * Q4_BYTES
_CACHE_WHY = (f"2 (keys and values) · {Q4_LAYERS} layers · {Q4_HEADS} heads · {Q4_D_K} numbers · "
              f"{Q4_POSITIONS} positions · {Q4_BYTES} bytes: about {CACHE_BYTES / 1e6:.1f} MB for one "
              f"sequence, growing by {CACHE_BYTES // Q4_POSITIONS:,} bytes per token, twice the base "
              "model's.")


def _cache_bytes_mistakes():
    """(wrong answer, hint): what each typical slip gives. Where two slips give the same number,
    the hint names them all, since the number alone cannot tell them apart."""
    right, h, n = CACHE_BYTES, Q4_HEADS, Q4_POSITIONS
    return [
        (right / 4, "That is the number of numbers, 2 · N · h · d_k · n; in float32 each takes 4 bytes."),
        (right / 2, "Half the answer: either the keys without the values (the factor 2 in 2 · N · h · d_k "
                    "counts both), or 2 bytes per number (float16; float32 takes 4), or the base model's 8 "
                    f"heads (section 8's count); the big model has h = {h}."),
        (right * 2, "Twice the answer: either you counted the encoder's 6 layers too (the cache belongs to "
                    "the decoder; the encoder runs once and keeps nothing per generated token), or 8 bytes "
                    "per number (float64); float32 takes 4."),
        (right / h, f"1/{h} of the answer: one head instead of {h} (each layer keeps the keys and values of "
                    f"all its h = {h} heads, {h} · 64 numbers each per position)."),
        (right / 8, "One eighth of the answer: you divided by 8 to turn bits into bytes, though the 4 bytes "
                    "of a float32 are already bytes."),
        (right * h, f"{h} times the answer: the {h} heads counted twice (d_model = 1024 is already "
                    f"h · d_k = {h} · 64: use one or the other)."),
        (right * 8, "8 times the answer: bits instead of bytes (8 bits a byte)."),
        (right // n * (n + 1), "That counts 101 positions: the cache holds one key and one value per "
                               "position read so far, 100 of them here, <s> among them; not one more."),
        (right // n * (n - 1), "That counts 99 positions: the cache holds one key and one value for each of "
                               "the 100 positions, the first (<s>) included."),
        (right / 1024, "That is in kibibytes (KiB): the question asks for bytes."),
        (right / 1e3, "That is in kilobytes (kB): the question asks for bytes."),
        (right / 1024 ** 2, "That is in mebibytes (MiB): the question asks for bytes."),
        (right / 1e6, "That is in megabytes (MB): the question asks for bytes."),
    ]


@checker
def check_cache_bytes(answer_4):
    """Question 4: the bytes of the decoder's self-attention KV cache of the big model for one sequence
    of 100 target positions in float32."""
    if isinstance(answer_4, torch.Tensor) and answer_4.dtype == torch.float16 and bool(
            torch.isinf(answer_4).any()):
        return ("answer_4 overflowed float16, which holds numbers up to 65,504: write the answer as a "
                "plain Python number (an int).")
    value = number(answer_4, "answer_4")
    right = CACHE_BYTES
    if close(value, right, 0.5):
        return Passed(_CACHE_WHY)
    for wrong, hint in _cache_bytes_mistakes():
        if close(value, wrong, 0.5 if wrong > 100 else 1e-3):
            return hint
    if abs(value - right) <= 0.05 * right:
        return ("Close, but give the exact number of bytes: 2 · N · h · d_k numbers per position (keys "
                "and values, every decoder layer, every head), times 100 positions, times 4 bytes per "
                "float32 number, with no rounding.")
    return ("Use notebook 06's count per token, 2 · N · h_kv · d_k numbers (keys and values, every decoder "
            "layer, every key-value head; in the big model every head has its own, h_kv = h = 16), times "
            "100 positions, times 4 bytes per float32 number (this notebook's section 8).")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_beam_step, decoding.beam_step, lambda f: lambda *args: f(*args))
exercise(check_cached_attention, _full_last_position,
         lambda f: lambda q, k, v, kc, vc: (f(q, torch.cat([kc, k], 2), torch.cat([vc, v], 2)),
                                            torch.cat([kc, k], 2), torch.cat([vc, v], 2)))
