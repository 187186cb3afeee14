"""The course's website: a view of the one source, built offline with Jupyter Book 1.

    python -m helpers.course.site              # build into _site/ (open _site/index.html)
    python -m helpers.course.site --out DIR    # somewhere else

The pages are prepared in a temporary folder, never executed: each notebook's page from its
solution copy with its stored outputs (setup cell and import guard removed; each exercise's and
each question's answer, its check's output and its explanation folded together behind one
button; each figure's alt text from its "Figure description."; buttons that open the exercise
copy), the landing page from the README (introduction, table, running it at home, licence), the
notation page from ``helpers/course/notation.py``, and two zip files of every exercise and solution
notebook. ``website/`` holds the configuration, the style, the script and the link-preview picture
(``python -m helpers.course.site --og-image`` draws it); MathJax is served from the site (a copy from the
``django-static-mathjax`` package), on the pages that have formulas. This module is also the Sphinx
extension the build loads (``setup``): page titles, meta tags and link previews, the folds' labels,
each page's scripts (no Thebe; MathJax, toggle buttons and tabs only where the page uses them).
After the build, ``finish`` gives each page one viewport tag and the theme's few icons without its
1.5 MB icon script, and writes the text each search result's snippet is taken from.
"""


import argparse
import copy
import datetime
import html
import html.parser
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zipfile

import nbformat
import yaml

from helpers import course
from helpers.course import notation, notebooks

ROOT = notebooks.ROOT
CONFIG = ROOT / "website"
OUT = ROOT / "_site"
PAPER_URL = "https://arxiv.org/abs/1706.03762"
LICENCE = ("The code (the `helpers` package, the tests and the notebooks' code cells) is under the "
           "[MIT licence]({repo}/blob/{ref}/LICENSE); the text and the figures are under "
           "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/).")
# a notebook's data under a licence of its own, named wherever the site gives the licence once
# that notebook is in course.NOTEBOOKS (its number -> the line)
DATA_LICENCES = {
    "11": ("Notebook 11's sentences come from the [Tatoeba Project](https://tatoeba.org), under "
           "[CC BY 2.0 FR](https://creativecommons.org/licenses/by/2.0/fr/), paired by "
           "[manythings.org/anki](https://www.manythings.org/anki/)."),
}
OG_IMAGE = "og-image.png"  # website/assets/: the link-preview picture, 1200 x 630
OG_SIZE = (1200, 630)
OG_ALT = ("The course's title, what it is, and the table of sinusoidal positions of notebook 01 in red and "
          "blue stripes.")
# what a fold holds -> its button's label when closed and when open
LABELS = {"question": ("Show the answer", "Hide the answer"),
          "exercise": ("Show a solution", "Hide the solution")}
MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y"]
# files of the theme a reader never loads: source maps and the theme's Jinja macros
UNSHIPPED = ["*.map", "webpack-macros.html", "sbt-webpack-macros.html", "sphinx-thebe.*"]
ZIPS = {"exercises": (notebooks.EXERCISES, "the exercise copies (answers left to you, no outputs)"),
        "solutions": (notebooks.SOLUTIONS, "the solution copies (answers and outputs)")}


def fenced(directive, title, body, options=""):
    """A MyST directive around body, with a fence longer than any backtick run inside it."""
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    return f"{fence}{{{directive}}} {title}\n{options}\n{body.strip()}\n{fence}"


def buttons(stem):
    """The row of buttons under a notebook page's title: the exercise copy first."""
    return fenced("container", "course-buttons", "\n".join([
        f"**Run the exercise copy:** [Open in Colab]({course.colab_url('notebooks', stem)}) "
        f"[Open in Kaggle]({course.kaggle_url('notebooks', stem)}) "
        f"{{download}}`Download .ipynb <exercises/{stem}.ipynb>`",
        "",
        f"**Or the solution copy (this page):** [Colab]({course.colab_url('solutions', stem)}) "
        f"[Kaggle]({course.kaggle_url('solutions', stem)})",
        "",
        f"**Improve this page:** [its source]({course.REPO_URL}/blob/{course.REPO_REF}/solutions/"
        f"{stem}.ipynb) "
        f"[report an issue]({course.REPO_URL}/issues/new)",
    ]))


def without_guard(source):
    return source[len(notebooks.GUARD):] if source.startswith(notebooks.GUARD) else source


def plain_tex(tex):
    """A formula's TeX as plain text, for an alt text: $\\sqrt{d_{\\text{model}}}$ -> √d_model."""
    symbols = {"sqrt": "√", "times": "×", "cdot": "·", "ldots": "…", "dots": "…", "cdots": "⋯", "to": "→",
               "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "le": "≤", "leq": "≤", "ge": "≥",
               "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "infty": "∞", "pm": "±", "ell": "ℓ",
               "sum": "Σ", "prod": "Π", "partial": "∂", "nabla": "∇", "in": "∈", "odot": "⊙", "mid": "|",
               "top": "⊤", "quad": " ", "qquad": " "}
    symbols.update(zip("alpha beta gamma delta epsilon varepsilon lambda mu pi rho sigma tau theta omega phi "
                       "varphi Phi eta nu xi zeta kappa chi psi Omega Sigma Delta".split(),
                       "αβγδεελμπρστθωφφΦηνξζκχψΩΣΔ", strict=True))
    named = {"log", "ln", "exp", "sin", "cos", "tanh", "max", "min", "arg", "softmax"}  # written as words
    before = None
    while before != tex:                                    # from the innermost braces out
        before = tex
        tex = re.sub(r"\\(?:text|mathrm|mathbf|operatorname|textbf|mathit|mathcal|bar|hat)\{([^{}]*)\}",
                     r"\1", tex)
        tex = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: "√" + (m[1] if len(m[1]) < 2 or re.fullmatch(
            r"\w+(_\w+)?", m[1]) else f"({m[1]})"), tex)
        tex = re.sub(r"\\t?frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", tex)
    tex = re.sub(r"\\([A-Za-z]+)", lambda m: symbols.get(m[1], m[1] if m[1] in named else ""), tex)
    return re.sub(r"[{}]|\\[,;! ]", "", tex).strip()


def plain_markdown(text):
    """What a markdown line says, without its markup: for alt texts."""
    text = re.sub(r"\$\$(.+?)\$\$|\$([^$]+)\$", lambda m: plain_tex(m[1] or m[2]), text, flags=re.S)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.sub(r"`|\*\*|(?<!\w)\*|\*(?!\w)", "", text).split())


DESCRIPTION = "**Figure description.**"


def first_sentence(description):
    """The first sentence of a "Figure description." cell, as plain text: a figure's alt text."""
    text = plain_markdown(description.removeprefix(DESCRIPTION))
    found = re.match(r"(.+?[.!?])(?=\s+[A-Z(\"“]|\s*$)", text)
    return found[1] if found else text


def figure_alts(cells):
    """Each figure cell's index -> the first sentence of the "Figure description." after it (the
    paragraph that starts with those words, in a markdown cell before the next figure)."""
    alts, waiting = {}, None
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs):
            waiting = i
        elif cell.cell_type == "markdown" and waiting is not None:
            found = re.search(r"(?:^|\n\n)(" + re.escape(DESCRIPTION) + ".*)", cell.source, re.S)
            if found:  # the paragraph that starts "Figure description."
                alts[waiting], waiting = first_sentence(found[1]), None
    return alts


def typeset_plain_symbols(source):
    """In a paragraph that typesets $d_{\\text{model}}$, the plain d_model beside it typeset too
    (outside code, formulas and link targets): one spelling per paragraph."""
    def paragraph(text):
        if r"d_{\text{model}}" not in text:
            return text
        parts = re.split(r"(`+[^`]*`+|\$\$.*?\$\$|\$[^$]+\$|\]\([^)\s]*\))", text, flags=re.S)
        for i in range(0, len(parts), 2):  # the even parts are outside code, formulas and links
            parts[i] = re.sub(r"√d_model\b", r"$\\sqrt{d_{\\text{model}}}$", parts[i])
            parts[i] = re.sub(r"(?<![\w\\])d_model\b", r"$d_{\\text{model}}$", parts[i])
        return "".join(parts)
    return "\n\n".join(paragraph(p) for p in source.split("\n\n"))


def code_block(source, output=False):
    return fenced("code-block", "text" if output else "python", source.rstrip("\n"),
                  ":class: course-output" if output else "")


def folded(cells, kind):
    """One fold (a markdown cell) holding an answer's cells in order: code, outputs, text."""
    parts = []
    for cell in cells:
        if cell.cell_type == "markdown":
            parts.append(typeset_plain_symbols(cell.source))
            continue
        parts.append(code_block(without_guard(cell.source)))
        for output in cell.outputs:
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            if output.output_type == "stream":
                text = notebooks.as_terminal_shows(text)
            if text.strip():
                parts.append(code_block(text, output=True))
    fold = nbformat.v4.new_markdown_cell(fenced("dropdown", LABELS[kind][0], "\n\n".join(parts),
                                                f":class-container: course-fold course-{kind}"))
    fold.id = cells[0].get("id", fold.id)
    return fold


def section_kind(heading):
    return "exercise" if re.search(r"your turn", heading, re.I) else "question"


def site_intro(source):
    """The notebook's opening cell as the site shows it: the setup cell is not on the page and the
    page itself is the solution copy."""
    source = re.sub(r"Stuck on an exercise\?\s+Open the solution copy\.",
                    "This page is the solution copy, each answer folded: to run the notebook, open the "
                    "exercise copy with the buttons above.", source)
    return re.sub(r"\(the\s+next\s+cell\s+downloads\s+", "(the notebook's first cell, its setup, downloads ",
                  source)


def notebook_page(nb, stem):
    """The page of one solution notebook: what a reader of the site sees."""
    nb = copy.deepcopy(nb)
    source = [c for c in nb.cells if "bootstrap" not in notebooks.tags(c)]
    alts = figure_alts(source)
    cells, kind, i = [], "question", 0
    while i < len(source):
        cell, tags = source[i], notebooks.tags(source[i])
        if cell.cell_type == "markdown":
            for heading in re.findall(r"^#{1,3} +(.+)$", cell.source, re.M):
                kind = section_kind(heading)
        if {"solution", "solution-only"} & set(tags):
            # the answer, its check and its explanation: one fold, nothing of them shown
            group = [cell]
            while i + len(group) < len(source) and {"check", "solution-only"} & set(
                    notebooks.tags(source[i + len(group)])):
                group.append(source[i + len(group)])
            cells.append(folded(group, kind))
            i += len(group)
            continue
        if cell.cell_type == "code":
            cell.source = without_guard(cell.source).lstrip("\n")
            if not cell.source.strip():
                i += 1
                continue
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and not o.text.strip())]
            for output in cell.outputs:
                if output.output_type == "stream":
                    output.text = notebooks.as_terminal_shows(output.text)
            if i in alts:
                cell.metadata.setdefault("mystnb", {}).setdefault("image", {})["alt"] = alts[i]
        else:
            cell.source = typeset_plain_symbols(cell.source)
        cells.append(cell)
        i += 1
    title, _, rest = cells[0].source.partition("\n")
    cells[0].source = f"{title}\n\n{buttons(stem)}\n{site_intro(rest)}"
    nb.cells = cells
    return nb


def github_anchor(heading):
    """The #anchor GitHub gives a README heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def readme_section(readme, heading):
    """A level-2 section of the README (its heading included), up to the next level-2 heading."""
    found = re.search(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", readme, re.S | re.M)
    if not found:
        raise ValueError(f"the README has no section {heading!r}")
    return found[0].strip()


def zip_name(which):
    return f"original-transformer-{which}.zip"


def downloads_section():
    """The landing page's "Download everything": what each zip holds."""
    n = len(course.NOTEBOOKS)
    links = " and ".join(f"{{download}}`the {which} <downloads/{zip_name(which)}>`" for which in ZIPS)
    return "\n".join([
        "## Download everything", "",
        f"Two zip files hold the course's {n} notebooks: {links}. The exercise zip holds "
        f"{ZIPS['exercises'][1]}, the solution zip {ZIPS['solutions'][1]}; nothing else, "
        "because a notebook needs nothing beside it: its first cell fetches the course's small "
        "`helpers` package (one `git clone`) when it does not find it. To work offline, clone the "
        "repository instead (below)."])


# the README's introduction speaks to learners and maintainers: on the site, a paragraph that
# starts with one of these bold labels is said for a learner only
FOR_LEARNERS = {
    "Will my numbers match?": (
        "Yes, bit for bit, wherever no model is trained and nothing is timed: the formulas and their "
        "small examples, the parameter counts, every check's verdict. A model you train is different: "
        "your CPU rounds floats a little differently from ours and training makes the differences "
        "grow, so each number the text quotes about a trained model comes with the range our own "
        "runs gave, printed beside yours; the cell stops with an error if your run falls outside it."),
}
# plain-text formulas of the README, typeset on the site without MathJax
TYPESET = {"softmax(QKᵀ/√d_k)V": "softmax(<i>QK</i><sup>T</sup>/√<i>d</i><sub><i>k</i></sub>)<i>V</i>"}


HOW_TO = "How to use it:"  # the README's paragraph a learner's first steps come from


def steps(paragraph):
    """A paragraph as a list of steps, one per sentence ("Stuck?" kept with its answer)."""
    sentences = re.split(r"(?<=[.?])\s+(?=[A-Z*])", " ".join(paragraph.split()))
    merged = []
    for sentence in sentences:
        if merged and merged[-1].endswith("?") and len(merged[-1].split()) < 3:
            merged[-1] += " " + sentence
        else:
            merged.append(sentence)
    return "\n".join(f"- {m[0].upper()}{m[1:]}" for m in merged)


def start_here():
    """The first notebook's buttons: where a learner starts."""
    stem, title, _ = course.NOTEBOOKS[0]
    return fenced("container", "course-start", (
        f"**Start here,** with notebook {stem[:2]}, {title}: open its exercise copy in "
        f"[Colab]({course.colab_url('notebooks', stem)}) "
        f"[Kaggle]({course.kaggle_url('notebooks', stem)}) or [read it here](solutions/{stem}.ipynb)."))


def learner_intro(head):
    """The README's introduction (title, paragraphs) as the site says it to a learner: what the
    course is and who it is for, then "How to start" (the README's "How to use it", one step per
    sentence, and where to start), with a short answer to "Will my numbers match?"."""
    paragraphs = []
    for paragraph in head.strip().split("\n\n"):
        label = re.match(r"\*\*([^*]+)\*\*", paragraph)
        if label and label[1] in FOR_LEARNERS:
            paragraph = f"**{label[1]}** {FOR_LEARNERS[label[1]]}"
        elif label and label[1] == HOW_TO:
            paragraph = "\n\n".join(["## How to start", start_here(),
                                      steps(paragraph.removeprefix(label[0]).strip())])
        for plain, typeset in TYPESET.items():
            paragraph = paragraph.replace(plain, typeset)
        paragraphs.append(paragraph)
    return "\n\n".join(paragraphs)


def at_home(readme):
    """The README's "On your own machine" for a learner: the command that opens the course in
    Jupyter and what to know before running it (the test suite and the course's own machines
    are for maintainers)."""
    section = readme_section(readme, "On your own machine")
    kept = []
    for paragraph in section.split("\n### ")[0].split("\n\n"):
        if re.search(r"test suite|\bCI\b", paragraph):
            break
        kept.append(paragraph)
    text = "\n\n".join(kept).replace("from a clone of this repository",
                                      f"from a clone of [the repository]({course.REPO_URL})")
    cpu = re.search(r"`(\S*pip install torch==\S+ --index-url \S+)`", section)
    if cpu:
        text += ("\n\nOn Linux, plain `pip` installs PyTorch's CUDA build, several GB: for the small "
                 f"CPU build, run `{cpu[1]}` after making the `.venv` and before installing the rest.")
    return text


def licence_section(readme):
    """The README's licence, said of the site, and the licence of any data a notebook carries
    (once: the README's own plain sentence about that data gives way to the line with its links)."""
    text = readme_section(readme, "Licence").replace("this README", "this site")
    for number in DATA_LICENCES:
        text = re.sub(rf"\s*Notebook {number}'s data\b[^\n]*(?:\n(?!\n)[^\n]*)*", "", text)
    return "\n\n".join([text.rstrip(), *data_licences()])


def landing_page(readme):
    """The front page, for a learner: what the course is, who it is for, how to start (the
    README's introduction), the notebooks (its table, one card per notebook on a phone), the
    notation, the downloads, running it at home, the licence; the maintainers' part is a link
    to the repository's README."""
    head, tail = readme.split(notebooks.END, 1)
    before, table = head.split(notebooks.START)
    intro, _, notebooks_heading = before.rpartition("\n## ")
    times = tail.split("\n## ")[0].strip().split(";")[0].rstrip(".") + "."
    text = "\n\n".join([
        learner_intro(intro),
        "## " + notebooks_heading.strip(),
        fenced("container", "course-notebooks", table),
        times,
        "The [notation](notation.md) page lists the paper's symbols as the course uses them, with "
        "their values in the base and the tiny model.",
        downloads_section(),
        at_home(readme),
        licence_section(readme),
        "## For maintainers\n\nHow the course is made and checked (its tests, its runs on other CPUs "
        "and on Colab's and Kaggle's PyTorch, this website's build) is in the repository's "
        f"[README]({course.REPO_URL}#for-contributors).",
    ]) + "\n"
    text = re.sub(r"<!--.*?-->\n?", "", text)
    text = text.replace("arXiv:1706.03762", f"[arXiv:1706.03762]({PAPER_URL})", 1)
    blob = f"{course.REPO_URL}/blob/{course.REPO_REF}"
    # a badge image inside a link becomes a plain-text link: [![Open in Colab](svg)](url) -> [Colab](url)
    text = re.sub(r"\[!\[(?:Open in )?([^\]]*)\]\([^)]*\)\]\(([^)]*)\)", r"[\1](\2)", text)
    text = re.sub(r"\bbadges\b", "buttons", text)

    def site_link(link):
        """A notebook's copy in the repository becomes its page; another relative link, the file
        in the repository."""
        target = link[1]
        if re.fullmatch(r"(notebooks|solutions)/[^/]+\.ipynb", target):
            return f"]({target.split('/')[1]})"
        if re.match(r"https?:|#", target) or target in ("notation.md",) or target.startswith("downloads/"):
            return link[0]
        return f"]({blob}/{target})"
    text = re.sub(r"\]\(([^)\s]+)\)", site_link, text)
    # a README section the site does not have: point at it in the repository's README
    return re.sub(r'"([^"]+)" (below|in the contributor part)',
                  lambda m: f'"{m[1]}" in the repository\'s [README]({course.REPO_URL}'
                            f'#{github_anchor(m[1])})', text)


def section_anchors(nb):
    """Each section heading of a notebook, without its number, mapped to the heading as written."""
    headings = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in re.findall(r"^#{2,3} +(.+)$", cell.source, re.M):
                headings[re.sub(r"^\d+\.\s+", "", line.strip())] = line.strip()
    return headings


def myst_anchor(heading):
    """The anchor myst_heading_anchors gives a heading (GitHub's rule)."""
    return github_anchor(re.sub(r"[`*]", "", heading))


def value(v):
    if v is None:
        return "—"
    if isinstance(v, tuple):
        return ", ".join(value(x) for x in v)
    if isinstance(v, float) and 0 < abs(v) < 1e-3 and f"{v:.0e}".startswith("1e"):
        return f"$10^{{{int(f'{v:.0e}'[2:])}}}$"
    return f"{v:,}" if isinstance(v, int) else str(v)


def notation_page(solutions):
    """The table of helpers/course/notation.py: symbol, meaning, base, tiny, where it is introduced."""
    titles = {stem: title for stem, title, *_ in course.NOTEBOOKS}
    rows = ["# Notation", "",
            "The paper's symbols as the course uses them: one meaning per symbol. *Base* is the "
            "paper's base model, *tiny* the reversal model of notebook 05.", "",
            "| Symbol | Meaning | Base | Tiny | Introduced in |", "|---|---|---|---|---|"]
    for s in notation.SYMBOLS:
        where = f"[{s.notebook[:2]} · {titles[s.notebook]}]({s.notebook}.ipynb)"
        if s.section:  # the first heading that holds the table's words (tests/test_notation.py)
            name, heading = next((name, h) for name, h in section_anchors(solutions[s.notebook]).items()
                                 if s.section in h)
            where += f", [{name}]({s.notebook}.ipynb#{myst_anchor(heading)})"
        meaning = s.meaning.replace("|", "\\|")
        rows.append(f"| ${s.tex}$ | {meaning} | {value(s.base)} | {value(s.tiny)} | {where} |")
    reuses = ["", "## Symbols written with a second meaning", "",
              "A few symbols are used, on purpose, with a second meaning beside the table's:", ""]
    reuses += [f"- ${r.form}$: {r.meaning}." for r in notation.REUSES]
    # the table in a box of its own, which a narrow screen shows as one card per symbol
    return ("\n".join(rows[:4]) + "\n" + fenced("container", "course-notation", "\n".join(rows[4:]))
            + "\n" + "\n".join(reuses) + "\n")


def version():
    """The commit and date the site is built from, or the build's date outside a git checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    try:
        commit, date = git("log", "-1", "--format=%h %cs").split()
    except (OSError, ValueError, subprocess.SubprocessError):
        return f"built on {datetime.date.today().isoformat()}, not from a git checkout"
    changed = git("status", "--porcelain", "--untracked-files=no")
    return (f'built from commit <a href="{course.REPO_URL}/commit/{commit}">{commit}</a> of {date}'
            + (" with uncommitted changes" if changed else ""))


def data_licences():
    """The licence lines of the data the course's notebooks carry (DATA_LICENCES)."""
    return [line for number, line in DATA_LICENCES.items()
            if any(stem.startswith(f"{number}_") for stem, *_ in course.NOTEBOOKS)]


def footer():
    """Every page's footer: the licence (the data's too), the version, the repository."""
    licence = " ".join([LICENCE.format(repo=course.REPO_URL, ref=course.REPO_REF), *data_licences()])
    licence = re.sub(r"`([^`]+)`", r"<code>\1</code>", licence)
    licence = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', licence)
    return (f'<p class="course-footer">{licence} This site was {version()}. '
            f'<a href="{course.REPO_URL}">The repository</a> · '
            f'<a href="{course.REPO_URL}/issues/new">report an issue</a>.</p>')


def write_zip(target, folder, which):
    """A zip of every notebook of one folder (the repository's files as they are), with fixed
    dates so that the same notebooks give the same bytes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for stem, *_ in course.NOTEBOOKS:
            info = zipfile.ZipInfo(f"original-transformer-{which}/{stem}.ipynb", (2017, 6, 12, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (folder / f"{stem}.ipynb").read_bytes())


def page_descriptions(readme):
    """Each page's one-line description (meta description, link previews)."""
    first = plain_markdown(readme.split("\n\n")[1])
    described = {stem: f"{stem[:2]} · {title}: {line}" for stem, title, line in course.NOTEBOOKS}
    described["notation"] = "The paper's symbols as the course uses them, with their values."
    return first, described


def prepare(src):
    """Write every page, the configuration and the static files into the folder src."""
    import mathjax  # the django-static-mathjax package: MathJax 3's files, nothing else
    from jupyter_book.config import get_default_sphinx_config

    src = pathlib.Path(src)
    solutions = {stem: nbformat.read(notebooks.SOLUTIONS / f"{stem}.ipynb", as_version=4)
                 for stem, *_ in course.NOTEBOOKS}
    (src / "exercises").mkdir(parents=True)
    for stem, nb in solutions.items():
        nbformat.write(notebook_page(nb, stem), src / f"{stem}.ipynb")
        shutil.copy(notebooks.EXERCISES / f"{stem}.ipynb", src / "exercises" / f"{stem}.ipynb")
    for which, (folder, _) in ZIPS.items():
        write_zip(src / "downloads" / zip_name(which), folder, which)
    (src / "index.md").write_text(landing_page(notebooks.README.read_text()))
    (src / "notation.md").write_text(notation_page(solutions))
    toc = {"format": "jb-book", "root": "index",
           "chapters": [{"file": stem} for stem in solutions] + [{"file": "notation"}]}
    (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    config = yaml.safe_load((CONFIG / "_config.yml").read_text())
    config["repository"] = {"url": course.REPO_URL, "branch": course.REPO_REF}
    config["html"]["baseurl"] = site_url(config)
    config["sphinx"]["local_extensions"] = {"helpers.course.site": str(ROOT)}  # setup() below
    # Jupyter Book's extensions without Thebe (unused: it only added a script error to every page)
    config["sphinx"]["config"]["extensions"] = [
        e for e in get_default_sphinx_config()["extensions"] if e != "sphinx_thebe"
    ] + ["helpers.course.site"]
    config["sphinx"]["config"]["html_theme_options"]["logo"] = {"text": config["title"]}
    config["sphinx"]["config"]["html_theme_options"]["extra_footer"] = footer()
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copytree(CONFIG / "assets", src / "assets")
    es5 = pathlib.Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    for part in MATHJAX_PARTS:
        target = src / "vendor" / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (es5 / part).is_dir() else shutil.copy)(es5 / part, target)


def build(out=OUT, quiet=True):
    """Prepare the pages in a temporary folder and build the site into out. Returns the log."""
    out = pathlib.Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix="course-site-") as tmp:
        src = pathlib.Path(tmp) / "src"
        prepare(src)
        run = subprocess.run(
            [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(src),
             "--path-output", tmp, "--builder", "html", "--keep-going"],
            capture_output=quiet, text=True)
        if run.returncode:
            raise RuntimeError(f"jupyter-book failed:\n{run.stdout}\n{run.stderr}")
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(pathlib.Path(tmp) / "_build" / "html", out,
                        ignore=shutil.ignore_patterns(*UNSHIPPED))
    finish(out)
    return (run.stdout or "") + (run.stderr or "")


# ---- after the build: one viewport tag, a few icons, the search snippets' text ----

# the theme's icons: its 1.5 MB script draws every icon of Font Awesome; the site shows a dozen,
# drawn from the same shapes by a small stylesheet (icons the theme's script adds itself: EXTRA)
EXTRA_ICONS = ["fa-xmark"]
ICON_PACKS = {"fab": "brands", "fa-brands": "brands"}  # any other prefix: the solid pack


def font_awesome_shapes(wanted):
    """The shapes of the wanted icons ((pack, name) pairs) from the theme's own Font Awesome
    script: {(pack, name): (width, height, path)}."""
    import pydata_sphinx_theme

    js = (pathlib.Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
          / "scripts" / "fontawesome.js").read_text()
    # each pack is an object of icons, then the call that registers it: ...}(function(){d("fab",p)
    packs, start, names = {}, 0, {"fab": "brands", "fas": "solid", "far": "regular"}
    for end in re.finditer(r'\}\(function\(\)\{d\("(fa[bsr])",p\)', js):
        packs[names[end[1]]] = js[js.rindex("var p={", start, end.start()):end.start()]
        start = end.end()
    shapes = {}
    for pack, name in wanted:
        found = re.search(rf'[{{,]"?{re.escape(name)}"?:\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*","([^"]+)"\]',
                          packs.get(pack, ""))
        if found:
            shapes[(pack, name)] = (int(found[1]), int(found[2]), found[3])
    return shapes


ICON_STYLE = ("content: \"\" !important; font: inherit !important; display: inline-block; height: 1em; "
              "vertical-align: -0.125em; background-color: currentColor; "
              "-webkit-mask: var(--course-icon) center / contain no-repeat; "
              "mask: var(--course-icon) center / contain no-repeat;")
# the theme's icons drawn by its stylesheet on elements without an icon class: selector -> shape
STYLE_ICONS = {"a.reference.download::before": ("solid", "download")}


def icon_css(used_icons):
    """A stylesheet drawing each icon a page shows (an icon class -> its pack, and STYLE_ICONS) as
    a mask of its shape in the text's colour, with no text: the theme's icon font is never
    downloaded."""
    wanted = {f".{name}::before": (pack, name.removeprefix("fa-")) for name, pack in used_icons.items()}
    wanted.update(STYLE_ICONS)
    shapes = font_awesome_shapes(set(wanted.values()))
    rules = ["/* The theme's icons, drawn from Font Awesome's shapes (Font Awesome Free: icons CC BY 4.0, "
             "https://fontawesome.com/license/free); written by helpers/course/site.py. */",
             f"{', '.join(sorted(wanted))} {{ {ICON_STYLE} }}",
             # no element asks for the icon font (an empty icon's line still loads its font)
             ".fa, .fas, .fa-solid, .far, .fa-regular, .fab, .fa-brands { font-family: inherit !important; }",
             ":root { --fa-font-solid: normal 900 1em/1 sans-serif; --fa-font-regular: normal 400 1em/1 "
             "sans-serif; --fa-font-brands: normal 400 1em/1 sans-serif; --fa-style-family: sans-serif; }",
             "a.reference.download::before { height: 0.8em; margin: 0 0.25em; "
             "background-color: var(--pst-color-text-muted); }"]
    for selector, shape in sorted(wanted.items()):
        if shape not in shapes:
            raise ValueError(f"no shape for the icon {shape}")
        w, h, path = shapes[shape]
        svg = urllib.parse.quote(f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {w} {h}'>"
                                 f"<path d='{path}'/></svg>", safe=" =:/'")
        rules.append(f"{selector} {{ width: {w / h:.4f}em; "
                     f"--course-icon: url(\"data:image/svg+xml,{svg}\"); }}")
    return "\n".join(rules) + "\n"


def icons_of(page_html):
    """The icons a page shows: {class: pack}."""
    found = {}
    for classes in re.findall(r'<(?:i|span) class="([^"]*\bfa-[^"]*)"', page_html):
        tokens = classes.split()
        pack = "brands" if {"fab", "fa-brands"} & set(tokens) else "solid"
        for token in tokens:
            if token.startswith("fa-") and token not in ("fa-solid", "fa-brands", "fa-regular", "fa-lg",
                                                          "fa-fw", "fa-xs", "fa-sm", "fa-xl", "fa-2x"):
                found[token] = pack
    return found


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“‘(])")


class _ArticleText(html.parser.HTMLParser):
    """One pass over a page: the sentences of its article's blocks (headings, paragraphs, table
    cells), each with the id of its section; formulas as plain text; code, buttons and heading
    links left out."""
    BLOCKS = {"h1", "h2", "h3", "h4", "p", "td", "th", "dt", "figcaption"}
    SKIPPED = {"pre", "script", "style", "button"}
    SKIPPED_CLASSES = {"headerlink", "course-buttons"}
    VOID = {"br", "img", "hr", "meta", "input", "link", "wbr", "source", "col", "area", "base", "embed"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open, self.sections, self.found = [], [""], []
        self.block = self.math = None
        self.article = False

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        role = None
        if tag == "article":
            self.article = True
        elif not self.article:
            pass
        elif tag in self.SKIPPED or classes & self.SKIPPED_CLASSES or any(r == "skip" for _, r in self.open):
            role = "skip"
        elif tag == "section":
            role = "section"
            self.sections.append(attrs.get("id", ""))
        elif "math" in classes and self.block is not None and self.math is None:
            role, self.math = "math", []
        elif tag in self.BLOCKS and self.block is None:
            role, self.block = "block", []
        self.open.append((tag, role))

    def handle_endtag(self, tag):
        if tag in self.VOID or not any(t == tag for t, _ in self.open):
            return
        while self.open:
            name, role = self.open.pop()
            if role == "section":
                self.sections.pop()
            elif role == "math":
                tex = re.sub(r"^\\[(\[]|\\[)\]]$", "", "".join(self.math).strip())
                self.block.append(plain_tex(tex))
                self.math = None
            elif role == "block":
                self.found.append((self.sections[-1], " ".join("".join(self.block).split())))
                self.block = None
            if name == "article":
                self.article = False
            if name == tag:
                return

    def handle_data(self, data):
        if self.open and self.open[-1][1] == "skip" or any(r == "skip" for _, r in self.open):
            return
        if self.math is not None:
            self.math.append(data)
        elif self.block is not None:
            self.block.append(data)


def search_text(page_html):
    """A page's text as the search snippets need it: its sections' ids and its sentences, each
    with its section, formulas as plain text (√d_model), no code; None for a page without an
    article."""
    if "<article" not in page_html:
        return None
    reader = _ArticleText()
    reader.feed(page_html)
    sections, sentences = [], []
    for anchor, text in reader.found:
        if anchor not in sections:
            sections.append(anchor)
        sentences += [[sections.index(anchor), sentence] for sentence in SENTENCE_END.split(text) if sentence]
    return sections, sentences


TABULAR = re.compile(r"\S {2,}\S")      # a line whose columns are lined up with spaces
OUTPUT_PRE = re.compile(r'(<div class="(?:output [^"]*|[^"]*course-output[^"]*))(">\s*<div class="highlight">'
                        r'\s*<pre>)(.*?)</pre>', re.S)
FIGURE = re.compile(r'(<a class="course-figure" href="[^"]*">)?(<img\b[^>]*\bsrc="(_images/[^"]+)"[^>]*>)')


def tabular(pre):
    """An output whose lines hold columns (two lines or more lined up with runs of spaces)."""
    lines = html.unescape(re.sub(r"<[^>]+>", "", pre)).splitlines()
    return sum(bool(TABULAR.search(line)) for line in lines) >= 2


def readable_outputs(page_html):
    """A printed table keeps its columns on a phone (its output gets the class course-table-output:
    it scrolls sideways in its own box instead of wrapping), and a figure opens full size on a tap
    (each output image is a link to its file)."""
    page_html = OUTPUT_PRE.sub(lambda m: (m[1] + " course-table-output" if tabular(m[3]) else m[1])
                               + m[2] + m[3] + "</pre>", page_html)
    return FIGURE.sub(lambda m: m[0] if m[1] else f'<a class="course-figure" href="{m[3]}">{m[2]}</a>',
                      page_html)


def finish(out):
    """The built site as a reader gets it: one viewport tag per page, the theme's icons from a small
    stylesheet instead of its 1.5 MB script, the search's scripts and index on the search page
    only (the theme loads them everywhere for a search as you type the site does not use), and
    each page's text for the search snippets
    (_static/search/PAGE.js, loaded by the search page for the pages it lists: from file:// as over
    HTTP, where fetching a page is not allowed)."""
    out = pathlib.Path(out)
    icons = {name: "solid" for name in EXTRA_ICONS}
    (out / "_static" / "search").mkdir(exist_ok=True)
    for page in sorted(out.glob("*.html")):
        text = page.read_text()
        viewports = list(re.finditer(r'[ \t]*<meta name="viewport"[^>]*>\n?', text))
        for extra in reversed(viewports[1:]):
            text = text[:extra.start()] + text[extra.end():]
        text = re.sub(r'[ \t]*<script[^>]*src="[^"]*fontawesome\.js[^"]*"[^>]*></script>\n?', "", text)
        if page.name != "search.html":  # the search box opens search.html (no search as you type)
            text = re.sub(r'[ \t]*<script src="[^"]*(?:searchtools|language_data|searchindex)\.js">'
                          r'</script>\n?', "", text)
        text = readable_outputs(text)
        page.write_text(text)
        icons.update(icons_of(text))
        found = search_text(text)
        if found:
            data = json.dumps([page.stem, *found], ensure_ascii=False, separators=(",", ":"))
            (out / "_static" / "search" / f"{page.stem}.js").write_text(f"CourseSearch.add({data[1:-1]});\n")
    (out / "_static" / "course-icons.css").write_text(icon_css(icons))
    for unused in (out / "_static" / "scripts").glob("fontawesome.js*"):
        unused.unlink()


# ---- the Sphinx extension (loaded by the build through _config.yml's local_extensions) ----

THEBE = re.compile(r"thebe", re.I)
# the theme's and extensions' files a page loads only when it uses them: (files, used by the page)
ASSETS = [
    (re.compile(r"togglebutton|toggleHint|toggleOpenOnPrint"),  # sphinx-togglebutton
     lambda body: any("toggle" in c.split() or {"admonition", "dropdown"} <= set(c.split())
                      for c in re.findall(r'class="([^"]*)"', body))),
    (re.compile(r"design-tabs"), lambda body: "sd-tab-set" in body),  # sphinx-design's tabs
    (re.compile(r"mathjax|window\.MathJax", re.I), lambda body: 'class="math' in body),
    (re.compile(r"clipboard|copybutton"), lambda body: "<pre" in body),  # the copy buttons
]


def used(asset, body):
    """False when asset (a script's or stylesheet's name and inline text) serves nothing on this
    page: Thebe never does, toggle buttons, tabs, MathJax and copy buttons when the page has none."""
    if THEBE.search(asset):
        return False
    return all(needed(body) for pattern, needed in ASSETS if pattern.search(asset))


def site_url(config):
    """The site's address (each page's canonical link and link previews): html.baseurl of
    website/_config.yml, or else GitHub Pages' address of the repository."""
    configured = (config.get("html") or {}).get("baseurl") or ""
    if configured:
        return configured.rstrip("/") + "/"
    owner, name = course.REPO_URL.removeprefix("https://github.com/").removesuffix(".git").split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def _page_context(app, pagename, templatename, context, doctree):
    """Per page: only the scripts and styles it uses, the landing tab's title once, meta tags and
    link previews (og:image, og:url from the site's address), the folds' two labels."""
    body = context.get("body", "")

    def asset(item):
        attributes = getattr(item, "attributes", {})
        return str(getattr(item, "filename", None) or item) + str(attributes.get("body", ""))
    context["script_files"] = [s for s in context.get("script_files", []) if used(asset(s), body)]
    context["css_files"] = [c for c in context.get("css_files", []) if used(asset(c), body)]
    if pagename == app.config.root_doc:  # its title is the site's: the browser tab says it once
        context["docstitle"] = ""
    first, described = page_descriptions(notebooks.README.read_text())
    description = described.get(pagename, first)
    title = re.sub(r"<[^>]+>", "", html.unescape(context.get("title") or app.config.html_title))
    base = app.config.html_baseurl.rstrip("/") + "/"
    url = context.get("pageurl") or f"{base}{pagename}.html"
    tags = {"description": description, "twitter:card": "summary_large_image"}
    og = {"og:title": title, "og:description": description, "og:type": "website",
          "og:site_name": app.config.html_title, "og:url": url,
          "og:image": f"{base}_static/{OG_IMAGE}", "og:image:width": str(OG_SIZE[0]),
          "og:image:height": str(OG_SIZE[1]),
          "og:image:alt": OG_ALT}
    context["metatags"] = context.get("metatags", "") + "".join(
        [f'<meta name="{k}" content="{html.escape(v)}">\n' for k, v in tags.items()]
        + [f'<meta property="{k}" content="{html.escape(v)}">\n' for k, v in og.items()])
    if body:
        context["body"] = as_cards(with_both_labels(body)) if pagename in dict(
            (stem, 0) for stem, *_ in course.NOTEBOOKS) else with_both_labels(body)


def as_cards(body):
    """A wide table of text (four columns or more, a cell of 80 characters or more) becomes one
    card per row on a phone: the table gets the class course-cards and each cell its column's
    name (data-label), which course.css writes before the cell."""
    def table(found):
        t = found[0]
        if t.startswith('<table class="tx-'):      # an explorer's table (helpers/explorer.py) stays one
            return t
        heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", t, re.S)]
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", t, re.S)]
        if len(heads) < 4 or not any(len(" ".join(c.split())) >= 80 for c in cells):
            return t
        t = re.sub(r'<table class="', '<table class="course-cards ', t, count=1)

        def row(r):
            column = iter(heads)
            return re.sub(r"<td(?=[ >])",
                          lambda m: f'<td data-label="{html.escape(html.unescape(next(column, "")))}"', r[0])
        return re.sub(r"<tr[ >].*?</tr>", row, t, flags=re.S)
    return re.sub(r"<table[ >].*?</table>", table, body, flags=re.S)


def with_both_labels(body):
    """A fold's button says what it does in each state: "Show the answer" closed, "Hide the
    answer" open (CSS shows one of the two; the hidden one is not read out either)."""
    for shown, hidden in LABELS.values():
        body = body.replace(f'<span class="sd-summary-text">{shown}</span>',
                            f'<span class="sd-summary-text"><span class="course-closed">{shown}</span>'
                            f'<span class="course-open">{hidden}</span></span>')
    return body.replace(' aria-label="Toggle hidden content"', "")


def setup(app):
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

def draw_og_image(target=CONFIG / "assets" / OG_IMAGE):
    """The link-preview picture (og:image), 1200 x 630: the course's title, what it is, and the
    table of sinusoidal positions of notebook 01 (PE(pos, 2i) = sin(pos / 10000^(2i/d_model)))."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pos, i = np.arange(48)[:, None], np.arange(32)[None, :]
    angle = pos / 10000 ** (2 * (i // 2) / 64)
    table = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    ink, accent, paper = "#1b2a41", "#2f6db5", "#f7f5ef"
    fig = plt.figure(figsize=(OG_SIZE[0] / 100, OG_SIZE[1] / 100), dpi=100, facecolor=paper)
    ax = fig.add_axes((0.71, 0.13, 0.25, 0.74))
    ax.imshow(table, cmap="RdBu", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_axis_off()
    fig.text(0.71, 0.07, "the positions' table, notebook 01", color="#6b7280", fontsize=13)
    fig.text(0.05, 0.80, "The original Transformer,", color=ink, fontsize=34, weight="bold")
    fig.text(0.05, 0.70, "step by step", color=accent, fontsize=34, weight="bold")
    lines = ["Attention Is All You Need (2017), rebuilt", "from its formulas in PyTorch, on a CPU.",
             "", "Executable notebooks: every formula in words,", "checked by hand and in code, practised in",
             "an exercise that tells you what you got wrong."]
    for n, line in enumerate(lines):
        fig.text(0.05, 0.56 - n * 0.062, line, color=ink, fontsize=19)
    fig.text(0.05, 0.06, r"$\mathrm{softmax}\left(QK^{T}/\sqrt{d_k}\right)V$", color=accent, fontsize=24)
    fig.savefig(target, dpi=100, facecolor=paper, metadata={"Software": None})
    plt.close(fig)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="where to write the site (_site/)")
    parser.add_argument("--og-image", action="store_true",
                        help=f"draw website/assets/{OG_IMAGE}, the link-preview picture, and stop")
    args = parser.parse_args(argv)
    if args.og_image:
        print(f"wrote {draw_og_image()}")
        return 0
    start = time.perf_counter()
    log = build(args.out)
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    print("\n".join(warnings))
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"built {args.out} in {time.perf_counter() - start:.1f} s: {size / 1e6:.1f} MB, "
          f"{len(warnings)} warnings; open {args.out.resolve() / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
