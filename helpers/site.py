"""The course's website: a view of the one source, built offline with Jupyter Book 1.

    python -m helpers.site              # build into _site/ (open _site/index.html)
    python -m helpers.site --out DIR    # somewhere else

The pages are prepared in a temporary folder, never executed: each notebook's page from its
solution copy with its stored outputs (setup cell and import guard removed, worked answers
folded, buttons that open the exercise copy), the landing page from the README's introduction
and table, the notation page from ``helpers/notation.py``. ``website/`` holds the configuration
and the style; MathJax is served from the site (a copy from the ``django-static-mathjax`` package).
"""

import argparse
import copy
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import mathjax  # the django-static-mathjax package: MathJax 3's files, nothing else
import nbformat
import yaml

from helpers import course, notation, notebooks

ROOT = notebooks.ROOT
CONFIG = ROOT / "website"
OUT = ROOT / "_site"
ANSWER = "Show the answer"
MATHJAX_PARTS = ["tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y"]


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
    ]))


def without_guard(source):
    return source[len(notebooks.GUARD):] if source.startswith(notebooks.GUARD) else source


def notebook_page(nb, stem):
    """The page of one solution notebook: what a reader of the site sees."""
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        tags = notebooks.tags(cell)
        if "bootstrap" in tags:
            continue
        if cell.cell_type == "code":
            cell.source = without_guard(cell.source).lstrip("\n")
            if not cell.source.strip():
                continue
            if "solution" in tags or "solution-only" in tags:
                cell.metadata.setdefault("tags", []).append("hide-cell")
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and not o.text.strip())]
            for output in cell.outputs:
                if output.output_type == "stream":
                    output.text = notebooks.as_terminal_shows(output.text)
        elif "solution-only" in tags:
            cell.source = fenced("dropdown", ANSWER, cell.source, ":class-container: course-answer")
        cells.append(cell)
    title, _, rest = cells[0].source.partition("\n")
    cells[0].source = f"{title}\n\n{buttons(stem)}\n{rest}"
    nb.cells = cells
    return nb


def github_anchor(heading):
    """The #anchor GitHub gives a README heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def landing_page(readme):
    """The README's introduction and notebook table, with links that work on the site."""
    head, tail = readme.split(notebooks.END, 1)
    intro = head + tail.split("\n## ")[0]  # up to the first section after the table
    intro = re.sub(r"<!--.*?-->\n?", "", intro)
    blob = f"{course.REPO_URL}/blob/{course.REPO_REF}"
    # a badge image inside a link becomes a plain-text link: [![Open in Colab](svg)](url) -> [Colab](url)
    intro = re.sub(r"\[!\[(?:Open in )?([^\]]*)\]\([^)]*\)\]\(([^)]*)\)", r"[\1](\2)", intro)
    intro = re.sub(r"\bbadges\b", "buttons", intro)

    def site_link(link):
        """A notebook's copy in the repository becomes its page; another relative link, the file
        in the repository."""
        target = link[1]
        if re.fullmatch(r"(notebooks|solutions)/[^/]+\.ipynb", target):
            return f"]({target.split('/')[1]})"
        return link[0] if re.match(r"https?:|#", target) else f"]({blob}/{target})"
    intro = re.sub(r"\]\(([^)]+)\)", site_link, intro)
    # a README section the site does not have: point at it in the repository's README
    intro = re.sub(r'"([^"]+)" below',
                   lambda m: f'"{m[1]}" in the repository\'s [README]({course.REPO_URL}'
                             f'#{github_anchor(m[1])})', intro)
    return intro.rstrip() + ("\n\nThe [notation](notation.md) page lists the paper's symbols as the "
                             "course uses them, with their values in the base and the tiny model.\n")


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
    """The table of helpers/notation.py: symbol, meaning, base, tiny, where it is introduced."""
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
    rows += ["", "## Symbols written with a second meaning", "",
             "A few symbols are used, on purpose, with a second meaning beside the table's:", ""]
    rows += [f"- ${r.form}$: {r.meaning}." for r in notation.REUSES]
    return "\n".join(rows) + "\n"


def prepare(src):
    """Write every page, the configuration and the static files into the folder src."""
    src = pathlib.Path(src)
    solutions = {stem: nbformat.read(notebooks.SOLUTIONS / f"{stem}.ipynb", as_version=4)
                 for stem, *_ in course.NOTEBOOKS}
    (src / "exercises").mkdir(parents=True)
    for stem, nb in solutions.items():
        nbformat.write(notebook_page(nb, stem), src / f"{stem}.ipynb")
        shutil.copy(notebooks.EXERCISES / f"{stem}.ipynb", src / "exercises" / f"{stem}.ipynb")
    (src / "index.md").write_text(landing_page(notebooks.README.read_text()))
    (src / "notation.md").write_text(notation_page(solutions))
    toc = {"format": "jb-book", "root": "index",
           "chapters": [{"file": stem} for stem in solutions] + [{"file": "notation"}]}
    (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    config = yaml.safe_load((CONFIG / "_config.yml").read_text())
    config["repository"] = {"url": course.REPO_URL, "branch": course.REPO_REF}
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
        shutil.copytree(pathlib.Path(tmp) / "_build" / "html", out)
    return (run.stdout or "") + (run.stderr or "")


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
