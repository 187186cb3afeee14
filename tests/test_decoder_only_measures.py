"""Notebook 12's measures (helpers.tasks.decoder_only, helpers.counting, helpers.decoder_only):
FLOPs per pair against torch's FLOP counter, the KV caches' bytes, decoding times, per-sentence
losses, the attention share to the source, the averaged weights and --measure's bookkeeping.
Fresh models and fake run folders: no trained state is needed (the last test uses one if present)."""

import json
import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from helpers import counting, seed_all
from helpers.decoder_only import DecoderOnly, attention_weights, source_share
from helpers.model import keep_attention_weights
from helpers.tasks import decoder_only as world
from helpers.tasks import tatoeba
from helpers.vocabulary import BOS, PAD

PAIRS = [([5, 6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16]), ([20, 21], [22, 23, 24, 25, 26, 27, 28])]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _counted(fn):
    with FlopCounterMode(display=False) as counter:
        fn()
    return sum(counter.get_flop_counts()["Global"].values())


@pytest.mark.parametrize("kind", world.KINDS)
@pytest.mark.parametrize("pair", PAIRS)
def test_flops_per_pair_equal_torchs_flop_counter_on_a_forward_pass(kind, pair):
    # keep_attention_weights: the attention step by step (Q Kᵀ and weights × V as matmuls), as 06
    # does; the counter sees no product inside the fused scaled_dot_product_attention on the CPU.
    # The count is exact: both count 2 FLOPs per multiply-add of every matrix product.
    seed_all(0)
    model = world.model_of(kind, n_vocab=60)
    keep_attention_weights(model)
    source, target = pair
    if kind == world.ENCODER_DECODER:
        src, tgt_in, _ = tatoeba.tensors([pair])
        counted = _counted(lambda: model(src, tgt_in))
    else:                                   # train_step's forward: the output layer where scored
        ids, src_lengths, labels = world.join([pair], world.VARIANTS[kind]["source_loss"])
        scored = labels != PAD
        counted = _counted(lambda: model.stack(ids, src_lengths)[scored] @ model.embedding.weight.T)
    assert counted == world.flops_per_pair(kind, len(source), len(target), n_vocab=60)


def test_the_flop_formulas_by_hand():
    d, d_ff, v = 4, 8, 10
    # one block on n = 3 positions: 4 projections 2·3·4·4 each, products 4·3·3·4, FFN 2·2·3·4·8
    assert counting.block_flops(3, d, d_ff) == 4 * 96 + 144 + 384
    # source 1, target 1: the sequence s, <s>, t (3 positions), two scored positions
    assert counting.decoder_only_flops(1, 1, d, d_ff, 1, v) == 4 * 96 + 144 + 384 + 2 * 2 * d * v
    assert counting.decoder_only_flops(1, 1, d, d_ff, 1, v, scored=3) == 4 * 96 + 144 + 384 + 2 * 3 * d * v
    m, s = 2, 1                             # decoder inputs <s>, t; one memory position
    cross = 2 * 2 * m * d * d + 2 * 2 * s * d * d + 4 * m * s * d
    expected = counting.block_flops(s, d, d_ff) + counting.block_flops(m, d, d_ff) + cross + 2 * m * d * v
    assert counting.encoder_decoder_flops(1, 1, d, d_ff, 1, v) == expected


def test_the_equal_parameter_models_cost_more_per_pair_the_equal_compute_ones_about_the_same():
    kinds = ("encoder_decoder", "prefix_4x640", "prefix_2x512")
    ed, big, small = (world.flops_per_pair(k, 6, 7) for k in kinds)
    assert 1.6 < big / ed < 1.9 and 0.8 < small / ed < 1.0
    assert world.flops_per_pair("causal_srcloss_4x640", 6, 7) > big       # 6 more scored positions


def test_the_vocabulary_size_is_the_shipped_pieces():
    assert world.N_VOCAB == len(tatoeba.pieces_for().vocab)


SRC = torch.tensor([[5, 6, 7, 8], [9, 10, PAD, PAD], [11, PAD, PAD, PAD]])


@pytest.mark.parametrize("kind", world.KINDS)
def test_the_caches_bytes_are_the_formulas(kind):
    seed_all(0)
    model = world.model_of(kind, n_vocab=30)
    bytes_ = world.cache_bytes(model, SRC, steps=3)
    layers = tatoeba.SIZE["n_layers"] if kind == world.ENCODER_DECODER else world.VARIANTS[kind]["n_layers"]
    per_position = 2 * layers * tatoeba.SIZE["d"] * 4          # keys and values, every layer, float32
    assert bytes_["formula_per_position"] == per_position == bytes_["per_piece"]
    positions = 4 if kind == world.ENCODER_DECODER else 5      # the source; the source and <s>
    assert bytes_["once_positions"] == positions and bytes_["once"] == per_position * positions


def test_decoding_times_run_both_kinds():
    seed_all(0)
    pieces = _FakePieces()
    models = {"ed": world.model_of("encoder_decoder", n_vocab=30),
              "do": world.model_of("causal_2x512", n_vocab=30)}
    times = world.decoding_times(models, ["a b", "c"], pieces, repeats=1, extra=3)
    assert set(times) == {"ed", "do"} and all(t[h] > 0 for t in times.values() for h in ("greedy", "beam"))


class _FakePieces:
    """Words as ids 3 + their length (a vocabulary of 30): enough for encode_pairs and tensors."""

    def ids(self, text):
        return [3 + len(word) for word in text.split()]


def test_the_per_sentence_losses_give_the_perplexity():
    seed_all(0)
    model = world.model_of("prefix_2x512", n_vocab=30)
    pairs = [tatoeba.Pair("a bb", "ccc d"), tatoeba.Pair("a bb", "ee"), tatoeba.Pair("fff", "g hh iii")]
    losses = world.sentence_losses(model, pairs, _FakePieces(), chunk=2)
    assert [n for _, n in losses] == [3 + 2, 4]                 # per English sentence, </s> counted
    encoded = tatoeba.encode_pairs(pairs, _FakePieces())
    expected = world.perplexity(model, encoded)
    total, tokens = sum(s for s, _ in losses), sum(n for _, n in losses)
    assert math.exp(total / tokens) == pytest.approx(expected, rel=1e-6)


def test_joined_pairs_take_each_sentence_once_in_order():
    pairs = [tatoeba.Pair("A.", "a1"), tatoeba.Pair("A.", "a2"), tatoeba.Pair("B.", "b"),
             tatoeba.Pair("C.", "c"), tatoeba.Pair("D.", "d"), tatoeba.Pair("E.", "e")]
    assert world.joined_pairs(pairs, 2) == [("A. B.", "a1 b"), ("C. D.", "c d")]
    assert world.joined_pairs(pairs, 1)[0] == ("A.", "a1") and len(world.joined_pairs(pairs, 4)) == 1


def _tiny(prefix):
    seed_all(1)
    return DecoderOnly(30, 16, 2, 24, 3, p=0.1, prefix=prefix).eval()


@pytest.mark.parametrize("prefix", [True, False])
def test_the_weights_are_the_models_own(prefix):
    model = _tiny(prefix)
    ids = torch.tensor([[5, 6, 7, BOS, 8, 9], [10, BOS, 11, PAD, PAD, PAD]])
    src_lengths = torch.tensor([3, 1])
    weights, out = attention_weights(model, ids, src_lengths)
    assert torch.allclose(out, model.stack(ids, src_lengths), atol=1e-5)     # the fused forward's output
    hidden = model.hidden_mask(ids, src_lengths)[:, None]
    for w in weights:
        assert w.shape == (2, 2, 6, 6) and torch.all(w.masked_select(hidden) == 0)
        assert torch.allclose(w.sum(-1), torch.ones(2, 2, 6), atol=1e-6)
    assert not any(m.keep_weights for m in model.modules() if hasattr(m, "keep_weights"))


ENCODED = [([5, 6, 7], [8, 9]), ([10], [11, 12, 13, 14]), ([15, 16], [17])]


@pytest.mark.parametrize("prefix", [True, False])
def test_the_source_share_by_hand(prefix):
    model = _tiny(prefix)
    share = source_share(model, ENCODED, chunk=2)
    assert share["pairs"] == [3, 3, 2, 1, 1]                   # positions t = 0 .. len(target)
    uniform_t0 = (3 / 4 + 1 / 2 + 2 / 3) / 3                    # src_len / (src_len + 1) at the separator
    assert share["uniform"][0] == pytest.approx(uniform_t0)
    assert share["uniform"][4] == pytest.approx(1 / 6)          # only the second pair: 1 / (1 + 1 + 4)
    ids = torch.tensor([[10, BOS, 11, 12, 13, 14]])
    weights, _ = attention_weights(model, ids, torch.tensor([1]))
    for block, w in enumerate(weights):                         # position 4: the second pair alone
        assert share["observed"][block][4] == pytest.approx(float(w[0, :, 1 + 4, 0].mean()), abs=1e-6)
    for block in range(3):
        assert all(0 <= v <= 1 for v in share["observed"][block])


def test_queries_of_zeros_read_every_visible_key_alike_the_uniform_share():
    model = _tiny(prefix=True)
    with torch.no_grad():
        for layer in model.layers:                              # W_Q = 0, b_Q = 0: every score 0
            layer.self_attn.in_proj_weight[:16] = 0
            layer.self_attn.in_proj_bias[:16] = 0
    share = source_share(model, ENCODED)
    for row in share["observed"]:
        assert row == pytest.approx(share["uniform"], abs=1e-6)


def _fake_runs(tmp_path):
    """A finished variant run (5 kept checkpoints at 2,000 steps) and an encoder–decoder one."""
    states, ed_states = tmp_path / "do", tmp_path / "ed"
    kept = [{"w": torch.full((2,), float(i))} for i in range(5)]
    (states / "prefix_2x512_s0").mkdir(parents=True)
    torch.save({"done": 2000, "kept": kept}, states / "prefix_2x512_s0" / "state.pt")
    (states / "prefix_2x512_s0" / "done").write_text("done\n")
    (states / "causal_2x512_s0").mkdir()
    (ed_states / "recipe_s1").mkdir(parents=True)
    saved = {"w": torch.tensor([0.5, 1.25], dtype=torch.float16)}
    torch.save(saved, ed_states / "recipe_s1" / "averaged_2000.pt")
    (ed_states / "recipe_s1" / "done").write_text("done\n")
    return states, ed_states


def test_averaged_state_of_a_finished_run_only(tmp_path):
    states, ed_states = _fake_runs(tmp_path)
    mean = world.averaged_state("prefix_2x512_s0", states, ed_states)
    assert torch.equal(mean["w"], torch.tensor([2.0, 2.0]))
    ed = world.averaged_state("encoder_decoder_s1", states, ed_states)
    assert ed["w"].dtype == torch.float32 and ed["w"].tolist() == [0.5, 1.25]
    with pytest.raises(FileNotFoundError):
        world.averaged_state("causal_2x512_s0", states, ed_states)     # no done file
    with pytest.raises(ValueError):
        world.kind_of("transformer_s0")
    assert world.kind_of("causal_srcloss_4x640_s2") == ("causal_srcloss_4x640", 2)


def test_measure_skips_runs_measured_or_unfinished(tmp_path, capsys):
    states, ed_states = _fake_runs(tmp_path)
    out = tmp_path / "measures.json"
    out.write_text(json.dumps({"runs": {"prefix_2x512_s0": {"kind": "prefix_2x512"}}}))
    data = world.measure(["prefix_2x512_s0", "causal_2x512_s0", "encoder_decoder_s2"], out=out,
                         states=states, ed_states=ed_states)
    said = capsys.readouterr().out
    assert "prefix_2x512_s0: measured already" in said
    assert "causal_2x512_s0: not finished" in said and "encoder_decoder_s2: not finished" in said
    assert list(data["runs"]) == ["prefix_2x512_s0"]


@pytest.mark.skipif(not (world.RUN_STATES / "prefix_2x512_s0" / "done").exists(),
                    reason="no trained state here")
def test_the_averaged_state_is_the_saved_averaged_model():
    mean = world.averaged_state("prefix_2x512_s0")
    saved = torch.load(world.RUN_STATES / "prefix_2x512_s0" / "averaged_2000.pt", weights_only=True)
    assert all(torch.equal(mean[k].half(), saved[k]) for k in saved)
