"""Byte-pair encoding (Sennrich, Haddow and Birch 2016), the subword units of the paper's §5.1.

Words are cut into pieces learnt from the training texts: start from each word's characters,
the last one marked as the end of the word (``"low"`` -> ``l o w</w>``, as subword-nmt 0.3.8
writes it); count every pair of adjacent symbols inside a word, weighted by how often the word
occurs; merge the most frequent pair everywhere into one new symbol; repeat. The learnt merges,
in order, are the encoding. A ``Segmenter`` applies them to any word, also one never seen:
it merges, again and again, the adjacent pair that was learnt first.

- ``word_counts(texts)``: how often each word (split on spaces) occurs in the texts.
- ``symbols(word)``: the word's starting symbols, ``"low"`` -> ``("l", "o", "w</w>")``.
- ``pair_counts(vocab)`` / ``merge_pair(pair, word)``: one step's two halves.
- ``best_pair(counts)``: the most frequent pair; a tie goes to the pair that comes last in
  string order, as subword-nmt's ``max(stats, key=lambda x: (stats[x], x))``.
- ``learn_merges(texts, n_merges)``: the whole loop (stops early, as subword-nmt, when no
  pair occurs twice).
- ``subword_nmt_merges(texts, n_merges)``: the same merges from subword-nmt itself, where it is
  installed (None elsewhere).
- ``Segmenter(merges)``: ``pieces(text)``, ``join(pieces)`` and ``vocabulary(pairs)``, notebook 09's
  number pairs cut into pieces.
- Notebook 09's model trained on pieces is in ``helpers.tasks.numbers``.
"""

import io
from collections import Counter

END = "</w>"                 # the end-of-word mark, glued to a word's last character
MIN_FREQUENCY = 2            # subword-nmt's default: stop when no pair occurs this often
MERGES = 50                  # the merge count of notebook 09's model on pieces


def word_counts(texts):
    """Counter of the words of texts (strings, words separated by spaces)."""
    return Counter(word for text in texts for word in text.split())


def symbols(word):
    """A word as its starting symbols: its characters, the last with the end mark."""
    return (*word[:-1], word[-1] + END)


def pair_counts(vocab):
    """Counter of the adjacent pairs of symbols inside each word, weighted by the word's count.

    vocab: {symbols of a word (tuple): how often the word occurs}."""
    counts = Counter()
    for word, count in vocab.items():
        for pair in zip(word, word[1:], strict=False):
            counts[pair] += count
    return counts


def best_pair(counts):
    """The most frequent pair; among equally frequent pairs, the last in string order."""
    return max(counts, key=lambda pair: (counts[pair], pair))


def merge_pair(pair, word):
    """The symbols of word (a tuple) with every occurrence of pair merged, left to right."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def learn_merges(texts, n_merges, min_frequency=MIN_FREQUENCY):
    """The first n_merges merges learnt from texts, in order, as (left, right) pairs.

    Stops early when the most frequent pair occurs fewer than min_frequency times (or when
    every word is one symbol)."""
    vocab = {symbols(word): count for word, count in word_counts(texts).items()}
    merges = []
    for _ in range(n_merges):
        counts = pair_counts(vocab)
        if not counts:
            break
        pair = best_pair(counts)
        if counts[pair] < min_frequency:
            break
        merges.append(pair)
        vocab = {merge_pair(pair, word): count for word, count in vocab.items()}
    return merges


def subword_nmt_merges(texts, n_merges):
    """subword-nmt 0.3.8's merges for the same texts, as (left, right) pairs, or None where
    subword-nmt is not installed (it is a test-only requirement of the course)."""
    try:
        from subword_nmt.learn_bpe import learn_bpe
    except ImportError:
        return None
    import contextlib

    codes = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):                 # its progress bar and "Stopping"
        learn_bpe(io.StringIO("\n".join(texts) + "\n"), codes, n_merges)
    lines = codes.getvalue().splitlines()
    return [tuple(line.split(" ")) for line in lines if not line.startswith("#version")]


class Segmenter:
    """Cuts words into pieces with learnt merges: the pieces of a word end with END at its end.

    pieces("quatre-vingts") -> e.g. ["quatre-", "vingts</w>"]; join(pieces) gives back the text.
    """

    def __init__(self, merges):
        self.merges = [tuple(pair) for pair in merges]
        self.rank = {}
        for i, pair in enumerate(self.merges):
            self.rank.setdefault(pair, i)           # a pair learnt twice keeps its first rank
        self.cache = {}

    def word(self, word):
        """The pieces of one word: merge the pair learnt first, again and again, until none of
        the word's adjacent pairs was learnt."""
        if word not in self.cache:
            pieces = symbols(word)
            while len(pieces) > 1:
                learnt = [pair for pair in zip(pieces, pieces[1:], strict=False) if pair in self.rank]
                if not learnt:
                    break
                pieces = merge_pair(min(learnt, key=self.rank.get), pieces)
            self.cache[word] = list(pieces)
        return self.cache[word]

    def pieces(self, text):
        """The pieces of every word of text (words separated by spaces), in order."""
        return [piece for word in text.split() for piece in self.word(word)]

    @staticmethod
    def join(pieces):
        """Pieces back to text: glue them, and a space after each END."""
        return "".join(pieces).replace(END, " ").strip()

    def piece_pairs(self, pairs):
        """Number pairs -> (English pieces, French pieces), the form make_batch takes."""
        return [(self.pieces(p.english), self.pieces(p.french)) for p in pairs]

    def vocabulary(self, pairs):
        """One shared vocabulary (helpers.vocabulary.Vocabulary) of the pieces of pairs' words."""
        from helpers.vocabulary import Vocabulary

        return Vocabulary(piece for word in word_counts(texts_of(pairs)) for piece in self.word(word))


def texts_of(pairs):
    """The English and the French of each pair, in one list: what the shared merges learn from."""
    return [text for p in pairs for text in (p.english, p.french)]
