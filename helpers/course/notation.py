"""The paper's symbols as the course uses them: one table, one meaning per symbol.

Each row: the symbol (LaTeX), what it means, its value in the paper's base model and in
the course's tiny model (notebook 05's reversal model; None where a symbol has no one
value), the notebook and the section that introduce it (the heading's title, without its
number), the ways the text writes it (``forms``, LaTeX) and, for a symbol that another
meaning could take over, the only places it may be written (``only_in``: "NN" for a whole
notebook, "NN:Title" for the section or subsection whose title starts so). ``REUSES`` lists
the symbols the course deliberately writes with a second meaning, and where; ``TEXT_CLASHES``
and ``CODE_CLASHES`` the phrases that give a symbol another meaning without a formula.

The website's notation page is made from these tables, and ``tests/test_notation.py`` checks
them against the notebooks: each value against the code; each symbol written first in the
section that introduces it (cut at the headings; a notebook's first cell, its title and
learning goals, does not count), never before it; and nowhere outside its places. The tour
(``PREVIEWS``, notebook 00) comes first but introduces nothing: it shows the whole model with the
symbols of the notebooks that explain them, and links there; so it is not where a symbol is
"written first", but it may not give a symbol another meaning either. How a
symbol is found: every formula between $ signs is normalised (spacing, ``\\text{...}`` and
one-character subscripts' braces removed, Greek letters of the prose written as commands),
and a form is found where no letter, ``_``, ``^`` or ``\\`` sticks to it: $k$ is found in
$PE(pos+k)$, not in $d_k$, $k_{\\text{top}}$ or $\\text{token}$.
"""

import pathlib
import re
from collections import namedtuple

import nbformat

from helpers import course

Symbol = namedtuple("Symbol", "tex meaning base tiny notebook section forms only_in",
                    defaults=((), None))
Reuse = namedtuple("Reuse", "form meaning places")

ALL = [
    Symbol(r"d_{\text{model}}", "width of every token vector, in every layer", 512, 64,
           "01_positions", "What you already know"),
    Symbol(r"E", "the embedding table, one row per token; also the tied output layer", None, None,
           "01_positions", "The input: scaled embedding plus position", ("E",)),
    Symbol(r"pos", "a position in the sequence (a row of the position table: PE(pos))", None, None,
           "01_positions", "The input: scaled embedding plus position", ("pos",)),
    Symbol(r"PE(pos,\,2i),\ PE(pos,\,2i+1)",
           "the sinusoidal position table: the sine and cosine of pos divided by 10000 to the power "
           "2i/d_model", None, None, "01_positions", "The input: scaled embedding plus position", ("PE",)),
    Symbol(r"i", "a column pair of the position table (columns 2i and 2i + 1)", None, None,
           "01_positions", "Sinusoidal positions", ("2i",)),
    Symbol(r"n", "number of tokens in a sequence", None, None,
           "01_positions", "Sinusoidal positions", ("n",)),
    Symbol(r"\lambda_i", "the wavelength of pair i, in positions: 2π · 10000^(2i/d_model)", None, None,
           "01_positions", "Wavelengths", (r"\lambda_i",)),
    Symbol(r"\pi", "the circle constant, 3.14159...", None, None, "01_positions", "Wavelengths", (r"\pi",)),
    Symbol(r"\omega,\ \omega_i", "the frequency of pair i: 1 / 10000^(2i/d_model)", None, None,
           "01_positions", "Why waves", (r"\omega",)),
    Symbol(r"k", "a position offset: PE(pos + k) is PE(pos) with every pair turned by ω_i k", None, None,
           "01_positions", "Why waves", ("k",),
           ("01", "07:Back to the pair")),
    Symbol(r"R(k)", "the rotation of every sine/cosine pair by ω_i k", None, None,
           "01_positions", "Why waves", ("R(",), ("01",)),
    Symbol(r"y", "a vector of the decoder's output (one position); 04's decoder input", None, None,
           "01_positions", "Why multiply the embedding", ("y",)),
    Symbol(r"\mu,\ \sigma^2", "the mean and the variance (divided by d) of a token's numbers", None, None,
           "02_layer_norm", "The formula", (r"\mu", r"\sigma^2")),
    Symbol(r"\gamma,\ \beta", "LayerNorm's learned gain and shift, one per feature", None, None,
           "02_layer_norm", "The formula", (r"\gamma",)),
    Symbol(r"\epsilon", "LayerNorm's (and RMSNorm's) small constant under the square root", 1e-5, 1e-5,
           "02_layer_norm", "The formula", (r"\epsilon",), ("02", "03", "04", "06")),
    Symbol(r"h", "number of attention heads", 8, 4,
           "03_encoder_layer", "What you already know", ("h",)),
    Symbol(r"d_k", "width of one head's queries and keys: d_model / h", 64, 16,
           "01_positions", "What you already know", ("d_k",)),
    Symbol(r"Q,\ K,\ V", "queries, keys and values: the rows each token asks with, is found by, gives",
           None, None, "03_encoder_layer", "What you already know", ("Q", "K", "V")),
    Symbol(r"W^Q,\ W^K,\ W^V,\ W^O", "the projections into heads and back out of them", None, None,
           "01_positions", "Why waves", ("W^Q",)),
    Symbol(r"N", "number of layers in the encoder, and in the decoder", 6, 2,
           "03_encoder_layer", "One encoder layer, two sublayers", ("N",)),
    Symbol(r"d_{ff}", "width of the feed-forward layer's hidden layer", 2048, 256,
           "03_encoder_layer", "What you already know", ("d_{ff}",)),
    Symbol(r"w", "the width of a convolution's kernel (the positions one filter reads)", None, None,
           "03_encoder_layer", "Why self-attention", ("w",),
           ("03:Why self-attention", "03:The feed-forward layer", "03:Check your understanding")),
    Symbol(r"r", "the neighbourhood of restricted self-attention: the positions each one reads (the "
           "paper's Table 1)", None, None, "03_encoder_layer", "Why self-attention", ("r",),
           ("03:Why self-attention",)),
    Symbol(r"P_{drop}", "dropout rate", 0.1, 0.1, "03_encoder_layer", "Dropout", ("P_{drop}",)),
    Symbol(r"M_{\text{enc}}", "the encoder's output (the memory), read by every decoder layer's "
           "cross-attention", None, None, "04_cross_attention", "The decoder layer", (r"M_{\text{enc}}",)),
    Symbol(r"\text{mask}", "an additive mask: 0 where a score is kept, −∞ where it is hidden", None, None,
           "04_cross_attention", "The decoder layer", (r"\text{mask}",)),
    Symbol(r"Y", "the decoder's vectors after its masked self-attention (cross-attention's queries)",
           None, None, "04_cross_attention", "Cross-attention", ("Y",), ("04",)),
    Symbol(r"n_{\text{src}},\ n_{\text{tgt}}", "number of source tokens and of target positions",
           None, None, "04_cross_attention", "The padding mask", (r"n_{\text{src}}", r"n_{\text{tgt}}")),
    Symbol(r"n_{\text{vocab}}", "number of tokens in the vocabulary (shared by source and target)",
           37_000, 13, "04_cross_attention", "The output layer", (r"n_{\text{vocab}}",)),
    Symbol(r"\beta_1,\ \beta_2", "Adam's decay rates of its moving averages", (0.9, 0.98), (0.9, 0.98),
           "05_training_recipe", "Adam with the paper's settings", (r"\beta_1",)),
    Symbol(r"\epsilon_{\text{Adam}}", "Adam's small constant in the denominator", 1e-9, 1e-9,
           "05_training_recipe", "Adam with the paper's settings", (r"\epsilon_{\text{Adam}}",)),
    Symbol(r"g_t,\ m_t,\ v_t", "Adam at step t: the gradient and its two moving averages (of g and g²)",
           None, None, "05_training_recipe", "Adam with the paper's settings", ("g_t", "m_t", "v_t")),
    Symbol(r"\epsilon_{ls}", "label smoothing: the probability spread away from the right token", 0.1, 0.1,
           "05_training_recipe", "Adam with the paper's settings", (r"\epsilon_{ls}",)),
    Symbol(r"warmup\_steps", "steps of the learning rate's linear rise", 4000, 400,
           "05_training_recipe", "The warmup schedule", (r"warmup\_steps",)),
    Symbol(r"lrate", "the learning rate at a step", None, None,
           "05_training_recipe", "The warmup schedule", ("lrate",)),
    Symbol(r"q_{\text{ls}}(j)", "the label-smoothed target: the probability the loss asks for token j",
           None, None, "05_training_recipe", "Label smoothing", (r"q_{\text{ls}}",)),
    Symbol(r"d_v", "width of one head's values (d_model / h, like d_k)", 64, 16,
           "05_training_recipe", "What each design choice is worth", ("d_v",)),
    Symbol(r"PPL", "perplexity: e to the mean loss per target token", None, None,
           "05_training_recipe", "Perplexity", ("PPL",)),
    Symbol(r"n_{\text{ctx}}", "a decoder-only model's context length (GPT-2: 1,024 positions)", None, None,
           "06_parameter_count", "GPT-2 small", (r"n_{\text{ctx}}",)),
    Symbol(r"h_{kv}", "number of key/value heads (grouped-query attention, later models)", None, None,
           "06_parameter_count", "Bytes", ("h_{kv}",)),
    Symbol(r"\rho", "a permutation of the positions (the shuffle test)", None, None,
           "07_masks_and_shuffle_test", "The shuffle test", (r"\rho",)),
    Symbol(r"lp(\hat{y}),\ \alpha", "the length penalty ((5 + |ŷ|) / 6)^α and its exponent", 0.6, 0.6,
           "08_decoding", "The score of a hypothesis", ("lp",)),
    Symbol(r"\hat{y}_1 \dots \hat{y}_t", "the tokens of a decoded answer (a hypothesis)", None, None,
           "08_decoding", "The score of a hypothesis", (r"\hat{y}",)),
    Symbol(r"n_{\text{beam}}", "beam size", 4, 4, "08_decoding", "The score of a hypothesis",
           (r"n_{\text{beam}}",)),
    Symbol(r"T", "sampling temperature: the scores are divided by T before the softmax", None, None,
           "08_decoding", "Sampling", ("T",), ("08:Sampling", "08:Recap", "08:Limits")),
    Symbol(r"k_{\text{top}}", "top-k sampling: how many of the largest logits are kept", None, None,
           "08_decoding", "Sampling", (r"k_{\text{top}}",)),
    Symbol(r"p_n", "BLEU's modified n-gram precision", None, None,
           "09_translation", "BLEU", ("p_n",)),
    Symbol(r"\ell_{\text{hyp}},\ \ell_{\text{ref}}", "BLEU: the hypothesis's and the reference's length",
           None, None, "09_translation", "BLEU", (r"\ell_{\text{hyp}}", r"\ell_{\text{ref}}")),
    Symbol(r"BP", "BLEU's brevity penalty", None, None, "09_translation", "BLEU", ("BP",)),
    Symbol(r"W", "world size: the number of processes (workers) that train together", None, None,
           "10", None, ("W",), ("10",)),
    Symbol(r"n_{\text{micro}}", "number of micro-batches whose gradients are added up before a step",
           None, None, "10", None, (r"n_{\text{micro}}",)),
]

# Symbols written with a second meaning on purpose, and where (rendered on the notation page).
REUSES = [
    Reuse("k", "a key vector beside a query vector q (the paper's q · k, §3.2.1), or the key token of an "
          "attention table", ("03:Multi-head attention", "03:Your turn 2", "03:Recap",
                              "03:Dot products or additive attention", "06:What changed",
                              "06:Check your understanding", "08:The KV cache", "08:Your turn 3")),
    Reuse("\\epsilon", "Adam's constant, in the paper's own words (05 §1 quotes them, then writes "
          "ε_Adam)", ("05:Adam",)),
    Reuse("v_t", "Adam's second moment, beside v, a value vector: the subscript t marks Adam's", ()),
    Reuse("r", "a worker's rank, 0 to W − 1 (10's shards of unequal size: worker r holds n_r tokens)",
          ("10:Your turn 2",)),
    Reuse("i", "a row, feature or head index in a sum or a table (x_i, row i), beside 01's pair index", ()),
]

# Phrases that give a listed symbol another meaning without writing it in a formula:
# (symbol, regular expression on a markdown chunk's text, what it means there).
TEXT_CLASHES = [
    ("\\pi", r"permutation[^.]{0,60}(\\pi|π)|(\\pi|π)\$?[^.]{0,20}permutation|X_\\pi", "π as a permutation"),
    ("i", r"PE\[i\]|PE\((?:\\text\{)?i[,)]|PE_\{\(i", "i as a position of the table"),
    ("n_{\\text{vocab}}", r"\(B,\s*k,\s*V\)|\bk\s*(?:×|\\times)\s*V\b", "V for the vocabulary size"),
    ("k", r"kernel (?:size|width) \$k|\$k\$[^.]{0,30}kernel", "k as a kernel width"),
    ("M_{\\text{enc}}", r"mask \$M\$|\$M\$[^.]{0,30}mask", "M as a mask"),
]
# In code, h is the number of heads (hidden states are `hidden`): assigning h anything else.
CODE_CLASHES = [
    ("n_{\\text{vocab}}", r"\(B,\s*k,\s*V\)", "V for the vocabulary size"),
    ("h", r"""(?m)^[^#"'\n]*\bh\s*=(?!=)\s*(?![\d\s])(?![\w.]*(?:num_heads|heads|\.h)\b)\S""",
     "h as hidden states"),
]


def _resolved(rows):
    stems = {stem[:2]: stem for stem, *_ in course.NOTEBOOKS}
    out = []
    for row in rows:
        row = row._replace(forms=row.forms or (row.tex,))
        stem = stems.get(row.notebook[:2])
        if stem is not None:
            out.append(row._replace(notebook=stem))
    return out


SYMBOLS = _resolved(ALL)

# Notebooks that show the whole model before the notebooks that introduce its symbols (00, the tour):
# a symbol written there does not count as written first; its meaning there is checked like anywhere.
PREVIEWS = ("00",)
"""The rows whose notebook is in the course (notebook 10's rows wait for notebook 10)."""
# ---------------------------------------------------------------------------------------------
# Reading the course's text: what tests/test_notation.py and tests/test_references.py check.

GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "ε": r"\epsilon", "λ": r"\lambda",
         "μ": r"\mu", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "ω": r"\omega", "²": "^2"}
MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
WRAPPERS = re.compile(r"\\(?:text|mathrm|textrm|operatorname|mathit|mathbf|boldsymbol)\s*\{([^{}]*)\}")
SPACING = re.compile(r"\\[,;:! ]|\\q?quad|\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])|\s+")
HEADING = re.compile(r"^(#{1,3}) +(.+?)\s*$", re.M)

Chunk = namedtuple("Chunk", "notebook cell section subsection text")


def normalise(tex):
    """One way of writing a formula: no spacing, \\text{...} unwrapped, one-character sub- and
    superscripts without braces, Greek letters as commands (μ becomes \\mu)."""
    tex = tex.replace("\\varepsilon", "\\epsilon")
    for letter, command in GREEK.items():
        tex = tex.replace(letter, command + " ")
    previous = None
    while previous != tex:
        previous, tex = tex, WRAPPERS.sub(r"\1", tex)
    tex = re.sub(r"(\\[A-Za-z]+|[_^]\\?[A-Za-z0-9])\s+(?=[A-Za-z])", r"\1{}", tex)  # \times V, not \timesV
    return re.sub(r"([_^])\{(\\?[A-Za-z0-9])\}(?![A-Za-z])", r"\1\2", SPACING.sub("", tex))


def written(markdown):
    """The symbols a markdown text writes: its formulas (between $ signs), normalised, and the
    Greek letters of its prose (with a subscript or ², if any)."""
    formulas = [normalise(a or b) for a, b in MATH.findall(markdown)]
    prose = MATH.sub(" ", markdown)
    return formulas + [normalise(g) for g in re.findall(r"[αβγελμπρσω](?:²|_\{?\w+\}?)?", prose)]


def pattern(form):
    """A regular expression that finds a symbol written as form in a normalised formula: $k$ is
    found in $PE(pos+k)$, not in $d_k$, $k_{top}$ or \\text{token}."""
    form = normalise(form)
    head = r"(?<![A-Za-z\\_^])" if form[0].isalpha() else r"(?<![_^])" if form[0] == "\\" else ""
    tail = r"(?![A-Za-z_]|\^\{?[A-Za-z])" if form[-1].isalnum() or form[-1] == "}" else ""
    return re.compile(head + re.escape(form) + tail)


def chunks(nb, stem):
    """A notebook's markdown, cut at its headings: (notebook, cell, section, subsection, text).
    The section is the ## heading above the text, without its number ("The formula" for
    "## 1. The formula"), the subsection the ### heading within it, or ""."""
    section = subsection = ""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        start = 0
        for match in HEADING.finditer(cell.source):
            out.append(Chunk(stem, i, section, subsection, cell.source[start:match.start()]))
            title = re.sub(r"^\d+\.\s+", "", match.group(2))
            if len(match.group(1)) <= 2:
                section, subsection = title, ""
            else:
                subsection = title
            start = match.end()
        out.append(Chunk(stem, i, section, subsection, cell.source[start:]))
    return [c for c in out if c.text.strip()]


def solution_notebooks(root=None):
    """(stem, notebook) of every solution notebook that exists, in the course's order."""
    root = pathlib.Path(root or pathlib.Path(__file__).resolve().parents[2])
    for stem, *_ in course.NOTEBOOKS:
        path = root / "solutions" / f"{stem}.ipynb"
        if path.exists():
            yield stem, nbformat.read(path, as_version=4)


def course_chunks(root=None):
    """Every notebook's chunks, in the course's order (helpers.course.NOTEBOOKS)."""
    return [chunk for stem, nb in solution_notebooks(root) for chunk in chunks(nb, stem)]


def in_section(chunk, notebook, section):
    """True when chunk lies in the named section (or subsection) of the notebook."""
    return chunk.notebook == notebook and (chunk.section.startswith(section)
                                           or chunk.subsection.startswith(section))


def in_place(chunk, place):
    """True when chunk lies in place: "NN" (a notebook) or "NN:Title" (a section or subsection
    whose title starts with Title)."""
    number, _, title = place.partition(":")
    return chunk.notebook[:2] == number and (not title or chunk.section.startswith(title)
                                             or chunk.subsection.startswith(title))


# Another text's notation, quoted: "Table 1 of the paper (which writes $k$ for the width)".
QUOTED = re.compile(r"\b(?:writes|wrote|calls it|named) \$[^$]+\$")


def writes(chunk, form):
    """True when the chunk's formulas (or its prose's Greek letters) write form; a symbol quoted
    from another text ("the paper writes $k$ for the width") is not the course writing it."""
    found = pattern(form)
    return any(found.search(f) for f in written(QUOTED.sub(" ", chunk.text)))


def first_written(symbol, text=None):
    """The first chunk of the course (a notebook's first cell and the PREVIEWS aside) that writes
    the symbol."""
    for chunk in text if text is not None else course_chunks():
        if (chunk.cell != 0 and chunk.notebook[:2] not in PREVIEWS
                and any(writes(chunk, form) for form in symbol.forms)):
            return chunk
    return None


def introduces(symbol, chunk):
    """True when chunk lies in the section the table names for the symbol."""
    if symbol.section is None:
        return chunk.notebook == symbol.notebook
    return in_section(chunk, symbol.notebook, symbol.section)


def where(chunk):
    return f"{chunk.notebook[:2]} {chunk.section or '(top)'}" + (f" / {chunk.subsection}" if chunk.subsection
                                                                 else "") + f" (cell {chunk.cell})"


def clashes(symbol, text=None, code=None):
    """Where the course gives the symbol another meaning: written outside its places (the
    introducing section, ``only_in`` and the ``REUSES`` of the form), or a phrase of
    TEXT_CLASHES / CODE_CLASHES. A list of one line per clash."""
    text = text if text is not None else course_chunks()
    found = []
    if symbol.only_in is not None:
        for form in symbol.forms:
            places = [*symbol.only_in, *(p for r in REUSES if r.form == form for p in r.places)]
            for chunk in text:
                if (chunk.cell != 0 and writes(chunk, form) and not introduces(symbol, chunk)
                        and not any(in_place(chunk, p) for p in places)):
                    found.append(f"${form}$ in {where(chunk)}")
    for tex, regex, meaning in TEXT_CLASHES:
        if tex == symbol.tex:
            for chunk in text:
                for match in re.finditer(regex, chunk.text):
                    found.append(f"{meaning}: {match.group(0)!r} in {where(chunk)}")
    for tex, regex, meaning in CODE_CLASHES:
        if tex == symbol.tex:
            for stem, i, source in code if code is not None else course_code():
                for match in re.finditer(regex, source):
                    found.append(f"{meaning}: {match.group(0)!r} in {stem[:2]} code cell {i}")
    return found


def course_code(root=None):
    """(notebook, cell, source) of every code cell of the course, the setup cell aside."""
    out = []
    for stem, nb in solution_notebooks(root):
        out += [(stem, i, c.source) for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and "bootstrap" not in c.metadata.get("tags", [])]
    return out


def report(root=None):
    """Each symbol's problems: not written first where the table says, or another meaning."""
    text, code = course_chunks(root), course_code(root)
    lines = []
    for symbol in SYMBOLS:
        first = first_written(symbol, text)
        if first is None:
            lines.append(f"${symbol.tex}$: never written")
        elif not introduces(symbol, first):
            lines.append(f"${symbol.tex}$: first written in {where(first)}, "
                         f"not in {symbol.notebook[:2]} {symbol.section}")
        lines += [f"${symbol.tex}$: {c}" for c in clashes(symbol, text, code)]
    return lines


if __name__ == "__main__":
    import sys

    problems = report(sys.argv[1] if len(sys.argv) > 1 else None)
    print("\n".join(problems) or "no clash")
    print(f"{len(problems)} problems")
