"""Notebook 11's world (helpers.tasks.tatoeba): the data, the split, the pieces, the shipped files."""

import hashlib

import torch

from helpers import bpe
from helpers.tasks import tatoeba


def test_the_vendored_file_is_the_one_described():
    digest = hashlib.sha256(tatoeba.DATA.read_bytes()).hexdigest()
    assert digest == "c52ae3c5a2f6b3c96d985aad8e2f1aab814c6701cfa9face467989069624bcaa"
    assert len(tatoeba.read_lines()) == 18_065


def test_normalise_keeps_words_and_unifies_spaces_and_apostrophes():
    assert tatoeba.normalise("Quoi d\u2019autre\u202f?") == "Quoi d'autre ?"
    assert tatoeba.normalise("  Va\u2009!  ") == "Va !"
    assert tatoeba.normalise("Été") == "Été"


def test_the_shipped_split_keeps_test_and_dev_sentences_and_references_out_of_training():
    pairs = tatoeba.load_pairs()
    train, dev, test = tatoeba.split()
    assert (len(pairs), len(train), len(dev), len(test)) == (17_993, 16_039, 817, 809)
    assert len(tatoeba.references_of(dev)) == len(tatoeba.references_of(test)) == 500
    rest, same_test = tatoeba.split_by_english(pairs, tatoeba.N_TEST, tatoeba.SEED)
    for held, drawn_from in ((test, pairs), (dev, rest)):
        assert not {e for e, _ in train} & {e for e, _ in held}
        assert not {f for _, f in train} & {f for _, f in held}
        english = {e for e, _ in held}
        assert [p for p in drawn_from if p[0] in english] == held  # every reference, once, in order
    assert not {e for e, _ in dev} & {e for e, _ in test}
    assert not {f for _, f in dev} & {f for _, f in test}
    assert same_test == test                                        # the test split drawn first
    assert tatoeba.split_by_english(rest, tatoeba.N_DEV, tatoeba.DEV_SEED) == (train, dev)


def test_the_split_does_not_depend_on_the_order_of_the_pairs():
    pairs = tatoeba.load_pairs()[:3000]
    _, test = tatoeba.split_by_english(pairs, 50, 1)
    _, moved = tatoeba.split_by_english(pairs[::-1], 50, 1)
    assert {e for e, _ in test} == {e for e, _ in moved}


def test_the_shipped_merges_are_learnt_by_the_courses_code():
    train = tatoeba.split()[0]
    assert bpe.learn_merges(tatoeba.texts(train), 20) == tatoeba.merges()[:20]
    assert len(tatoeba.merges()) == tatoeba.MERGES


def test_words_and_detokenize_give_back_most_sentences():
    pairs = tatoeba.load_pairs()
    back = sum(tatoeba.detokenize(tatoeba.words(f)) == f for _, f in pairs)
    assert back / len(pairs) > 0.99
    assert tatoeba.detokenize(["Qu'est-ce", "que", "c'est", "?"]) == "Qu'est-ce que c'est ?"
    assert tatoeba.detokenize(["What", "is", "it", "?"], french=False) == "What is it?"


def test_the_shipped_model_loads_and_translates():
    torch.set_num_threads(1)
    pieces = tatoeba.pieces_for()
    model = tatoeba.load_model(pieces)
    assert sum(p.numel() for p in model.parameters()) == 1_194_752
    out, looped = tatoeba.translate(model, ["Tom is my friend.", "I have a red car."], pieces, beam=4)
    assert out == ["Tom est mon ami.", "J'ai une voiture rouge."] and looped == 0


def test_the_shipped_files_stay_small():
    files = [tatoeba.DATA, tatoeba.MERGES_FILE, tatoeba.CHECKPOINTS / tatoeba.MODEL,
             *tatoeba.RUNS.glob("*.json")]
    assert sum(f.stat().st_size for f in files) < 10_000_000
