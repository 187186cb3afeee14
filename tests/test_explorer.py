"""helpers.explorer: the numbers it shows are the model's own, and its HTML stands alone.

The models are the shipped ones (05's reversal model, 09's two, 11's); every assertion is a truth of
any model (a shown number equals the tensor the model computes, a row of weights sums to 1, the
written tokens are what greedy decoding or beam search writes), so the tests hold for retrained
checkpoints. One test opens an explorer in headless Chromium where Chromium is installed.
"""

import html
import json
import pathlib
import re
import shutil
import subprocess

import pytest
import torch

from helpers import bpe
from helpers.decoding import beam_search, greedy_decode
from helpers.explorer import LETTERS, PHASES, explore, explore_translation
from helpers.model import keep_attention_weights
from helpers.tasks import numbers, reversal, tatoeba

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


# --- the HTML ---------------------------------------------------------------------------------

def embedded(page):
    return json.loads(re.search(r'<script type="application/json" class="tx-data">(.*?)</script>', page,
                                re.S).group(1).replace("<\\/", "</"))


def test_the_html_stands_alone(letters_model):
    ex = explore(letters_model, "c a b e d")
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
    assert explore(letters_model, "c a b e d").id != ex.id                  # two on a page do not clash


def test_without_javascript_every_step_is_on_the_page(letters_model, numbers_models):
    model, vocab, tokenize, detokenize = numbers_models["words"]
    for ex in (explore(letters_model, "c a b e d"),
               explore_translation(model, "ninety-seven", vocab, tokenize, detokenize, beam=4)):
        page = re.sub(r"<script.*?</script>", "", ex.html(), flags=re.S)  # what an untrusted notebook shows
        text = html.unescape(re.sub(r"<[^>]+>", " ", page))
        for step in ex.steps:
            assert f"Step {step['n']} of {len(ex.steps)}" in text
            assert step["title"] in text and step["caption"] in text
            assert "(" + ", ".join(map(str, step["shape"])) + ")" in text
        assert not re.search(r"<li[^>]*hidden", page)                     # no step hidden without the script


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
def test_in_chromium(tmp_path, letters_model, numbers_models):
    model, vocab, tokenize, detokenize = numbers_models["words"]
    one = explore(letters_model, "c a b e d")
    two = explore_translation(model, "ninety-seven", vocab, tokenize, detokenize, beam=4)
    for width in (1280, 390):
        result, console = open_in_chromium(tmp_path, one.html() + two.html(), width)
        assert not console and not result["errors"], (console, result["errors"])
        assert result["width"] == width
        first, second = result["explorers"]
        assert len(first["data"]["steps"]) == 14 and len(second["data"]["steps"]) == len(two.steps)
        assert not driven_failures(first) and not driven_failures(second), \
            (driven_failures(first), driven_failures(second))
        assert first["click"]["spans"] == 5 and first["click"]["reads"].startswith(first["click"]["row"])
