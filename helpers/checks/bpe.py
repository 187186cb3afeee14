"""Checks for notebook 09's byte-pair encoding exercise: the merge-learning loop.

``check_learn_merges(my_learn_merges)`` runs the learner's ``my_learn_merges(texts, n_merges)`` on
two small corpora and on 09's training texts (English and French together) for 50 and 200 merges,
and compares the merges, in order, with subword-nmt's (Sennrich's own implementation) where it is
installed, with ``helpers.bpe.learn_merges`` elsewhere. A wrong answer is matched against what each
typical mistake returns (``learn_variant``), then against a tie at the first merge that differs.
"""

import functools
from collections import Counter

from helpers import bpe
from helpers.tasks import numbers
from helpers.checks import ALL, Hint, Passed, call, checker, exercise

NAME = "my_learn_merges(texts, n_merges)"

# Sennrich et al.'s example (their Figure 1): low x5, lower x2, newest x6, widest x3
TOY = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
# several words per text, a pair twice in one word (b a n a n a), words seen once, a long word, a
# symbol three times in a row (a a a b: merging (a, a) from the left or from the right differs)
CORPUS = ["a banana", "a bandana", "a banana and a bandana", "bananas", "ananas", "nan", "a a",
          "cabana cabanas", "aaab", "aaab"]
TOY_MERGES, CORPUS_MERGES = 10, 40   # the corpus runs out of pairs seen twice before 40
TEXT_MERGES = (50, 200)              # on notebook 09's training texts


# --- what each mistake returns ----------------------------------------------------------------

def _start(word, mark):
    if mark == "glued":
        return bpe.symbols(word)
    if mark == "apart":
        return (*word, bpe.END)
    return tuple(word)


def _units(texts, unit, mark, weighted):
    """{symbols: weight}: words (as the reference), or whole texts (pairs across words)."""
    if unit == "words":
        counts = Counter(w for t in texts for w in t.split())
        starts = {_start(w, mark): c for w, c in counts.items()}
    elif unit == "texts":                       # each text's words, symbols end to end
        starts = Counter(tuple(s for w in t.split() for s in _start(w, mark)) for t in texts)
    else:                                       # each text as one string, spaces included
        starts = Counter(_start(t, mark) for t in texts if t)
    return {s: (c if weighted else 1) for s, c in starts.items()}


def _merge_first(pair, word):
    for i in range(len(word) - 1):
        if (word[i], word[i + 1]) == pair:
            return (*word[:i], word[i] + word[i + 1], *word[i + 2:])
    return word


def _merge_right_to_left(pair, word):
    """Every occurrence merged, scanning from the end: a a a</w> merging (a, a) gives a aa</w>."""
    out, i = [], len(word) - 1
    while i >= 0:
        if i > 0 and (word[i - 1], word[i]) == pair:
            out.append(word[i - 1] + word[i])
            i -= 2
        else:
            out.append(word[i])
            i -= 1
    return tuple(reversed(out))


def _merge_by_replace(pair, word):
    """d2l's merge: str.replace on the symbols joined by spaces, which also matches across a symbol's
    edge: merging (a, n) in n a n</w> finds "a n" in "a n</w>" and gives n an</w>."""
    return tuple(" ".join(word).replace(" ".join(pair), "".join(pair)).split(" "))


MERGES = {"left to right": bpe.merge_pair, "first only": _merge_first, "right to left": _merge_right_to_left,
          "replace": _merge_by_replace}


def _pick(counts, tie):
    if tie == "first counted":                  # max() keeps the first of equal counts
        return max(counts, key=counts.get)
    if tie == "smallest":
        return min(counts, key=lambda p: (-counts[p], p))
    return bpe.best_pair(counts)


def _pair_counts(vocab, pairs="all"):
    """bpe.pair_counts, or with a word's last (first) pair of neighbours never counted."""
    if pairs == "all":
        return bpe.pair_counts(vocab)
    counts = Counter()
    for word, count in vocab.items():
        neighbours = list(zip(word, word[1:], strict=False))
        for pair in neighbours[:-1] if pairs == "no last" else neighbours[1:]:
            counts[pair] += count
    return counts


def learn_variant(texts, n_merges, unit="words", mark="glued", weighted=True, merge="left to right",
                  tie="last", stop=True, update="recount", pairs="all"):
    """The merges learnt with one mistake (the defaults make none).

    unit: "words", "texts" (a text's words end to end: pairs across words) or "strings" (a text as
    one string, spaces as characters); mark: "glued" (l o w</w>), "apart" (l o w </w>) or "none";
    weighted: pairs weighted by the word's count, or once per word type; merge: how a pair is merged
    in a word, "left to right" (every occurrence), "first only", "right to left" or "replace"
    (str.replace on the joined symbols, across symbol edges); tie: "last" (subword-nmt), "first
    counted" or "smallest";
    stop: stop when no pair occurs twice (else go on while any pair is left); update:
    "recount" (count again after each merge), "stale" (only the merged pair set to 0),
    "no decrement" (new pairs added, the pairs around a merge not subtracted) or
    "no increment" (the pairs around a merge subtracted, the new pairs never added); pairs: "all",
    "no last" (a word's last pair of neighbours never counted) or "no first".
    """
    vocab = _units(texts, unit, mark, weighted)
    merge = MERGES[merge]
    counts = _pair_counts(vocab, pairs)
    merges = []
    for _ in range(n_merges):
        counts = Counter({p: c for p, c in counts.items() if c > 0})
        if not counts:
            break
        pair = _pick(counts, tie)
        if stop and counts[pair] < bpe.MIN_FREQUENCY:
            break
        merges.append(pair)
        new_vocab = {}
        for word, count in vocab.items():
            merged = merge(pair, word)
            new_vocab[merged] = new_vocab.get(merged, 0) + count
        if update == "recount":
            counts = _pair_counts(new_vocab, pairs)
        else:
            before, after = _pair_counts(vocab, pairs), _pair_counts(new_vocab, pairs)
            for p in set(before) | set(after):
                change = after[p] - before[p]
                if (change > 0 and update == "no decrement") or (change < 0 and update == "no increment"):
                    counts[p] += change
            counts[pair] = 0
        vocab = new_vocab
    return merges


MISTAKES = [
    ("Your pairs are counted once per word type: weight each pair by how often its word occurs "
     "(\"low\" 5 times in the texts gives the pair (l, o) 5).", {"weighted": False}),
    ("Your pairs cross word boundaries: count pairs inside each word only (split each text on "
     "spaces into words first, and count the words); BPE never joins the end of one word to the "
     "start of the next.", {"unit": "texts"}),
    ("Your pairs cross word boundaries (each text is one string, its spaces counted as "
     "characters): split each text on spaces into words and count the words first.",
     {"unit": "strings"}),
    ("The end-of-word mark is missing: start each word from its characters with </w> glued to the "
     "last one (\"low\" -> l o w</w>), so that a piece that ends a word differs from the same "
     "letters inside one.", {"mark": "none"}),
    ("Your end-of-word mark is a symbol of its own (l o w </w>, as in the 2016 paper's example): "
     "subword-nmt 0.3.8 glues it to the last character (l o w</w>), and so does this course.",
     {"mark": "apart"}),
    ("You merge only the first occurrence of the pair in each word: merge every occurrence, left "
     "to right (merging (a, n) in b a n a n a</w> gives b an an a</w>).", {"merge": "first only"}),
    ("You merge from right to left: in a a a b</w>, merging (a, a) gives aa a b</w>, the leftmost "
     "occurrence first, as subword-nmt does (scan the word from its start, and skip a symbol once "
     "merged).", {"merge": "right to left"}),
    ("Your merge replaces text, not symbols (str.replace on the symbols joined by spaces): it also "
     "matches across a symbol's edge, so merging (a, n) turns n a n</w> into n an</w>, a pair (a, n</w>) "
     "that was never chosen. Walk through the symbols and merge where two neighbours are the pair.",
     {"merge": "replace"}),
    ("Your pair counts are not updated after a merge (only the merged pair goes to 0): the pairs "
     "around each merged occurrence change too; count the pairs again after each merge.",
     {"update": "stale"}),
    ("After a merge you add the new pairs but do not subtract the old ones around it: in x A B y, "
     "merging (A, B) removes (x, A) and (B, y) as it adds (x, AB) and (AB, y). Count the pairs "
     "again after each merge.", {"update": "no decrement"}),
    ("After a merge you subtract the pairs around it but never count the new ones: in x A B y, "
     "merging (A, B) adds (x, AB) and (AB, y). Count the pairs again after each merge.",
     {"update": "no increment"}),
    ("You go on merging pairs seen only once: stop, as subword-nmt does, when the most frequent "
     "pair occurs fewer than 2 times.", {"stop": False}),
    ("Your counts leave out each word's last pair of neighbours (a range that stops one short): count "
     "every pair, i from 0 to len(symbols) - 2, zip(symbols, symbols[1:]).", {"pairs": "no last"}),
    ("Your counts leave out each word's first pair of neighbours (a range that starts at 1): count "
     "every pair, i from 0 to len(symbols) - 2, zip(symbols, symbols[1:]).", {"pairs": "no first"}),
]

# Two words seen twice each, one pair each: a tie of 2 that subword-nmt breaks toward the pair last in
# string order, ('c', 'd</w>'), whichever word comes first. What the learner's own function picks
# there says whether it breaks ties as subword-nmt does, whatever its counting does elsewhere.
TIE_PROBES = (["ab", "ab", "cd", "cd"], ["cd", "cd", "ab", "ab"])


# --- the learner's answer -----------------------------------------------------------------------

def _references():
    refs = [(bpe, name, f"helpers.bpe.{name}") for name in
            ("learn_merges", "pair_counts", "best_pair", "merge_pair", "symbols", "word_counts",
             "subword_nmt_merges")]
    try:
        import subword_nmt
        from subword_nmt import learn_bpe
    except ImportError:
        return refs
    return refs + [(subword_nmt, ALL, "subword_nmt")] + [
        (learn_bpe, name, f"subword_nmt's {name}") for name in
        ("learn_bpe", "get_pair_statistics", "replace_pair", "update_pair_statistics", "get_vocabulary")]


def _is_reference(fn):
    while isinstance(fn, functools.partial):
        fn = fn.func
    own = [bpe.learn_merges, bpe.subword_nmt_merges]
    try:
        from subword_nmt import learn_bpe
        own.append(learn_bpe.learn_bpe)
    except ImportError:
        pass
    return any(fn is f for f in own)


def _as_merges(out, n_merges):
    """The learner's result as a list of (left, right) pairs of strings, or raise Hint."""
    if isinstance(out, (str, bytes)):
        raise Hint("my_learn_merges should return a list of pairs (left, right), got a string.")
    if isinstance(out, (dict, set, frozenset, Counter)):
        raise Hint("my_learn_merges should return the merges as a list of pairs, in the order they "
                   f"were learnt, got a {type(out).__name__}.")
    try:
        items = list(out)
    except TypeError:
        raise Hint(f"my_learn_merges should return a list of pairs (left, right), got "
                   f"{type(out).__name__}.") from None
    merges = []
    for item in items:
        if isinstance(item, str):
            if len(item.split(" ")) == 2:
                raise Hint("Each merge should be a pair of strings (left, right), such as ('s', 't</w>'), "
                           f"not one string such as {item!r}.")
            raise Hint("Each merge should be the pair of symbols merged, (left, right), such as "
                       f"('s', 't</w>'), not the new symbol ({item!r}).")
        if not isinstance(item, (tuple, list)) or len(item) != 2 or \
                not all(isinstance(s, str) for s in item):
            raise Hint("Each merge should be a pair of two strings (left, right), such as ('s', 't</w>'); "
                       f"got {item!r:.60}.")
        merges.append((item[0], item[1]))
    return merges


def _run(my_learn_merges, texts, n_merges):
    out = call(my_learn_merges, NAME, texts, n_merges, reference=_references(),
               instead="count the pairs and merge them in your own loop.")
    return _as_merges(out, n_merges)


def _counts_at(texts, merges, step):
    """The pair counts after the first `step` merges (of the reference's process)."""
    vocab = {bpe.symbols(w): c for w, c in bpe.word_counts(texts).items()}
    for pair in merges[:step]:
        vocab = {bpe.merge_pair(pair, w): c for w, c in vocab.items()}
    return bpe.pair_counts(vocab)


def _hint(got, right, texts, n_merges, what, against, small=True, breaks_ties_wrongly=True):
    """The hint for a learner's merges that differ from the right ones on one corpus (on a large
    corpus, small=False, only the mistakes that count words: a text as one sequence is too slow)."""
    for hint, flags in MISTAKES:
        if (small or "unit" not in flags) and got == learn_variant(texts, n_merges, **flags):
            return hint
    if len(got) > n_merges:
        return (f"On {what}, you returned {len(got)} merges for n_merges = {n_merges}: learn at most "
                "n_merges merges.")
    if got[: len(right)] == right and len(got) > len(right):
        return (f"On {what}, you returned {len(got)} merges where {against} stops after {len(right)}: "
                "stop when the most frequent pair occurs fewer than 2 times, or no pair is left.")
    if len(got) < len(right) and got == right[: len(got)]:
        if len(got) == n_merges - 1:
            return (f"On {what}, you returned {len(got)} merges for n_merges = {n_merges}: one short "
                    "(range(n_merges) makes n_merges steps).")
        return (f"On {what}, your merges are right but stop after {len(got)}; {against} learns "
                f"{len(right)}: stop only when the most frequent pair occurs fewer than 2 times.")
    i = next(i for i, (a, b) in enumerate(zip(got, right, strict=False)) if a != b)
    counts = _counts_at(texts, right, i)
    mine, theirs = got[i], right[i]
    if counts[mine] == counts[theirs]:
        if breaks_ties_wrongly:
            return (f"On {what}, merge number {i + 1}: you chose {mine}, {against} {theirs}, both seen "
                    f"{counts[theirs]:,} times: break a tie as subword-nmt does, with the pair that comes "
                    "last in string order: max(counts, key=lambda pair: (counts[pair], pair)).")
        return (f"On {what}, merge number {i + 1}: you chose {mine}, {against} {theirs}. Both are seen "
                f"{counts[theirs]:,} times in the right counts, and your function breaks a tie as "
                "subword-nmt does (it did on a tie of its own), so your counts are not these: count every "
                "pair of neighbours of every word, the first and the last too, weighted by the word's "
                "count, again after each merge.")
    start = f"On {what}, your first {i} merges are right; merge" if i else f"On {what}, merge"
    return (f"{start} number {i + 1} should be {theirs} (seen {counts[theirs]:,} times after the merges "
            f"before it), got {mine} (seen {counts[mine]:,} times then).")


def _breaks_ties_wrongly(my_learn_merges):
    """Whether the learner's function, on a tie of its own (TIE_PROBES), picks another pair than the
    one subword-nmt picks; False when it picks that one, or none, or fails there."""
    for texts in TIE_PROBES:
        try:
            got = _run(my_learn_merges, texts, 1)
        except Hint:
            return False
        right = bpe.learn_merges(texts, 1)
        if got and got[:1] != right:
            return True
    return False


def training_texts():
    """Notebook 09's training texts, English and French together, as the merges learn them."""
    return bpe.texts_of(numbers.load_pairs("train"))


@checker
def check_learn_merges(my_learn_merges):
    """my_learn_merges(texts, n_merges) -> the merges, against subword-nmt (or helpers.bpe)."""
    if _is_reference(my_learn_merges):
        return ("my_learn_merges is the reference this check compares with, so it checks nothing: "
                "write the loop yourself.")
    for what, texts, n_merges in (("Sennrich's example (low, lower, newest, widest)", TOY, TOY_MERGES),
                                  ("a small corpus of several words per text", CORPUS, CORPUS_MERGES)):
        got = _run(my_learn_merges, texts, n_merges)
        right = bpe.learn_merges(texts, n_merges)
        if got != right:
            return _hint(got, right, texts, n_merges, what, "the course",
                         breaks_ties_wrongly=_breaks_ties_wrongly(my_learn_merges))
    texts = training_texts()
    theirs = bpe.subword_nmt_merges(texts, max(TEXT_MERGES))
    against = "subword-nmt" if theirs is not None else "helpers.bpe"
    right_all = theirs if theirs is not None else bpe.learn_merges(texts, max(TEXT_MERGES))
    for n_merges in TEXT_MERGES:
        got = _run(my_learn_merges, texts, n_merges)
        right = right_all[:n_merges]
        if got != right:
            return _hint(got, right, texts, n_merges, f"09's training texts ({n_merges} merges)", against,
                         small=False, breaks_ties_wrongly=_breaks_ties_wrongly(my_learn_merges))
    if theirs is None:
        return Passed("Your merges equal the course's helpers.bpe.learn_merges, in order, on 09's "
                      "training texts for 50 and 200 merges and on two small corpora (subword-nmt is "
                      "not installed here: pip install subword-nmt to compare with it).")
    return Passed("Your merges equal subword-nmt's (Sennrich's own implementation), in the same order, "
                  "on 09's training texts for 50 and 200 merges, and the course's on two small corpora.")


# The exercise, for tests/test_routes.py: the reference, and an answer that borrows it.
exercise(check_learn_merges, bpe.learn_merges, lambda f: lambda texts, n_merges: f(texts, n_merges))
