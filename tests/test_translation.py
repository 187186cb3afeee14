"""Notebook 09: the shipped data, tokens and vocabulary, the batches, BLEU against sacrebleu, and the
checkers (every named mistake, written here independently, gets its hint; perturbed answers never
break a checker)."""

import math
import random
from collections import Counter

import pytest
import sacrebleu
import torch

from fuzz import assert_survives, wrong_functions
from helpers import bleu
from helpers.tasks import numbers
from helpers.checks import PASSED
from helpers.checks.translation import (check_above_question, check_below_inputs, check_bleu,
                                        check_bleu_meaning, check_early_stop_bleu, check_make_batch,
                                        check_short_bleu, check_tokenised_bleu)
from helpers.tasks.reversal import BOS, EOS, PAD
from printed import printed

VOCAB = numbers.vocabulary()


# --- the data ------------------------------------------------------------------------------------

def test_the_data_file_is_what_the_command_makes(tmp_path):
    path = numbers.write_data(tmp_path / "numbers.tsv")
    assert path.read_bytes() == numbers.DATA.read_bytes(), \
        "run: python -m helpers.tasks.numbers --make-data"


def test_the_data_file_is_small():
    assert numbers.DATA.stat().st_size < 3_000_000


def test_the_split_is_by_number_and_num2words_writes_every_row():
    from num2words import num2words
    rows = numbers.read_rows()
    train = [p.number for s, p in rows if s == "train"]
    test = [p.number for s, p in rows if s == "test"]
    assert len(set(train)) == len(train) and len(set(test)) == len(test)
    assert not set(train) & set(test)
    assert set(numbers.SHOWN) <= set(test)
    assert all(1 <= n <= 999_999 for n in train + test)
    for _, p in random.Random(0).sample(rows, 300):
        assert (p.english, p.french) == (num2words(p.number, lang="en"), num2words(p.number, lang="fr"))
    below = [n for n in train if n < numbers.BELOW]
    assert 10_000 < len(below) < len(train)


def test_tokens_join_back_to_every_text():
    for _, p in numbers.read_rows():
        for text in (p.english, p.french):
            assert numbers.detokenize(numbers.tokenize(text)) == text
    assert numbers.tokenize("two hundred thousand, ninety-one") == [
        "two", "hundred", "thousand", ",", "ninety", "-", "one"]
    tokens = ["quatre", "-", "vingt", "-", "dix", "-", "sept"]
    assert numbers.detokenize(tokens) == "quatre-vingt-dix-sept"


def test_one_vocabulary_with_the_decoders_special_ids():
    assert VOCAB.itos[:3] == ["<pad>", "<s>", "</s>"]
    assert (VOCAB.stoi["<pad>"], VOCAB.stoi["<s>"], VOCAB.stoi["</s>"]) == (PAD, BOS, EOS)
    assert len(VOCAB) == 60
    tokens = {t for _, p in numbers.read_rows() for text in (p.english, p.french)
              for t in numbers.tokenize(text)}
    assert tokens == set(VOCAB.itos[3:])
    assert VOCAB.decode([BOS, *VOCAB.encode(["deux", "cents"]), EOS, PAD]) == ["deux", "cents"]
    below = numbers.vocabulary(numbers.load_pairs("train", below=numbers.BELOW))
    assert below.itos == VOCAB.itos        # every token occurs below 100,000


def test_make_batch_pads_at_the_end_and_shifts_the_target():
    pairs = [(["seventy", "-", "one"], ["soixante", "et", "onze"]), (["six"], ["six"])]
    src, tgt_in, tgt_out = numbers.make_batch(pairs, VOCAB)
    six = VOCAB.stoi["six"]
    assert src.dtype == torch.long and src.shape == (2, 3) and tgt_in.shape == tgt_out.shape == (2, 4)
    assert src[1].tolist() == [six, PAD, PAD]
    assert tgt_in[1].tolist() == [BOS, six, PAD, PAD] and tgt_out[1].tolist() == [six, EOS, PAD, PAD]
    assert tgt_in[0, 1:].tolist() == tgt_out[0, :-1].tolist()


def test_training_batches_hold_one_number_of_digits_and_little_padding():
    pairs = numbers.load_pairs("train")
    number_of = {tuple(VOCAB.encode(numbers.tokenize(p.english))): p.number for p in pairs}
    next_batch = numbers.training_batches(pairs, VOCAB, 64, torch.Generator().manual_seed(0))
    sizes = Counter()
    for _ in range(60):
        src, tgt_in, tgt_out = next_batch()
        assert src.shape[0] == 64 and tgt_in.shape == tgt_out.shape
        assert (src != PAD).sum(1).max() == src.shape[1] and (tgt_out != PAD).sum(1).max() == tgt_out.shape[1]
        values = [number_of[tuple(row[row != PAD].tolist())] for row in src]
        assert len({numbers.digits(n) for n in values}) == 1
        sizes[numbers.digits(values[0])] += 1
    assert set(sizes) == set(range(1, 7)) and sizes[6] > sizes[1]


def test_rule_of_mistake_names_what_each_typical_mistake_gets_wrong():
    t = numbers.tokenize
    rule = numbers.rule_of_mistake
    s_rule, et, base_20, loop, word, group = numbers.RULES
    assert numbers.IRREGULAR == [s_rule, et, base_20]
    cases = [
        (200, "deux cents", "deux cent deux", s_rule),
        (80_001, "quatre-vingt mille un", "quatre-vingts mille un", s_rule),
        (71, "soixante et onze", "soixante-onze", et),
        (21_406, "vingt et un mille quatre cent six", "vingt-quatre mille quatre cent six", et),
        (97, "quatre-vingt-dix-sept", "quatre-vingt-sept", base_20),
        (97, "quatre-vingt-dix-sept", "quatre-vingt", base_20),                    # cut short
        (280_177, "deux cent quatre-vingt mille cent soixante-dix-sept",          # written on: 290
         "deux cent quatre-vingt-dix mille cent soixante-dix-sept", base_20),
        (890, "huit cent quatre-vingt-dix", "huit cent quatre-vingt-vingt-dix", base_20),
        (40, "quarante", "quarante quarante quarante", loop),
        (387_584, "trois cent quatre-vingt-sept mille cinq cent quatre-vingt-quatre",
         "trois cent quatre-vingt-sept mille cinq cent quatre-vingt" + "-quatre" * 24, loop),
        (219, "deux cent dix-neuf", "deux cent neuf cent neuf cent neuf cent", loop),   # a phrase loop
        (3, "trois", "quatre", word),
        (17_492, "dix-sept mille quatre cent quatre-vingt-douze",
         "dix-quatre mille quatre cent quatre-vingt-douze", word),
        (300, "trois cents", "deux cents", word),                                   # the hundreds digit
        (400_096, "quatre cent mille quatre-vingt-seize", "quatre cent quatre-vingt-seize mille", group),
        (45_100, "quarante-cinq mille cent", "quarante-cinq mille cent un", group),   # writes on
        (1_001, "mille un", "mille", group),                                          # stops early
        (311_552, "trois cent onze mille cinq cent cinquante-deux", "trois mille cinq cent cinquante-deux",
         group),
        (101, "cent un", "cent mille", group),
    ]
    for number, right, wrong, expected in cases:
        assert rule(number, t(right), t(wrong)) == expected, (number, wrong)


def test_no_french_number_repeats_a_word_and_hits_limit_finds_rows_without_eos():
    assert not any(numbers.repeats(numbers.tokenize(p.french)) for _, p in numbers.read_rows())
    outputs = torch.tensor([[BOS, 5, EOS, PAD], [BOS, 5, 5, 5], [BOS, EOS, 7, 7]])
    assert numbers.hits_limit(outputs).tolist() == [False, True, False]


def test_attention_maps_and_mean_weight():
    torch.manual_seed(0)
    from helpers.model import Transformer
    model = Transformer(vocab=len(VOCAB), d=16, h=2, d_ff=32, n_layers=2, p=0.0).eval()
    pairs = [(["two", "hundred", "thousand"], ["deux", "cent", "mille"]), (["six"], ["six"])]
    src, tgt_in, _ = numbers.make_batch(pairs, VOCAB)
    maps = numbers.attention_maps(model, src, tgt_in)
    assert [tuple(w.shape) for w in maps["encoder"]] == [(2, 2, 3, 3)] * 2
    assert [tuple(w.shape) for w in maps["decoder"]] == [(2, 2, 4, 4)] * 2
    assert [tuple(w.shape) for w in maps["cross"]] == [(2, 2, 4, 3)] * 2
    attention = [m for m in model.modules() if hasattr(m, "keep_weights")]
    assert all(m.weights is None and not m.keep_weights for m in attention)
    assert torch.allclose(maps["encoder"][0][1, :, 0, 1:], torch.zeros(2))        # padding is not read
    weights = torch.rand(2, 3, 4, 4)
    tokens = [["a", "b", "c", "d"], ["b", "a"]]
    got = numbers.mean_weight(weights, tokens, lambda t, i: t[i] == "b", lambda t, i: [0, len(t) - 1])
    by_hand = (weights[0, :, 1, 0] + weights[0, :, 1, 3] + weights[1, :, 0, 0] + weights[1, :, 0, 1]) / 2
    assert torch.allclose(got, by_hand)
    assert numbers.mean_weight(weights, tokens, lambda t, i: False, lambda t, i: [0]).isnan().all()


# --- BLEU ----------------------------------------------------------------------------------------

def sacre(hyps, refs):
    return sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                 tokenize="none", smooth_method="none").score


def random_corpus(rng):
    words = [str(i) for i in range(rng.randint(2, 9))]
    refs, hyps = [], []
    for _ in range(rng.randint(1, 7)):
        ref = [rng.choice(words) for _ in range(rng.randint(0, 10))]
        if rng.random() < 0.4:
            hyp = [rng.choice(words) for _ in range(rng.randint(0, 10))]
        else:                                                      # near the reference
            hyp = [w for w in ref if rng.random() < 0.8] + [rng.choice(words)] * rng.randint(0, 2)
        refs.append(ref)
        hyps.append(hyp)
    return hyps, refs


def test_bleu_equals_sacrebleu_on_random_corpora():
    rng = random.Random(0)
    kinds = Counter()
    for _ in range(500):
        hyps, refs = random_corpus(rng)
        ours, theirs = bleu.corpus_bleu(hyps, refs), sacre(hyps, refs)
        assert abs(ours - theirs) < 1e-9, (hyps, refs, ours, theirs)
        assert bleu.sacrebleu_score(hyps, refs) == pytest.approx(theirs, abs=1e-12)
        parts = bleu.bleu_parts(hyps, refs)
        kinds["zero match of some order"] += min(parts["matches"]) == 0 and min(parts["totals"]) > 0
        kinds["no 4-gram at all"] += parts["totals"][3] == 0
        kinds["empty hypothesis"] += any(len(h) == 0 for h in hyps)
        kinds["above 0"] += ours > 0
        kinds["penalised"] += 0 < parts["bp"] < 1 and ours > 0
    assert all(kinds[k] >= 20 for k in ("zero match of some order", "no 4-gram at all", "empty hypothesis",
                                        "above 0", "penalised")), kinds


def test_bleu_by_hand_and_edge_cases():
    t = numbers.tokenize
    parts = bleu.bleu_parts([t("deux cent mille deux cent deux"), t("quatre-vingt-dix mille")],
                            [t("deux cent mille deux cents"), t("quatre-vingt-dix-sept mille")])
    assert parts["matches"] == [10, 7, 5, 3] and parts["totals"] == [12, 10, 8, 6]
    assert parts["bp"] == pytest.approx(math.exp(-1 / 12))
    assert round(parts["bleu"], 2) == 60.12
    assert bleu.corpus_bleu([["cent", "un"]], [["cent", "un"]]) == 0.0
    assert sacre([["cent", "un"]], [["cent", "un"]]) == 0.0
    assert bleu.corpus_bleu([[]], [["un"]]) == 0.0
    assert bleu.corpus_bleu([list("abcde")], [list("abcde")]) == pytest.approx(100.0)
    with pytest.raises(ValueError):
        bleu.corpus_bleu([["a"]], [])


# --- Your turn 1: the pipeline's check -----------------------------------------------------------

def batch_loop(pairs, vocab):
    """Right: built row by row with plain lists."""
    src = [vocab.encode(s) for s, _ in pairs]
    tgt = [vocab.encode(t) for _, t in pairs]
    n, m = max(map(len, src)), max(map(len, tgt)) + 1
    return (torch.tensor([s + [PAD] * (n - len(s)) for s in src]),
            torch.tensor([[BOS] + t + [PAD] * (m - 1 - len(t)) for t in tgt]),
            torch.tensor([t + [EOS] + [PAD] * (m - 1 - len(t)) for t in tgt]))


def batch_full(pairs, vocab):
    """Right too: <s> target </s> padded, then cut: tgt_in = full[:, :-1], tgt_out = full[:, 1:]."""
    src = torch.nn.utils.rnn.pad_sequence([torch.tensor(vocab.encode(s)) for s, _ in pairs],
                                          batch_first=True, padding_value=PAD)
    full = torch.nn.utils.rnn.pad_sequence([torch.tensor([BOS, *vocab.encode(t), EOS]) for _, t in pairs],
                                           batch_first=True, padding_value=PAD)
    tgt_in = full[:, :-1].masked_fill(full[:, :-1] == EOS, PAD)
    return src, tgt_in, full[:, 1:]


def wrong_batch(src_ids=None, tin=None, tout=None, left=False, pad=PAD, width=None, swap_out=False):
    """A pipeline with one mistake: the row builders of each tensor given as functions of (s, t)."""
    src_ids = src_ids or (lambda s, t: s)
    tin = tin or (lambda s, t: [BOS, *t])
    tout = tout or (lambda s, t: [*t, EOS])

    def build(pairs, vocab):
        rows = [(vocab.encode(s), vocab.encode(t)) for s, t in pairs]
        out = []
        for f in (src_ids, tin, tout):
            seqs = [f(s, t) for s, t in rows]
            n = width or max(len(x) for x in seqs)
            out.append(torch.tensor([([pad] * (n - len(x)) + x) if left else (x + [pad] * (n - len(x)))
                                     for x in seqs]))
        if swap_out:
            out[1], out[2] = out[2], out[1]
        return tuple(out)
    return build


def test_make_batch_check_passes_right_answers(capsys):
    for right in (batch_loop, batch_full):
        assert printed(capsys, check_make_batch, right, VOCAB).startswith(PASSED)
    as_lists = lambda p, v: tuple(t.tolist() for t in batch_loop(p, v))  # noqa: E731
    assert "turn the padded rows into one tensor" in printed(capsys, check_make_batch, as_lists, VOCAB)


@pytest.mark.parametrize("wrong, words", [
    (wrong_batch(swap_out=True), "tgt_in and tgt_out are swapped"),
    (wrong_batch(src_ids=lambda s, t: t, tin=lambda s, t: [BOS, *s], tout=lambda s, t: [*s, EOS]),
     "Source and target are swapped"),
    (wrong_batch(left=True), "padding is at the start"),
    (wrong_batch(tin=lambda s, t: t), "tgt_in has no <s>"),
    (wrong_batch(tout=lambda s, t: t), "tgt_out has no </s>"),
    (wrong_batch(tin=lambda s, t: [BOS, *t, EOS]), "tgt_in ends with </s> too"),
    (wrong_batch(tout=lambda s, t: [BOS, *t, EOS]), "tgt_out starts with <s>"),
    (wrong_batch(src_ids=lambda s, t: [BOS, *s, EOS]), "src has <s> and </s>"),
    (wrong_batch(src_ids=lambda s, t: [BOS, *s]), "src starts with <s>"),
    (wrong_batch(src_ids=lambda s, t: [*s, EOS]), "src ends with </s>"),
    (wrong_batch(pad=EOS), "The padding is </s>"),
    (wrong_batch(pad=-100), "The padding is -100"),
    (wrong_batch(width=25), "pad each batch to its own longest sequence"),
])
def test_make_batch_check_names_each_mistake(wrong, words, capsys):
    assert words in printed(capsys, check_make_batch, wrong, VOCAB)


def test_make_batch_check_names_the_reference_dtype_and_an_unknown_mistake(capsys):
    def calls_reference(pairs, vocab):
        return numbers.make_batch(pairs, vocab)
    assert "the very reference" in printed(capsys, check_make_batch, calls_reference, VOCAB)

    def floats(pairs, vocab):
        return tuple(t.float() for t in batch_loop(pairs, vocab))
    assert "torch.long" in printed(capsys, check_make_batch, floats, VOCAB)

    def off_by_one(pairs, vocab):                                 # another mistake: a wrong id
        src, tgt_in, tgt_out = batch_loop(pairs, vocab)
        tgt_out = tgt_out.clone()
        tgt_out[0, 0] = 3
        return src, tgt_in, tgt_out
    line = printed(capsys, check_make_batch, off_by_one, VOCAB)
    assert line.startswith("tgt_out for the pair")


def test_make_batch_check_survives_anything(capsys):
    for _, wrong in wrong_functions(batch_loop):
        assert_survives(capsys, check_make_batch, wrong, VOCAB)
    for odd in (None, ..., 3, "answer", lambda p, v: None, lambda p, v: (None, None, None),
                lambda p, v: torch.zeros(2, 3), lambda p, v: [torch.zeros(2, 3, 4)] * 3):
        assert_survives(capsys, check_make_batch, odd, VOCAB)
    assert printed(capsys, check_make_batch, None, VOCAB).startswith("Not answered yet:")


# --- Your turn 2: BLEU's check -------------------------------------------------------------------

def ngram_counts(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def make_bleu(clip="sentence", max_n=4, mean="geometric", bp="corpus", scale=100, average=False,
              zero="zero", smooth=False):
    """An independent BLEU, right by default or with one named mistake."""
    def one(hyps, refs):
        m, tot = [0] * max_n, [0] * max_n
        big_h, big_r = [Counter() for _ in range(max_n)], [Counter() for _ in range(max_n)]
        for h, r in zip(hyps, refs, strict=True):
            for n in range(1, max_n + 1):
                hc, rc = ngram_counts(h, n), ngram_counts(r, n)
                big_h[n - 1] += hc
                big_r[n - 1] += rc
                if clip == "sentence":
                    m[n - 1] += sum(min(k, rc[g]) for g, k in hc.items())
                elif clip == "none":
                    m[n - 1] += sum(k for g, k in hc.items() if g in rc)
                tot[n - 1] += sum(hc.values())
        if clip == "corpus":
            m = [sum((big_h[i] & big_r[i]).values()) for i in range(max_n)]
        c, r = sum(map(len, hyps)), sum(map(len, refs))
        if bp == "corpus":
            penalty = 1 if c > r else math.exp(1 - r / c) if c else 0
        elif bp == "none":
            penalty = 1
        elif bp == "inverted":
            penalty = 1 if c > r else math.exp(1 - c / r)
        elif bp == "long":
            penalty = math.exp(1 - c / r) if c > r else 1
        elif bp == "each":
            penalty = sum(1 if len(h) > len(g) else math.exp(1 - len(g) / len(h)) if h else 0
                          for h, g in zip(hyps, refs, strict=True)) / len(hyps)
        elif bp == "characters":
            cc, rr = sum(len(w) for h in hyps for w in h), sum(len(w) for g in refs for w in g)
            penalty = 1 if cc > rr else math.exp(1 - rr / cc)
        if smooth:
            if not any(m):
                return 0.0
            p, k = [], 1
            for mi, ti in zip(m, tot, strict=True):
                if ti and not mi:
                    k *= 2
                p.append(mi / ti if mi else (1 / (k * ti) if ti else 0))
        elif zero == "zero":
            p = [mi / ti if ti else 0.0 for mi, ti in zip(m, tot, strict=True)]
        else:                                                        # zero precision not handled
            p = [mi / ti for mi, ti in zip(m, tot, strict=True)]
        if mean == "arithmetic":
            return scale * penalty * sum(p) / max_n
        if zero == "zero" and min(p) == 0:
            return 0.0
        return scale * penalty * math.exp(sum(math.log(x) for x in p) / max_n)

    def score(hypotheses, references):
        if average:
            return sum(one([h], [r]) for h, r in zip(hypotheses, references, strict=True)) / len(hypotheses)
        return one(hypotheses, references)
    return score


def test_bleu_check_passes_right_answers_and_names_a_blocked_helper(capsys):
    assert printed(capsys, check_bleu, make_bleu()).startswith(PASSED)

    def with_numpy_like_tensor(h, r):
        return torch.tensor(make_bleu()(h, r), dtype=torch.float64)
    assert printed(capsys, check_bleu, with_numpy_like_tensor).startswith(PASSED)

    def with_torch_log(h, r):                                 # log(0) = -inf, exp(-inf) = 0: right
        st = bleu.statistics(h, r)                            # (not blocked: a helper, not the answer)
        p = torch.tensor([m / t if t else 0.0 for m, t in zip(st["matches"], st["totals"], strict=True)])
        c, rr = st["c"], st["r"]
        bp = 1 if c > rr else math.exp(1 - rr / c) if c else 0
        return float(100 * bp * torch.exp(torch.log(p).mean()))
    assert "the very reference" in printed(capsys, check_bleu, with_torch_log)


@pytest.mark.parametrize("wrong, words", [
    (make_bleu(clip="none"), "not clipped"),
    (make_bleu(clip="corpus"), "clipped against the whole corpus"),
    (make_bleu(average=True), "averaged the sentences' BLEU"),
    (make_bleu(mean="arithmetic"), "arithmetic mean"),
    (make_bleu(bp="none"), "brevity penalty is missing"),
    (make_bleu(bp="inverted"), "upside down"),
    (make_bleu(bp="long"), "punishes long hypotheses"),
    (make_bleu(bp="each"), "each sentence's lengths"),
    (make_bleu(bp="characters"), "counts characters"),
    (make_bleu(max_n=3), "stop at 3"),
    (make_bleu(max_n=5), "go up to 5"),
    (make_bleu(scale=1), "between 0 and 1"),
    (make_bleu(zero="raise"), "return 0.0 there"),
    (make_bleu(smooth=True), "smoothed the zero precisions"),
])
def test_bleu_check_names_each_mistake(wrong, words, capsys):
    assert words in printed(capsys, check_bleu, wrong)


def test_bleu_check_blocks_the_references(capsys):
    def via_helpers(h, r):
        return bleu.corpus_bleu(h, r)

    def via_sacrebleu(h, r):
        return sacrebleu.corpus_bleu([" ".join(x) for x in h], [[" ".join(x) for x in r]],
                                     tokenize="none", smooth_method="none").score

    def via_metric(h, r):
        return sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none").corpus_score(
            [" ".join(x) for x in h], [[" ".join(x) for x in r]]).score

    for fn, name in ((via_helpers, "helpers.bleu.corpus_bleu"), (via_sacrebleu, "sacrebleu.corpus_bleu"),
                     (via_metric, "sacrebleu's BLEU")):
        line = printed(capsys, check_bleu, fn)
        assert "the very reference" in line and name in line, line


def test_bleu_check_names_nan_and_a_generic_mistake(capsys):
    def nan_on_zero(h, r):
        value = make_bleu()(h, r)
        return float("nan") if value == 0 else value
    assert "return 0.0 there" in printed(capsys, check_bleu, nan_on_zero)

    def off(h, r):
        return make_bleu()(h, r) + 1.0
    assert printed(capsys, check_bleu, off).startswith("On a corpus of four sentences, BLEU should be")


def test_bleu_check_survives_anything(capsys):
    def as_tensor(h, r):
        return torch.tensor([make_bleu()(h, r)])
    for _, wrong in wrong_functions(as_tensor):
        assert_survives(capsys, check_bleu, wrong)
    for odd in (None, ..., 7, "bleu", lambda h, r: None, lambda h, r: "60", lambda h, r: [1.0, 2.0],
                lambda h, r: {"bleu": 1.0}, lambda h, r: float("inf"), lambda h, r: 1 / 0,
                lambda h, r: h[0][0]):
        assert_survives(capsys, check_bleu, odd)
    assert printed(capsys, check_bleu, None).startswith("Not answered yet:")


# --- the questions -------------------------------------------------------------------------------

def test_short_bleu_question(capsys):
    assert printed(capsys, check_short_bleu, 0).startswith(PASSED)
    assert printed(capsys, check_short_bleu, 0.0).startswith(PASSED)
    assert "3-grams and 4-grams" in printed(capsys, check_short_bleu, 100)
    assert "3-gram or 4-gram" in printed(capsys, check_short_bleu, 50)
    assert printed(capsys, check_short_bleu, None).startswith("Not answered yet:")
    for odd in ("zero", True, torch.tensor([1.0, 2.0]), float("nan"), [0]):
        assert_survives(capsys, check_short_bleu, odd)


@pytest.mark.parametrize("check, right, wrong", [
    (check_bleu_meaning, "easier task", ["better model", "sentence average", "seen in training"]),
    (check_above_question, "unseen combinations", ["unknown words", "positions", "too few steps"]),
])
def test_choice_questions(check, right, wrong, capsys):
    assert printed(capsys, check, right).startswith(PASSED)
    assert printed(capsys, check, right.upper()).startswith(PASSED)
    lines = {printed(capsys, check, w) for w in wrong}
    assert len(lines) == len(wrong) and not any(line.startswith(PASSED) for line in lines)
    assert printed(capsys, check, None).startswith("Not answered yet:")
    for odd in (3, "maybe", ["easier task"], True):
        assert_survives(capsys, check, odd)


def test_early_stop_question_names_each_mistake(capsys):
    # two sentences: "vingt et un mille" for "vingt et un mille un", then one right; by hand:
    # every p_n is 1, l_hyp = 9, l_ref = 10
    right = 100 * math.exp(1 - 10 / 9)
    assert printed(capsys, check_early_stop_bleu, round(right, 2)).startswith(PASSED)
    assert printed(capsys, check_early_stop_bleu, right).startswith(PASSED)
    first = 100 * math.exp(1 - 5 / 4)                          # the first sentence's own penalty
    for wrong, words in ((100, "brevity penalty applies"), ((first + 100) / 2, "mean of the two sentences"),
                         (first, "first sentence's BLEU alone"), (100 * math.exp(1 - 9 / 10), "upside down"),
                         (90, "not the ratio"), (0, "No precision is 0"), (right / 100, "from 0 to 100"),
                         (50, "Count the n-grams")):
        assert words in printed(capsys, check_early_stop_bleu, wrong), wrong
    assert printed(capsys, check_early_stop_bleu, None).startswith("Not answered yet:")
    for odd in ("89.48", True, torch.tensor([1.0, 2.0]), float("nan"), [89.48]):
        assert_survives(capsys, check_early_stop_bleu, odd)


def test_tokenised_bleu_question(capsys):
    assert printed(capsys, check_tokenised_bleu, "cannot tell").startswith(PASSED)
    for wrong, words in (("B is better", "counted on different tokens"),
                         ("A is better", "more than the compounds"), ("equal", "equally good")):
        assert words in printed(capsys, check_tokenised_bleu, wrong)
    assert printed(capsys, check_tokenised_bleu, None).startswith("Not answered yet:")
    for odd in (3, "maybe", ["cannot tell"], True):
        assert_survives(capsys, check_tokenised_bleu, odd)


def test_below_inputs_question(capsys):
    right = {"eighty-one thousand", "ninety thousand, nine hundred and nine"}
    assert printed(capsys, check_below_inputs, right).startswith(PASSED)
    assert printed(capsys, check_below_inputs, sorted(right)).startswith(PASSED)
    assert "eighty-one thousand\" is below 100,000" in printed(capsys, check_below_inputs,
                                                                {"ninety thousand, nine hundred and nine"})
    assert "90,909 is below 100,000" in printed(capsys, check_below_inputs, {"eighty-one thousand"})
    assert "hundred\" before \"thousand" in printed(capsys, check_below_inputs,
                                                     right | {"one hundred thousand and one"})
    assert "short as it is" in printed(capsys, check_below_inputs,
                                       right | {"three hundred thousand and three"})
    assert printed(capsys, check_below_inputs, None).startswith("Not answered yet:")
    for odd in (3, "maybe", ["eighty-one"], True, {"eighty-one thousand": 1}):
        assert_survives(capsys, check_below_inputs, odd)


def test_the_below_inputs_key_is_what_the_data_says():
    """The question's key follows the data, not the model's rounding: the right inputs are below
    100,000, never in the training rows, and the others have "hundred" before "thousand"."""
    from num2words import num2words
    from helpers.checks.translation import BELOW_INPUTS
    words = {num2words(n, lang="en"): n for n in (81_000, 100_001, 90_909, 300_003)}
    assert set(words) == set(BELOW_INPUTS)
    train = {p.number for p in numbers.load_pairs("train")}
    for text, n in words.items():
        assert n not in train
        tokens = numbers.tokenize(text)
        hundred_first = "hundred" in tokens[: tokens.index("thousand")]
        assert hundred_first == (n >= numbers.BELOW)


# --- the shipped second model ----------------------------------------------------------------------

@pytest.mark.cpu_sensitive
def test_the_shipped_model_loads_and_keeps_its_claims():
    from helpers.decoding import exact_matches, greedy_decode
    model = numbers.load_model(numbers.CHECKPOINTS / numbers.BELOW_MODEL, VOCAB)
    test = numbers.load_pairs("test")
    src, _, tgt_out = numbers.make_batch(numbers.token_pairs(test), VOCAB)
    right = exact_matches(greedy_decode(model, src, max_len=src.shape[1] + 50), tgt_out)
    values = torch.tensor([p.number for p in test])
    assert right[values < numbers.BELOW].float().mean() >= 0.99
    assert right[values >= numbers.BELOW].float().mean() <= 0.01


# --- Issue 39: each of BLEU's other usual mistakes gets its own hint; Q1's rounding; Q3's comma --------

def other_bleu(kind):
    """BLEU written plainly with one of the mistakes the check used to call only "check the counts"."""
    def score(hyps, refs):
        if kind == "joined":
            hyps, refs = [[t for h in hyps for t in h]], [[t for r in refs for t in r]]
        matches, totals, per_sentence = [0] * 4, [0] * 4, [[] for _ in range(4)]
        for h, r in zip(hyps, refs, strict=True):
            for n in range(1, 5):
                hc, rc = ngram_counts(h, n), ngram_counts(r, n)
                if kind == "set":
                    m = len(set(hc) & set(rc))
                else:
                    m = sum(min(k, rc[g]) for g, k in hc.items())
                matches[n - 1] += m
                t = {"distinct totals": len(hc), "len - n": max(len(h) - n, 0)}.get(kind, sum(hc.values()))
                totals[n - 1] += t
                if t:
                    per_sentence[n - 1].append(m / t)
        if kind == "macro":
            p = [sum(ps) / len(ps) if ps else 0.0 for ps in per_sentence]
        else:
            p = [m / t if t else 0.0 for m, t in zip(matches, totals, strict=True)]
        c, r = sum(map(len, hyps)), sum(map(len, refs))
        if kind == "bp always":
            bp = math.exp(1 - r / c) if c else 0.0
        elif kind == "bp ratio":
            bp = 1.0 if c > r else c / r
        else:
            bp = 1.0 if c > r else (math.exp(1 - r / c) if c else 0.0)
        if kind == "skip zeros":
            logs = [math.log(x) for x in p if x > 0]
            return 100 * bp * math.exp(sum(logs) / len(logs)) if logs else 0.0
        if min(p) == 0:
            return 0.0
        if kind == "product":
            return 100 * bp * p[0] * p[1] * p[2] * p[3]
        if kind == "log10":
            return 100 * bp * math.exp(sum(math.log10(x) for x in p) / 4)
        value = 100 * bp * math.exp(sum(math.log(x) for x in p) / 4)
        return round(value, 2) if kind == "rounded" else value
    return score


@pytest.mark.parametrize("kind, words", [
    ("product", "multiplied the four precisions"),
    ("log10", "logarithm and your exponential do not match"),
    ("skip zeros", "left out the precisions of 0"),
    ("set", "each distinct n-gram once"),
    ("distinct totals", "totals count the distinct n-grams"),
    ("len - n", "one short per sentence"),
    ("macro", "averaged each sentence's precision"),
    ("joined", "joined the sentences into one long sequence"),
    ("bp always", "rewards long hypotheses"),
    ("bp ratio", "ratio of the lengths, c / r"),
    ("rounded", "Your BLEU is rounded"),
])
def test_bleu_check_names_the_other_mistakes(kind, words, capsys):
    line = printed(capsys, check_bleu, other_bleu(kind))
    assert words in line, line


@pytest.mark.parametrize("value", [89.5, 89.49, 89.47])
def test_early_stop_question_names_a_rounding(value, capsys):
    assert "Right but for the rounding" in printed(capsys, check_early_stop_bleu, value)


def test_below_inputs_question_keeps_an_option_with_a_comma_whole(capsys):
    assert printed(capsys, check_below_inputs,
                   "eighty-one thousand, ninety thousand, nine hundred and nine").startswith(PASSED)
    assert "90,909 is below 100,000" in printed(capsys, check_below_inputs, "eighty-one thousand")
    assert "eighty-one thousand\" is below" in printed(capsys, check_below_inputs,
                                                       "ninety thousand, nine hundred and nine")


# --- Issue 48: Q1 on the 0-1 scale, to two decimals -----------------------------------------------------

@pytest.mark.parametrize("value", [0.89, 0.895, 0.8948, round(math.exp(1 - 10 / 9), 3)])
def test_early_stop_on_the_0_1_scale_is_told_the_scale(value, capsys):
    line = printed(capsys, check_early_stop_bleu, value)
    assert "from 0 to 100" in line and "Count the n-grams" not in line, line
