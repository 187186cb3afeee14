"""helpers.tasks.reversal: the vocabulary, the batches and the padding after </s>; greedy decoding and exact
match of helpers.decoding on the reversal task."""

import torch
from torch import nn

from helpers.decoding import exact_matches, greedy_decode
from helpers.tasks.reversal import (
    BOS,
    EOS,
    ITOS,
    PAD,
    STOI,
    VOCAB,
    batch,
    decode_ids,
    encode_letters,
    pad_after_eos,
)


def test_vocabulary_of_the_lesson():
    assert (PAD, BOS, EOS, VOCAB) == (0, 1, 2, 13)
    assert encode_letters("c a b e d").tolist() == [[5, 3, 4, 7, 6]]
    assert [ITOS[i] for i in (1, 2, 3, 12)] == ["<s>", "</s>", "a", "j"]
    assert all(ITOS[STOI[t]] == t for t in ITOS)
    assert decode_ids([1, 6, 7, 4, 3, 5, 2]) == "<s> d e b a c </s>"


def rows(src, tgt_in, tgt_out):
    """The batch as Python lists without padding."""
    for s, i, o in zip(src.tolist(), tgt_in.tolist(), tgt_out.tolist(), strict=True):
        yield [t for t in s if t != PAD], [t for t in i if t != PAD], [t for t in o if t != PAD]


def test_batch_reverses_every_sequence_and_pads_at_the_end():
    src, tgt_in, tgt_out = batch(200, torch.Generator().manual_seed(0))
    assert src.shape[0] == tgt_in.shape[0] == tgt_out.shape[0] == 200
    assert tgt_in.shape[1] == tgt_out.shape[1] == src.shape[1] + 1
    lengths = set()
    for s, i, o in rows(src, tgt_in, tgt_out):
        lengths.add(len(s))
        assert all(3 <= t < VOCAB for t in s)
        assert len(set(s)) == len(s)                       # different letters by default
        assert i == [BOS] + s[::-1]                        # decoder input: shifted right
        assert o == s[::-1] + [EOS]                        # what each position must write
    assert lengths == {3, 4, 5, 6, 7, 8}
    for ids in (src, tgt_in, tgt_out):                     # padding only at the end of a row
        real = ids != PAD
        assert torch.equal(real, real.cummin(dim=1).values)
    assert (src != PAD).any(0).all()                       # no column of padding only


def test_batch_is_reproducible_and_can_repeat_letters():
    a = batch(64, torch.Generator().manual_seed(1234))
    b = batch(64, torch.Generator().manual_seed(1234))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    src, _, tgt_out = batch(300, torch.Generator().manual_seed(0), repeats=True)
    assert any(len(set(s)) < len(s) for s, _, _ in rows(src, src, tgt_out))
    assert all(o == s[::-1] + [EOS] for s, _, o in rows(src, src, tgt_out))


class Oracle(nn.Module):
    """Writes the reversal of its source, except on the rows listed in `wrong`."""

    def __init__(self, wrong=()):
        super().__init__()
        self.wrong = set(wrong)

    def memory_mask(self, src):
        return None

    def encode(self, src, mask=None):
        return src

    def decode(self, tgt, memory, src=None, memory_mask=None):
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], VOCAB)
        for row, s in enumerate(memory.tolist()):
            answer = [t for t in s if t != PAD][::-1] + [EOS] + [PAD] * len(s)
            if row in self.wrong:
                answer[0] = 3 if answer[0] != 3 else 4
            for pos in range(tgt.shape[1]):
                logits[row, pos, answer[pos]] = 1.0
        return logits


def test_exact_matches_count_whole_sequences():
    src, _, tgt_out = batch(50, torch.Generator().manual_seed(0))
    assert exact_matches(greedy_decode(Oracle(), src, use_cache=False), tgt_out).all()
    right = exact_matches(greedy_decode(Oracle(wrong=[3, 7]), src, use_cache=False), tgt_out)
    assert right.tolist() == [i not in (3, 7) for i in range(50)]


def test_one_length_batches_have_no_padding_and_vary_in_length():
    gen = torch.Generator().manual_seed(0)
    seen = set()
    for _ in range(40):
        src, tgt_in, tgt_out = batch(16, gen, one_length=True)
        assert (src != PAD).all() and (tgt_in != PAD).all() and (tgt_out != PAD).all()
        assert 3 <= src.shape[1] <= 8 and (tgt_out[:, -1] == EOS).all()
        seen.add(src.shape[1])
    assert seen == {3, 4, 5, 6, 7, 8}


def test_pad_after_eos_ends_each_row_at_its_first_end_token():
    ids = torch.tensor([[BOS, 6, 7, EOS, 5, EOS, 3],
                        [BOS, 4, 3, 5, 6, 7, EOS],
                        [BOS, EOS, EOS, 9, 9, 9, 9],
                        [BOS, 3, 4, 5, 6, 7, 8]])                 # never ends: unchanged
    assert pad_after_eos(ids).tolist() == [[BOS, 6, 7, EOS, PAD, PAD, PAD],
                                           [BOS, 4, 3, 5, 6, 7, EOS],
                                           [BOS, EOS, PAD, PAD, PAD, PAD, PAD],
                                           [BOS, 3, 4, 5, 6, 7, 8]]
    assert ids[0, 4] == 5                                            # the input is not changed


def test_greedy_decode_stops_when_every_row_is_done_and_pads_nothing():
    src, _, tgt_out = batch(20, torch.Generator().manual_seed(3))
    ys = greedy_decode(Oracle(), src, max_len=src.shape[1] + 50, use_cache=False)
    assert ys.shape == (20, tgt_out.shape[1] + 1)                   # stops at the longest answer
    assert torch.equal(pad_after_eos(ys)[:, 1:], tgt_out)            # the answers, padded
