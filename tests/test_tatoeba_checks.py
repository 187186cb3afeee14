"""Issue 38's named mistakes in notebook 11's checks (helpers.checks.tatoeba), each written here the way
a learner would write it, independently of the checker's own variants."""

import math
import random
from collections import Counter

import pytest

from helpers import bleu
from helpers.checks.tatoeba import (check_bleu_several, check_split, check_tie_length, several_corpora,
                                    split_worlds)
from printed import printed

PASSED = "Check passed."


# --- Your turn 1: the split by English sentence ------------------------------------------------

def split_with(by_pair=False, lose=False, duplicate=False, file_order=False, keep_shared=False,
               global_random=False, count_pairs=False, order=None, draw="sample", seed_shift=0):
    """A learner's split with one thing changed. order: None (the input's), "sorted", "reversed" (train
    reversed) or "grouped" (test built sentence by sentence, in the order of the draw); draw: "sample",
    "shuffle" (a shuffled copy cut after n_test, as right as sample) or "choices" (with replacement);
    seed_shift: random.Random(seed + seed_shift)."""
    def my_split(pairs, n_test, seed):
        rng = random if global_random else random.Random(seed + seed_shift)
        if by_pair:
            shuffled = list(pairs)
            rng.shuffle(shuffled)
            test = shuffled[:n_test]
            return [p for p in pairs if p not in test], test
        english = list(dict.fromkeys(e for e, _ in pairs)) if file_order else sorted({e for e, _ in pairs})
        if draw == "sample":
            picked = rng.sample(english, n_test)
        elif draw == "shuffle":
            rng.shuffle(english)
            picked = english[:n_test]
        else:
            picked = rng.choices(english, k=n_test)
        chosen = set(picked)
        if order == "grouped":
            test = [p for e in dict.fromkeys(picked) for p in pairs if p[0] == e]
        else:
            test = [p for p in pairs if p[0] in chosen]
        if lose:
            test = [p for k, p in enumerate(test) if p[0] not in {e for e, _ in test[:k]}]
        if duplicate:
            test += test[:2]
        if count_pairs:
            test = test[:n_test]
        references = {f for _, f in test}
        train = [p for p in pairs if p[0] not in chosen and (keep_shared or p[1] not in references)]
        if order == "sorted":
            test = sorted(test)
        if order == "reversed":
            train = train[::-1]
        return train, test
    return my_split


SPLIT_WORDS = {"by_pair": "you split the pairs, not the English sentences",
               "lose": "test lost references", "duplicate": "references duplicated",
               "file_order": "depends on the file's order",
               "keep_shared": "has a test reference as its French",
               "global_random": "Two calls with the same seed drew different test sentences"}


@pytest.mark.parametrize("key", list(SPLIT_WORDS))
def test_each_split_mistake_is_named(key, capsys):
    line = printed(capsys, check_split, split_with(**{key: True}))
    assert SPLIT_WORDS[key] in line, line
    assert all(words not in line for other, words in SPLIT_WORDS.items() if other != key), line


@pytest.mark.parametrize("draw", ["sample", "shuffle"])
def test_the_split_written_out_passes(draw, capsys):
    for _ in range(5):                                   # the check draws its data sets afresh each time
        assert printed(capsys, check_split, split_with(draw=draw)).startswith(PASSED)


def test_the_check_data_share_french_between_english_sentences():
    for k in range(20):
        for pairs, n_test, _ in split_worlds(random.Random(k)):
            by_french = Counter(f for _, f in set(pairs))
            assert any(n > 1 for n in by_french.values())
            assert len({e for e, _ in pairs}) > 3 * n_test
            assert pairs != sorted(pairs)


def test_a_split_that_ignores_the_seed_is_named(capsys):
    def fixed(pairs, n_test, seed):
        return split_with()(pairs, n_test, 0)
    assert "Another seed drew the same test sentences" in printed(capsys, check_split, fixed)


# Issue 48: every rule the text states has a data set that breaks it.

@pytest.mark.parametrize("order, part, how", [("sorted", "test", "sorted"), ("reversed", "train", "reversed"),
                                              ("grouped", "test", "grouped by English sentence")])
def test_a_split_that_does_not_keep_the_pairs_order_fails(order, part, how, capsys):
    for _ in range(5):
        line = printed(capsys, check_split, split_with(order=order))
        assert line.startswith(f"Your {part} is {how}, not in the input's order"), line


def test_a_draw_with_replacement_fails(capsys):
    def my_split(pairs, n_test, seed):                   # written as a learner would, with choices
        rng = random.Random(seed)
        chosen = set(rng.choices(sorted({e for e, _ in pairs}), k=n_test))
        test = [p for p in pairs if p[0] in chosen]
        refs = {f for _, f in test}
        return [p for p in pairs if p[0] not in chosen and p[1] not in refs], test
    for _ in range(5):
        assert "a draw with replacement" in printed(capsys, check_split, my_split)


def test_another_seeds_draw_fails(capsys):
    for _ in range(5):
        line = printed(capsys, check_split, split_with(seed_shift=1))
        assert line.startswith("Your test sentences are not the ones the text specifies"), line


def test_a_split_right_only_on_the_sizes_of_one_check_fails(capsys):
    """The sizes and seeds are drawn at each check, so an answer that knows one check's data sets (as it
    could read them in the check's source, were they written there) fails the next check."""
    seen = split_worlds()
    right = split_with()

    def memorised(pairs, n_test, seed):
        for known, k, s in seen:
            if (len(known), k, s) == (len(pairs), n_test, seed):
                return right(pairs, n_test, seed)
        return [], pairs[:n_test]
    assert len({(len(p), n, s) for p, n, s in seen + split_worlds()}) == 4
    assert not printed(capsys, check_split, memorised).startswith(PASSED)


# --- Your turn 2: BLEU with several references -------------------------------------------------

def several_with(clip="largest", length="closest", per_sentence_bp=False):
    """A learner's BLEU with several references, with one thing changed."""
    def my_bleu_several(hypotheses, references):
        matches, totals, c, r, penalties = [0] * 4, [0] * 4, 0, 0, []
        for hyp, refs in zip(hypotheses, references, strict=True):
            if clip == "pool":
                refs = [sum(refs, [])]
            lengths = [len(x) for x in refs]
            if length == "closest":
                best = sorted(lengths, key=lambda x: (abs(x - len(hyp)), x))[0]
            elif length == "first":
                best = lengths[0]
            elif length == "longest":
                best = max(lengths)
            elif length == "average":
                best = sum(lengths) / len(lengths)
            c, r = c + len(hyp), r + best
            penalties.append(1.0 if len(hyp) > best else math.exp(1 - best / len(hyp)))
            for n in range(1, 5):
                h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
                allowed = Counter()
                for ref in refs:
                    g = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
                    for gram, k in g.items():
                        allowed[gram] = allowed[gram] + k if clip == "sum" else max(allowed[gram], k)
                matches[n - 1] += sum(min(k, allowed[gram]) for gram, k in h.items())
                totals[n - 1] += max(len(hyp) - n + 1, 0)
        if min(matches) == 0:
            return 0.0
        bp = sum(penalties) / len(penalties) if per_sentence_bp else (1.0 if c > r else math.exp(1 - r / c))
        return 100 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / 4)
    return my_bleu_several


SEVERAL_WORDS = {"sum": "all the references added", "pool": "pooled the references into one",
                 "first": "first reference's length", "longest": "longest reference",
                 "average": "average reference length", "sentence": "sentence by sentence"}


@pytest.mark.parametrize("fn, key", [
    (several_with(clip="sum"), "sum"),
    (several_with(clip="pool"), "pool"),
    (several_with(length="first"), "first"),
    (several_with(length="longest"), "longest"),
    (several_with(length="average"), "average"),
    (several_with(per_sentence_bp=True), "sentence"),
])
def test_each_several_references_mistake_is_named(fn, key, capsys):
    line = printed(capsys, check_bleu_several, fn)
    assert SEVERAL_WORDS[key] in line, line
    assert all(words not in line for other, words in SEVERAL_WORDS.items() if other != key), line


def test_the_bleu_with_several_references_written_out_passes(capsys):
    assert printed(capsys, check_bleu_several, several_with()).startswith(PASSED)


# Issue 48: each rule of the text has a corpus that breaks it, and each mistake its own sentence. Each
# answer below is written out in full, as a learner would, apart from several_with.

def _clipped(hyp, refs, n):
    counts = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
    best = Counter()
    for ref in refs:
        best |= Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
    return counts, sum(min(k, best[g]) for g, k in counts.items())


def learner_bleu(lower=False, orders=4, mean="geometric", totals="right", penalty=True, zero="guard",
                 scale=1.0):
    """A learner's corpus BLEU with several references: lower, lowercased tokens; orders, the n-gram
    orders counted; mean "arithmetic"; totals "length" (len(hyp) for each n) or "distinct" (len of the
    Counter); penalty False, no brevity penalty; zero "guard" (0 when a precision is 0), "crash" (log of
    0) or "exp" (sacrebleu's exponential smoothing); scale, a factor on the result."""
    def my_bleu_several(hypotheses, references):
        if lower:
            hypotheses = [[w.lower() for w in h] for h in hypotheses]
            references = [[[w.lower() for w in r] for r in refs] for refs in references]
        hits, counted, c, r = [0] * orders, [0] * orders, 0, 0
        for hyp, refs in zip(hypotheses, references, strict=True):
            c += len(hyp)
            r += sorted((len(x) for x in refs), key=lambda x: (abs(x - len(hyp)), x))[0]
            for n in range(1, orders + 1):
                counts, clipped = _clipped(hyp, refs, n)
                hits[n - 1] += clipped
                counted[n - 1] += {"right": sum(counts.values()), "length": len(hyp),
                                   "distinct": len(counts)}[totals]
        if zero == "guard" and 0 in hits and mean == "geometric":
            return 0.0
        if zero == "exp":
            factor, precisions = 1, []
            for h, t in zip(hits, counted, strict=True):
                if h == 0:
                    factor *= 2
                    precisions.append(1 / (factor * t))
                else:
                    precisions.append(h / t)
        else:
            precisions = [h / t for h, t in zip(hits, counted, strict=True)]
        if mean == "arithmetic":
            score = sum(precisions) / orders
        else:
            score = math.exp(sum(math.log(p) for p in precisions) / orders)
        bp = 1.0 if (c > r or not penalty) else math.exp(1 - r / c)
        return scale * 100 * bp * score
    return my_bleu_several


def test_the_learner_bleu_written_out_passes(capsys):
    assert printed(capsys, check_bleu_several, learner_bleu()).startswith(PASSED)


def test_the_check_corpora_are_mixed_case_and_one_has_a_zero_precision():
    corpora = several_corpora()
    tokens = [w for _, hyps, refs in corpora for s in hyps + [r for g in refs for r in g] for w in s]
    assert any(w != w.lower() for w in tokens) and any(w == w.lower() and w.isalpha() for w in tokens)
    zero = [bleu.statistics_several(h, r) for _, h, r in corpora]
    assert any(min(s["matches"]) == 0 and min(s["totals"]) > 0 for s in zero)


@pytest.mark.parametrize("fn, words", [
    (learner_bleu(lower=True), "You lowercased the tokens"),
    (learner_bleu(penalty=False), "no brevity penalty"),
    (learner_bleu(orders=3), "stop at trigrams"),
    (learner_bleu(mean="arithmetic"), "You averaged the four precisions"),
    (learner_bleu(totals="length"), "count every hypothesis token for every n"),
    (learner_bleu(totals="distinct"), "count distinct n-grams"),
    (learner_bleu(zero="exp"), "when a precision is 0, BLEU is 0 (the text's rule), with no smoothing"),
    (learner_bleu(zero="crash"), "raised ValueError"),
])
def test_each_bleu_rule_and_mistake_has_its_own_sentence(fn, words, capsys):
    line = printed(capsys, check_bleu_several, fn)
    assert words in line, line
    for other in ("shortest reference", "clipping (the largest", "all the references added"):
        assert other not in line, line


def test_a_bleu_that_crashes_on_log_0_is_told_the_rule(capsys):
    line = printed(capsys, check_bleu_several, learner_bleu(zero="crash"))
    assert "no 4-gram" in line and "BLEU is 0" in line and "log(0)" in line, line


def test_the_fallback_hint_does_not_print_the_right_bleu(capsys):
    line = printed(capsys, check_bleu_several, learner_bleu(scale=1.003))
    assert "too high" in line, line
    for _, hyps, refs in several_corpora():
        right = bleu.corpus_bleu_several(hyps, refs)
        for digits in range(1, 7):
            if right:
                assert f"{right:.{digits}f}" not in line, line


def test_two_hard_coded_numbers_do_not_pass(capsys):
    """Hard-coding the first two corpora's BLEU (as a hint printing them once allowed) fails the third."""
    corpora = several_corpora()
    known = {str(hyps): bleu.corpus_bleu_several(hyps, refs) for _, hyps, refs in corpora[:2]}

    def hard_coded(hypotheses, references):
        return known.get(str(hypotheses), 1.0)
    assert not printed(capsys, check_bleu_several, hard_coded).startswith(PASSED)


def test_the_courses_bleu_with_several_references_equals_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    for _, hyps, refs in several_corpora():
        most = max(len(r) for r in refs)
        streams = [[" ".join(r[j]) if j < len(r) else None for r in refs] for j in range(most)]
        theirs = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], streams, tokenize="none",
                                       smooth_method="none").score
        assert bleu.corpus_bleu_several(hyps, refs) == pytest.approx(theirs, abs=1e-9)


def test_the_13a_tokenizer_equals_sacrebleus():
    pytest.importorskip("sacrebleu")
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from helpers.tasks import tatoeba
    theirs = Tokenizer13a()
    for pair in tatoeba.read_lines():
        for text in pair:
            assert bleu.tokenize_13a(text) == theirs(text).split(), text


# --- the question on ties ------------------------------------------------------------------------

@pytest.mark.parametrize("answer, words", [(5, PASSED), (9, "the tie goes to the shorter"),
                                           (12, "longest"), (26, "added"), (26 / 3, "average")])
def test_the_tie_question(answer, words, capsys):
    assert words in printed(capsys, check_tie_length, answer)


# --- Issue 48: the answers are not in sight where `check_x??` leads ------------------------------

def test_the_question_answers_are_not_written_in_the_check_module():
    import inspect

    from helpers.checks import tatoeba
    source = inspect.getsource(tatoeba).lower()
    for answer in ("seen in training", "add references", "shorter reference, 5", "5 and 9"):
        assert answer not in source, answer
    assert tatoeba._LEAK_QUESTION["right"] == "seen in training"
    assert tatoeba._BLIND_QUESTION["right"] == "add references"


@pytest.mark.parametrize("check, answer", [("check_leak_question", "seen in training"),
                                           ("check_blind_question", "add references")])
def test_the_encoded_questions_pass_their_answer_and_name_each_wrong_option(check, answer, capsys):
    from helpers.checks import tatoeba
    fn = getattr(tatoeba, check)
    assert printed(capsys, fn, answer).startswith(PASSED)
    question = tatoeba._LEAK_QUESTION if "leak" in check else tatoeba._BLIND_QUESTION
    for option, hint in question["wrong"].items():
        assert printed(capsys, fn, option) == hint


def test_no_cell_before_your_turn_2_shows_its_two_key_lines():
    """The clipping by the largest count in one reference (a Counter's |) and the closest length with
    its tie rule are the exercise's answer: the exercise copy shows neither above it."""
    import json
    import pathlib
    cells = json.loads((pathlib.Path(__file__).parents[1] / "notebooks" / "11_real_sentences.ipynb")
                       .read_text())["cells"]
    turn = next(k for k, c in enumerate(cells) if "".join(c["source"]).startswith("## Your turn 2"))
    code = "".join("".join(c["source"]) for c in cells[:turn] if c["cell_type"] == "code")
    assert "|=" not in code and "abs(x - len(" not in code and "abs(len(" not in code
