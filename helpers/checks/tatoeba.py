"""Checks for notebook 11 (real sentences): the split by English sentence, BLEU with several
references, and the questions of "Check your understanding"."""

import math
import random
from collections import Counter

import torch

from helpers import bleu as course_bleu
from helpers.checks import Hint, Passed, call, checker, choice, exercise, number
from helpers.checks.translation import _bleu_references
from helpers.tasks import tatoeba

# --- Your turn 1: the split by English sentence -------------------------------------------------

SPLIT = "my_split(pairs, n_test, seed)"


def split_worlds():
    """The check's data sets, made here (no file): (pairs, n_test, seed). English sentences with one
    to four French translations each, some French shared by two English sentences (as "Salut !"
    translates "Hi!" and "Hello!"), in an order that is not sorted."""
    worlds = []
    for n_english, n_test, seed in ((40, 7, 3), (73, 11, 12)):
        rng = random.Random(n_english)
        pairs = []
        for i in range(n_english):
            english = f"English sentence {i:02d}."
            for j in range(1 + rng.randrange(4)):
                shared = rng.random() < 0.15
                french = f"Phrase commune {rng.randrange(6)} !" if shared else f"Phrase {i:02d}-{j} ."
                if (english, french) not in pairs:
                    pairs.append((english, french))
        rng.shuffle(pairs)
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


@checker
def check_split(my_split):
    """my_split(pairs, n_test, seed) -> (train, test), split by English sentence."""
    for pairs, n_test, seed in split_worlds():
        train, test = _as_split(call(my_split, SPLIT, pairs, n_test, seed,
                                     reference=[(tatoeba, "split_by_english",
                                                 "helpers.tasks.tatoeba.split_by_english"),
                                                (tatoeba, "split", "helpers.tasks.tatoeba.split")],
                                     instead="draw the English sentences and sort the pairs yourself."))
        problem = _split_problem(pairs, n_test, train, test)
        if problem:
            return problem
        again = _as_split(call(my_split, SPLIT, pairs, n_test, seed))[1]
        if {e for e, _ in again} != {e for e, _ in test}:
            return ("Two calls with the same seed drew different test sentences: draw with a generator of "
                    "your own, random.Random(seed), not the global random module or a set's order.")
        shuffled = list(pairs)
        random.Random(seed + 1).shuffle(shuffled)
        moved = _as_split(call(my_split, SPLIT, shuffled, n_test, seed))[1]
        if {e for e, _ in moved} != {e for e, _ in test}:
            return ("The same pairs in another order gave other test sentences: your split depends on the "
                    "file's order. Sort the distinct English sentences before drawing from them.")
        other = _as_split(call(my_split, SPLIT, pairs, n_test, seed + 1))[1]
        if {e for e, _ in other} == {e for e, _ in test}:
            return ("Another seed drew the same test sentences: draw with random.Random(seed), so that the "
                    "seed chooses the draw.")
    return Passed(SPLIT_PASSED)


SPLIT_PASSED = ("Your split keeps every pair of a test sentence in test and no test English or test "
                "reference in training, on two data sets, and draws the same sentences from the pairs in "
                "any order.")


# --- Your turn 2: BLEU with several references --------------------------------------------------

SEVERAL = "my_bleu_several(hypotheses, references)"


def several_corpora():
    """The check's corpora: (what, hypotheses, references), sentences as token lists, each with one to
    four references, hypotheses with words repeated, missing or cut short: chosen so that each
    mistake of SEVERAL_MISTAKES gives another number than the right one, and than every other
    mistake, on at least one of them."""
    def t(text):
        return text.split()
    return [
        ("a corpus of four sentences",
         [t('le chat'), t('il fait froid , très froid .'), t('je ne le pas .'),
          t("c' est est mon chien et pas le tien !")],
         [[t('le chat est sur le tapis .'), t('le chat est assis sur le tapis rouge .'), t('le chat dort .')],
          [t('il fait froid , très froid .'), t('il gèle .'), t('il fait très froid ici .')],
          [t('je ne sais pas du tout .'), t('je ne le sais pas .'), t('aucune idée .'), t('je sais pas .')],
          [t("c' est mon chien et pas le tien !"), t('ce chien est le mien , pas le tien .'),
           t('ce chien est à moi .')]]),
        ("a corpus of three sentences",
         [t('ce ce matin , nous avons mangé une pomme verte .'), t('elle chante très bien , très .'),
          t('où est la gare')],
         [[t('ce matin , nous avons mangé une pomme verte .'), t('nous avons mangé une pomme .')],
          [t('elle chante très bien , très bien .'), t('elle chante bien .')],
          [t('où est la gare ?'), t('où se trouve la gare ?'), t('la gare , où est-elle ?')]]),
    ]


def _several_variant(hyps, refs, clip="largest", length="closest", bp_per_sentence=False):
    """BLEU (no smoothing) with one mistake, or none: clip "largest" (the largest count in one
    reference), "sum" (the counts of all references added), "pool" (the references joined into one,
    lengths added), "first" (the first reference's counts) or "none"; length "closest" (ties to the
    shorter), "closest, ties longer", "first", "longest", "shortest" or "average"."""
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
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
        for n in range(1, 5):
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
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    penalty = sum(penalties) / len(penalties) if bp_per_sentence else \
        (1.0 if c > r else math.exp(1 - r / c))
    return 100 * penalty * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)


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
    ("Your brevity penalty uses the first reference's length: use the reference length closest to the "
     "hypothesis's, in each sentence.", {"length": "first"}),
    ("Your brevity penalty uses the longest reference: use the reference length closest to the "
     "hypothesis's (a tie: the shorter).", {"length": "longest"}),
    ("Your brevity penalty uses the shortest reference: use the reference length closest to the "
     "hypothesis's (a tie: the shorter).", {"length": "shortest"}),
    ("Your brevity penalty uses the average reference length: use the reference length closest to the "
     "hypothesis's (a tie: the shorter).", {"length": "average"}),
    ("A tie between two reference lengths goes to the shorter one, as sacrebleu does: yours took the "
     "longer.", {"length": "closest, ties longer"}),
    ("You took the brevity penalty sentence by sentence and averaged it: add the hypothesis lengths "
     "and the chosen reference lengths over the corpus, then one penalty.", {"bp_per_sentence": True}),
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


def _several_score(my_bleu_several, hyps, refs):
    out = call(my_bleu_several, SEVERAL, hyps, refs, reference=_several_references(),
               instead="count the n-grams, clip them and take the lengths yourself.")
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
    got = [_several_score(my_bleu_several, hyps, refs) for _, hyps, refs in corpora]
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
        if not _near(g, r):
            return (f"On {what}, BLEU should be {r:.4f}, got {g:.4f}: check the clipping (the largest "
                    "count in one reference), the closest reference length and the corpus's one "
                    "brevity penalty.")


SEVERAL_PASSED = ("Your BLEU equals the course's on two corpora of one to four references per sentence "
                  "(and so sacrebleu's, which the notebook shows on the model's outputs).")


# --- Check your understanding -------------------------------------------------------------------

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


TIE_WHY = ("5 and 9 are both 2 away from 7: the tie goes to the shorter reference, 5, so the "
           "hypothesis is not shorter than its reference and adds no penalty.")


@checker
def check_tie_length(answer):
    """Which reference length enters the brevity penalty for one hypothesis."""
    value = number(answer, "answer_1")
    right, mistakes = _tie_values()
    if _near(value, right):
        return Passed(TIE_WHY)
    for wrong, hint in mistakes.items():
        if abs(value - wrong) < 0.01:
            return hint
    return "Take the reference length closest to the hypothesis's length; a tie goes to the shorter."


_LEAK_QUESTION = dict(
    right="seen in training",
    why="A split by pair puts another translation of a test sentence in training: the model is "
        "tested on English it was trained on, and its score says how well it remembers, not how "
        "well it translates a new sentence.",
    wrong={
        "fewer references": "Both splits can keep several references; what changes is whether the "
                            "English of a test sentence was seen in training.",
        "smaller test set": "The size of the test set can be the same in both; what changes is whether "
                            "the English of a test sentence was seen in training.",
        "no difference": "Section 1 measures the difference: with a split by pair, many test "
                         "sentences' English is in training.",
    },
)


@checker
def check_leak_question(answer):
    """Why the test split is by English sentence."""
    return choice(answer, "answer_2", **_LEAK_QUESTION)


_BLIND_QUESTION = dict(
    right="add references",
    why="BLEU counts n-grams shared with the references it has: a right translation that none of "
        "them holds loses points, and only more references (or a reader) tell it apart from a wrong "
        "one.",
    wrong={
        "train longer": "More training may change the output, but BLEU would still score a right "
                        "translation low when no reference holds its words.",
        "beam search": "Beam search changes which translation the model writes, not how BLEU scores "
                       "a right one that no reference holds.",
        "lowercase": "Lowercasing helps only where the words match but their case does not; a "
                     "translation in other words is still scored low.",
    },
)


@checker
def check_blind_question(answer):
    """What lets BLEU credit a right translation that no reference holds."""
    return choice(answer, "answer_3", **_BLIND_QUESTION)


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_split, tatoeba.split_by_english, lambda f: lambda pairs, n_test, seed: f(pairs, n_test, seed))
exercise(check_bleu_several, course_bleu.corpus_bleu_several, lambda f: lambda hyps, refs: f(hyps, refs))
