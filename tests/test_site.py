"""The course's website (python -m helpers.site): built once, offline, then checked page by page."""

import json
import re
import shutil
import subprocess
import sys
import urllib.parse

import nbformat
import pytest
from bs4 import BeautifulSoup, NavigableString, Tag

from helpers import course, notation, notebooks

ROOT = notebooks.ROOT
STEMS = [stem for stem, *_ in course.NOTEBOOKS]


def network_can_be_cut():
    return bool(shutil.which("unshare")) and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's folder; built with the network cut where this machine allows it."""
    out = tmp_path_factory.mktemp("site") / "html"
    command = [sys.executable, "-m", "helpers.site", "--out", str(out)]
    if network_can_be_cut():
        command = ["unshare", "-n", *command]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.fixture(scope="session")
def pages(site):
    """Every built HTML page, parsed, by its path inside the site."""
    return {p.relative_to(site).as_posix(): BeautifulSoup(p.read_text(), "html.parser")
            for p in sorted(site.rglob("*.html")) if "_static" not in p.parts}  # not the theme's templates


def solution(stem):
    return nbformat.read(notebooks.SOLUTIONS / f"{stem}.ipynb", as_version=4)


def norm(text):
    return " ".join(text.split())


def words(text):
    return " " + " ".join(re.findall(r"[A-Za-z]{2,}", text)) + " "


def text_of(element, skip=lambda tag: False, sep=""):
    """The text of an HTML element, leaving out the elements skip(tag) is true for."""
    out = []

    def walk(node):
        for child in node.children:
            if type(child) is NavigableString:
                out.append(str(child))
            elif isinstance(child, Tag) and not skip(child):
                walk(child)
    walk(element)
    return sep.join(out)


def is_math(tag):
    return "math" in tag.get("class", [])


def prose(element, skip=lambda tag: False):
    """The words of an HTML element, its formulas left out."""
    return words(text_of(element, lambda tag: is_math(tag) or skip(tag), " "))


def markdown_words(source):
    """The words a markdown cell shows, its formulas and link targets left out."""
    source = re.sub(r"\$\$.*?\$\$|\$[^$]+\$", " ", source, flags=re.S)
    return words(re.sub(r"\]\([^)]*\)", "]", source))


def external(url):
    return urllib.parse.urlsplit(url).scheme in ("http", "https", "mailto", "javascript")


def test_every_notebook_has_its_page(site, pages):
    index = pages["index.html"]
    for stem in STEMS:
        assert f"{stem}.html" in pages, f"no page for {stem}"
        assert pages[f"{stem}.html"].h1.get_text().startswith(stem[:2])
        assert index.select(f'article a[href="{stem}.html"]'), f"the landing page does not link {stem}"
    assert "notation.html" in pages


def test_every_internal_link_and_anchor_resolves(site, pages):
    ids = {path: {tag["id"] for tag in soup.find_all(id=True)} for path, soup in pages.items()}
    broken = []
    for path, soup in pages.items():
        for tag in soup.find_all(["a", "img", "script", "link"]):
            url = tag.get("href") or tag.get("src")
            if not url or external(url):
                continue
            parts = urllib.parse.urlsplit(url)
            target = (site / path).parent / urllib.parse.unquote(parts.path) if parts.path else site / path
            target = target.resolve()
            if not target.is_file():
                broken.append(f"{path}: {url} (no such file)")
            elif parts.fragment:
                page = target.relative_to(site.resolve()).as_posix()
                if parts.fragment not in ids.get(page, set()):
                    broken.append(f"{path}: {url} (no such anchor)")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("stem", STEMS)
def test_every_figure_is_on_the_page(site, pages, stem):
    figures = sum(1 for cell in solution(stem).cells for o in cell.get("outputs", [])
                  if "image/png" in o.get("data", {}))
    images = [img["src"] for img in pages[f"{stem}.html"].select("article img")]
    assert len([src for src in images if "_images/" in src]) == figures
    for src in images:
        assert not external(src), f"a remote image: {src}"
        assert (site / src).stat().st_size > 0


def test_no_page_shows_the_setup_cell_or_the_import_guard(pages):
    hidden = [line.strip() for line in (notebooks.bootstrap_source() + "\n" + notebooks.GUARD).splitlines()
              if len(line.strip()) >= 25]
    for path, soup in pages.items():
        text = soup.get_text()
        shown = [line for line in hidden if line in text]
        assert not shown, f"{path} shows {shown}"


@pytest.mark.parametrize("stem", STEMS)
def test_the_import_cell_keeps_its_imports(pages, stem):
    guarded = [c for c in solution(stem).cells
               if c.cell_type == "code" and c.source.startswith(notebooks.GUARD)]
    rest = guarded[0].source[len(notebooks.GUARD):].strip()
    if rest:
        assert norm(rest) in norm(pages[f"{stem}.html"].get_text())


@pytest.mark.parametrize("stem", STEMS)
def test_every_answer_is_folded(pages, stem):
    article = pages[f"{stem}.html"].select_one("article")
    folded = article.find_all("details")
    assert all(not d.has_attr("open") for d in folded)
    folded_code = [norm(d.get_text()) for d in folded]
    folded_prose = [prose(d) for d in folded]
    def is_details(tag):
        return tag.name == "details"
    visible_code, visible_prose = norm(text_of(article, is_details)), prose(article, is_details)
    answers = [c for c in solution(stem).cells if {"solution", "solution-only"} & set(notebooks.tags(c))]
    assert answers
    for cell in answers:
        if cell.cell_type == "code":
            code = norm(cell.source)
            assert any(code in text for text in folded_code), f"not folded: {cell.source[:80]!r}"
            assert code not in visible_code, f"shown unfolded: {cell.source[:80]!r}"
        else:
            text = markdown_words(cell.source)
            assert any(text in f for f in folded_prose), f"not folded: {cell.source[:80]!r}"
            assert words(" ".join(text.split()[:12])) not in visible_prose, f"shown: {cell.source[:80]!r}"


def test_no_empty_output_box_and_no_progress_bar_history(pages):
    for path, soup in pages.items():
        for box in soup.select("div.output"):
            text = box.get_text()
            assert text.strip(), f"{path}: an empty output box"
            assert "\r" not in text, f"{path}: a progress bar's intermediate states"


@pytest.mark.parametrize("stem", STEMS)
def test_buttons_open_the_exercise_copy_first(site, pages, stem):
    page = pages[f"{stem}.html"]
    row = page.select_one("article .course-buttons")
    links = [a["href"] for a in row.find_all("a")]
    assert links[:2] == [course.colab_url("notebooks", stem), course.kaggle_url("notebooks", stem)]
    assert links[3:] == [course.colab_url("solutions", stem), course.kaggle_url("solutions", stem)]
    download = site / links[2]
    assert download.name == f"{stem}.ipynb"
    assert download.read_bytes() == (notebooks.EXERCISES / f"{stem}.ipynb").read_bytes()
    launchers = [a["href"] for a in page.find_all("a", href=True)
                 if "colab.research.google.com" in a["href"] or "kaggle.com" in a["href"]]
    assert sorted(launchers) == sorted(links[:2] + links[3:]), "another launch button on the page"


def test_landing_page_is_the_readme_with_links_that_work_on_the_site(pages):
    article = pages["index.html"].select_one("article")
    readme = notebooks.README.read_text()
    first = readme.split("\n\n")[1]  # the paragraph under the title
    assert markdown_words(first) in prose(article)
    assert not [img["src"] for img in article.find_all("img") if external(img["src"])]
    hrefs = [a["href"] for a in article.find_all("a", href=True)]
    assert not [h for h in hrefs if not external(h) and ".ipynb" in h]
    for stem in STEMS:
        for folder in ("notebooks", "solutions"):
            assert course.colab_url(folder, stem) in hrefs and course.kaggle_url(folder, stem) in hrefs
    headings = {norm(h.get_text()).rstrip("#") for h in article.find_all(re.compile("^h[1-6]$"))}
    for quoted in re.findall(r'"([^"]+)" below', article.get_text().replace("“", '"').replace("”", '"')):
        assert quoted in headings, f'"{quoted}" below: a section the site does not have'


def test_notation_page_renders_helpers_notation(pages):
    rows = pages["notation.html"].select("article table tbody tr")
    assert len(rows) == len(notation.SYMBOLS)
    for row, symbol in zip(rows, notation.SYMBOLS, strict=True):
        hrefs = [a["href"] for a in row.find_all("a", href=True)]
        assert hrefs[0] == f"{symbol.notebook}.html"
        if symbol.section:
            assert hrefs[1].startswith(f"{symbol.notebook}.html#")
        assert markdown_words(symbol.meaning) in prose(row)


def unique_words(stem):
    """Long words of a notebook's text that no other notebook's text has, in order."""
    def text_words(s):
        return re.findall(r"\b[a-z]{8,}\b", " ".join(c.source for c in solution(s).cells
                                                   if c.cell_type == "markdown").lower())
    others = {w for other in STEMS if other != stem for w in text_words(other)}
    return list(dict.fromkeys(w for w in text_words(stem) if w not in others))


@pytest.fixture(scope="session")
def search_index(site):
    text = (site / "searchindex.js").read_text()
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


@pytest.mark.parametrize("stem", STEMS)
def test_search_finds_a_term_of_each_notebook(search_index, stem):
    from sphinx.search.en import SearchEnglish

    stemmer = SearchEnglish({})
    doc = search_index["docnames"].index(stem)
    terms = unique_words(stem)[:3]
    assert terms
    for term in terms:
        found = [search_index[kind].get(stemmer.stem(term), []) for kind in ("terms", "titleterms")]
        assert doc in [d for docs in found for d in (docs if isinstance(docs, list) else [docs])], \
            f"searching {term!r} misses {stem}"


def test_mathjax_is_served_by_the_site(site, pages):
    for path, soup in pages.items():
        remote = [t.get("src") or t.get("href") for t in soup.find_all(["script", "link"])
                  if external(t.get("src") or t.get("href") or "")]
        assert not remote, f"{path} loads {remote}"
    scripts = [s["src"].split("?")[0] for s in pages["01_positions.html"].find_all("script", src=True)]
    mathjax = [s for s in scripts if s.endswith("mathjax/tex-chtml.js")]
    assert mathjax and (site / mathjax[0]).is_file()
    assert list((site / mathjax[0]).parent.glob("output/chtml/fonts/woff-v2/*.woff"))
