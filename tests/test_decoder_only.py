"""helpers.decoder_only and notebook 12's world (helpers.tasks.decoder_only): the two masks, what
each position may read, decoding with the cache, the sequences and batches, the sizes, resuming."""

import random

import pytest
import torch

from helpers import seed_all
from helpers.attention import causal_mask, padding_mask
from helpers.decoder_only import (DecoderOnly, beam_search, causal_lm_mask, greedy_decode, joined,
                                  prefix_lm_mask, start, step)
from helpers.decoding import search, up_to_eos
from helpers.recipe import adam_with_warmup, smoothed_loss, train_step
from helpers.tasks import decoder_only as world
from helpers.tasks import tatoeba
from helpers.tasks.runs import train_resumable
from helpers.vocabulary import BOS, EOS, PAD

# Two pairs of different lengths: "a b <s> x y" (source 2, target 2) and "c <s> z" + 2 pads.
IDS = torch.tensor([[5, 6, BOS, 7, 8],
                    [9, BOS, 10, PAD, PAD]])
SRC_LENGTHS = torch.tensor([2, 1])
PADDING = padding_mask(IDS, PAD)
T, F_ = True, False
PREFIX = torch.tensor([[[F_, F_, F_, T, T],      # the source and <s> read the whole prefix
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, F_, T],     # x reads the prefix and itself, not y
                        [F_, F_, F_, F_, F_]],
                       [[F_, F_, T, T, T],
                        [F_, F_, T, T, T],
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, T, T],      # padding queries read only real keys
                        [F_, F_, F_, T, T]]])
CAUSAL = torch.tensor([[[F_, T, T, T, T],
                        [F_, F_, T, T, T],
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, F_, T],
                        [F_, F_, F_, F_, F_]],
                       [[F_, T, T, T, T],
                        [F_, F_, T, T, T],
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, T, T],
                        [F_, F_, F_, T, T]]])


def test_the_masks_on_a_hand_checked_batch():
    assert torch.equal(prefix_lm_mask(SRC_LENGTHS, 5, PADDING), PREFIX)
    assert torch.equal(causal_lm_mask(5, PADDING), CAUSAL)
    assert torch.equal(causal_lm_mask(5), causal_mask(5))
    assert not prefix_lm_mask([4], 5).any()            # a prefix of all the positions: nothing hidden


def _ij(n):
    return torch.arange(n)[:, None], torch.arange(n)[None, :]


def _causal_over_the_source(src_lengths, n, padding):
    i, j = _ij(n)
    return (j > i) | padding[:, None, :]


def _target_sees_its_future(src_lengths, n, padding):
    i, j = _ij(n)
    m = torch.as_tensor(src_lengths)[:, None, None]
    return ((j > m) & (i <= m)) | padding[:, None, :]


def _separator_on_the_target_side(src_lengths, n, padding):
    i, j = _ij(n)
    return ((j > i) & (j >= torch.as_tensor(src_lengths)[:, None, None])) | padding[:, None, :]


def _padding_left_visible(src_lengths, n, padding):
    i, j = _ij(n)
    return (j > i) & (j > torch.as_tensor(src_lengths)[:, None, None])


def _inverted(src_lengths, n, padding):
    return ~prefix_lm_mask(src_lengths, n, padding)


@pytest.mark.parametrize("mistake", [_causal_over_the_source, _target_sees_its_future,
                                     _separator_on_the_target_side, _padding_left_visible, _inverted])
def test_each_named_mistake_gives_another_mask(mistake):
    wrong = mistake(SRC_LENGTHS, 5, PADDING)
    assert wrong.shape == PREFIX.shape and not torch.equal(wrong, PREFIX)


def _model(prefix, n_layers=2, vocab=23):
    seed_all(0)
    return DecoderOnly(vocab, 16, 2, 24, n_layers, p=0.1, prefix=prefix).eval()


def test_the_causal_model_never_reads_the_future():
    model = _model(prefix=False)
    ids = torch.tensor([[5, 6, 7, BOS, 8, 9, 10, 11]])
    whole = model(ids, torch.tensor([3]))
    for n in (2, 4, 6):
        assert torch.allclose(model(ids[:, :n], torch.tensor([3]))[0], whole[0, :n], atol=1e-5)


def test_what_the_prefix_model_reads():
    model = _model(prefix=True)
    ids = torch.tensor([[5, 6, 7, BOS, 8, 9, 10]])
    m = torch.tensor([3])
    base = model(ids, m)
    target_changed = model(ids.index_fill(1, torch.tensor([5]), 12), m)
    assert torch.allclose(target_changed[0, :5], base[0, :5], atol=1e-5)     # the prefix and x: untouched
    assert not torch.allclose(target_changed[0, 5:], base[0, 5:], atol=1e-3)
    source_changed = model(ids.index_fill(1, torch.tensor([2]), 12), m)
    assert all(not torch.allclose(source_changed[0, i], base[0, i], atol=1e-3) for i in range(7))
    causal = _model(prefix=False)
    before = causal(ids, m)
    after = causal(ids.index_fill(1, torch.tensor([2]), 12), m)
    assert torch.allclose(after[0, :2], before[0, :2], atol=1e-5)           # causal: the past only


def test_padding_changes_nothing_a_row_reads():
    for prefix in (True, False):
        model = _model(prefix)
        alone = model(IDS[1:, :3], SRC_LENGTHS[1:])
        padded = model(IDS, SRC_LENGTHS)
        assert torch.allclose(padded[1, :3], alone[0], atol=1e-5)


SRC = torch.tensor([[5, 6, 7, 8], [9, 10, PAD, PAD], [11, PAD, PAD, PAD]])


@pytest.mark.parametrize("prefix", [True, False])
def test_the_cache_gives_the_same_logits_and_decodings(prefix):
    model = _model(prefix)
    first, cache = start(model, SRC)
    ys = torch.tensor([[BOS, 12], [BOS, 13], [BOS, 14]])
    ids, src_lengths = joined(SRC, ys)
    full = model(ids, src_lengths)
    rows = torch.arange(3)
    assert torch.allclose(first, full[rows, src_lengths], atol=1e-5)
    assert torch.allclose(step(model, ys[:, 1], cache), full[rows, src_lengths + 1], atol=1e-5)
    cached = greedy_decode(model, SRC, max_len=12, stop=False)
    assert torch.equal(cached, greedy_decode(model, SRC, max_len=12, use_cache=False, stop=False))


@pytest.mark.parametrize("prefix", [True, False])
def test_beam_of_one_is_greedy_and_the_cached_beam_equals_the_uncached(prefix):
    model = _model(prefix, vocab=12)
    greedy = greedy_decode(model, SRC, max_len=9, stop=False)
    beam = beam_search(model, SRC, k=1, max_len=9)
    assert [up_to_eos(r[1:]) for r in beam] == [up_to_eos(r[1:]) for r in greedy]
    k = 3
    src = SRC.repeat_interleave(k, 0)

    def next_log_probs(ys):
        ids, src_lengths = joined(src, ys)
        return model(ids, src_lengths)[torch.arange(len(ys)), src_lengths + ys.shape[1] - 1].log_softmax(-1)

    lengths = (SRC != PAD).sum(1) + 5
    uncached = search(next_log_probs, 3, k, lengths, 0.6)["tokens"][:, 0]
    assert torch.equal(beam_search(model, SRC, k=k, extra=5), uncached)


def test_a_pair_becomes_one_sequence_scored_on_its_target():
    ids, src_lengths, labels = world.join([([5, 6], [7, 8]), ([9], [10])])
    assert torch.equal(ids, IDS) and torch.equal(src_lengths, SRC_LENGTHS)
    assert labels.tolist() == [[PAD, PAD, 7, 8, EOS], [PAD, 10, EOS, PAD, PAD]]
    _, _, with_source = world.join([([5, 6], [7, 8]), ([9], [10])], source_loss=True)
    assert with_source.tolist() == [[6, BOS, 7, 8, EOS], [BOS, 10, EOS, PAD, PAD]]


def test_the_batches_are_11s_batches_joined():
    rng = random.Random(0)
    encoded = [([rng.randrange(3, 40) for _ in range(rng.randrange(1, 7))],
                [rng.randrange(3, 40) for _ in range(rng.randrange(1, 7))]) for _ in range(300)]
    theirs = tatoeba.batches(encoded, torch.Generator().manual_seed(4), budget=60)
    ours = world.batches(encoded, torch.Generator().manual_seed(4), budget=60)
    for _ in range(60):                                  # more than two epochs
        src, _, tgt_out = theirs()
        ids, src_lengths, labels = ours()
        split = [(row[:m].tolist(), row[m + 1:][row[m + 1:] != PAD].tolist())
                 for row, m in zip(ids, src_lengths, strict=True)]
        assert world.pairs_of(src, tgt_out) == split
        assert int((labels != PAD).sum()) == int((tgt_out != PAD).sum())      # the same scored tokens


@pytest.mark.parametrize("source_loss", [False, True])
def test_the_step_scoring_only_labelled_positions_equals_the_full_one(source_loss):
    batch = world.join([([5, 6], [7, 8]), ([9], [10]), ([3, 4, 11], [12])], source_loss)
    updated = []
    for update in (world.train_step, train_step):
        model = _model(prefix=not source_loss)
        opt = torch.optim.SGD(model.parameters(), lr=1.0)     # the weights move by the gradient
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        seed_all(1)                                      # the same dropout draws
        loss = update(model, opt, sched, smoothed_loss(PAD, 0.1), *batch)
        updated.append((loss, model.state_dict()))
    (ours, after), (full, expected) = updated
    assert ours == pytest.approx(full, rel=1e-6)
    assert all(torch.allclose(after[k], expected[k], atol=1e-6) for k in after)


def test_the_sizes_as_stated():
    counts = world.parameter_counts(1000)
    assert all(formula == counted for formula, counted in counts.values())
    assert counts["encoder_decoder_2+2"][0] == 925_696
    assert counts["prefix_4x640"][0] == counts["causal_srcloss_4x640"][0] == 924_672
    assert counts["causal_2x512"][0] == 396_544
    assert abs(counts["prefix_4x640"][0] / counts["encoder_decoder_2+2"][0] - 1) < 0.01


def _tiny_run(folder, steps):
    seed_all(3)
    gen = torch.Generator().manual_seed(3)
    model = DecoderOnly(20, 16, 2, 24, 2, p=0.1, prefix=True)
    opt, sched = adam_with_warmup(model, d_model=16, warmup=10)
    loss_fn = smoothed_loss(PAD, 0.1)
    rng = random.Random(1)
    encoded = [([rng.randrange(3, 20) for _ in range(rng.randrange(1, 5))],
                [rng.randrange(3, 20) for _ in range(rng.randrange(1, 5))]) for _ in range(40)]
    next_batch = world.batches(encoded, gen, budget=24)

    def on_milestone(done, last, averaged, seconds):
        return {"step": done, "norm": float(sum(v.float().norm() for v in averaged.values()))}

    def step(batch):
        return world.train_step(model, opt, sched, loss_fn, *batch)

    return train_resumable(folder, model, opt, sched, step, next_batch, gen, steps, every=5, keep=2,
                           milestones=(10, 20, 30), on_milestone=on_milestone, save_every=10, progress=False)


def test_a_resumed_decoder_only_run_equals_an_unbroken_one(tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                # tiny tensors: one thread is several times faster
    try:
        _resume(tmp_path)
    finally:
        torch.set_num_threads(threads)


def _resume(tmp_path):
    rows, averaged, losses, _ = _tiny_run(tmp_path / "straight", 30)
    _tiny_run(tmp_path / "broken", 20)
    again = _tiny_run(tmp_path / "broken", 30)
    assert again[0] == rows and again[2] == losses
    assert all(torch.equal(averaged[k], again[1][k]) for k in averaged)
