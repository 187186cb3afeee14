"""The course's website: a view of the one source, built offline with Jupyter Book 1.

    python -m helpers.course.site              # build into _site/ (open _site/index.html)
    python -m helpers.course.site --out DIR    # somewhere else

The pages are prepared in a temporary folder, never executed: each notebook's page from its
solution copy with its stored outputs (setup cell and import guard removed; each exercise's and
each question's answer, its check's output and its explanation folded together behind one
button; each figure's alt text from its "Figure description."; buttons that open the exercise
copy), the landing page from the README (introduction, table, running it at home, licence), the
notation page from ``helpers/course/notation.py``, and two zip files of every exercise and solution
notebook. ``website/`` holds the configuration and the style; MathJax is served from the site (a
copy from the ``django-static-mathjax`` package). This module is also the Sphinx extension the
build loads (``setup``): page titles, meta tags, the folds' labels, no Thebe.
"""


import argparse
import copy
import datetime
import html
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
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
    symbols = {"sqrt": "√", "times": "×", "cdot": "·", "ldots": "…", "dots": "…", "to": "→",
               "rightarrow": "→", "le": "≤", "ge": "≥", "approx": "≈", "infty": "∞", "pm": "±"}
    symbols.update(zip("alpha beta gamma delta epsilon lambda mu pi rho sigma tau theta".split(),
                       "αβγδελμπρστθ", strict=True))
    tex = re.sub(r"\\(?:text|mathrm|mathbf|operatorname|textbf|mathit)\{([^{}]*)\}", r"\1", tex)
    tex = re.sub(r"\\([A-Za-z]+)", lambda m: symbols.get(m[1], ""), tex)
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


def landing_page(readme):
    """The README's introduction and notebook table, with links that work on the site, then
    how to download the notebooks, how to run them at home and the licence."""
    head, tail = readme.split(notebooks.END, 1)
    before, table = head.split(notebooks.START)
    # the table in a box of its own, which a narrow screen shows as one card per notebook
    intro = before + fenced("container", "course-notebooks", table) + tail.split("\n## ")[0]
    intro = re.sub(r"<!--.*?-->\n?", "", intro)
    intro = intro.replace("arXiv:1706.03762", f"[arXiv:1706.03762]({PAPER_URL})", 1)
    text = "\n\n".join([
        intro.rstrip(),
        "The [notation](notation.md) page lists the paper's symbols as the course uses them, with "
        "their values in the base and the tiny model.",
        downloads_section(),
        readme_section(readme, "On your own machine"),
        readme_section(readme, "Licence")]) + "\n"
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


def footer():
    """Every page's footer: the licence, the version, the repository."""
    licence = LICENCE.format(repo=course.REPO_URL, ref=course.REPO_REF)
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
    return (run.stdout or "") + (run.stderr or "")


# ---- the Sphinx extension (loaded by the build through _config.yml's local_extensions) ----

THEBE = re.compile(r"thebe", re.I)


def _page_context(app, pagename, templatename, context, doctree):
    """Per page: no Thebe, the landing tab's title once, meta tags, the folds' two labels."""
    context["script_files"] = [s for s in context.get("script_files", [])
                               if not THEBE.search(str(s.filename or "") + str(s.attributes.get("body", "")))]
    context["css_files"] = [c for c in context.get("css_files", []) if not THEBE.search(str(c.filename))]
    if pagename == app.config.root_doc:  # its title is the site's: the browser tab says it once
        context["docstitle"] = ""
    first, described = page_descriptions(notebooks.README.read_text())
    description = described.get(pagename, first)
    title = re.sub(r"<[^>]+>", "", html.unescape(context.get("title") or app.config.html_title))
    tags = {"description": description}
    og = {"og:title": title, "og:description": description, "og:type": "website",
          "og:site_name": app.config.html_title}
    context["metatags"] = context.get("metatags", "") + "".join(
        [f'<meta name="{k}" content="{html.escape(v)}">\n' for k, v in tags.items()]
        + [f'<meta property="{k}" content="{html.escape(v)}">\n' for k, v in og.items()])
    if "body" in context:
        context["body"] = with_both_labels(context["body"])


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

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="where to write the site (_site/)")
    args = parser.parse_args(argv)
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
