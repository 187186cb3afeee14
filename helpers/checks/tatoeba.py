"""Checks for notebook 11 (real sentences): the split by English sentence, BLEU with several
references, and the questions of "Check your understanding"."""

import math
import random
from collections import Counter

import torch

from helpers import bleu as course_bleu
from helpers.checks import Hint, Passed, call, checker, choice, exercise, number, plain
from helpers.checks.translation import _bleu_references
from helpers.tasks import tatoeba

# --- Your turn 1: the split by English sentence -------------------------------------------------

SPLIT = "my_split(pairs, n_test, seed)"


def _split_pairs(rng, n_english):
    """English sentences with one to four French translations each, some French shared by two English
    sentences (as "Salut !" translates "Hi!" and "Hello!"), in an order that is not sorted."""
    pairs = []
    for i in range(n_english):
        english = f"English sentence {i:02d}."
        for j in range(1 + rng.randrange(4)):
            shared = rng.random() < 0.15
            french = f"Phrase commune {rng.randrange(6)} !" if shared else f"Phrase {i:02d}-{j} ."
            if (english, french) not in pairs:
                pairs.append((english, french))
    rng.shuffle(pairs)
    return pairs


def _draws(english, n_test, seed):
    """The test sentences random.Random(seed) draws from the sorted English sentences, as the text
    asks: sample(english, n_test), or the same generator's shuffle cut after n_test."""
    shuffled = list(english)
    random.Random(seed).shuffle(shuffled)
    return [set(random.Random(seed).sample(english, n_test)), set(shuffled[:n_test])]


def _grouped(part):
    """Whether part holds each English sentence's pairs next to each other."""
    runs = [e for k, (e, _) in enumerate(part) if k == 0 or part[k - 1][0] != e]
    return len(runs) == len(set(runs))


def _telling(pairs, n_test, seed):
    """Whether this seed's split lets every rule of the text show: a test sentence with several
    references, a training pair dropped for a test reference, lists whose order sorting, reversing or
    grouping changes, a draw with replacement that repeats a sentence, another seed's other draw."""
    english = sorted({e for e, _ in pairs})
    chosen = _draws(english, n_test, seed)[0]
    test = [p for p in pairs if p[0] in chosen]
    references = {f for _, f in test}
    train = [p for p in pairs if p[0] not in chosen]
    return (len(test) > n_test and any(f in references for _, f in train)
            and not _grouped(test) and not _grouped(train)
            and test != sorted(test) and train != sorted(train)
            and len(set(random.Random(seed).choices(english, k=n_test))) < n_test
            and not any(chosen == d for d in _draws(english, n_test, seed + 1)))


def split_worlds(rng=None):
    """The check's two data sets, made here (no file): (pairs, n_test, seed). Their sizes and seeds are
    drawn afresh at each check (rng: a random.Random, for a test that wants them fixed), among those
    whose split breaks every rule a wrong answer could break (see _telling)."""
    rng = random.Random() if rng is None else rng
    worlds = []
    while len(worlds) < 2:
        n_english = rng.randrange(36, 90)
        n_test = rng.randrange(7, n_english // 3)
        pairs = _split_pairs(rng, n_english)
        seed = next((s for s in (rng.randrange(10_000) for _ in range(50)) if _telling(pairs, n_test, s)),
                    None)
        if seed is not None:
            worlds.append((pairs, n_test, seed))
    return worlds


def _as_split(out):
    """The learner's (train, test) as two lists of (English, French) string pairs, or raise Hint."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        kind = f"a {type(out).__name__} of {len(out)} items" if isinstance(out, (tuple, list)) else \
            f"a {type(out).__name__}"
        raise Hint(f"my_split should return two lists, (train, test), got {kind}.")
    result = []
    for name, part in zip(("train", "test"), out, strict=True):
        if isinstance(part, (set, dict)):
            raise Hint(f"{name} should be a list of pairs, got a {type(part).__name__}: a set loses "
                       "nothing here but its order, a list keeps the pairs' order (use a list).")
        if not isinstance(part, (list, tuple)):
            raise Hint(f"{name} should be a list of (English, French) pairs, got {type(part).__name__}.")
        pairs = []
        for item in part:
            if not isinstance(item, (tuple, list)) or len(item) != 2 or \
                    not all(isinstance(s, str) for s in item):
                raise Hint(f"{name} should hold (English, French) pairs of strings, as the input does; "
                           f"it holds {type(item).__name__} {str(item)[:40]!r}.")
            pairs.append((item[0], item[1]))
        result.append(pairs)
    return result


def _split_problem(pairs, n_test, train, test):
    """The first rule the learner's (train, test) breaks, as a hint, or None."""
    given = Counter(pairs)
    test_english = {e for e, _ in test}
    train_english = {e for e, _ in train}
    if any(p not in given for p in train + test):
        odd = next(p for p in train + test if p not in given)
        return (f"Your split holds the pair {odd!r}, which the input does not have: keep the input's "
                "pairs as they are.")
    if test_english & train_english:
        leaked = len(test_english & train_english)
        return (f"{leaked} of your test sentences' English is also in train: you split the pairs, not "
                "the English sentences. Draw English sentences, then put every pair of a drawn sentence "
                "in test.")
    if len(test_english) != n_test:
        if len(test) == n_test:
            return (f"Your test holds {n_test} pairs but {len(test_english)} English sentences: n_test "
                    "counts English sentences, each with all its pairs (its references).")
        if len(test_english) < n_test:
            return (f"Your test has {len(test_english)} distinct English sentences, n_test asks for "
                    f"{n_test}: a draw with replacement (choices, or choice in a loop) can draw a sentence "
                    "twice; draw n_test different ones, with sample.")
        return f"Your test has {len(test_english)} distinct English sentences, n_test asks for {n_test}."
    doubled = [p for p, k in Counter(train + test).items() if k > 1]
    if doubled:
        where = "test" if doubled[0] in test else "train"
        return (f"The pair {doubled[0]!r} appears more than once in your split ({where}): references "
                "duplicated. Each input pair goes to one side, once.")
    missing = [p for p in pairs if p[0] in test_english and p not in set(test)]
    if missing:
        return (f"Your test lost references: {missing[0]!r} belongs to a test sentence but is not in "
                "test. Every pair of a drawn English sentence goes to test.")
    references = {f for _, f in test}
    shared = [p for p in train if p[1] in references]
    if shared:
        return (f"The training pair {shared[0]!r} has a test reference as its French: drop the training "
                "pairs whose French is a test reference, or the model is taught a test answer.")
    lost = [p for p in pairs if p[0] not in test_english and p[1] not in references and p not in set(train)]
    if lost:
        return (f"Your train lost {lost[0]!r}: its English is not a test sentence and its French no "
                "test reference, so it stays in training.")
    return None


def _order_problem(pairs, train, test):
    """The hint for a list that does not keep the input's order, or None."""
    position = {p: k for k, p in enumerate(pairs)}
    for name, part in (("test", test), ("train", train)):
        kept = sorted(part, key=position.__getitem__)
        if part == kept:
            continue
        how = ("sorted" if part == sorted(part) else "reversed" if part == kept[::-1] else
               "grouped by English sentence" if _grouped(part) else "in another order")
        return (f"Your {name} is {how}, not in the input's order: both lists keep the pairs' order (go "
                "through pairs once, in order, and keep the pairs that belong).")
    return None


@checker
def check_split(my_split):
    """my_split(pairs, n_test, seed) -> (train, test), split by English sentence."""
    for pairs, n_test, seed in split_worlds():
        train, test = _as_split(call(my_split, SPLIT, pairs, n_test, seed,
                                     reference=[(tatoeba, "split_by_english",
                                                 "helpers.tasks.tatoeba.split_by_english"),
                                                (tatoeba, "split", "helpers.tasks.tatoeba.split")],
                                     instead="draw the English sentences and sort the pairs yourself."))
        problem = _split_problem(pairs, n_test, train, test) or _order_problem(pairs, train, test)
        if problem:
            return problem
        drawn = {e for e, _ in test}
        again = _as_split(call(my_split, SPLIT, pairs, n_test, seed))[1]
        if {e for e, _ in again} != drawn:
            return ("Two calls with the same seed drew different test sentences: draw with a generator of "
                    "your own, random.Random(seed), not the global random module or a set's order.")
        shuffled = list(pairs)
        random.Random(seed + 1).shuffle(shuffled)
        moved = _as_split(call(my_split, SPLIT, shuffled, n_test, seed))[1]
        if {e for e, _ in moved} != drawn:
            return ("The same pairs in another order gave other test sentences: your split depends on the "
                    "file's order. Sort the distinct English sentences before drawing from them.")
        other = _as_split(call(my_split, SPLIT, pairs, n_test, seed + 1))[1]
        if {e for e, _ in other} == drawn:
            return ("Another seed drew the same test sentences: draw with random.Random(seed), so that the "
                    "seed chooses the draw.")
        if not any(drawn == d for d in _draws(sorted({e for e, _ in pairs}), n_test, seed)):
            return ("Your test sentences are not the ones the text specifies: random.Random(seed), made "
                    "with seed itself (not seed + 1 or another number), drawing n_test of the sorted "
                    "distinct English sentences with .sample, each once.")
    return Passed(SPLIT_PASSED)


SPLIT_PASSED = ("Your split keeps every pair of a test sentence in test and no test English or test "
                "reference in training, on two data sets, and draws the same sentences from the pairs in "
                "any order.")


# --- Your turn 2: BLEU with several references --------------------------------------------------

SEVERAL = "my_bleu_several(hypotheses, references)"


def several_corpora():
    """The check's corpora: (what, hypotheses, references), sentences as token lists, each with one to
    four references, hypotheses with words repeated, missing, cut short or in another case: chosen so
    that each mistake of SEVERAL_MISTAKES gives another number than the right one, and than every
    other mistake, on at least one of them. The first two score above 0; on the last, no 4-gram of a
    hypothesis is in a reference, so its BLEU is 0 (a precision of 0)."""
    def t(text):
        return text.split()
    return [
        ("a corpus of four sentences",
         [t('Le chat'), t('il fait froid , très froid .'), t('je ne le pas .'),
          t("c' est est mon chien et pas le tien !")],
         [[t('le chat est sur le tapis .'), t('Le chat est assis sur le tapis rouge .'), t('Le chat dort .')],
          [t('Il fait froid , très froid .'), t('il gèle .'), t('Il fait très froid ici .')],
          [t('je ne sais pas du tout .'), t('Je ne le sais pas .'), t('aucune idée .'), t('je sais pas .')],
          [t("c' est mon chien et pas le tien !"), t('Ce chien est le mien , pas le tien .'),
           t('ce chien est à moi .')]]),
        ("a corpus of three sentences",
         [t('Ce ce matin , nous avons mangé une pomme .'), t('elle chante très très bien , très très .'),
          t('où est la gare')],
         [[t('Ce matin , nous avons mangé une pomme verte et rouge .'),
           t('ce matin , nous avons mangé une très grosse pomme .')],
          [t('elle chante très bien , très très bien .'), t('Elle chante bien et fort , très fort .')],
          [t('Où est la gare ?'), t('où se trouve la gare , monsieur ?'), t('la gare , où est-elle ?')]]),
        ("a corpus where no 4-gram of a hypothesis is in a reference",
         [t('le chien noir dort ici .'), t('Tom mange une pomme rouge')],
         [[t('le chien noir mange .'), t('ici dort le chien .')],
          [t('Tom mange une grosse pomme .'), t('tom mange une pomme .')]]),
    ]


def _several_variant(hyps, refs, clip="largest", length="closest", bp_per_sentence=False, penalty=True,
                     max_n=4, mean="geometric", totals_of="hypothesis", lower=False):
    """BLEU (no smoothing) with one mistake, or none: clip "largest" (the largest count in one
    reference), "sum" (the counts of all references added), "pool" (the references joined into one,
    lengths added), "first" (the first reference's counts) or "none"; length "closest" (ties to the
    shorter), "closest, ties longer", "first", "longest", "shortest" or "average"; penalty False: no
    brevity penalty; max_n 3: n-grams up to 3; mean "arithmetic": the precisions' plain average;
    totals_of "length" (len(hyp) for every n) or "distinct" (the distinct n-grams); lower: lowercased."""
    if lower:
        hyps = [[w.lower() for w in h] for h in hyps]
        refs = [[[w.lower() for w in r] for r in group] for group in refs]
    matches, totals, c, r = [0] * max_n, [0] * max_n, 0, 0
    penalties = []
    for hyp, group in zip(hyps, refs, strict=True):
        if clip == "pool":
            group = [[tok for ref in group for tok in ref]]
        lengths = [len(g) for g in group]
        ref_len = {"closest": min(lengths, key=lambda x: (abs(len(hyp) - x), x)),
                   "closest, ties longer": min(lengths, key=lambda x: (abs(len(hyp) - x), -x)),
                   "first": lengths[0], "longest": max(lengths), "shortest": min(lengths),
                   "average": sum(lengths) / len(lengths)}[length]
        c, r = c + len(hyp), r + ref_len
        penalties.append(1.0 if len(hyp) > ref_len else math.exp(1 - ref_len / max(len(hyp), 1)))
        for n in range(1, max_n + 1):
            h = course_bleu.ngrams(hyp, n)
            counts = [course_bleu.ngrams(g, n) for g in group]
            if clip in ("largest", "pool"):
                most = Counter()
                for g in counts:
                    most |= g
            elif clip == "sum":
                most = sum(counts, Counter())
            elif clip == "first":
                most = counts[0]
            else:
                most = Counter({x: math.inf for g in counts for x in g})
            matches[n - 1] += sum(min(k, most[x]) for x, k in h.items())
            totals[n - 1] += {"hypothesis": max(len(hyp) - n + 1, 0), "length": len(hyp),
                              "distinct": len(h)}[totals_of]
    precisions = [m / t for m, t in zip(matches, totals, strict=True)]
    if mean == "arithmetic":
        score = sum(precisions) / max_n
    elif min(matches) == 0:
        return 0.0
    else:
        score = math.exp(sum(math.log(p) for p in precisions) / max_n)
    bp = sum(penalties) / len(penalties) if bp_per_sentence else (1.0 if c > r else math.exp(1 - r / c))
    return 100 * (bp if penalty else 1.0) * score


_RIGHT_LENGTH = "use the reference length closest to the hypothesis's (a tie: the shorter)"

SEVERAL_MISTAKES = [
    ("You clipped each n-gram by its counts in all the references added: clip by its largest count in "
     "any ONE reference (a word twice in one reference, once in another, counts at most twice).",
     {"clip": "sum"}),
    ("You pooled the references into one: clip by the largest count in any one reference, and take "
     "one reference's length (the closest), not their total.", {"clip": "pool"}),
    ("You clipped by the first reference only: an n-gram counts if any reference has it, up to its "
     "largest count in one of them.", {"clip": "first"}),
    ("Your counts are not clipped: an n-gram of the hypothesis counts at most as often as one "
     "reference has it.", {"clip": "none"}),
    (f"Your brevity penalty uses the first reference's length: {_RIGHT_LENGTH}, in each sentence.",
     {"length": "first"}),
    (f"Your brevity penalty uses the longest reference: {_RIGHT_LENGTH}.", {"length": "longest"}),
    (f"Your brevity penalty uses the shortest reference: {_RIGHT_LENGTH}.", {"length": "shortest"}),
    (f"Your brevity penalty uses the average reference length: {_RIGHT_LENGTH}.", {"length": "average"}),
    ("A tie between two reference lengths goes to the shorter one, as sacrebleu does: yours took the "
     "longer.", {"length": "closest, ties longer"}),
    ("You took the brevity penalty sentence by sentence and averaged it: add the hypothesis lengths "
     "and the chosen reference lengths over the corpus, then one penalty.", {"bp_per_sentence": True}),
    ("Your score has no brevity penalty: when the hypotheses are shorter in total than their chosen "
     "references (ℓ_hyp ≤ ℓ_ref), multiply by exp(1 − ℓ_ref / ℓ_hyp).", {"penalty": False}),
    ("Your precisions stop at trigrams: BLEU takes n = 1 to 4, four precisions, the 4-grams too.",
     {"max_n": 3}),
    ("You averaged the four precisions: BLEU takes their geometric mean, exp of the mean of their "
     "logarithms (and 0 when one of them is 0).", {"mean": "arithmetic"}),
    ("Your n-gram totals count every hypothesis token for every n: a hypothesis of c tokens has "
     "c − n + 1 n-grams of order n (none when c < n).", {"totals_of": "length"}),
    ("Your n-gram totals count distinct n-grams (len of the Counter): count each n-gram as often as it "
     "occurs, c − n + 1 of order n (sum of the Counter's values).", {"totals_of": "distinct"}),
    ("You lowercased the tokens: BLEU compares tokens as written, and 'Le' is not 'le' (the "
     "references keep their case, and so does the hypothesis).", {"lower": True}),
]


def _several_references():
    """Everything that computes BLEU: the course's helpers.bleu (several references too) and
    sacrebleu's scoring."""
    return [*_bleu_references(),
            (course_bleu, "corpus_bleu_several", "helpers.bleu.corpus_bleu_several"),
            (course_bleu, "statistics_several", "helpers.bleu.statistics_several"),
            (course_bleu, "closest_length", "helpers.bleu.closest_length"),
            (tatoeba, "bleu_all", "helpers.tasks.tatoeba.bleu_all"),
            (tatoeba, "bleu_first", "helpers.tasks.tatoeba.bleu_first")]


def _several_score(my_bleu_several, what, hyps, refs):
    try:
        out = call(my_bleu_several, SEVERAL, hyps, refs, reference=_several_references(),
                   instead="count the n-grams, clip them and take the lengths yourself.")
    except Hint as h:
        text = str(h)
        if text.startswith(f"{SEVERAL} raised") and (("ValueError" in text and "math domain" in text)
                                                     or "ZeroDivisionError" in text):
            raise Hint(f"On {what}, {text[:len(SEVERAL) + 80]}: when a precision is 0, BLEU is 0 (the "
                       "text's rule); return 0.0 there instead of taking log(0).") from None
        raise
    if isinstance(out, (tuple, list, dict)):
        raise Hint(f"my_bleu_several should return one number, the corpus's BLEU, got a "
                   f"{type(out).__name__}.")
    value = out.item() if isinstance(out, torch.Tensor) and out.numel() == 1 else out
    return number(value, "my_bleu_several's result")


def _near(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


@checker
def check_bleu_several(my_bleu_several):
    """my_bleu_several(hypotheses, references) -> corpus BLEU (0 to 100) with several references."""
    corpora = several_corpora()
    got = [_several_score(my_bleu_several, what, hyps, refs) for what, hyps, refs in corpora]
    right = [course_bleu.corpus_bleu_several(hyps, refs) for _, hyps, refs in corpora]
    if all(_near(g, r) for g, r in zip(got, right, strict=True)):
        return Passed(SEVERAL_PASSED)
    if all(_near(g, r / 100) for g, r in zip(got, right, strict=True)):
        return "Your score is between 0 and 1: BLEU is reported from 0 to 100, multiply by 100."
    for hint, flags in SEVERAL_MISTAKES:
        wrong = [_several_variant(hyps, refs, **flags) for _, hyps, refs in corpora]
        if all(_near(w, g) for w, g in zip(wrong, got, strict=True)):
            return hint
    for (what, _, _), g, r in zip(corpora, got, right, strict=True):
        if r == 0 and not _near(g, r):
            return (f"On {what}, your BLEU is {g:.4g}: when a precision is 0, BLEU is 0 (the text's rule), "
                    "with no smoothing.")
    for (what, _, _), g, r in zip(corpora, got, right, strict=True):
        if not _near(g, r):
            return (f"On {what}, your BLEU, {g:.4g}, is too {'high' if g > r else 'low'}: check each step "
                    "against the text (the clipping, the n-gram totals, the four precisions' geometric "
                    "mean, the closest reference length, one brevity penalty).")


SEVERAL_PASSED = ("Your BLEU equals the course's on three corpora of one to four references per sentence, "
                  "one of them scoring 0 (and so sacrebleu's, which the notebook shows on the model's "
                  "outputs).")


# --- Check your understanding -------------------------------------------------------------------

# The questions' right answers, explanations and hints are written in rot13 (helpers.checks.plain
# reads them): `check_x??` leads to this module, which should not show the answers at a glance.
# The tie question's answer is computed from its lengths.


# Question 1: a hypothesis of 7 tokens, references of these lengths: which length enters r?
TIE_LENGTHS = (5, 9, 12)
TIE_HYPOTHESIS = 7


def _tie_values():
    right = min(TIE_LENGTHS, key=lambda x: (abs(TIE_HYPOTHESIS - x), x))
    return right, {
        max(TIE_LENGTHS): "That is the longest reference: BLEU takes the reference length closest to the "
                          "hypothesis's.",
        TIE_LENGTHS[1]: "Two references are equally close to the hypothesis's length: the tie goes to the "
                        "shorter, as sacrebleu breaks it.",
        sum(TIE_LENGTHS) / len(TIE_LENGTHS): "That is the average: BLEU takes one reference's length, the "
                                             "closest to the hypothesis's.",
        sum(TIE_LENGTHS): "That is the references' lengths added: BLEU takes one reference's length, the "
                          "closest to the hypothesis's.",
    }


def _tie_why():
    right = _tie_values()[0]
    gap = abs(right - TIE_HYPOTHESIS)
    other = next(x for x in TIE_LENGTHS if x != right and abs(x - TIE_HYPOTHESIS) == gap)
    return (f"{right} and {other} are both {gap} away from {TIE_HYPOTHESIS}: the tie goes to the shorter "
            f"reference, {right}, so the hypothesis is not shorter than its reference and adds no penalty.")


@checker
def check_tie_length(answer):
    """Which reference length enters the brevity penalty for one hypothesis."""
    value = number(answer, "answer_1")
    right, mistakes = _tie_values()
    if _near(value, right):
        return Passed(_tie_why())
    for wrong, hint in mistakes.items():
        if abs(value - wrong) < 0.01:
            return hint
    return "Take the reference length closest to the hypothesis's length; a tie goes to the shorter."


_LEAK_QUESTION = plain(dict(
    right="frra va genvavat",
    why="N fcyvg ol cnve chgf nabgure genafyngvba bs n grfg fragrapr va genvavat:"
        " gur zbqry vf grfgrq ba Ratyvfu vg jnf genvarq ba, naq vgf fpber fnlf "
        "ubj jryy vg erzrzoref, abg ubj jryy vg genafyngrf n arj fragrapr.",
    wrong={
        "srjre ersreraprf":
            "Obgu fcyvgf pna xrrc frireny ersreraprf; jung punatrf vf jurgure gur "
            "Ratyvfu bs n grfg fragrapr jnf frra va genvavat.",
        "fznyyre grfg frg":
            "Gur fvmr bs gur grfg frg pna or gur fnzr va obgu; jung punatrf vf "
            "jurgure gur Ratyvfu bs n grfg fragrapr jnf frra va genvavat.",
        "ab qvssrerapr":
            "Frpgvba 1 zrnfherf gur qvssrerapr: jvgu n fcyvg ol cnve, znal grfg "
            "fragraprf' Ratyvfu vf va genvavat.",
    },
))


@checker
def check_leak_question(answer):
    """Why the test split is by English sentence."""
    return choice(answer, "answer_2", **_LEAK_QUESTION)


_BLIND_QUESTION = plain(dict(
    right="nqq ersreraprf",
    why="OYRH pbhagf a-tenzf funerq jvgu gur ersreraprf vg unf: n evtug "
        "genafyngvba gung abar bs gurz ubyqf ybfrf cbvagf, naq bayl zber "
        "ersreraprf (be n ernqre) gryy vg ncneg sebz n jebat bar.",
    wrong={
        "genva ybatre":
            "Zber genvavat znl punatr gur bhgchg, ohg OYRH jbhyq fgvyy fpber n evtug "
            "genafyngvba ybj jura ab ersrerapr ubyqf vgf jbeqf.",
        "ornz frnepu":
            "Ornz frnepu punatrf juvpu genafyngvba gur zbqry jevgrf, abg ubj OYRH "
            "fpberf n evtug bar gung ab ersrerapr ubyqf.",
        "ybjrepnfr":
            "Ybjrepnfvat urycf bayl jurer gur jbeqf zngpu ohg gurve pnfr qbrf abg; n "
            "genafyngvba va bgure jbeqf vf fgvyy fpberq ybj.",
    },
))


@checker
def check_blind_question(answer):
    """What lets BLEU credit a right translation that no reference holds."""
    return choice(answer, "answer_3", **_BLIND_QUESTION)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_split, tatoeba.split_by_english, lambda f: lambda pairs, n_test, seed: f(pairs, n_test, seed))
exercise(check_bleu_several, course_bleu.corpus_bleu_several, lambda f: lambda hyps, refs: f(hyps, refs))
