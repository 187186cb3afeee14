"""Issue 29's mistakes in notebook 09's checks (helpers.checks.translation), each written here the way
a learner would write it, independently of the checker's own variants."""

import math
from collections import Counter

import pytest
import torch

from helpers.tasks import numbers
from helpers.checks.translation import check_bleu, check_make_batch
from helpers.tasks.reversal import BOS, EOS, PAD
from printed import printed


def bleu_with(mean="geometric", swap=False, totals_from_ref=False, orders=range(1, 5), clip=min):
    """A learner's corpus BLEU with one thing changed."""
    def my_bleu(hypotheses, references):
        if swap:
            hypotheses, references = references, hypotheses
        orders_ = list(orders)
        matches, totals = [0] * len(orders_), [0] * len(orders_)
        c = r = 0
        for hyp, ref in zip(hypotheses, references, strict=True):
            c, r = c + len(hyp), r + len(ref)
            for i, n in enumerate(orders_):
                h = Counter(tuple(hyp[j:j + n]) for j in range(len(hyp) - n + 1))
                g = Counter(tuple(ref[j:j + n]) for j in range(len(ref) - n + 1))
                matches[i] += sum(clip(k, g[x]) for x, k in h.items())
                totals[i] += max(len(ref if totals_from_ref else hyp) - n + 1, 0)
        if min(totals) == 0 or min(matches) == 0:
            return 0.0
        bp = 1.0 if c > r else math.exp(1 - r / c)
        p = [m / t for m, t in zip(matches, totals, strict=True)]
        if mean == "arithmetic":
            return 100 * bp * sum(p) / len(p)
        return 100 * bp * math.exp(sum(math.log(x) for x in p) / len(p))
    return my_bleu


BLEU_WORDS = {"arithmetic": "arithmetic mean", "swap": "Hypotheses and references are swapped",
              "totals": "totals count the reference's n-grams", "zero": "from n = 0 to 3",
              "two": "from n = 2 to 5", "max": "clipped with max"}


@pytest.mark.parametrize("fn, key", [
    (bleu_with(mean="arithmetic"), "arithmetic"),
    (bleu_with(swap=True), "swap"),
    (bleu_with(totals_from_ref=True), "totals"),
    (bleu_with(orders=range(0, 4)), "zero"),
    (bleu_with(orders=range(2, 6)), "two"),
    (bleu_with(clip=max), "max"),
])
def test_issue_29_bleu_mistakes_are_named(fn, key, capsys):
    line = printed(capsys, check_bleu, fn)
    assert BLEU_WORDS[key] in line, line
    assert all(words not in line for other, words in BLEU_WORDS.items() if other != key), line


def test_issue_29_the_bleu_written_out_passes(capsys):
    assert printed(capsys, check_bleu, bleu_with()).startswith("Check passed.")


def make_batch_sliced(pairs, vocab):
    """<s> t </s> padded, then sliced: the other usual way to build tgt_in and tgt_out."""
    sources = [vocab.encode(s) for s, _ in pairs]
    full = [[BOS, *vocab.encode(t), EOS] for _, t in pairs]
    n_src, n = max(map(len, sources)), max(map(len, full))
    src = torch.tensor([s + [PAD] * (n_src - len(s)) for s in sources])
    full = torch.tensor([f + [PAD] * (n - len(f)) for f in full])
    return src, full[:, :-1], full[:, 1:]


def test_issue_29_the_sliced_convention_is_accepted_and_trains_the_same(capsys):
    vocab = numbers.vocabulary()
    line = printed(capsys, check_make_batch, make_batch_sliced, vocab)
    assert line.startswith("Check passed.") and "sliced" in line, line
    # what the note says: the model's loss is the same on both batches
    from helpers.model import Transformer
    from helpers.recipe import smoothed_loss
    pairs = [(numbers.tokenize(en), numbers.tokenize(fr)) for en, fr in
             [("seventy-one", "soixante et onze"), ("six", "six"), ("two hundred", "deux cents")]]
    torch.manual_seed(0)
    model = Transformer(len(vocab), 16, 2, 32, 1, p=0.0).eval()
    loss = smoothed_loss(PAD)
    losses = []
    for src, tgt_in, tgt_out in (numbers.make_batch(pairs, vocab), make_batch_sliced(pairs, vocab)):
        with torch.no_grad():
            logits = model(src, tgt_in)
        losses.append(loss(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1)).item())
    assert not torch.equal(make_batch_sliced(pairs, vocab)[1], numbers.make_batch(pairs, vocab)[1])
    assert abs(losses[0] - losses[1]) < 1e-6, losses


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8])
def test_issue_29_ids_must_be_long(dtype, capsys):
    vocab = numbers.vocabulary()

    def own(pairs, v):
        src, tgt_in, tgt_out = make_batch_sliced(pairs, v)
        return src.to(dtype), tgt_in.to(dtype), tgt_out.to(dtype)

    line = printed(capsys, check_make_batch, own, vocab)
    assert f"dtype {dtype}" in line and "torch.long" in line, line
