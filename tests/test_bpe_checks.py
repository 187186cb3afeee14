"""Notebook 09's byte-pair encoding check: a right loop passes (against subword-nmt, or helpers.bpe
where subword-nmt is missing), and every named mistake, written here independently of the checker,
gets its hint; the references are refused."""

import functools
import pathlib
import sys
from collections import Counter

import pytest

from helpers import bpe
from helpers.checks import PASSED
from helpers.checks.bpe import check_learn_merges
from fuzz import assert_survives
from printed import printed

END = "</w>"
ROOT = pathlib.Path(__file__).resolve().parent.parent


def learner(start="glued", weighted=True, across=False, first_only=False, tie="last", stop=2,
            update="recount", extra=0):
    """A learner's loop, written plainly; each argument puts one mistake in it."""
    def begin(word):
        if start == "glued":
            return tuple(word[:-1]) + (word[-1] + END,)
        if start == "apart":
            return tuple(word) + (END,)
        return tuple(word)

    def count(vocab):
        pairs = Counter()
        for symbols, n in vocab.items():
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += n if weighted else 1
        return pairs

    def merge(pair, symbols):
        out, i, done = [], 0, False
        while i < len(symbols):
            if not done and i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                out.append(symbols[i] + symbols[i + 1])
                i += 2
                done = first_only
            else:
                out.append(symbols[i])
                i += 1
        return tuple(out)

    def my_learn_merges(texts, n_merges):
        if across == "strings":
            vocab = Counter(begin(t) for t in texts)
        elif across:
            vocab = Counter(sum((begin(w) for w in t.split()), ()) for t in texts)
        else:
            vocab = Counter()
            for t in texts:
                for w in t.split():
                    vocab[begin(w)] += 1
        pairs = count(vocab)
        merges = []
        for _ in range(n_merges + extra):
            pairs = Counter({p: c for p, c in pairs.items() if c > 0})
            if not pairs:
                break
            if tie == "last":
                best = max(pairs, key=lambda p: (pairs[p], p))
            elif tie == "smallest":
                best = sorted(pairs, key=lambda p: (-pairs[p], p))[0]
            else:
                best = pairs.most_common(1)[0][0]
            if pairs[best] < stop:
                break
            merges.append(best)
            old = vocab
            vocab = Counter()
            for symbols, n in old.items():
                vocab[merge(best, symbols)] += n
            if update == "recount":
                pairs = count(vocab)
            else:                                   # incremental, with a slip
                diff = count(vocab)
                diff.subtract(count(old))
                for p, c in diff.items():
                    if (update == "adds only" and c > 0) or (update == "subtracts only" and c < 0):
                        pairs[p] += c
                pairs[best] = 0
        return merges
    return my_learn_merges


def test_a_right_loop_passes_against_subword_nmt(capsys):
    pytest.importorskip("subword_nmt")
    line = printed(capsys, check_learn_merges, learner())
    assert line.startswith(PASSED) and "subword-nmt's" in line


def test_the_notebooks_solution_passes(capsys):
    """The check cell of notebook 09 is not compared by output (its line depends on subword-nmt being
    installed): run the notebook's own solution through the check here."""
    pytest.importorskip("subword_nmt")
    import nbformat
    nb = nbformat.read(ROOT / "solutions" / "09_translation.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells
               if "def my_learn_merges" in c.source and "solution" in c.metadata.get("tags", [])]
    namespace = {"Counter": Counter}
    exec(cell.source, namespace)
    line = printed(capsys, check_learn_merges, namespace["my_learn_merges"])
    assert line.startswith(PASSED) and "subword-nmt's" in line
    placeholder = {"Counter": Counter}
    exec(cell.metadata["exercise"], placeholder)
    assert printed(capsys, check_learn_merges, placeholder["my_learn_merges"]).startswith("Not answered yet:")


def test_without_subword_nmt_the_check_says_so(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "subword_nmt", None)
    monkeypatch.setitem(sys.modules, "subword_nmt.learn_bpe", None)
    line = printed(capsys, check_learn_merges, learner())
    assert line.startswith(PASSED) and "subword-nmt is not installed here" in line


@pytest.mark.parametrize("wrong, words", [
    (learner(weighted=False), "counted once per word type"),
    (learner(across=True), "cross word boundaries: count pairs inside each word"),
    (learner(across="strings"), "its spaces counted as characters"),
    (learner(start="none"), "end-of-word mark is missing"),
    (learner(start="apart"), "a symbol of its own"),
    (learner(first_only=True), "only the first occurrence"),
    (learner(update="stale"), "not updated after a merge"),
    (learner(update="adds only"), "do not subtract the old ones"),
    (learner(update="subtracts only"), "never count the new ones"),
    (learner(stop=1), "merging pairs seen only once"),
    (learner(tie="smallest"), "break a tie as subword-nmt does"),
    (learner(tie="first counted"), "break a tie as subword-nmt does"),
    (learner(extra=1), "you returned 11 merges for n_merges = 10"),
    (learner(extra=-1), "one short"),
])
def test_each_named_mistake_gets_its_hint(wrong, words, capsys):
    assert words in printed(capsys, check_learn_merges, wrong)


def test_a_tie_names_the_merge_and_the_count(capsys):
    line = printed(capsys, check_learn_merges, learner(tie="smallest"))
    assert "merge number 1: you chose ('e', 's'), the course ('s', 't</w>'), both seen 9 times" in line


def test_the_references_are_refused(capsys):
    refused = "the reference this check compares with"
    assert refused in printed(capsys, check_learn_merges, bpe.learn_merges)
    assert refused in printed(capsys, check_learn_merges, functools.partial(bpe.learn_merges))
    assert "calls helpers.bpe.learn_merges" in printed(capsys, check_learn_merges,
                                                       lambda t, n: bpe.learn_merges(t, n))
    assert "calls helpers.bpe.pair_counts" in printed(
        capsys, check_learn_merges, lambda t, n: [bpe.best_pair(bpe.pair_counts({("a", "b"): 1}))])
    assert "calls helpers.bpe.subword_nmt_merges" in printed(capsys, check_learn_merges,
                                                             lambda t, n: bpe.subword_nmt_merges(t, n))


def test_subword_nmt_itself_is_refused(capsys):
    learn_bpe = pytest.importorskip("subword_nmt.learn_bpe")

    def through_subword_nmt(texts, n_merges):
        import io
        out = io.StringIO()
        learn_bpe.learn_bpe(io.StringIO("\n".join(texts)), out, n_merges)
        return [tuple(line.split()) for line in out.getvalue().splitlines()[1:]]
    assert "calls subword_nmt's learn_bpe" in printed(capsys, check_learn_merges, through_subword_nmt)
    assert "the reference this check compares with" in printed(capsys, check_learn_merges,
                                                               learn_bpe.learn_bpe)


def test_formats_and_a_generic_mistake(capsys):
    right = learner()
    assert "not one string such as 's t</w>'" in printed(
        capsys, check_learn_merges, lambda t, n: [" ".join(p) for p in right(t, n)])
    assert "not the new symbol ('st</w>')" in printed(
        capsys, check_learn_merges, lambda t, n: ["".join(p) for p in right(t, n)])
    assert "got a set" in printed(capsys, check_learn_merges, lambda t, n: set(right(t, n)))
    assert "got a string" in printed(capsys, check_learn_merges, lambda t, n: "s t</w>")
    assert printed(capsys, check_learn_merges, lambda t, n: tuple(right(t, n))).startswith(PASSED)
    assert printed(capsys, check_learn_merges, lambda t, n: [list(p) for p in right(t, n)]).startswith(PASSED)

    def swapped(texts, n_merges):                     # merges 2 and 3 swapped: no named mistake
        out = right(texts, n_merges)
        return out[:1] + out[2:3] + out[1:2] + out[3:]
    line = printed(capsys, check_learn_merges, swapped)
    assert line.startswith("On Sennrich's example (low, lower, newest, widest), your first 1 merges are "
                           "right; merge number 2 should be ('e', 'st</w>')"), line
    line = printed(capsys, check_learn_merges, lambda t, n: [("x", "y")] + right(t, n)[1:])
    assert line.startswith("On Sennrich's example (low, lower, newest, widest), merge number 1 should be "
                           "('s', 't</w>') (seen 9 times after the merges before it), got ('x', 'y') "
                           "(seen 0 times then)."), line


# --- fuzz: whatever the answer, one line and never the checker's own failure ---------------------

def perturbed(merges, rng):
    """A right list of merges, broken at random."""
    out = list(merges)
    kind = rng.choice(["swap", "drop", "duplicate", "insert", "truncate", "reverse", "rename", "shuffle"])
    if not out:
        return [("a", "b")]
    i = rng.randrange(len(out))
    if kind == "swap" and len(out) > 1:
        j = rng.randrange(len(out))
        out[i], out[j] = out[j], out[i]
    elif kind == "drop":
        del out[i]
    elif kind == "duplicate":
        out.insert(i, out[i])
    elif kind == "insert":
        out.insert(i, (rng.choice("abcdest"), rng.choice(["</w>", "e", "st</w>", ""])))
    elif kind == "truncate":
        out = out[:i]
    elif kind == "reverse":
        out = out[::-1]
    elif kind == "rename":
        out[i] = (out[i][1], out[i][0])
    else:
        rng.shuffle(out)
    return out if out != list(merges) else [*out, ("a", "b")]


def test_random_perturbations_survive_and_never_pass(capsys):
    import random
    right = learner()
    for seed in range(20):
        def wrong(texts, n_merges, seed=seed):
            return perturbed(right(texts, n_merges), random.Random(seed))
        line = assert_survives(capsys, check_learn_merges, wrong)
        assert not line.startswith(PASSED), line


ODD_RETURNS = [None, ..., 3, 2.5, float("nan"), True, "", b"st", [None], [3], [("a",)], [("a", "b", "c")],
               [("a", 1)], [(None, None)], [["a", "b"], "ab"], {"a": 1}, Counter(a=1), {("a", "b")},
               (p for p in [("s", "t</w>")]), [[("s", "t</w>")]], [float("nan")], [("s", float("nan"))],
               object(), [("s", "t</w>")] * 1000]


@pytest.mark.parametrize("value", ODD_RETURNS, ids=range(len(ODD_RETURNS)))
def test_odd_returns_survive(value, capsys):
    assert_survives(capsys, check_learn_merges, lambda texts, n_merges: value)


def test_odd_functions_and_answers_survive(capsys):
    import torch

    def raises(texts, n_merges):
        raise KeyError("w</w>")

    def empty_max(texts, n_merges):
        return [max({})]

    def one_argument(texts):
        return []

    def mutates(texts, n_merges):
        texts.clear()
        return []
    for fn in (raises, empty_max, one_argument, mutates, lambda *a: 1 / 0, lambda t, n: torch.zeros(3, 2),
               lambda t, n: [tuple(torch.zeros(2))], print, len, str, Counter):
        assert_survives(capsys, check_learn_merges, fn)
    for odd in (None, ..., [], [1.0], "answer", True, float("nan"), 3, {"a": 1}, torch.zeros(2)):
        assert_survives(capsys, check_learn_merges, odd)
    assert printed(capsys, check_learn_merges, None).startswith("Not answered yet:")
    assert "raised KeyError" in printed(capsys, check_learn_merges, raises)


# --- Issue 39: a merge right to left, and d2l's str.replace merge, each named --------------------

def merging_right_to_left(texts, n_merges):
    """Right but for the merge, which scans each word from its end."""
    vocab = Counter()
    for t in texts:
        for w in t.split():
            vocab[tuple(w[:-1]) + (w[-1] + END,)] += 1
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for symbols, n in vocab.items():
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        new = Counter()
        for symbols, n in vocab.items():
            out, i = [], len(symbols) - 1
            while i >= 0:
                if i > 0 and (symbols[i - 1], symbols[i]) == best:
                    out.insert(0, symbols[i - 1] + symbols[i])
                    i -= 2
                else:
                    out.insert(0, symbols[i])
                    i -= 1
            new[tuple(out)] += n
        vocab = new
    return merges


def merging_with_str_replace(texts, n_merges):
    """d2l's loop: words as space-separated symbols, a merge as str.replace on that string."""
    vocab = Counter()
    for t in texts:
        for w in t.split():
            vocab[" ".join(w[:-1]) + (" " if len(w) > 1 else "") + w[-1] + END] += 1
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for word, n in vocab.items():
            symbols = word.split()
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        vocab = Counter({word.replace(" ".join(best), "".join(best)): n for word, n in vocab.items()})
    return merges


@pytest.mark.parametrize("wrong, words", [
    (merging_right_to_left, "You merge from right to left"),
    (merging_with_str_replace, "replaces text, not symbols"),
])
def test_issue_39_each_merge_mistake_gets_its_own_hint(wrong, words, capsys):
    line = printed(capsys, check_learn_merges, wrong)
    assert words in line, line


# --- Issue 48: the tie hint is given from what the learner's own function does ---------------------

def counts_with_a_slip(skip):
    """A learner's loop whose counting slips: skip "last" or "first" leaves out that pair of every word;
    "last of long words" only in words of three symbols or more. Its tie rule is subword-nmt's."""
    def my_learn_merges(texts, n_merges):
        vocab = Counter()
        for text in texts:
            for w in text.split():
                vocab[tuple(w[:-1]) + (w[-1] + END,)] += 1
        merges = []
        for _ in range(n_merges):
            pairs = Counter()
            for s, n in vocab.items():
                short_one = skip == "last" or (skip == "last of long words" and len(s) > 2)
                stop = len(s) - 2 if short_one else len(s) - 1
                for i in range(1 if skip == "first" else 0, stop):
                    pairs[s[i], s[i + 1]] += n
            if not pairs:
                break
            best = max(pairs, key=lambda p: (pairs[p], p))
            if pairs[best] < 2:
                break
            merges.append(best)
            new = Counter()
            for s, n in vocab.items():
                out, i = [], 0
                while i < len(s):
                    if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                        out.append(s[i] + s[i + 1])
                        i += 2
                    else:
                        out.append(s[i])
                        i += 1
                new[tuple(out)] += n
            vocab = new
        return merges
    return my_learn_merges


@pytest.mark.parametrize("skip, words", [("last", "leave out each word's last pair"),
                                         ("first", "leave out each word's first pair"),
                                         ("last of long words", "so your counts are not these")])
def test_a_counting_slip_is_not_sent_to_the_tie_rule(skip, words, capsys):
    line = printed(capsys, check_learn_merges, counts_with_a_slip(skip))
    assert words in line and "break a tie as subword-nmt does, with" not in line, line
