"""helpers.explorer: the numbers it shows are the model's own, and its HTML stands alone.

The models are the shipped ones (05's reversal model, 09's two, 11's) and, for the decoder-only view,
small helpers.decoder_only models trained here for a moment (no decoder-only checkpoint ships); every
assertion is a truth of any model (a shown number equals the tensor the model computes, a row of
weights sums to 1, the written tokens are what greedy decoding or beam search writes), so the tests
hold for retrained checkpoints. One test opens explorers in headless Chromium where Chromium is
installed.
"""

import html
import json
import pathlib
import re
import shutil
import subprocess

import pytest
import torch

from helpers import bpe, decoder_only
from helpers.decoding import beam_search, greedy_decode
from helpers.explorer import LETTERS, PHASES, explore, explore_translation
from helpers.model import keep_attention_weights
from helpers.tasks import numbers, reversal, tatoeba
from helpers.tasks.decoder_only import join
from helpers.vocabulary import BOS, EOS, PAD

PROBE = pathlib.Path(__file__).resolve().parent / "explorer_probe.js"
LIMIT = 150_000          # bytes of one explorer's HTML


@pytest.fixture(scope="module")
def letters_model():
    return reversal.load_tiny(reversal.CHECKPOINTS / reversal.TRAINED)


@pytest.fixture(scope="module")
def numbers_models():
    pairs = numbers.load_pairs("train")
    vocab = numbers.vocabulary(pairs)
    segmenter = bpe.Segmenter(bpe.learn_merges(bpe.texts_of(pairs), 50))
    vocab_50 = segmenter.vocabulary(pairs)
    return {"words": (numbers.load_model(numbers.CHECKPOINTS / numbers.BELOW_MODEL, vocab), vocab,
                      numbers.tokenize, numbers.detokenize),
            "pieces": (numbers.load_model(numbers.CHECKPOINTS / numbers.bpe_model_name(50), vocab_50),
                       vocab_50, segmenter.pieces, None)}


@pytest.fixture(scope="module")
def tatoeba_model():
    pieces = tatoeba.pieces_for()
    return tatoeba.load_model(pieces), pieces


def briefly_trained(prefix, steps=200, seed=0):
    """A small decoder-only model (2 blocks, d_model 32) trained for a moment to reverse letters, so
    that it writes letters and </s> (an untrained one repeats one token): about a second."""
    torch.manual_seed(seed)
    model = decoder_only.DecoderOnly(len(LETTERS), 32, 2, 64, 2, p=0.1, prefix=prefix)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        src, _, tgt_out = reversal.batch(32, generator, max_len=6)
        pairs = [(s[s != PAD].tolist(), t[t > EOS].tolist()) for s, t in zip(src, tgt_out, strict=True)]
        ids, src_lengths, labels = join(pairs)
        loss = torch.nn.functional.cross_entropy(model(ids, src_lengths).flatten(0, 1), labels.flatten(),
                                                 ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model                                         # in training mode: the explorer switches it


@pytest.fixture(scope="module")
def stack_models():
    """A prefix LM and a causal LM on the letters' 13 tokens (no decoder-only checkpoint ships)."""
    return {prefix: briefly_trained(prefix) for prefix in (True, False)}


def table(step, i=0):
    return step["tables"][i]


def close(shown, tensor, digits):
    """Every shown number equals the tensor's, to the rounding the explorer states."""
    want = torch.as_tensor(tensor, dtype=torch.float64)
    got = torch.tensor(shown, dtype=torch.float64)
    assert got.shape == want.shape
    assert (got - want).abs().max() <= 0.5 * 10 ** -digits + 1e-9


def rows_sum_to_one(step):
    t = table(step)
    assert t["kind"] == "weights"
    for row in t["cells"]:
        real = [v for v in row if v is not None]
        assert abs(sum(real) - 1) <= 0.005 * len(real) + 1e-9


# --- notebook 05's 14 steps -------------------------------------------------------------------

def test_the_default_vocabulary_is_the_letters_task():
    assert LETTERS == reversal.ITOS


def test_fourteen_steps_in_four_phases(letters_model):
    ex = explore(letters_model, "c a b e d")
    assert [s["n"] for s in ex.steps] == list(range(1, 15))
    phases = [s["phase"] for s in ex.steps]
    assert sorted(set(phases), key=PHASES.index) == list(PHASES)
    assert phases == sorted(phases, key=PHASES.index)
    shapes = [tuple(s["shape"]) for s in ex.steps]
    assert shapes == [(1, 5), (1, 5, 64), (1, 5, 64), (1, 5, 64), (1, 4, 5, 16), (1, 4, 5, 5), (1, 5, 64),
                      (1, 5, 64), (1, 5, 64), (1, 6), (1, 4, 6, 6), (1, 4, 6, 5), (1, 6, 13), (1, 6, 13)]


def test_the_numbers_shown_are_the_models(letters_model):
    model = letters_model
    ex = explore(model, "c a b e d")
    s = {step["n"]: step for step in ex.steps}
    src = reversal.encode_letters("c a b e d")
    with torch.no_grad():
        written = greedy_decode(model, src, max_len=src.shape[1] + 50)[0, 1:].tolist()
        written = written[: written.index(reversal.EOS) + 1]
        tgt_in = torch.tensor([[reversal.BOS, *written[:-1]]])
        keep_attention_weights(model)
        logits = model(src, tgt_in)
        enc = model.encoder_layers[0].self_attn.weights
        dec = model.decoder_layers[0].self_attn.weights
        cross = model.decoder_layers[-1].cross_attn.weights
        keep_attention_weights(model, False)
        memory = model.encode(src)
        emb = model.embedding.weight[src[0]]
    assert ex.extra["written"] == written
    assert [row[1] for row in table(s[1])["cells"]] == src[0].tolist()
    close(table(s[2])["cells"], emb[:, :4], 3)
    close(table(s[3])["cells"], emb[:, :4] * 8, 3)
    close(table(s[4], 1)["cells"], (emb * 8 + model.pe[:5])[:, :4], 3)
    close(table(s[9])["cells"], memory[0, :, :4], 3)                    # the memory is model.encode's
    close([[v if v is not None else 0.0 for v in row] for row in table(s[6])["cells"]], enc[0, 0], 2)
    close([[v if v is not None else 0.0 for v in row] for row in table(s[11])["cells"]], dec[0, 0], 2)
    close(table(s[12])["cells"], cross[0].mean(0), 2)
    close([row[:4] for row in table(s[13])["cells"]], logits[0, :, :4], 3)
    for n in (6, 11, 12):
        rows_sum_to_one(s[n])
    masked = [[v is None for v in row] for row in table(s[11])["cells"]]
    assert masked == torch.ones(6, 6, dtype=torch.bool).triu(1).tolist()
    firsts = [cell.split()[0] for cell in (row[0] for row in table(s[14])["cells"])]
    assert firsts == [reversal.ITOS[i] for i in written]                # the next tokens are greedy's


def test_a_learners_input(letters_model):
    letters_model.train()
    ex = explore(letters_model, "h g f")
    assert letters_model.training                                       # its mode is given back
    letters_model.eval()
    src = reversal.encode_letters("h g f")
    written = greedy_decode(letters_model, src, max_len=53)[0, 1:].tolist()
    assert ex.extra["written"] == written[: written.index(reversal.EOS) + 1]
    assert explore(letters_model, ["h", "g", "f"]).steps == ex.steps
    with pytest.raises(ValueError, match="not in the model's vocabulary"):
        explore(letters_model, "h g z")


# --- translations -----------------------------------------------------------------------------

def check_translation(model, ex, src, beam):
    s = ex.steps
    written = ex.extra["written"]
    with torch.no_grad():
        if beam:
            want = beam_search(model, src, k=beam)[0, 1:].tolist()
        else:
            want = greedy_decode(model, src, max_len=src.shape[1] + 50)[0, 1:].tolist()
        want = want[: want.index(2) + 1] if 2 in want else want
        assert written == want
        tgt_in = torch.tensor([[1, *written[:-1]]])
        keep_attention_weights(model)
        logits = model(src, tgt_in)
        cross = [layer.cross_attn.weights for layer in model.decoder_layers]
        keep_attention_weights(model, False)
        memory = model.encode(src)
    memory_step = next(x for x in s if x["title"] == "the memory")
    close(table(memory_step)["cells"], memory[0, :, :4], 3)
    grids = [x for x in s if x["title"].startswith("cross-attention")]
    h = cross[0].shape[1]
    assert len(grids) == len(cross) * (h + 1)
    for i, step in enumerate(grids):
        layer, head = divmod(i, h + 1)
        want_grid = cross[layer][0].mean(0) if head == 0 else cross[layer][0, head - 1]
        close(table(step)["cells"], want_grid, 2)
        rows_sum_to_one(step)
        assert table(step).get("click")
    nxt = next(x for x in s if x["title"].startswith("the next "))
    top = logits[0].softmax(-1).topk(3)
    assert [[float(c.rsplit(" ", 1)[1]) for c in row] for row in table(nxt)["cells"]] == \
        [[round(v, 3) for v in row] for row in top.values.tolist()]
    if not beam:                                                          # greedy writes the argmax
        assert logits[0].argmax(-1).tolist() == written
    return s


def test_numbers_words_model_with_beam(numbers_models):
    model, vocab, tokenize, detokenize = numbers_models["words"]
    text = "seventy-one thousand and eighty"
    ex = explore_translation(model, text, vocab, tokenize, detokenize, beam=4)
    src = torch.tensor([vocab.encode(tokenize(text))])
    s = check_translation(model, ex, src, beam=4)
    titles = [x["title"] for x in s]
    assert "the beam's final ranking" in titles and titles[-1] == "the translation"
    ranking = table(s[titles.index("the beam's final ranking")])["cells"]
    french = numbers.detokenize(vocab.decode(ex.extra["written"]))
    assert ranking[0][0] == french + " </s>" and f'"{french}"' in s[-1]["caption"]


def test_numbers_pieces_model_greedy(numbers_models):
    model, vocab, pieces, _ = numbers_models["pieces"]
    text = "twenty-one thousand and fourty-four"
    ex = explore_translation(model, text, vocab, pieces)
    check_translation(model, ex, torch.tensor([vocab.encode(pieces(text))]), beam=None)
    assert len(ex.html().encode()) < LIMIT


@pytest.mark.parametrize("beam", [None, 4])
def test_tatoeba_model(tatoeba_model, beam):
    model, pieces = tatoeba_model
    text = "I like to read books in the evening."
    ex = explore_translation(model, text, pieces, beam=beam)
    check_translation(model, ex, torch.tensor([pieces.ids(text)]), beam)
    assert f'"{pieces.text(ex.extra["written"])}"' in ex.steps[-1]["caption"]
    assert len(ex.html().encode()) < LIMIT


# --- a decoder-only model ------------------------------------------------------------------------

STACK_SOURCE, EXTRA = "c a b e d", 4        # at most 5 + 4 tokens written


def stack_explorer(model, beam):
    return explore_translation(model, STACK_SOURCE, LETTERS, beam=beam, extra=EXTRA)


def recomputed_attention(model, ids, n_src):
    """Each block's attention weights (h, N, N), recomputed from the block's input (kept by a hook)
    with its own projections and a mask written out here, not the model's: a position i reads j
    if j <= i, or, in a prefix LM, if j is in the prefix (the source and the separator, j <= n_src).
    -> (weights per block, visible (N, N))."""
    inputs = []
    hooks = [layer.register_forward_pre_hook(lambda m, args: inputs.append(args[0][0].clone()))
             for layer in model.layers]
    try:
        with torch.no_grad():
            logits = model(ids, torch.tensor([n_src]))
    finally:
        for hook in hooks:
            hook.remove()
    big_n = ids.shape[1]
    visible = torch.tensor([[j <= i or (model.prefix and j <= n_src) for j in range(big_n)]
                            for i in range(big_n)])
    weights = []
    for layer, x in zip(model.layers, inputs, strict=True):
        attn = layer.self_attn
        d = attn.d_model
        w, b = attn.in_proj_weight, attn.in_proj_bias
        q, k = x @ w[:d].T + b[:d], x @ w[d:2 * d].T + b[d:2 * d]
        q, k = (t.view(big_n, attn.h, -1).transpose(0, 1) for t in (q, k))
        scores = (q @ k.transpose(1, 2) / attn.d_k ** 0.5).masked_fill(~visible, float("-inf"))
        weights.append(scores.softmax(-1))
    return weights, visible, logits


@pytest.mark.parametrize("prefix", [True, False])
@pytest.mark.parametrize("beam", [None, 3])
def test_decoder_only_numbers_are_the_models(stack_models, prefix, beam):
    model = stack_models[prefix]
    model.train()
    ex = stack_explorer(model, beam)
    assert model.training                                                 # its mode is given back
    model.eval()
    src = reversal.encode_letters(STACK_SOURCE)
    n = src.shape[1]
    with torch.no_grad():                                                 # written = helpers.decoder_only's
        if beam:
            want = decoder_only.beam_search(model, src, k=beam, extra=EXTRA)[0, 1:].tolist()
        else:
            want = decoder_only.greedy_decode(model, src, max_len=n + EXTRA)[0, 1:].tolist()
    want = want[: want.index(EOS) + 1] if EOS in want else [t for t in want if t != PAD]
    written = ex.extra["written"]
    assert written == want and PAD not in written
    ids = torch.tensor([[*src[0].tolist(), BOS, *written[:-1]]])
    big_n, h = ids.shape[1], model.layers[0].self_attn.h
    weights, visible, logits = recomputed_attention(model, ids, n)
    s = {step["title"]: step for step in ex.steps}

    sequence = table(s["one sequence: source, separator, target"])
    assert [row[:2] for row in sequence["cells"]] == [[p + 1, i] for p, i in enumerate(ids[0].tolist())]
    parts = ["source"] * n + ["separator"] + ["target"] * (big_n - n - 1)
    assert [row[2] for row in sequence["cells"]] == parts
    mask_step = s[f"the mask of this model: a {'prefix' if prefix else 'causal'} LM"]
    assert table(mask_step)["cells"] == visible.int().tolist()
    assert mask_step["shape"] == [1, big_n, big_n]

    grids = [x for x in ex.steps if x["title"].startswith("self-attention, block")]
    assert len(grids) == len(model.layers) * (h + 1)
    for i, step in enumerate(grids):
        layer, head = divmod(i, h + 1)
        want_grid = (weights[layer].mean(0) if head == 0 else weights[layer][head - 1])[n:]
        shown = table(step)
        hidden = [[v is None for v in row] for row in shown["cells"]]
        assert hidden == (~visible[n:]).tolist()                          # · exactly where the mask hides
        assert want_grid.masked_select(~visible[n:]).eq(0).all()          # and the weight there is 0
        close([[0.0 if v is None else v for v in row] for row in shown["cells"]], want_grid, 2)
        rows_sum_to_one(step)
        assert shown["source"] == n and shown.get("click")
        close(shown["share"], want_grid[:, :n].sum(-1), 2)
        assert step["shape"] == [1, h, big_n, big_n]
    shares = torch.stack([w.mean(0)[n:, :n].sum(-1) for w in weights], dim=1)
    close(table(s["the source's share, block by block"])["cells"], shares, 2)

    probs = logits[0, n:].softmax(-1)
    nxt = table(s["the next token and its top candidates"])
    assert [[float(c.rsplit(" ", 1)[1]) for c in row] for row in nxt["cells"]] == \
        [[round(v, 3) for v in row] for row in probs.topk(3).values.tolist()]
    if not beam:
        assert probs.argmax(-1).tolist() == written                      # greedy writes the argmax
    else:
        titles = [x["title"] for x in ex.steps]
        assert f"the beam's choices, step by step (k = {beam})" in titles
        ranking = table(s["the beam's final ranking"])["cells"]
        assert ranking[0][0].startswith(" ".join(LETTERS[i] for i in written if i > EOS))
    assert ex.steps[-1]["title"] == "the translation"
    assert len(ex.html().encode()) < LIMIT
    means = explore_translation(model, STACK_SOURCE, LETTERS, beam=beam, extra=EXTRA, heads=False)
    assert [x for x in means.steps if x["title"].startswith("self-attention")] == \
        [{**x, "n": x["n"] - i * h} for i, x in enumerate(grids[:: h + 1])]   # the means alone
    assert len(means.html()) < len(ex.html())


def test_decoder_only_on_real_pieces(tatoeba_model):
    """11's pieces and a small untrained decoder-only model on them: the steps speak of pieces and
    the written text is the pieces joined."""
    _, pieces = tatoeba_model
    torch.manual_seed(0)
    model = decoder_only.DecoderOnly(len(pieces.vocab), 16, 2, 32, 1, prefix=True).eval()
    ex = explore_translation(model, "I have a red car.", pieces, extra=3)
    src = torch.tensor([pieces.ids("I have a red car.")])
    want = decoder_only.greedy_decode(model, src, max_len=src.shape[1] + 3)[0, 1:].tolist()
    assert ex.extra["written"] == (want[: want.index(EOS) + 1] if EOS in want else want)
    assert "_ marks the end of a word" in ex.steps[0]["caption"]
    assert f'"{pieces.text(ex.extra["written"])}"' in ex.steps[-1]["caption"]


# --- the HTML ---------------------------------------------------------------------------------

def embedded(page):
    return json.loads(re.search(r'<script type="application/json" class="tx-data">(.*?)</script>', page,
                                re.S).group(1).replace("<\\/", "</"))


@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only"])
def test_the_html_stands_alone(letters_model, stack_models, kind):
    def make():
        return explore(letters_model, "c a b e d") if kind == "encoder-decoder" else \
            stack_explorer(stack_models[True], 3)

    ex = make()
    page = ex._repr_html_()
    assert len(page.encode()) < LIMIT
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)      # nothing to fetch
    assert "require(" not in page and "import " not in page and "ipywidgets" not in page
    assert page.count("<script") == 2 and page.count('<script type="application/json"') == 1
    assert page.startswith(f'<div class="tx-explorer" id="{ex.id}"')
    data = embedded(page)
    assert data["steps"] == json.loads(json.dumps(ex.steps)) and data["id"] == ex.id
    assert re.fullmatch(r"explorer-\d+-[0-9a-f]{4}", ex.id)
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    rules = [r.split("{")[0] for r in re.split(r"}\s*", css) if "{" in r and not r.lstrip().startswith("@")]
    assert all(f"#{ex.id}" in sel for sel in rules if sel.strip() and "--" not in sel)
    assert make().id != ex.id                                                # two on a page do not clash


def test_without_javascript_every_step_is_on_the_page(letters_model, numbers_models, stack_models):
    model, vocab, tokenize, detokenize = numbers_models["words"]
    for ex in (explore(letters_model, "c a b e d"),
               explore_translation(model, "ninety-seven", vocab, tokenize, detokenize, beam=4),
               stack_explorer(stack_models[False], 3)):
        page = re.sub(r"<script.*?</script>", "", ex.html(), flags=re.S)  # what an untrusted notebook shows
        text = html.unescape(re.sub(r"<[^>]+>", " ", page))
        for step in ex.steps:
            assert f"Step {step['n']} of {len(ex.steps)}" in text
            assert step["title"] in text and step["caption"] in text
            assert "(" + ", ".join(map(str, step["shape"])) + ")" in text
        assert not re.search(r"<li[^>]*hidden", page)                     # no step hidden without the script
        for step in ex.steps:                                             # every number of every table
            for t in step["tables"]:
                if t["kind"] == "weights":
                    assert all(f"{v:.2f}" in text for row in t["cells"] for v in row if v is not None)
                if "share" in t:
                    assert "on the source" in text and all(f"{v:.2f}" in text for v in t["share"])


# --- in a browser -------------------------------------------------------------------------------

def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def open_in_chromium(tmp_path, body, width):
    """The probe's record and the console's lines for a page holding body, opened width pixels
    wide: in a frame of that width (headless Chromium lays a window out at least 500 pixels wide)."""
    page = tmp_path / "page.html"
    errors = ("<script>window.__explorerErrors=[];window.addEventListener('error',function(e){"
              "window.__explorerErrors.push(String(e.message))});</script>")
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' "
                    f"content='width=device-width, initial-scale=1'>{errors}</head><body>{body}"
                    f"<script>{PROBE.read_text()}</script></body></html>", encoding="utf-8")
    frame = tmp_path / f"frame_{width}.html"
    frame.write_text(f"""<!doctype html><html><body style="margin:0">
<iframe id="f" src="page.html" style="width:{width}px;height:800px;border:0"></iframe>
<script>(function copy() {{
  var inner = document.getElementById("f").contentDocument;
  var seen = inner && inner.getElementById("explorer-probe");
  if (!seen) {{ setTimeout(copy, 50); return; }}
  var out = document.createElement("pre"); out.id = "explorer-probe"; out.textContent = seen.textContent;
  document.body.appendChild(out);
}})();</script></body></html>""", encoding="utf-8")
    run = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0",
                          "--window-size=1280,900", "--virtual-time-budget=5000", "--dump-dom",
                          frame.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120)
    found = re.findall(r'<pre id="explorer-probe"[^>]*>(.*?)</pre>', run.stdout, re.S)
    assert found, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    return json.loads(html.unescape(found[-1])), console


def same(shown, step):
    return (len(shown) == 1 and shown[0]["n"] == step["n"] and shown[0]["caption"] == step["caption"]
            and shown[0]["title"] == step["title"] and shown[0]["phase"] == step["phase"]
            and shown[0]["shape"] == "(" + ", ".join(map(str, step["shape"])) + ")")


def driven_failures(seen):
    """What went wrong when tests/explorer_probe.js drove one explorer (its record): every step
    reached by Next, the arrow keys and the slider, each showing its stored number, title, phase,
    shape and caption; the buttons at the ends disabled; the address fragment; the phase buttons;
    no element beyond the screen's edge; at most 720 pixels tall."""
    steps, bad = seen["data"]["steps"], []
    if not seen["live"]:
        return ["the script did not turn it into a stepper"]
    for how, shown, want in (("Next", seen["next"], steps), ("the left key", seen["keysBack"], steps[-2::-1]),
                             ("the right key", seen["keysForward"], steps[1:]),
                             ("the slider", seen["slider"], steps[::-1])):
        if len(shown) != len(want):
            bad.append(f"by {how}: {len(shown)} steps reached, not {len(want)}")
        bad += [f"by {how}: step {step['n']} shows {got}" for got, step in zip(shown, want, strict=False)
                if not same(got, step)]
    if not (seen["nextDisabledAtEnd"] and seen["prevDisabledAtStart"]):
        bad.append("Next or Previous is not disabled at the end")
    if seen["hashes"][1:] != [f"#{seen['id']}-step-{i}" for i in range(2, len(steps) + 1)]:
        bad.append(f"the address fragments are {seen['hashes'][:3]}...")
    bad += [f"the phase button {name} shows {shown}" for name, shown in seen["phases"]
            if len(shown) != 1 or shown[0]["phase"] != name]
    if seen["wide"]:
        bad.append(f"wider than the screen: {sorted(set(seen['wide']))[:5]}")
    if seen["tallest"] > 720:
        bad.append(f"{seen['tallest']:.0f} px tall")
    return bad


@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed here "
                    "(apt-get install chromium): the explorer was not opened in a browser")
def test_in_chromium(tmp_path, letters_model, numbers_models, stack_models):
    model, vocab, tokenize, detokenize = numbers_models["words"]
    one = explore(letters_model, "c a b e d")
    two = explore_translation(model, "ninety-seven", vocab, tokenize, detokenize, beam=4)
    three = stack_explorer(stack_models[True], 3)                       # a decoder-only model
    for width in (1280, 390):
        result, console = open_in_chromium(tmp_path, one.html() + two.html() + three.html(), width)
        assert not console and not result["errors"], (console, result["errors"])
        assert result["width"] == width
        first, second, third = result["explorers"]
        assert len(first["data"]["steps"]) == 14 and len(second["data"]["steps"]) == len(two.steps)
        assert len(third["data"]["steps"]) == len(three.steps)
        failures = [driven_failures(e) for e in (first, second, third)]
        assert not any(failures), failures
        assert first["click"]["spans"] == 5 and first["click"]["reads"].startswith(first["click"]["row"])
        # the decoder-only view's first clickable row is the separator's: it reads the whole prefix,
        # the source's 5 tokens marked, and says its share on the source
        grid = next(s for s in three.steps if s["n"] == third["click"]["step"])
        assert third["click"]["spans"] == 5 + 1 and third["click"]["sources"] == 5
        assert third["click"]["reads"].endswith(f"{table(grid)['share'][0]:.2f} of it on the source")
