"""helpers.decoding (beam search, the KV cache, the shipped checkpoints) and the checks of notebook 08."""

import math

import pytest
import torch

from helpers.checks import PASSED
from helpers.checks.decoding import (
    HYPOTHESES,
    check_beam_one,
    check_beam_step,
    check_cache_bytes,
    check_cached_attention,
    check_confident_greedy,
    check_penalised_scores,
    check_temperature_zero,
)
from helpers.decoding import (KVCache, beam_search, beam_search_all, beam_search_apart, beam_step,
                              decode_step, draw, exact_matches, greedy_decode, length_penalty, sample_decode,
                              sampling_probs, search, search_apart, sequence_log_prob, up_to_eos)
from helpers.tasks.reversal import CHECKPOINTS, PARTLY_TRAINED, TRAINED, load_tiny
from helpers.model import Transformer
from helpers.tasks.reversal import BOS, EOS, ITOS, PAD, STOI, VOCAB, batch, decode_ids
from printed import printed
from right_answers import answers

from tests.fuzz import assert_survives, wrong_functions, wrong_tensors

pytestmark = pytest.mark.cpu_sensitive   # runs models: re-run under another CPU kernel family

@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One thread, as the notebooks: the tiny model's many small operations gain nothing from two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- a toy "model": a table of next-token probabilities --------------------------------------

TOY = {
    (): {"a": 0.5, "b": 0.4, "</s>": 0.1},
    ("a",): {"a": 0.4, "b": 0.3, "</s>": 0.3},
    ("b",): {"a": 0.9, "b": 0.05, "</s>": 0.05},
    ("a", "a"): {"a": 0.2, "b": 0.2, "</s>": 0.6},
    ("b", "a"): {"a": 0.05, "b": 0.05, "</s>": 0.9},
}


def toy_next(ys, table=TOY, default=None):
    default = default or {"a": 0.25, "b": 0.25, "</s>": 0.5}
    out = torch.full((ys.shape[0], VOCAB), float("-inf"))
    for r, row in enumerate(ys.tolist()):
        prefix = tuple(ITOS[i] for i in row[1:] if i not in (PAD, EOS))
        for token, p in table.get(prefix, default).items():
            out[r, STOI[token]] = math.log(p)
    return out


def test_length_penalty_of_gnmt():
    assert length_penalty(1) == 1.0
    assert length_penalty(6, 0.6) == pytest.approx((11 / 6) ** 0.6)
    assert length_penalty(6, 0.0) == 1.0
    assert torch.allclose(length_penalty(torch.tensor([1.0, 7.0]), 1.0), torch.tensor([1.0, 2.0]))


def test_toy_beam_two_beats_greedy():
    greedy = search(toy_next, 1, 1, torch.tensor([3]))
    beam = search(toy_next, 1, 2, torch.tensor([3]))
    assert decode_ids(greedy["tokens"][0, 0]) == "<s> a a </s>"
    assert greedy["log_p"][0, 0].exp().item() == pytest.approx(0.5 * 0.4 * 0.6)
    assert decode_ids(beam["tokens"][0, 0]) == "<s> b a </s>"
    assert beam["log_p"][0, 0].exp().item() == pytest.approx(0.4 * 0.9 * 0.9)
    assert decode_ids(beam["tokens"][0, 1]) == "<s> a a </s>"
    assert beam["finished"].all() and beam["lengths"].tolist() == [[3, 3]]


def test_finished_hypotheses_are_kept_not_extended_and_padded():
    out = search(toy_next, 1, 3, torch.tensor([5]))
    texts = [decode_ids(t) for t in out["tokens"][0]]
    assert texts == ["<s> b a </s>", "<s> a </s> <pad>", "<s> a a </s>"]   # finished at step 2
    assert out["lengths"].tolist() == [[3, 2, 3]]
    assert out["log_p"][0, 1].exp().item() == pytest.approx(0.5 * 0.3)
    assert out["scores"][0].tolist() == sorted(out["scores"][0].tolist(), reverse=True)


def test_maximum_length_per_input_and_early_stop():
    calls = []

    def never_ends(ys):
        calls.append(ys.shape[1])
        out = toy_next(ys, table={}, default={"a": 0.6, "b": 0.4})
        return out

    out = search(never_ends, 2, 2, torch.tensor([3, 5]))
    assert out["lengths"].tolist() == [[3, 3], [5, 5]]                 # stopped by the maximum
    assert out["finished"].all()
    assert decode_ids(out["tokens"][0, 0]) == "<s> a a a <pad> <pad>"  # row 0 stopped at 3
    assert len(calls) == 5
    calls.clear()
    search(lambda ys: calls.append(1) or toy_next(ys), 1, 2, torch.tensor([60]))
    assert len(calls) == 3                                             # all finished after 3 steps


def test_beam_step_ranks_all_candidates_together():
    log_p = torch.tensor([[-0.5, -0.1]])
    lengths = torch.tensor([[3, 2]])
    finished = torch.tensor([[True, False]])
    nxt = torch.log(torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]]]))
    beam, token, new = beam_step(log_p, lengths, finished, nxt, alpha=0.6)
    assert beam.tolist() == [[1, 0]] and token.tolist() == [[0, 0]]
    assert torch.allclose(new, torch.tensor([[-0.1 + math.log(0.7), -0.5]]))


@pytest.fixture(scope="module")
def test_set():
    return batch(500, torch.Generator().manual_seed(1234))


@pytest.fixture(scope="module")
def models():
    return {name: load_tiny(CHECKPOINTS / name) for name in (PARTLY_TRAINED, TRAINED)}


def test_shipped_checkpoints_load_and_reach_notebook_05s_exact_match(test_set, models):
    src, _, tgt_out = test_set
    for name in (PARTLY_TRAINED, TRAINED):
        state = torch.load(CHECKPOINTS / name, weights_only=True)
        model = Transformer(vocab=VOCAB, d=64, h=4, d_ff=256, n_layers=2)
        assert model.load_state_dict(state, strict=True)
        assert sum(v.numel() for v in state.values()) == 234_304
        assert (CHECKPOINTS / name).stat().st_size < 1_100_000
    def exact_match(model):
        return exact_matches(greedy_decode(model, src), tgt_out).float().mean()

    assert exact_match(models[TRAINED]) >= 0.99
    assert 0.5 < exact_match(models[PARTLY_TRAINED]) < 0.95


def test_beam_one_is_greedy(test_set, models):
    src = test_set[0]
    torch.manual_seed(0)
    untrained = Transformer(VOCAB, 64, 4, 256, 2).eval()
    for model in (*models.values(), untrained):
        greedy = greedy_decode(model, src, max_len=12)
        beam = beam_search(model, src, k=1, max_len=12)
        assert [up_to_eos(g[1:]) for g in greedy.tolist()] == [up_to_eos(b[1:]) for b in beam.tolist()]


def test_beam_four_on_the_checkpoints(test_set, models):
    src, _, tgt_out = test_set
    for name, model in models.items():
        greedy = exact_matches(greedy_decode(model, src, max_len=src.shape[1] + 50), tgt_out)
        result = beam_search_all(model, src, k=4)
        beam = exact_matches(result["tokens"][:, 0], tgt_out)
        if name == TRAINED:
            assert greedy.all() and beam.all()
        else:
            assert beam.float().mean() >= greedy.float().mean()
        best = result["tokens"][:, 0]
        assert ((best[:, 1:] == EOS).sum(1) <= 1).all()                 # one </s>, then padding
        log_p, lengths = sequence_log_prob(model, src, best)
        assert torch.allclose(log_p, result["log_p"][:, 0], atol=1e-4)
        assert torch.equal(lengths, result["lengths"][:, 0])
        assert (result["lengths"][:, 0] <= (src != PAD).sum(1) + 50).all()


def test_beam_search_with_and_without_the_cache_agree(test_set, models):
    src = test_set[0][:64]
    model = models[PARTLY_TRAINED]
    a = beam_search_all(model, src, k=4, use_cache=True)
    b = beam_search_all(model, src, k=4, use_cache=False)
    assert torch.equal(a["tokens"], b["tokens"])
    assert torch.allclose(a["scores"], b["scores"], atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("steps", [1, 2, 5, 17, 40])
def test_cache_equals_recomputation(norm_first, steps, models):
    if norm_first:
        torch.manual_seed(3)
        model = Transformer(VOCAB, 32, 4, 64, 3, norm_first=True).eval()
    else:
        model = models[TRAINED]
    src = batch(6, torch.Generator().manual_seed(steps))[0]
    ys = torch.cat([torch.full((6, 1), BOS), torch.randint(3, VOCAB, (6, steps - 1))], dim=1)
    with torch.no_grad():
        mask = model.memory_mask(src)
        memory = model.encode(src, mask)
        full = model.decode(ys, memory, memory_mask=mask)                # every position at once
        cache = KVCache(model, memory, mask)
        cached = torch.stack([decode_step(model, ys[:, t], cache) for t in range(steps)], dim=1)
    assert (full.softmax(-1) - cached.softmax(-1)).abs().max() < 1e-5       # float32 rounding only
    assert (full - cached).abs().max() < 1e-5 * full.abs().max()
    n_layers, d = len(model.decoder_layers), model.d
    assert cache.self_attention_numbers() == 2 * n_layers * steps * d * 6  # 2 · N · n · d_model per row
    assert cache.keys[0].shape == (6, 4, steps, d // 4)


def test_greedy_with_and_without_cache(test_set, models):
    src = test_set[0][:100]
    for model in models.values():
        a = greedy_decode(model, src, use_cache=True)
        b = greedy_decode(model, src, use_cache=False)
        assert torch.equal(a, b)


# --- the checks ---------------------------------------------------------------------------------

def scores_with(f):
    return [f([math.log(p) for p in ps]) for ps in HYPOTHESES.values()]


def test_check_penalised_scores(capsys):
    def right(lg):
        return sum(lg) / ((5 + len(lg)) / 6) ** 0.6

    values = scores_with(right)
    assert printed(capsys, check_penalised_scores, values, 1).startswith(PASSED)
    as_tensor = torch.tensor([sum(math.log(p) for p in ps) for ps in HYPOTHESES.values()])
    lengths = torch.tensor([len(ps) for ps in HYPOTHESES.values()], dtype=torch.float)
    penalised = as_tensor / ((5 + lengths) / 6) ** 0.6
    assert printed(capsys, check_penalised_scores, penalised, 1).startswith(PASSED)
    mistakes = {
        "without the length penalty": lambda lg: sum(lg),
        "per token": lambda lg: sum(v / ((5 + i + 1) / 6) ** 0.6 for i, v in enumerate(lg)),
        "divided by the length": lambda lg: sum(lg) / len(lg),
        "computed (5 + |Y|)^0.6 / 6": lambda lg: sum(lg) / ((5 + len(lg)) ** 0.6 / 6),
        "multiplied by 0.6": lambda lg: sum(lg) / (0.6 * (5 + len(lg)) / 6),
        "only the 6": lambda lg: sum(lg) / ((5 + len(lg)) / 6 ** 0.6),
        "1/α": lambda lg: sum(lg) / ((5 + len(lg)) / 6) ** (1 / 0.6),
        "multiplied log P(Y) by lp": lambda lg: sum(lg) * ((5 + len(lg)) / 6) ** 0.6,
        "with |Y| one less": lambda lg: sum(lg) / ((4 + len(lg)) / 6) ** 0.6,
        "with |Y| one more": lambda lg: sum(lg) / ((6 + len(lg)) / 6) ** 0.6,
        "probability P(Y)": lambda lg: math.exp(sum(lg)) / ((5 + len(lg)) / 6) ** 0.6,
        "base 10": lambda lg: sum(lg) / math.log(10) / ((5 + len(lg)) / 6) ** 0.6,
        "base 2": lambda lg: sum(lg) / math.log(2) / ((5 + len(lg)) / 6) ** 0.6,
        "sign": lambda lg: -sum(lg) / ((5 + len(lg)) / 6) ** 0.6,
    }
    for words, f in mistakes.items():
        assert words in printed(capsys, check_penalised_scores, scores_with(f), 1), words
    assert "highest log P(Y)" in printed(capsys, check_penalised_scores, values, 2)
    assert "lowest score" in printed(capsys, check_penalised_scores, values, 3)
    assert printed(capsys, check_penalised_scores, values, None).startswith("Not answered yet")
    assert printed(capsys, check_penalised_scores, None, None).startswith("Not answered yet")
    assert "Hypothesis 1 is right" in printed(capsys, check_penalised_scores, [values[0], 0.0, 0.0], 1)
    assert "3 numbers" in printed(capsys, check_penalised_scores, values[:2], 1)


def loop_beam_step(log_p, lengths, finished, next_log_probs, alpha):
    """The right step written with Python loops: every candidate of a row in a list, sorted."""
    batch, k, vocab = next_log_probs.shape
    beams, tokens, news = [], [], []
    for b in range(batch):
        candidates = []
        for i in range(k):
            if finished[b, i]:
                lp = ((5 + lengths[b, i].item()) / 6) ** alpha
                candidates.append((log_p[b, i].item() / lp, i, PAD, log_p[b, i].item()))
            else:
                lp = ((5 + lengths[b, i].item() + 1) / 6) ** alpha
                for t in range(vocab):
                    total = log_p[b, i].item() + next_log_probs[b, i, t].item()
                    candidates.append((total / lp, i, t, total))
        best = sorted(candidates, reverse=True)[:k]
        beams.append([c[1] for c in best])
        tokens.append([c[2] for c in best])
        news.append([c[3] for c in best])
    return torch.tensor(beams), torch.tensor(tokens), torch.tensor(news)


def wrong_step(mistake):
    """A learner's step with one mistake, written independently of the checker."""

    def step(log_p, lengths, finished, nlp, alpha):
        batch, k, vocab = nlp.shape
        fin = finished[..., None]
        total = log_p[..., None] + nlp
        if mistake == "times":
            total = log_p[..., None] * nlp
        carried = torch.full_like(total, -math.inf)
        carried[..., PAD] = log_p
        new_len = (lengths + 1)[..., None].expand_as(total)
        if mistake != "extend finished":
            total = torch.where(fin, carried, total)
            new_len = torch.where(fin, lengths[..., None], new_len)
        if mistake == "drop finished":
            total = total.masked_fill(fin, -math.inf)
        if mistake == "same length":
            new_len = lengths[..., None].expand_as(total)
        lp = ((5 + new_len) / 6) ** alpha
        if mistake == "no penalty":
            lp = torch.ones_like(lp)
        if mistake == "alpha times":
            lp = alpha * (5 + new_len) / 6
        score = total / lp
        if mistake == "penalty per token":
            score = torch.where(fin, carried, log_p[..., None] + nlp / lp)
        if mistake == "per beam":
            token = score.argmax(-1)
            return torch.arange(k).repeat(batch, 1), token, total.gather(2, token[..., None])[..., 0]
        if mistake == "first beam":
            idx = score[:, 0].topk(k, dim=-1).indices
            return torch.zeros_like(idx), idx, total[:, 0].gather(1, idx)
        idx = score.flatten(1).topk(k, largest=mistake != "smallest").indices
        beam, token = idx // vocab, idx % vocab
        if mistake == "swapped":
            return token, beam, total.flatten(1).gather(1, idx)
        if mistake == "penalised scores":
            return beam, token, score.flatten(1).gather(1, idx)
        return beam, token, total.flatten(1).gather(1, idx)

    return step


def test_check_beam_step(capsys):
    assert printed(capsys, check_beam_step, loop_beam_step).startswith(PASSED)

    def reversed_order(*args):
        beam, token, new = loop_beam_step(*args)
        return beam.flip(1), token.flip(1), new.flip(1)

    assert printed(capsys, check_beam_step, reversed_order).startswith(PASSED)
    assert printed(capsys, check_beam_step, wrong_step(None)).startswith(PASSED)
    expected = {
        "extend finished": "Finished hypotheses are still extended",
        "per beam": "each beam's own best token",
        "times": "You multiplied the log-probabilities",
        "penalty per token": "not only the new token",
        "alpha times": "is a power, not a product",
        "no penalty": "without the length penalty",
        "same length": "beam's length + 1",
        "drop finished": "Finished hypotheses are missing",
        "first beam": "Only the first beam",
        "smallest": "the k worst",
        "swapped": "beam and token are swapped",
        "penalised scores": "holds their penalised scores",
    }
    for mistake, words in expected.items():
        assert words in printed(capsys, check_beam_step, wrong_step(mistake)), mistake

    def fixed_alpha(log_p, lengths, finished, nlp, alpha):
        return loop_beam_step(log_p, lengths, finished, nlp, 0.6)

    assert "α = 1.0" in printed(capsys, check_beam_step, fixed_alpha)

    def placeholder(log_p, lengths, finished, next_log_probs, alpha):
        """Returns (beam, token, new_log_p), each (batch, k)."""
        ...

    assert printed(capsys, check_beam_step, placeholder).startswith("Not answered yet")
    assert "three tensors" in printed(capsys, check_beam_step, lambda *a: a[0])


def test_questions(capsys):
    assert printed(capsys, check_beam_one, "a").startswith(PASSED)
    assert "same length" in printed(capsys, check_beam_one, "b")
    assert "the same one" in printed(capsys, check_beam_one, "c")
    assert printed(capsys, check_confident_greedy, "a").startswith(PASSED)
    assert "returns the one with the best score" in printed(capsys, check_confident_greedy, "b")
    assert "220 tokens" in printed(capsys, check_confident_greedy, "c")
    assert printed(capsys, check_cache_bytes, 4_915_200).startswith(PASSED)


def test_check_cache_bytes_names_each_slip_and_only_its_own(capsys):
    """Each slip of question 4 (the big model: 16 heads) computed on its own; each gets its hint and no
    other slip's."""
    N, h, d_k, n, b = 6, 16, 64, 100, 4
    slips = {
        "numbers, not bytes": (2 * N * h * d_k * n, "number of numbers"),
        "keys only": (N * h * d_k * n * b, "keys without the values"),
        "float16": (2 * N * h * d_k * n * 2, "2 bytes per number"),
        "the base model's 8 heads": (2 * N * 8 * d_k * n * b, "the base model's 8 heads"),
        "encoder layers too": (2 * (N + N) * h * d_k * n * b, "encoder's 6 layers"),
        "float64": (2 * N * h * d_k * n * 8, "float64"),
        "one head": (2 * N * d_k * n * b, "one head instead of 16"),
        "heads twice": (2 * N * 1024 * h * n * b, "16 heads counted twice"),
        "bits": (2 * N * h * d_k * n * b * 8, "bits instead of bytes"),
        "bits to bytes": (2 * N * h * d_k * n * b / 8, "turn bits into bytes"),
        "101 positions": (2 * N * h * d_k * (n + 1) * b, "counts 101 positions"),
        "99 positions": (2 * N * h * d_k * (n - 1) * b, "counts 99 positions"),
        "KiB": (2 * N * h * d_k * n * b / 1024, "kibibytes"),
        "kB": (2 * N * h * d_k * n * b / 1000, "kilobytes"),
        "MiB": (2 * N * h * d_k * n * b / 1024 ** 2, "mebibytes"),
        "MB": (2 * N * h * d_k * n * b / 1e6, "megabytes"),
    }
    lines = {name: printed(capsys, check_cache_bytes, value) for name, (value, _) in slips.items()}
    for name, (_, words) in slips.items():
        assert words in lines[name] and not lines[name].startswith(PASSED), (name, lines[name])
        others = [other for other, (_, w) in slips.items()
                  if w in lines[name] and lines[name] != lines[other]]
        assert not others, (name, others)
    assert "rounded" not in lines["101 positions"] and "exact" not in lines["101 positions"]
    assert "exact number" in printed(capsys, check_cache_bytes, 4_920_000)      # rounded: told so
    assert "overflowed float16" in printed(capsys, check_cache_bytes, torch.tensor(4_915_200.0).half())


def test_check_penalised_scores_by_hand_to_two_decimals_and_other_containers(capsys):
    """Scores worked by hand to 2 decimals, or held in a numpy array, are right answers."""
    import numpy as np

    assert printed(capsys, check_penalised_scores, [-0.52, -0.61, -0.95], 1).startswith(PASSED)
    assert printed(capsys, check_penalised_scores, np.array([-0.521, -0.607, -0.952]), 1).startswith(PASSED)
    line = printed(capsys, check_penalised_scores, [-0.952, -0.607, -0.521], 1)   # sorted, not in order
    assert "order" in line and not line.startswith(PASSED), line


def test_check_cache_bytes_names_both_readings_of_half_the_bytes(capsys):
    half = printed(capsys, check_cache_bytes, 2 * 6 * 100 * 1024 * 2)     # float16, or no factor 2
    assert "factor 2" in half and "2 bytes" in half and "8 heads" in half, half
    assert "kilobytes" in printed(capsys, check_cache_bytes, 4915.2)
    assert "exact" in printed(capsys, check_cache_bytes, 5_000_000)


def test_check_beam_step_ranking_probabilities_is_not_called_unpenalised(capsys):
    def probabilities(log_p, lengths, finished, nlp, alpha):
        batch, k, vocab = nlp.shape
        total = torch.where(finished[..., None], torch.full_like(nlp, -math.inf), log_p[..., None] + nlp)
        total[..., PAD] = torch.where(finished, log_p, total[..., PAD])
        length = torch.where(finished, lengths, lengths + 1)[..., None]
        idx = (total.exp() / ((5 + length) / 6) ** alpha).flatten(1).topk(k).indices
        return idx // vocab, idx % vocab, total.flatten(1).gather(1, idx)

    line = printed(capsys, check_beam_step, probabilities)
    assert "P(Y) itself" in line and not line.startswith(PASSED), line


# --- Your turn 3: the cached attention step -------------------------------------------------

def cached_by_matmul(q_new, k_new, v_new, k_cache, v_cache):
    """The right step: append on the positions axis, one query against every key, no mask."""
    k = torch.cat([k_cache, k_new], dim=2)
    v = torch.cat([v_cache, v_new], dim=2)
    weights = torch.softmax(q_new @ k.transpose(2, 3) / math.sqrt(k.shape[3]), dim=3)
    return weights @ v, k, v


def cached_by_loops(q_new, k_new, v_new, k_cache, v_cache):
    """The right step written another way: one sequence and one head at a time, with
    scaled_dot_product_attention, the cache grown with torch.concatenate on axis -2."""
    k = torch.concatenate((k_cache, k_new), axis=-2)
    v = torch.concatenate((v_cache, v_new), axis=-2)
    out = torch.empty_like(q_new)
    for b in range(q_new.shape[0]):
        for h in range(q_new.shape[1]):
            out[b, h] = torch.nn.functional.scaled_dot_product_attention(q_new[b, h], k[b, h], v[b, h])
    return out, k, v


def cached_with_aligned_mask(q_new, k_new, v_new, k_cache, v_cache):
    """Right too: a causal mask aligned on the new query's own position (the last) hides nothing."""
    k, v = torch.cat([k_cache, k_new], dim=-2), torch.cat([v_cache, v_new], dim=-2)
    t = k_cache.shape[2]
    hidden = torch.ones(t + 1, t + 1, dtype=torch.bool).triu(1)[-1:]     # the last row: nothing hidden
    scores = (q_new @ k.mT / q_new.shape[-1] ** 0.5).masked_fill(hidden, -math.inf)
    return scores.softmax(-1) @ v, k, v


def wrong_cached(mistake):
    """A learner's cached step with one mistake, written independently of the checker."""

    def step(q_new, k_new, v_new, k_cache, v_cache):
        axis = {"heads axis": 1, "d_k axis": -1, "batch axis": 0}.get(mistake, 2)
        if mistake in ("prepended", "prepended on heads"):
            axis = 1 if mistake == "prepended on heads" else 2
            k, v = torch.cat([k_new, k_cache], axis), torch.cat([v_new, v_cache], axis)
        else:
            k, v = torch.cat([k_cache, k_new], axis), torch.cat([v_cache, v_new], axis)
        keys, values = k, v
        if mistake == "values not appended, used":
            values = v_cache
        if mistake == "keys not appended, used":
            keys = k_cache
        if mistake == "without itself":
            keys, values = k_cache, v_cache
        if mistake == "mixed order":
            values = torch.cat([v_new, v_cache], 2)
        d_k = q_new.shape[-1]
        scale = {"sqrt d_model": math.sqrt(q_new.shape[1] * d_k), "unscaled": 1, "by d_k": d_k,
                 "times sqrt d_k": 1 / math.sqrt(d_k)}.get(mistake, math.sqrt(d_k))
        scores = torch.matmul(q_new, keys.transpose(-1, -2)) / scale
        if mistake == "naive causal mask":
            scores = scores + torch.full(scores.shape[-2:], -math.inf).triu(1)
        axis_softmax = {"softmax over the query": -2, "softmax over heads": 1,
                        "softmax over batch": 0}.get(mistake, -1)
        out = torch.matmul(torch.softmax(scores, dim=axis_softmax), values)
        if mistake == "only itself":
            out = v_new.clone()
        if mistake == "sdpa is_causal":
            out = torch.nn.functional.scaled_dot_product_attention(q_new, k, v, is_causal=True)
        if mistake == "old caches":
            return out, k_cache, v_cache
        if mistake == "values not appended, returned":
            return out, k, v_cache
        if mistake == "keys not appended, returned":
            return out, k_cache, v
        if mistake == "only the new position":
            return out, k_new, v_new
        if mistake == "caches swapped":
            return out, v, k
        if mistake == "in place, data":
            k_cache.data = k
            return out, k_cache, v
        if mistake == "in place, slot":
            v_cache[:, :, -1:] = v_new
            return out, k, v
        if mistake == "merged heads":
            return out.transpose(1, 2).flatten(2), k, v
        if mistake == "weights":
            return torch.softmax(scores, -1), k, v
        return out, k, v

    return step


def test_check_cached_attention_passes_the_right_step_written_three_ways(capsys):
    for right in (cached_by_matmul, cached_by_loops, cached_with_aligned_mask, wrong_cached(None)):
        assert printed(capsys, check_cached_attention, right).startswith(PASSED), right


@pytest.mark.parametrize("mistake, words", [
    ("heads axis", "wrong axis: torch.cat(..., dim=1) joins along the heads"),
    ("d_k axis", "wrong axis: torch.cat(..., dim=3) joins along d_k"),
    ("batch axis", "wrong axis: torch.cat(..., dim=0) joins along the batch"),
    ("prepended on heads", "wrong axis: torch.cat(..., dim=1)"),
    ("prepended", "are prepended"),
    ("old caches", "returned the old caches"),
    ("only the new position", "returned only the new position's key and value"),
    ("values not appended, returned", "keys are appended but not the values"),
    ("keys not appended, returned", "values are appended but not the keys"),
    ("values not appended, used", "keys are appended but not the values"),
    ("keys not appended, used", "values are appended but not the keys"),
    ("caches swapped", "two caches are swapped"),
    ("sqrt d_model", "√d_model"),
    ("unscaled", "not scaled"),
    ("by d_k", "divided the scores by d_k"),
    ("times sqrt d_k", "multiplied the scores by √d_k"),
    ("softmax over the query", "wrong axis, dim=-2, the single query"),
    ("softmax over heads", "wrong axis, the heads"),
    ("softmax over batch", "wrong axis, the batch"),
    ("naive causal mask", "No mask is needed"),
    ("sdpa is_causal", "is_causal=True"),
    ("without itself", "reads only the cached positions"),
    ("only itself", "reads only the new position"),
    ("mixed order", "different orders"),
    ("in place, data", "changed the caller's k_cache in place"),
    ("in place, slot", "changed the caller's v_cache in place"),
    ("merged heads", "the heads merged"),
    ("weights", "shape of the attention weights"),
])
def test_check_cached_attention_names_each_mistake(capsys, mistake, words):
    line = printed(capsys, check_cached_attention, wrong_cached(mistake))
    assert words in line and not line.startswith(PASSED), (mistake, line)


def test_check_cached_attention_tries_an_empty_cache_and_other_sizes(capsys):
    def wrong_when_empty(q_new, k_new, v_new, k_cache, v_cache):
        out, k, v = cached_by_matmul(q_new, k_new, v_new, k_cache, v_cache)
        return (out if k_cache.shape[2] else torch.zeros_like(out)), k, v

    line = printed(capsys, check_cached_attention, wrong_when_empty)
    assert "empty cache" in line and not line.startswith(PASSED), line

    def fixed_d_k(q_new, k_new, v_new, k_cache, v_cache):
        k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
        return (q_new @ k.mT / math.sqrt(8)).softmax(-1) @ v, k, v

    line = printed(capsys, check_cached_attention, fixed_d_k)
    assert "no fixed sizes" in line, line


def test_check_cached_attention_placeholder_and_garbage(capsys):
    def my_cached_attention(q_new, k_new, v_new, k_cache, v_cache):
        """(out, k_cache, v_cache): the new position's output and the caches one position longer."""
        # your code here
        ...

    assert printed(capsys, check_cached_attention, my_cached_attention).startswith("Not answered yet: ")
    assert "three tensors" in printed(capsys, check_cached_attention, lambda q, k, v, kc, vc: q)

    def forgot_return(q_new, k_new, v_new, k_cache, v_cache):
        k_cache = torch.cat([k_cache, k_new], dim=2)

    assert "returned None" in printed(capsys, check_cached_attention, forgot_return)


# --- new cached-step mistakes: the checker names them instead of failing on them ----------------

def cached_variant(kind):
    """A cached step with one slip, written independently of the checker."""

    def step(q_new, k_new, v_new, k_cache, v_cache):
        d_k = q_new.shape[-1]
        if kind == "new key pre-scaled":                 # scale the new key once, not the scores
            k = torch.cat([k_cache, k_new / math.sqrt(d_k)], dim=2)
            v = torch.cat([v_cache, v_new], dim=2)
            return torch.softmax(q_new @ k.transpose(-1, -2), -1) @ v, k, v
        k, v = torch.cat([k_cache, k_new], dim=-2), torch.cat([v_cache, v_new], dim=-2)
        out = torch.softmax(q_new @ k.transpose(-1, -2) / math.sqrt(d_k), -1) @ v
        if kind == "cache pre-scaled":
            return out, k / math.sqrt(d_k), v
        if kind == "k returned transposed":
            return out, k.transpose(2, 3), v
        if kind == "float16 caches":
            return out, k.half(), v.half()
        if kind == "bfloat16 output":
            return out.to(torch.bfloat16), k, v
        if kind == "values off by 0.01 %":
            return out, k, v * 1.0001
        if kind == "rounded caches":
            return out, k.round().long(), v
        if kind == "computed in bfloat16":
            low = [t.to(torch.bfloat16) for t in (q_new, k, v)]
            scores = low[0] @ low[1].transpose(-1, -2) / math.sqrt(d_k)
            return (torch.softmax(scores, -1) @ low[2]).float(), k, v
        return out, k, v

    return step


@pytest.mark.parametrize("kind, words", [
    ("new key pre-scaled", "new key is divided by √d_k before it joins the cache"),
    ("cache pre-scaled", "k_cache holds keys divided by √d_k"),
    ("k returned transposed", "k_cache holds the keys transposed"),
    ("float16 caches", "k_cache is float16"),
    ("bfloat16 output", "out is bfloat16"),
    ("values off by 0.01 %", "v_cache is close to the right one but not equal"),
    ("rounded caches", "k_cache holds whole numbers"),
    ("computed in bfloat16", "out is close to the full computation but off"),
])
def test_check_cached_attention_names_caches_it_did_not_recognise(capsys, kind, words):
    line = printed(capsys, check_cached_attention, cached_variant(kind))
    assert words in line and not line.startswith(("Could not", PASSED)), (kind, line)
    for other, other_words in [("new key pre-scaled", "before it joins"),
                               ("cache pre-scaled", "holds keys divided"),
                               ("k returned transposed", "transposed"), ("values off by 0.01 %", "close to")]:
        if other != kind and not (kind == "computed in bfloat16" and other == "values off by 0.01 %"):
            assert other_words not in line, (kind, other, line)


def test_check_cached_attention_and_beam_step_refuse_the_reference(capsys):
    import helpers.decoding as decoding

    def calls_module(log_p, lengths, finished, nlp, alpha):
        return decoding.beam_step(log_p, lengths, finished, nlp, alpha)

    namespace = {"beam_step": beam_step, "search": search}
    exec("def by_name(log_p, lengths, finished, nlp, alpha):\n"
         "    return beam_step(log_p, lengths, finished, nlp, alpha)\n", namespace)
    for fn in (calls_module, namespace["by_name"]):
        line = printed(capsys, check_beam_step, fn)
        assert "calls helpers.decoding.beam_step, the very reference" in line, line
    assert printed(capsys, check_beam_step, loop_beam_step).startswith(PASSED)    # its own code is fine

    def through_the_cache(q_new, k_new, v_new, k_cache, v_cache):
        decoding.cached_self_attention(None, q_new, None, 0)
        return cached_by_matmul(q_new, k_new, v_new, k_cache, v_cache)

    line = printed(capsys, check_cached_attention, through_the_cache)
    assert "calls helpers.decoding.cached_self_attention, the very reference" in line, line
    assert printed(capsys, check_cached_attention, cached_by_loops).startswith(PASSED)   # torch's sdpa: fine
    assert decoding.beam_step is beam_step and namespace["beam_step"] is beam_step   # unblocked after


def test_check_beam_step_names_a_half_precision_log_p(capsys):
    def half(log_p, lengths, finished, nlp, alpha):
        beam, token, new = loop_beam_step(log_p, lengths, finished, nlp, alpha)
        return beam, token, new.half()

    line = printed(capsys, check_beam_step, half)
    assert "new_log_p is float16" in line, line


# --- fuzz: perturbed answers of every checker, none of them makes a checker fail on its own code ---

def replacing(fn, position, label):
    """fn with item `position` of its returned tuple replaced by one of wrong_tensors' answers."""
    def wrong(*args):
        out = list(fn(*args))
        out[position] = dict(wrong_tensors(out[position]))[label]
        return tuple(out)
    return wrong


LABELS = [label for label, _ in wrong_tensors(torch.zeros(2, 3, 4))]


@pytest.mark.parametrize("check, right", [(check_beam_step, loop_beam_step),
                                          (check_cached_attention, cached_by_matmul)])
def test_fuzz_function_checkers(capsys, check, right):
    seen = set()
    for position in range(3):
        for label in LABELS:
            seen.add(assert_survives(capsys, check, replacing(right, position, label)))
    for _, wrong in wrong_functions(right):
        seen.add(assert_survives(capsys, check, wrong))
    assert len(seen) > 20                      # the lines name different things, not one catch-all


def test_fuzz_penalised_scores(capsys):
    right = torch.tensor([sum(math.log(p) for p in ps) / length_penalty(len(ps))
                          for ps in HYPOTHESES.values()])
    for _, wrong in wrong_tensors(right):
        assert_survives(capsys, check_penalised_scores, wrong, 1)
    for _, wrong in [*wrong_tensors(torch.tensor(1.0)), ("text", "one"), ("a list", [1]), ("2.5", 2.5),
                     ("answer text", "d e </s>"), ("nan", float("nan"))]:
        assert_survives(capsys, check_penalised_scores, right.tolist(), wrong)


@pytest.mark.parametrize("check, right", [(check_beam_one, "a"), (check_temperature_zero, "a"),
                                          (check_confident_greedy, "a"), (check_cache_bytes, 4_915_200.0)])
def test_fuzz_questions(capsys, check, right):
    odd = [("A", "A"), ("spaces", "  a "), ("quoted", "'a'"), ("d", "d"), ("set", {"a"}), ("list", ["a"]),
           ("True", True), ("int", 3), ("bytes", b"a"), ("dict", {"a": 1})]
    for _, wrong in [*wrong_tensors(torch.tensor(right if isinstance(right, float) else 1.0)), *odd]:
        assert_survives(capsys, check, wrong)


# --- tensor2tensor's variant: finished hypotheses apart from k alive ones --------------------------

def test_search_apart_on_the_toy():
    """Beam 2 finds b a </s> either way; with one beam, keeping the finished apart is no longer
    greedy: "a </s>", finished at step 2 while the one alive beam went on, stays the best."""
    for k in (2, 3):
        kept = search(toy_next, 1, k, torch.tensor([5]))
        apart = search_apart(toy_next, 1, k, torch.tensor([5]))
        assert decode_ids(apart["tokens"][0, 0]) == decode_ids(kept["tokens"][0, 0]) == "<s> b a </s>"
        assert apart["scores"][0].tolist() == sorted(apart["scores"][0].tolist(), reverse=True)
    table = {**TOY, ("a",): {"a": 0.4, "b": 0.25, "</s>": 0.35}}         # no tie at step 2

    def next_token(ys):
        return toy_next(ys, table)

    greedy = search(next_token, 1, 1, torch.tensor([5]))
    assert decode_ids(greedy["tokens"][0, 0]) == "<s> a a </s>"
    one = search_apart(next_token, 1, 1, torch.tensor([5]))
    assert decode_ids(up_to_eos(one["tokens"][0, 0, 1:])) == "a </s>"
    assert one["log_p"][0, 0].exp().item() == pytest.approx(0.5 * 0.35)
    assert one["scores"][0, 0] > greedy["scores"][0, 0]


def test_search_apart_on_the_checkpoints(test_set, models):
    src, _, tgt_out = test_set
    src, tgt_out = src[:100], tgt_out[:100]
    for model in models.values():
        apart = beam_search_apart(model, src, k=4)
        kept = beam_search_all(model, src, k=4)
        best = apart["tokens"][:, 0]
        same = [up_to_eos(a[1:]) == up_to_eos(b[1:])
                for a, b in zip(best.tolist(), kept["tokens"][:, 0].tolist(), strict=True)]
        assert all(same)                                  # on this task: the same answers (notebook 08)
        log_p, lengths = sequence_log_prob(model, src, best)
        assert torch.allclose(log_p, apart["log_p"][:, 0], atol=1e-4)
        assert torch.equal(lengths, apart["lengths"][:, 0])
        assert apart["finished"][:, 0].all() and ((best[:, 1:] == EOS).sum(1) == 1).all()
        uncached = beam_search_apart(model, src, k=4, use_cache=False)
        assert torch.equal(uncached["tokens"], apart["tokens"])
        assert exact_matches(best, tgt_out).float().mean() >= 0.5


# --- sampling -----------------------------------------------------------------------------------

def test_sampling_probs_by_hand():
    z = torch.tensor([2.0, 1.0, 0.0])
    e = [math.exp(v) for v in (2, 1, 0)]
    assert torch.allclose(sampling_probs(z, 1.0), torch.tensor([v / sum(e) for v in e]))
    e2 = [math.exp(v / 2) for v in (2, 1, 0)]
    assert torch.allclose(sampling_probs(z, 2.0), torch.tensor([v / sum(e2) for v in e2]))
    assert torch.allclose(sampling_probs(z, 1.0, top_k=2), torch.tensor([e[0], e[1], 0]) / (e[0] + e[1]))
    assert torch.allclose(sampling_probs(z[None].expand(4, 3), 0.5).sum(-1), torch.ones(4))


def test_draw_follows_the_probabilities_and_never_picks_an_impossible_token():
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    tokens = draw(probs.expand(200_000, 5), torch.Generator().manual_seed(1))
    freq = torch.bincount(tokens, minlength=5) / len(tokens)
    assert (freq - probs).abs().max() < 0.005 and freq[1] == 0 and freq[4] == 0
    again = draw(probs.expand(200_000, 5), torch.Generator().manual_seed(1))
    assert torch.equal(tokens, again)                                     # a seeded generator repeats
    one_hot = torch.zeros(3, 5)
    one_hot[:, 3] = 1.0
    assert draw(one_hot, torch.Generator().manual_seed(0)).tolist() == [3, 3, 3]


def test_sample_decode_low_temperature_and_top_1_are_greedy(test_set, models):
    src = test_set[0][:100]
    for model in models.values():
        greedy = [up_to_eos(g[1:]) for g in greedy_decode(model, src).tolist()]
        for t, k in ((1e-4, None), (1.0, 1)):
            ys = sample_decode(model, src, temperature=t, top_k=k, generator=torch.Generator().manual_seed(0))
            assert [up_to_eos(y[1:]) for y in ys.tolist()] == greedy, (t, k)


def test_sample_decode_is_reproducible_and_temperature_costs_exact_match(test_set, models):
    src, _, tgt_out = test_set
    model = models[TRAINED]

    def run(t, k=None, seed=0):
        generator = torch.Generator().manual_seed(seed)
        return sample_decode(model, src, temperature=t, top_k=k, generator=generator)

    assert torch.equal(run(1.0), run(1.0))
    assert not torch.equal(run(1.0, seed=0), run(1.0, seed=1))
    match = {(t, k): exact_matches(run(t, k), tgt_out).float().mean().item()
             for t, k in ((0.5, None), (1.0, None), (2.0, None), (1.0, 3), (2.0, 3))}
    assert match[0.5, None] > match[1.0, 3] > match[1.0, None] > match[2.0, 3] > match[2.0, None]
    assert 0.4 < match[1.0, None] < 0.8 and match[2.0, None] < 0.1


def test_check_temperature_zero(capsys):
    assert printed(capsys, check_temperature_zero, "a").startswith(PASSED)
    assert "other end, T → ∞" in printed(capsys, check_temperature_zero, "b")
    assert "not their probabilities" in printed(capsys, check_temperature_zero, " C ")
    assert "keeps no alternative hypotheses" in printed(capsys, check_temperature_zero, "d")
    assert printed(capsys, check_temperature_zero, None).startswith("Not answered yet")
    for _, wrong in [*wrong_tensors(torch.tensor(1.0)), ("e", "e"), ("number", 0)]:
        assert_survives(capsys, check_temperature_zero, wrong)


# --- Issue 39: the inputs' types and dtypes, the order of the returned tensors, Your turn 1's answer

def beam_step_in(convert):
    """A right step of one's own (beam_step itself is a reference, under any name), converted."""
    right = answers("check_beam_step")[0]

    def step(log_p, lengths, finished, next_log_probs, alpha):
        return tuple(convert(t) for t in right(log_p, lengths, finished, next_log_probs, alpha))
    return step


@pytest.mark.parametrize("convert, words", [
    (lambda t: t.numpy(), "got numpy.ndarray"),
    (lambda t: t.tolist(), "got list"),
    (lambda t: t.double() if t.is_floating_point() else t, "new_log_p is float64"),
    (lambda t: t.float(), "beam holds whole numbers as float32"),
], ids=["numpy", "lists", "float64 log P", "float indices"])
def test_check_beam_step_wants_torch_tensors_of_the_inputs_dtype(convert, words, capsys):
    step = beam_step_in(convert)
    namespace = {"beam_step": beam_step, "convert": convert}
    exec("def mine(*args):\n    return step(*args)\n", {**namespace, "step": step}, namespace)
    line = printed(capsys, check_beam_step, namespace["mine"])
    assert words in line and not line.startswith(PASSED), line


def test_check_cached_attention_refuses_a_float64_output(capsys):
    def in_float64(q_new, k_new, v_new, k_cache, v_cache):
        out, k, v = cached_by_matmul(q_new.double(), k_new.double(), v_new.double(), k_cache.double(),
                                     v_cache.double())
        return out, k.float(), v.float()
    line = printed(capsys, check_cached_attention, in_float64)
    assert "Out is float64, the inputs are float32" in line, line


@pytest.mark.parametrize("order", [(1, 2, 0), (2, 1, 0), (1, 0, 2)])
def test_check_cached_attention_names_the_order_of_the_three_tensors(order, capsys):
    def reordered(*args):
        three = cached_by_matmul(*args)
        return tuple(three[i] for i in order)
    line = printed(capsys, check_cached_attention, reordered)
    assert "in another order" in line and "return (out, k_cache, v_cache)" in line, line


def test_check_penalised_scores_keeps_best_out_of_its_source():
    import inspect
    source = inspect.getsource(check_penalised_scores.__wrapped__)
    assert "pick == 2" not in source and "pick == 3" not in source and "0.521" not in source
