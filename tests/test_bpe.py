"""helpers.bpe: the merges by hand on Sennrich's example, equal to subword-nmt 0.3.8 (on 09's training
texts and on random corpora), pieces equal to subword-nmt's apply_bpe, and the shipped model on
pieces."""

import io
import random

import pytest
import torch

from helpers import bpe
from helpers.tasks import numbers
from helpers.decoding import exact_matches, greedy_decode

subword_nmt = pytest.importorskip("subword_nmt")
from subword_nmt.apply_bpe import BPE  # noqa: E402

TOY = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
TRAIN = numbers.load_pairs("train")
TEST = numbers.load_pairs("test")
TEXTS = bpe.texts_of(TRAIN)


def test_symbols_glue_the_end_mark_to_the_last_character():
    assert bpe.symbols("low") == ("l", "o", "w</w>")
    assert bpe.symbols("a") == ("a</w>",)


def test_the_first_step_by_hand():
    vocab = {bpe.symbols(w): c for w, c in bpe.word_counts(TOY).items()}
    counts = bpe.pair_counts(vocab)
    assert counts[("e", "s")] == counts[("s", "t</w>")] == 9        # 6 newest + 3 widest
    assert counts[("w", "e")] == 8 and counts[("l", "o")] == 7 and counts[("o", "w</w>")] == 5
    assert bpe.best_pair(counts) == ("s", "t</w>")                   # the tie: 's' comes after 'e'


def test_merge_pair_merges_every_occurrence_left_to_right():
    assert bpe.merge_pair(("a", "n"), tuple("banana")) == ("b", "an", "an", "a")
    assert bpe.merge_pair(("a", "a"), ("a", "a", "a")) == ("aa", "a")
    assert bpe.merge_pair(("x", "y"), ("a", "b")) == ("a", "b")


def test_the_toy_merges_and_a_new_word():
    merges = bpe.learn_merges(TOY, 10)
    assert merges[:4] == [("s", "t</w>"), ("e", "st</w>"), ("l", "o"), ("w", "est</w>")]
    assert merges == bpe.subword_nmt_merges(TOY, 10)
    assert len(bpe.learn_merges(TOY, 100)) == 13                    # then every word is one symbol
    segmenter = bpe.Segmenter(merges)
    assert segmenter.word("lowest") == ["lo", "west</w>"]
    assert segmenter.word("newest") == ["newest</w>"]


@pytest.mark.parametrize("n_merges", [50, 200, 1000])
def test_merges_equal_subword_nmt_on_the_training_texts(n_merges):
    ours = bpe.learn_merges(TEXTS, n_merges)
    assert ours == bpe.subword_nmt_merges(TEXTS, n_merges)
    assert len(ours) == min(n_merges, 307)                          # 307: every word is one piece


def random_corpus(rng):
    letters = rng.choice(["ab", "abc", "abcde", "aeiounst"])
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
             for _ in range(rng.randint(1, 30))]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 40))]


def test_merges_equal_subword_nmt_on_random_corpora():
    rng = random.Random(0)
    for _ in range(150):
        texts = random_corpus(rng)
        n_merges = rng.randint(1, 60)
        assert bpe.learn_merges(texts, n_merges) == bpe.subword_nmt_merges(texts, n_merges), texts


def subword_nmt_pieces(merges, word):
    """apply_bpe's pieces of a word, written as the course writes them (END on the last one)."""
    codes = io.StringIO("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    out = BPE(codes).segment(word).split(" ")
    return [p[:-2] if p.endswith("@@") else p + bpe.END for p in out]


@pytest.mark.parametrize("n_merges", [1, 50, 200, 307])
def test_pieces_equal_apply_bpe_on_every_word(n_merges):
    merges = bpe.learn_merges(TEXTS, n_merges)
    segmenter = bpe.Segmenter(merges)
    codes = io.StringIO("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    theirs = BPE(codes)
    for word in bpe.word_counts(bpe.texts_of(TRAIN + TEST)):
        if len(word) == 1:                                          # apply_bpe leaves these alone
            assert segmenter.word(word) == [word + bpe.END]
            continue
        out = theirs.segment(word).split(" ")
        assert segmenter.word(word) == [p[:-2] if p.endswith("@@") else p + bpe.END for p in out], word


def test_pieces_of_random_words_equal_apply_bpe():
    rng = random.Random(1)
    merges = bpe.learn_merges(TEXTS, 200)
    segmenter = bpe.Segmenter(merges)
    letters = sorted(set("".join(TEXTS)) - {" "})
    for _ in range(300):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(2, 25)))
        assert segmenter.word(word) == subword_nmt_pieces(merges, word), word


@pytest.mark.parametrize("n_merges", [0, 50, 200, 307])
def test_pieces_join_back_and_cover_the_test_numbers(n_merges):
    segmenter = bpe.Segmenter(bpe.learn_merges(TEXTS, n_merges))
    for text in bpe.texts_of(TRAIN + TEST):
        assert segmenter.join(segmenter.pieces(text)) == text
    vocab = segmenter.vocabulary(TRAIN)
    assert all(p in vocab.stoi for src, tgt in segmenter.piece_pairs(TEST) for p in (*src, *tgt))
    assert vocab.itos[:3] == numbers.SPECIALS


def test_zero_merges_are_characters_and_all_merges_are_words():
    chars = bpe.Segmenter([])
    assert chars.pieces("deux cents") == ["d", "e", "u", "x</w>", "c", "e", "n", "t", "s</w>"]
    words = bpe.Segmenter(bpe.learn_merges(TEXTS, 10_000))
    assert len(words.vocabulary(TRAIN)) == 3 + len(bpe.word_counts(TEXTS))


def test_subword_nmt_merges_is_none_without_subword_nmt(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "subword_nmt.learn_bpe", None)
    assert bpe.subword_nmt_merges(TOY, 10) is None


# --- the shipped model on pieces -------------------------------------------------------------------

def test_the_shipped_model_on_pieces_is_small_loads_and_translates():
    path = numbers.CHECKPOINTS / numbers.bpe_model_name()
    assert path.stat().st_size < 1_200_000
    segmenter = bpe.Segmenter(bpe.learn_merges(TEXTS, bpe.MERGES))
    vocab = segmenter.vocabulary(TRAIN)
    model = numbers.load_model(path, vocab)
    assert model.embedding.weight.shape[0] == len(vocab)
    src, _, tgt_out = numbers.make_batch(segmenter.piece_pairs(TEST), vocab)
    right = exact_matches(greedy_decode(model, src, max_len=src.shape[1] + 50), tgt_out)
    assert right.float().mean() >= 0.95


def test_the_command_trains_the_notebooks_run_on_pieces(tmp_path, monkeypatch):
    """--save-bpe-model calls numbers.train_numbers (the notebook's run) with the pieces."""
    seen = {}

    def fake_train(pairs, vocab, seed=0, progress=True, tokens=None, **kw):
        seen.update(n_pairs=len(pairs), n_vocab=len(vocab), seed=seed, first=tokens(pairs[:1]))
        from helpers.tasks.reversal import TINY
        from helpers.model import Transformer
        return Transformer(vocab=len(vocab), p=0.1, **TINY).eval(), {}

    monkeypatch.setattr(numbers, "train_numbers", fake_train)
    numbers.main(["--save-bpe-model", str(tmp_path), "--merges", "50", "--seed", "3"])
    assert (tmp_path / "numbers_bpe_50.pt").is_file()
    segmenter = bpe.Segmenter(bpe.learn_merges(TEXTS, 50))
    assert seen["n_pairs"] == len(TRAIN) and seen["seed"] == 3
    assert seen["first"] == segmenter.piece_pairs(TRAIN[:1])
    assert seen["n_vocab"] == len(segmenter.vocabulary(TRAIN))
    saved = torch.load(tmp_path / "numbers_bpe_50.pt", weights_only=True)
    assert saved["embedding.weight"].shape[0] == seen["n_vocab"]
