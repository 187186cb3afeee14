"""A borrowed answer never passes: the reference assigned, wrapped in functools.partial (at any
depth), taken as a bound method or module, captured as a default argument or in a closure, the
field's library (sacrebleu) doing the work, or the check module's own right answers.

Each wrong answer is written here the way a learner would write it in a notebook: a function
whose globals are a fresh namespace, the course's import cell run in it first.
"""

import functools

import pytest
import torch
from torch import nn

from helpers import decoding
from helpers.tasks import numbers
from helpers.checks import Hint, call
from helpers.checks.decoding import check_beam_step
from helpers.checks.encoder import check_ffn, check_pre_norm, check_split_merge
from helpers.checks.recipe import check_greedy_decode, check_smoothed_loss
from helpers.checks.translation import check_bleu, check_make_batch
from printed import printed

REFUSED = "the very reference this check compares your answer with"


def notebook(code):
    """The namespace of a notebook after running code in it (a learner's cell)."""
    namespace = {}
    exec(code, namespace)
    return namespace


def refused(capsys, check, *args, name=None):
    line = printed(capsys, check, *args)
    assert REFUSED in line, line
    if name:
        assert name in line, line
    return line


# --- call itself: every way of holding a reference --------------------------------------------

def reference_cases():
    layer = nn.Linear(3, 3)

    def inner(x):
        return torch.relu(x)

    ns = notebook("import functools, torch\n"
                  "from torch.nn.functional import relu\n"
                  "twice = functools.partial(functools.partial(relu))\n"
                  "def uses_global(x):\n    return twice(x)\n"
                  "def make():\n    f = relu\n    def mine(x):\n        return f(x)\n    return mine\n"
                  "closure = make()\n"
                  "def default(x, f=relu):\n    return f(x)\n"
                  "def keyword(x, *, f=relu):\n    return f(x)\n")
    relu_ref = [(torch.nn.functional, "relu", "F.relu")]
    return [
        ("assigned", torch.nn.functional.relu, relu_ref),
        ("partial", functools.partial(torch.nn.functional.relu), relu_ref),
        ("partial of a partial", ns["twice"], relu_ref),
        ("a global partial read by the code", ns["uses_global"], relu_ref),
        ("closure cell", ns["closure"], relu_ref),
        ("default argument", ns["default"], relu_ref),
        ("keyword-only default", ns["keyword"], relu_ref),
        ("functools.wraps around it", functools.wraps(torch.nn.functional.relu)(lambda x: x), relu_ref),
        ("the module instance", layer, [(layer, "forward", "the layer")]),
        ("its bound forward", layer.forward, [(layer, "forward", "the layer")]),
        ("a class's method, bound", layer.forward, [(nn.Linear, "forward", "nn.Linear")]),
        ("a lambda calling a captured bound method", (lambda f: lambda x: f(x))(layer.forward),
         [(nn.Linear, "forward", "nn.Linear")]),
        ("a def returning the reference itself", (lambda: inner)(), [(None, None, None)]),
    ]


@pytest.mark.parametrize("how, fn, reference", [c for c in reference_cases() if c[2][0][0] is not None],
                         ids=[c[0] for c in reference_cases() if c[2][0][0] is not None])
def test_call_refuses_a_held_reference(how, fn, reference):
    with pytest.raises(Hint, match=REFUSED):
        call(fn, "f(x)", torch.randn(2, 3), reference=reference)


def test_call_lets_a_function_that_holds_no_reference_run():
    ns = notebook("import torch\n"
                  "def helper(x):\n    return x.clamp(min=0)\n"
                  "def mine(x, scale=1.0):\n    return helper(x) * scale\n")
    x = torch.randn(2, 3)
    out = call(ns["mine"], "mine(x)", x, reference=[(torch.nn.functional, "relu", "F.relu")])
    assert torch.equal(out, x.clamp(min=0))


# --- the examples of each notebook -------------------------------------------------------------

IMPORT_03 = ("import functools, torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
             "from helpers.attention import MultiHeadAttention, attention, merge_heads, split_heads\n")


def test_03_split_and_merge_assigned_or_partial(capsys):
    ns = notebook(IMPORT_03 + "my_split_heads = split_heads\nmy_merge_heads = merge_heads\n"
                  "p_split = functools.partial(split_heads)\n"
                  "def own_split(t, h):\n    b, n, d = t.shape\n"
                  "    return t.view(b, n, h, d // h).transpose(1, 2)\n")
    refused(capsys, check_split_merge, ns["my_split_heads"], ns["my_merge_heads"],
            name="helpers.attention.split_heads")
    refused(capsys, check_split_merge, ns["p_split"], ns["my_merge_heads"])
    refused(capsys, check_split_merge, ns["own_split"], ns["my_merge_heads"],
            name="helpers.attention.merge_heads")


def test_03_pre_norm_through_the_private_sublayers(capsys):
    ns = notebook(IMPORT_03 + "def pre_norm_layer(x, L):\n"
                  "    x = x + L._sa_block(L.norm1(x), None, None)\n"
                  "    return x + L._ff_block(L.norm2(x))\n"
                  "def ffn(x, L):\n    return L._ff_block(x)\n")
    refused(capsys, check_pre_norm, ns["pre_norm_layer"], name="_sa_block")
    refused(capsys, check_ffn, ns["ffn"], name="_ff_block")


IMPORT_05 = ("import torch\nfrom helpers.recipe import smoothed_loss\n"
             "from helpers.decoding import greedy_decode\n")


def test_05_default_argument_capture(capsys):
    ns = notebook(IMPORT_05 + "def my_smoothed_loss(logits, target, eps_ls, pad, make=smoothed_loss):\n"
                  "    return make(pad, eps_ls)(logits, target)\n"
                  "def my_greedy_decode(model, src, decode=greedy_decode):\n"
                  "    return decode(model, src, max_len=src.shape[1] + 50)\n")
    refused(capsys, check_smoothed_loss, ns["my_smoothed_loss"], name="helpers.recipe.smoothed_loss")
    from helpers.model import Transformer
    from helpers.tasks.reversal import VOCAB
    model = Transformer(VOCAB, 16, 2, 32, 1, p=0.0).eval()
    refused(capsys, check_greedy_decode, ns["my_greedy_decode"], model,
            name="helpers.decoding.greedy_decode")


IMPORT_08 = "import functools, torch\nfrom helpers.decoding import beam_step\n"


@pytest.mark.parametrize("code", [
    "my_beam_step = beam_step\n",
    "my_beam_step = functools.partial(beam_step)\n",
    "def my_beam_step(log_p, lengths, finished, next_log_probs, alpha, step=beam_step):\n"
    "    return step(log_p, lengths, finished, next_log_probs, alpha)\n",
    "def wrap():\n    f = beam_step\n    def my_beam_step(*args):\n        return f(*args)\n"
    "    return my_beam_step\nmy_beam_step = wrap()\n",
], ids=["assigned", "partial", "default", "closure"])
def test_08_beam_step_borrowed(code, capsys):
    refused(capsys, check_beam_step, notebook(IMPORT_08 + code)["my_beam_step"],
            name="helpers.decoding.beam_step")
    assert decoding.beam_step.__name__ == "beam_step"      # restored


IMPORT_09 = ("import functools, math, torch\nfrom collections import Counter\n"
             "from helpers.tasks.numbers import make_batch\nfrom helpers import bleu\n")


@pytest.mark.parametrize("code", [
    "my_make_batch = make_batch\n",
    "my_make_batch = functools.partial(make_batch)\n",
    "my_make_batch = functools.partial(functools.partial(make_batch))\n",
    "def my_make_batch(pairs, vocab, build=make_batch):\n    return build(pairs, vocab)\n",
], ids=["assigned", "partial", "partial of a partial", "default"])
def test_09_make_batch_borrowed(code, capsys):
    refused(capsys, check_make_batch, notebook(IMPORT_09 + code)["my_make_batch"], numbers.vocabulary(),
            name="helpers.tasks.numbers.make_batch")


STATS = ("def counts(hyps, refs):\n"
         "    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0\n"
         "    for h, g in zip(hyps, refs):\n"
         "        c, r = c + len(h), r + len(g)\n"
         "        for n in range(1, 5):\n"
         "            hg = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))\n"
         "            gg = Counter(tuple(g[i:i + n]) for i in range(len(g) - n + 1))\n"
         "            matches[n - 1] += sum(min(k, gg[x]) for x, k in hg.items())\n"
         "            totals[n - 1] += max(len(h) - n + 1, 0)\n"
         "    return matches, totals, c, r\n")


@pytest.mark.parametrize("code, name", [
    ("from sacrebleu.metrics import BLEU\n"
     "def my_bleu(hyps, refs):\n    m, t, c, r = counts(hyps, refs)\n"
     "    return BLEU.compute_bleu(m, t, c, r, smooth_method='none').score\n", "compute_bleu"),
    ("from sacrebleu.metrics.bleu import BLEU\n"
     "def my_bleu(hyps, refs):\n    m, t, c, r = counts(hyps, refs)\n"
     "    return BLEU(smooth_method='none')._compute_score_from_stats([c, r, *m, *t]).score\n",
     "sacrebleu's BLEU"),
    ("from sacrebleu.metrics import BLEU\n"
     "def my_bleu(hyps, refs):\n    b = BLEU(tokenize='none', smooth_method='none')\n"
     "    stats = b._extract_corpus_statistics([' '.join(h) for h in hyps], [[' '.join(g) for g in refs]])\n"
     "    return b._compute_score_from_stats([sum(col) for col in zip(*stats)]).score\n",
     "sacrebleu's BLEU"),
    ("import sacrebleu\n"
     "def my_bleu(hyps, refs):\n    return sacrebleu.corpus_bleu([' '.join(h) for h in hyps], "
     "[[' '.join(g) for g in refs]], tokenize='none', smooth_method='none').score\n", "corpus_bleu"),
    ("import sacrebleu\n"
     "def my_bleu(hyps, refs):\n"
     "    return sacrebleu.sentence_bleu(' '.join(hyps[0]), [' '.join(refs[0])]).score\n",
     "sentence_bleu"),
    ("from helpers.bleu import brevity_penalty\n"
     "def my_bleu(hyps, refs):\n    m, t, c, r = counts(hyps, refs)\n"
     "    if min(m) == 0 or min(t) == 0:\n        return 0.0\n"
     "    return 100 * brevity_penalty(c, r) * math.exp(sum(math.log(a / b) for a, b in zip(m, t)) / 4)\n",
     "helpers.bleu.brevity_penalty"),
], ids=["compute_bleu", "_compute_score_from_stats", "_extract_corpus_statistics", "corpus_bleu",
        "sentence_bleu", "brevity_penalty"])
def test_09_bleu_done_by_a_library(code, name, capsys):
    pytest.importorskip("sacrebleu")
    refused(capsys, check_bleu, notebook(IMPORT_09 + STATS + code)["my_bleu"], name=name)
    from sacrebleu.metrics import BLEU
    assert isinstance(vars(BLEU)["compute_bleu"], staticmethod)    # restored as it was


def test_09_the_check_modules_own_answers_are_refused(capsys):
    ns = notebook(IMPORT_09 + "from helpers.checks import translation as t\n"
                  "from helpers.checks.translation import _bleu_variant, _batch_mistakes\n"
                  "my_bleu = _bleu_variant\n"
                  "def my_bleu_2(hyps, refs):\n    return t._bleu_variant(hyps, refs)\n"
                  "def my_make_batch(pairs, vocab):\n    return next(_batch_mistakes(pairs, vocab))[1]\n"
                  "def my_make_batch_2(pairs, vocab, f=_batch_mistakes):\n"
                  "    return next(f(pairs, vocab))[1]\n")
    refused(capsys, check_bleu, ns["my_bleu"], name="helpers.checks.translation._bleu_variant")
    refused(capsys, check_bleu, ns["my_bleu_2"], name="helpers.checks.translation._bleu_variant")
    vocab = numbers.vocabulary()
    refused(capsys, check_make_batch, ns["my_make_batch"], vocab, name="_batch_mistakes")
    refused(capsys, check_make_batch, ns["my_make_batch_2"], vocab, name="_batch_mistakes")


def test_own_functions_of_other_check_modules_are_refused(capsys):
    ns = notebook("from helpers.checks.decoding import _reference\n"
                  "from helpers.checks.encoder import heads, self_attention\n"
                  "def my_beam_step(log_p, lengths, finished, next_log_probs, alpha):\n"
                  "    return _reference(log_p, lengths, finished, next_log_probs, alpha)\n"
                  "def my_split_heads(t, h):\n    return heads._split(t, h, 'right')\n"
                  "def my_merge_heads(t):\n    return heads._merge(t, 'right')\n"
                  "def my_split_2(t, h):\n    return self_attention._self_attention(t, *[None] * 4, h)\n")
    refused(capsys, check_beam_step, ns["my_beam_step"], name="helpers.checks.decoding._reference")
    refused(capsys, check_split_merge, ns["my_split_heads"], ns["my_merge_heads"],
            name="helpers.checks.encoder.heads._split")
    # a function of another module of the same check package counts too
    refused(capsys, check_split_merge, ns["my_split_2"], ns["my_merge_heads"],
            name="helpers.checks.encoder.self_attention._self_attention")


# --- notebook 11: the split and BLEU with several references -------------------------------------

IMPORT_11 = ("import functools, math, random\nfrom collections import Counter\n"
             "from helpers import bleu\nfrom helpers.bleu import corpus_bleu_several, ngrams\n"
             "from helpers.tasks import tatoeba\nfrom helpers.tasks.tatoeba import split_by_english\n")


@pytest.mark.parametrize("code, name", [
    ("my_split = split_by_english\n", "split_by_english"),
    ("my_split = functools.partial(split_by_english)\n", "split_by_english"),
    ("def my_split(pairs, n_test, seed, f=split_by_english):\n    return f(pairs, n_test, seed)\n",
     "split_by_english"),
    ("def my_split(pairs, n_test, seed):\n    return tatoeba.split_by_english(pairs, n_test, seed)\n",
     "split_by_english"),
], ids=["assigned", "partial", "default argument", "called"])
def test_11_the_split_done_by_the_course(code, name, capsys):
    from helpers.checks.tatoeba import check_split
    refused(capsys, check_split, notebook(IMPORT_11 + code)["my_split"], name=name)


@pytest.mark.parametrize("code, name", [
    ("my_bleu_several = corpus_bleu_several\n", "corpus_bleu_several"),
    ("def my_bleu_several(h, r):\n    return bleu.corpus_bleu_several(h, r)\n", "corpus_bleu_several"),
    ("def make():\n    f = corpus_bleu_several\n    return lambda h, r: f(h, r)\n"
     "my_bleu_several = make()\n", "corpus_bleu_several"),
    ("def my_bleu_several(h, r):\n    s = bleu.statistics_several(h, r)\n"
     "    return 100 * bleu.brevity_penalty(s['c'], s['r']) * math.exp(sum(math.log(m / t) for m, t in "
     "zip(s['matches'], s['totals'])) / 4)\n", "statistics_several"),
    ("import sacrebleu\n"
     "def my_bleu_several(h, r):\n    most = max(map(len, r))\n"
     "    streams = [[' '.join(g[j]) if j < len(g) else None for g in r] for j in range(most)]\n"
     "    return sacrebleu.corpus_bleu([' '.join(x) for x in h], streams, tokenize='none').score\n",
     "corpus_bleu"),
    ("from sacrebleu.metrics import BLEU\n"
     "def my_bleu_several(h, r):\n    most = max(map(len, r))\n"
     "    streams = [[' '.join(g[j]) if j < len(g) else None for g in r] for j in range(most)]\n"
     "    return BLEU(tokenize='none').corpus_score([' '.join(x) for x in h], streams).score\n",
     "sacrebleu's BLEU"),
], ids=["assigned", "called", "closure", "the statistics", "sacrebleu.corpus_bleu", "sacrebleu's BLEU"])
def test_11_bleu_with_several_references_done_by_a_library(code, name, capsys):
    if "sacrebleu" in code:
        pytest.importorskip("sacrebleu")
    from helpers.checks.tatoeba import check_bleu_several
    refused(capsys, check_bleu_several, notebook(IMPORT_11 + code)["my_bleu_several"], name=name)


def test_11_the_check_modules_own_answers_are_refused(capsys):
    from helpers.checks.tatoeba import check_bleu_several
    ns = notebook(IMPORT_11 + "from helpers.checks.tatoeba import _several_variant\n"
                  "my_bleu_several = _several_variant\n")
    refused(capsys, check_bleu_several, ns["my_bleu_several"], name="_several_variant")
