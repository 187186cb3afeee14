"""chrF by hand equals sacrebleu's; the paired bootstrap's whole-set scores equal the corpus
scores, its draws are the same on every run, and it says what it should about two systems."""

import random

import pytest
import torch

from helpers import bootstrap, chrf
from helpers.bleu import corpus_bleu_several, tokenize_13a
from helpers.tasks import tatoeba


@pytest.fixture(scope="module")
def corpus():
    _, dev, test = tatoeba.split()
    refs = list(tatoeba.references_of(test).values()) + list(tatoeba.references_of(dev).values())
    rnd = random.Random(7)
    # outputs that are cut references with endings added: partly right, of every length, some empty
    hyps = [rnd.choice(r)[: rnd.randint(0, 30)] + rnd.choice(["", "s", "e", " x", "!"]) for r in refs]
    return hyps, refs


def test_bleu_and_chrf_by_hand_equal_sacrebleu_on_the_dev_and_test_references(corpus):
    sacrebleu = pytest.importorskip("sacrebleu")
    hyps, refs = corpus
    most = max(len(r) for r in refs)
    streams = [[r[j] if j < len(r) else None for r in refs] for j in range(most)]
    tokens = [[tokenize_13a(r) for r in rs] for rs in refs]
    mine = corpus_bleu_several([tokenize_13a(h) for h in hyps], tokens)
    assert mine == pytest.approx(sacrebleu.corpus_bleu(hyps, streams).score, abs=1e-9)
    assert tatoeba.bleu_all(hyps, refs) == pytest.approx(mine, abs=1e-9)


def test_chrf_equals_sacrebleu(corpus):
    sacrebleu = pytest.importorskip("sacrebleu")
    hyps, refs = corpus
    most = max(len(r) for r in refs)
    streams = [[r[j] if j < len(r) else None for r in refs] for j in range(most)]
    assert chrf.corpus_chrf(hyps, refs) == pytest.approx(sacrebleu.corpus_chrf(hyps, streams).score, abs=1e-9)
    one = [r[:1] for r in refs]
    theirs = sacrebleu.corpus_chrf(hyps, [[r[0] for r in refs]]).score
    assert chrf.corpus_chrf(hyps, one) == pytest.approx(theirs, abs=1e-9)


def test_chrf_forgives_an_ending_more_than_bleu():
    hyp, ref = ["Elle est fatigué ."], [["Elle est fatiguée ."]]
    bleu = corpus_bleu_several([tokenize_13a(h) for h in hyp], [[tokenize_13a(r) for r in rs] for rs in ref])
    assert bleu == 0.0                      # the 4-gram is lost with the one word
    assert chrf.corpus_chrf(hyp, ref) > 80


def test_bootstrap_whole_set_equals_corpus_scores(corpus):
    hyps, refs = corpus
    stats = bootstrap.sentence_stats(hyps, refs)
    whole = float(bootstrap.bleu_of(stats.sum(0, keepdim=True))[0])
    tokens = [[tokenize_13a(r) for r in rs] for rs in refs]
    assert whole == pytest.approx(corpus_bleu_several([tokenize_13a(h) for h in hyps], tokens), abs=1e-9)
    counts = bootstrap.sentence_stats(hyps, refs, "chrf")
    assert float(bootstrap.score_of(counts.sum(0, keepdim=True), "chrf")[0]) == pytest.approx(
        chrf.corpus_chrf(hyps, refs), abs=1e-9)


def test_bootstrap_draws_are_fixed():
    first = bootstrap.draws(50, samples=3)
    assert torch.equal(first, bootstrap.draws(50, samples=3))
    assert first.shape == (3, 50) and int(first.min()) >= 0 and int(first.max()) < 50


def test_paired_bootstrap_reads_two_systems(corpus):
    hyps, refs = corpus
    same = bootstrap.sentence_stats(hyps, refs)
    result = bootstrap.paired(same, same, samples=200)
    assert result["difference"] == 0 and result["difference_interval"] == (0.0, 0.0)
    assert result["a_interval"][0] < result["a"] < result["a_interval"][1]
    better = bootstrap.sentence_stats([r[0] for r in refs], refs)       # every output a reference
    result = bootstrap.paired(same, better, samples=200)
    assert result["difference_interval"][0] > 0 and result["b_better"] == 1.0


def test_bootstrap_perplexity_and_verdicts():
    rows = torch.tensor([[2.0, 1.0], [4.0, 3.0]], dtype=torch.float64)
    assert float(bootstrap.score_of(rows.sum(0, keepdim=True), "perplexity")[0]) == pytest.approx(
        torch.tensor(6.0 / 4.0).exp().item())
    up = {"difference": 1.0, "difference_interval": (0.2, 1.8)}
    up_noisy = {"difference": 0.5, "difference_interval": (-0.3, 1.2)}
    down = {"difference": -0.4, "difference_interval": (-0.9, -0.1)}
    assert bootstrap.verdict([up, up]) == "real"
    assert bootstrap.verdict([up, up_noisy]) == "same sign, within the noise"
    assert bootstrap.verdict([up, down]) == "seeds disagree"
