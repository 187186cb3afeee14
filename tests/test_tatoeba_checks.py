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
               global_random=False, count_pairs=False):
    """A learner's split with one thing changed."""
    def my_split(pairs, n_test, seed):
        rng = random if global_random else random.Random(seed)
        if by_pair:
            shuffled = list(pairs)
            rng.shuffle(shuffled)
            test = shuffled[:n_test]
            return [p for p in pairs if p not in test], test
        english = list(dict.fromkeys(e for e, _ in pairs)) if file_order else sorted({e for e, _ in pairs})
        chosen = set(rng.sample(english, n_test))
        test = []
        for e in (sorted(chosen) if not file_order else [x for x in english if x in chosen]):
            refs = [p for p in pairs if p[0] == e]
            test += refs[:1] if lose else refs
        if duplicate:
            test += [p for p in pairs if p[0] in chosen][:2]
        if count_pairs:
            test = test[:n_test]
        references = {f for _, f in test}
        train = [p for p in pairs if p[0] not in chosen and (keep_shared or p[1] not in references)]
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


def test_the_split_written_out_passes(capsys):
    assert printed(capsys, check_split, split_with()).startswith(PASSED)


def test_the_check_data_share_french_between_english_sentences():
    for pairs, n_test, _ in split_worlds():
        by_french = Counter(f for _, f in set(pairs))
        assert any(k > 1 for k in by_french.values())
        assert len({e for e, _ in pairs}) > 3 * n_test
        assert pairs != sorted(pairs)


def test_a_split_that_ignores_the_seed_is_named(capsys):
    def fixed(pairs, n_test, seed):
        return split_with()(pairs, n_test, 0)
    assert "Another seed drew the same test sentences" in printed(capsys, check_split, fixed)


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
