"""The course's website (python -m helpers.course.site): built once, offline, then checked page by page."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import urllib.parse

import nbformat
import pytest
from bs4 import BeautifulSoup, NavigableString, Tag

from helpers import course
from helpers.course import notation, notebooks

ROOT = notebooks.ROOT
STEMS = [stem for stem, *_ in course.NOTEBOOKS]


def network_can_be_cut():
    return bool(shutil.which("unshare")) and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's folder; built with the network cut where this machine allows it
    (COURSE_SITE=folder checks a site built before instead)."""
    if os.environ.get("COURSE_SITE"):
        return pathlib.Path(os.environ["COURSE_SITE"])
    out = tmp_path_factory.mktemp("site") / "html"
    command = [sys.executable, "-m", "helpers.course.site", "--out", str(out)]
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
    assert links[3:5] == [course.colab_url("solutions", stem), course.kaggle_url("solutions", stem)]
    assert links[5:] == [f"{course.REPO_URL}/blob/{course.REPO_REF}/solutions/{stem}.ipynb",
                         f"{course.REPO_URL}/issues/new"], "no edit / report link"
    download = site / links[2]
    assert download.name == f"{stem}.ipynb"
    assert download.read_bytes() == (notebooks.EXERCISES / f"{stem}.ipynb").read_bytes()
    launchers = [a["href"] for a in page.find_all("a", href=True)
                 if "colab.research.google.com" in a["href"] or "kaggle.com" in a["href"]]
    assert sorted(launchers) == sorted(links[:2] + links[3:5]), "another launch button on the page"


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
    text = article.get_text().replace("“", '"').replace("”", '"')
    for quoted in re.findall(r'"([^"]+)" below', text):
        assert quoted in headings, f'"{quoted}" below: a section the site does not have'
    assert "contributor part" not in text, "a reference to a part of the README the site does not have"


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
    for path, soup in pages.items():  # what a page loads (its canonical link is an address, no load)
        remote = [t.get("src") or t.get("href") for t in soup.find_all(["script", "link"])
                  if external(t.get("src") or t.get("href") or "") and "canonical" not in t.get("rel", [])]
        assert not remote, f"{path} loads {remote}"
    scripts = [s["src"].split("?")[0] for s in pages["01_positions.html"].find_all("script", src=True)]
    mathjax = [s for s in scripts if s.endswith("mathjax/tex-chtml.js")]
    assert mathjax and (site / mathjax[0]).is_file()
    assert list((site / mathjax[0]).parent.glob("output/chtml/fonts/woff-v2/*.woff"))


# ---- issue 30: the website for every reader ----

SHORT_OUTPUTS = ("Check passed.", "Not answered yet")


def sections(page, pattern):
    """The article's level-2 sections whose heading matches pattern."""
    return [s for s in page.select("article section")
            if s.find("h2", recursive=False) and re.search(pattern, s.find("h2", recursive=False).get_text())]


def outside_folds(element):
    """The output boxes of element a reader sees without opening a fold."""
    boxes = element.select("div.cell_output, div.output, div.course-output")
    return [b for b in boxes if not b.find_parent("details")]


@pytest.mark.parametrize("stem", STEMS)
def test_no_answer_shows_before_the_learner_thinks(pages, stem):
    """1. In an exercise or a question, an unfolded output says at most "Check passed." or "Not
    answered yet": a check's explanation of the answer is inside the answer's fold."""
    page = pages[f"{stem}.html"]
    asked = sections(page, r"Your turn|Check your understanding")
    assert asked
    shown = [box for section in asked if "Check your understanding" in section.h2.get_text()
             for box in outside_folds(section)]  # a question's every output
    shown += [box for cell in page.select("article div.tag_check") for box in outside_folds(cell)]
    for box in shown:  # and every check's, in an exercise too
        text = norm(box.get_text())
        assert text in SHORT_OUTPUTS or text.startswith("Not answered yet"), \
            f"shown before it is asked for: {text[:100]!r}"
    visible = norm(text_of(page.select_one("article"), lambda tag: tag.name == "details"))
    for cell in solution(stem).cells:
        if "check" in notebooks.tags(cell):
            for output in cell.outputs:
                said = norm(output.get("text", ""))
                if said not in SHORT_OUTPUTS:
                    assert said not in visible, f"a check's output shown unfolded: {said[:100]!r}"


def figure_descriptions(stem):
    """The "Figure description." paragraph that follows each figure of a notebook, in order."""
    out, waiting = [], False
    for cell in solution(stem).cells:
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs):
            waiting = True
        elif cell.cell_type == "markdown" and waiting:
            found = re.search(r"(?:^|\n\n)\*\*Figure description\.\*\*(.*)", cell.source, re.S)
            if found:
                out.append(found[1])
                waiting = False
    return out


@pytest.mark.parametrize("stem", STEMS)
def test_every_figure_has_the_first_sentence_of_its_description_as_alt_text(pages, stem):
    """2. A figure's alt text is the first sentence of the "Figure description." after it."""
    images = [img for img in pages[f"{stem}.html"].select("article img") if "_images/" in img["src"]]
    descriptions = figure_descriptions(stem)
    assert len(images) == len(descriptions)
    for img, description in zip(images, descriptions, strict=True):
        alt = img.get("alt", "")
        assert alt.endswith(".") and len(alt.split()) >= 2 and "_images" not in alt and ".png" not in alt, \
            f"{img['src']}: alt {alt!r}"
        assert "$" not in alt and "\\" not in alt and "`" not in alt and "**" not in alt, f"markup in {alt!r}"
        said, described = words(alt).split(), markdown_words(description).split()
        assert said == described[:len(said)], f"{alt!r} is not how {description[:80]!r} starts"
        assert len(said) < len(described), "the alt text is the whole description, not its first sentence"


def test_first_sentence_of_a_description():
    from helpers.course.site import first_sentence

    assert first_sentence("**Figure description.** Four $5 \\times 5$ grids, row $q$ is a query. "
                          "The weights range from 0.039 to 0.611.") == "Four 5 × 5 grids, row q is a query."
    assert first_sentence("**Figure description.** Bars of `<pad>` for $T = 0.5$, 1 and 2. At e.g. "
                          "step 3.") == "Bars of <pad> for T = 0.5, 1 and 2."
    assert first_sentence("**Figure description.** Scaled by $\\sqrt{d_{\\text{model}}}$.") == \
        "Scaled by √d_model."


@pytest.mark.parametrize("stem", STEMS)
def test_every_fold_is_one_widget_with_one_label_per_answer(pages, stem):
    """2 and 5. One fold per answer (its code, its check, its explanation), one kind of widget,
    a button whose accessible name is its visible label, which says what the fold holds."""
    from helpers.course.site import LABELS

    article = pages[f"{stem}.html"].select_one("article")
    folds = article.find_all("details")
    answers = [c for c in solution(stem).cells if "solution" in notebooks.tags(c)]
    assert len(folds) == len(answers), f"{len(folds)} folds for {len(answers)} answers"
    for fold in folds:
        assert "course-fold" in fold.get("class", []), f"another kind of fold: {fold.get('class')}"
        summary = fold.find("summary")
        assert not summary.get("aria-label"), f"the button reads {summary.get('aria-label')!r}"
        closed = norm(text_of(summary, lambda tag: "course-open" in tag.get("class", [])))
        opened = norm(text_of(summary, lambda tag: "course-closed" in tag.get("class", [])))
        assert (closed, opened) in LABELS.values(), f"labels {closed!r} / {opened!r}"
        kind = "exercise" if "course-exercise" in fold["class"] else "question"
        heading = fold.find_parent("section").find(re.compile("^h[23]$")).get_text()
        assert (kind == "exercise") == bool(re.search("Your turn", heading)), f"{closed!r} under {heading!r}"
    for fold in folds:  # never two bars in a row: something to read between two folds
        following = fold.find_next_sibling()
        while following is not None and following.name == "div" and not norm(following.get_text()):
            following = following.find_next_sibling()
        assert following is None or following.name != "details", "two folds in a row"


def css():
    return (ROOT / "website" / "assets" / "course.css").read_text()


def test_a_phone_gets_cards_and_wrapping_lines(pages):
    """3. Below a width the landing table is one card per notebook (its start buttons inside);
    inline code wraps. The browser check measures the buttons at 390 px."""
    rules = re.findall(r"@media \(max-width: *(\d+)px\) *\{(.*?)\n\}", css(), re.S)
    assert rules, "no rule for narrow screens"
    width, narrow = rules[0]
    assert 390 < int(width) < 992
    assert re.search(r"\.course-notebooks (table|tr|td)[^{]*\{[^}]*display: *block", narrow)
    assert re.search(r"code\.literal[^{]*\{[^}]*overflow-wrap: *anywhere", css())
    article = pages["index.html"].select_one("article")
    box = article.select_one(".course-notebooks")
    assert box and box.find("table"), "the landing table is not in its box"
    starts = [a for a in article.find_all("a", href=True)
              if "colab.research" in a["href"] or "kaggle" in a["href"]]
    assert starts and all(a.find_parent(class_=["course-notebooks", "course-start"]) for a in starts)
    assert len(box.select("tbody tr")) == len(STEMS) + 1  # a row per notebook and the total


def test_no_thebe_a_favicon_one_header_bar_and_a_title_said_once(site, pages):
    """4. Page errors a reader's browser meets (the browser check also loads every page)."""
    for path, soup in pages.items():
        text = str(soup)
        assert "THEBE_JS_URL" not in text and "thebe" not in text.lower(), f"{path}: Thebe is still there"
        icon = soup.find("link", rel="icon")
        assert icon and (site / path).parent.joinpath(icon["href"]).is_file(), f"{path}: no favicon"
        header = soup.find("header", id="pst-header")
        assert header is None or not header.select(".navbar-persistent--container, .search-button-field"), \
            f"{path}: a second header bar with a second search box"
    assert not list(site.rglob("sphinx-thebe*"))
    title = notebooks.README.read_text().split("\n")[0].removeprefix("# ")
    assert norm(pages["index.html"].title.get_text()) == title
    assert norm(pages["01_positions.html"].title.get_text()).endswith(title)


def readme_commands():
    """The commands of the README's section "On your own machine": a learner's (Jupyter), then the
    maintainers' (the test suite)."""
    readme = notebooks.README.read_text()
    section = re.search(r"^## On your own machine\n(.*?)(?=^## )", readme, re.S | re.M)[1]
    return [norm(c) for c in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_the_front_page_links_the_paper_says_how_to_run_it_and_where_it_comes_from(pages):
    """6. The paper, the README's commands, the licence, meta tags, the version, the repository."""
    article = pages["index.html"].select_one("article")
    assert article.find("a", href="https://arxiv.org/abs/1706.03762"), "no link to the paper"
    shown = [norm(pre.get_text()) for pre in article.find_all("pre")]
    learner, *maintainers = [c for c in readme_commands() if "pytest" not in c] + [
        c for c in readme_commands() if "pytest" in c]
    assert learner in shown and "jupyter" in learner, "the README's command to open the course is missing"
    assert maintainers and not [c for c in maintainers if c in shown], "the test suite's command is shown"
    assert "contributor part" not in article.get_text()
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "Copyright (c) 2026" in licence
    readme = notebooks.README.read_text()
    assert "[LICENSE](LICENSE)" in readme and "creativecommons.org/licenses/by/4.0" in readme
    commit = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()
    for path, soup in pages.items():
        footer = soup.select_one("footer .course-footer")
        assert footer, f"{path}: no course footer"
        hrefs = [a["href"] for a in footer.find_all("a", href=True)]
        assert f"{course.REPO_URL}/blob/{course.REPO_REF}/LICENSE" in hrefs
        assert "https://creativecommons.org/licenses/by/4.0/" in hrefs and "CC BY 4.0" in footer.get_text()
        assert f"{course.REPO_URL}/issues/new" in hrefs and course.REPO_URL in hrefs
        if commit:
            assert f"{course.REPO_URL}/commit/{commit}" in hrefs, f"{path}: no version marker"
        metas = {m.get("name") or m.get("property"): m.get("content") for m in soup.find_all("meta")}
        for key in ("description", "og:title", "og:description"):
            assert (metas.get(key) or "").strip(), f"{path}: no {key}"
    described = {m.get("name"): m.get("content") for m in pages["02_layer_norm.html"].find_all("meta")}
    assert dict((s, line) for s, _, line in course.NOTEBOOKS)["02_layer_norm"] in described["description"]


def test_the_version_marker_outside_a_git_checkout(tmp_path, monkeypatch):
    from helpers.course import site as site_module

    monkeypatch.setattr(site_module, "ROOT", tmp_path)
    assert "not from a git checkout" in site_module.version()


@pytest.mark.parametrize("stem", STEMS)
def test_the_page_says_what_the_site_shows(pages, stem):
    """7. No "next cell" that is not on the page, no "open the solution copy" on the solution
    copy, one spelling of d_model in a paragraph."""
    article = pages[f"{stem}.html"].select_one("article")
    text = norm(article.get_text())
    assert "the next cell downloads" not in text
    assert "Open the solution copy" not in text
    for paragraph in article.find_all(["p", "li", "td"]):
        if paragraph.find(["p", "li"]):
            continue
        formulas = " ".join(m.get_text() for m in paragraph.find_all(class_="math"))
        plain = text_of(paragraph, lambda tag: is_math(tag) or tag.name == "code")
        if r"d_{\text{model}}" in formulas:
            assert "d_model" not in plain, f"plain and typeset d_model: {norm(paragraph.get_text())[:120]!r}"


def test_search_snippets_show_formulas_as_text_and_nothing_unshipped_is_shipped(site, pages):
    """7. The search page's snippets are made by course.js (formulas as plain text: the browser
    check searches; see test_search_snippets_come_from_each_pages_sentences); no source maps or
    Jinja templates in the site."""
    scripts = [s["src"].split("?")[0] for s in pages["search.html"].find_all("script", src=True)]
    assert any(s.endswith("_static/course.js") for s in scripts)
    assert not list(site.rglob("*.map")), "source maps shipped"
    templates = [p for p in (site / "_static").rglob("*.html")
                 if re.search(r"\{%-? *(macro|set|if)\b", p.read_text(errors="replace"))]
    assert not templates, f"Jinja templates shipped: {templates}"


def test_two_zips_hold_every_notebook(site, pages):
    """8. The landing page links one zip of the exercise copies and one of the solutions, and says
    what they hold."""
    import zipfile

    article = pages["index.html"].select_one("article")
    zips = {a["href"]: a for a in article.find_all("a", href=True) if a["href"].endswith(".zip")}
    assert len(zips) == 2
    for folder in (notebooks.EXERCISES, notebooks.SOLUTIONS):
        which = folder.name if folder.name != "notebooks" else "exercises"
        [href] = [h for h in zips if which in h]
        with zipfile.ZipFile(site / href) as zf:
            held = {pathlib_name(n): zf.read(n) for n in zf.namelist()}
        assert held == {f"{stem}.ipynb": (folder / f"{stem}.ipynb").read_bytes() for stem in STEMS}
    said = norm(article.find(id="download-everything").get_text())
    assert f"{len(STEMS)} notebooks" in said and "helpers" in said


def pathlib_name(name):
    return name.rsplit("/", 1)[-1]


# ---- issue 41: no raw TeX, formulas whole on a phone, search snippets, no console error ----

def visible_text(element):
    """The text a reader sees in element (folds opened), outside typeset maths, code and pre."""
    return norm(text_of(element, lambda tag: tag.name in ("code", "pre", "script", "style") or is_math(tag),
                        " "))


def main_part(soup):
    return soup.select_one("article") or soup.select_one('[role="main"]') or soup.body


def test_no_raw_tex_on_any_page(pages):
    """1. A formula MyST did not parse shows its TeX: a `$` or a command (`\\text`) in the text."""
    for path, soup in pages.items():
        text = visible_text(main_part(soup))
        raw = [m[0] for m in re.finditer(r".{0,50}(?:\$|\\[A-Za-z]+).{0,30}", text)]
        assert not raw, f"{path}: raw TeX in the text: {raw[:3]}"
        words_only = re.compile(r"\s*\\\(\s*(where|and|the|is|are|for|with)\b[A-Za-z ]*\\\)\s*")
        prose_as_maths = [m.get_text() for m in main_part(soup).select(".math")
                          if words_only.fullmatch(m.get_text())]
        assert not prose_as_maths, f"{path}: words set as maths: {prose_as_maths[:3]}"


def scripts_and_styles(soup):
    files = [s.get("src", "") for s in soup.find_all("script")] + [
        link.get("href", "") for link in soup.find_all("link", rel="stylesheet")]
    inline = " ".join(s.get_text() for s in soup.find_all("script") if not s.get("src"))
    return files, inline


def test_one_viewport_tag_and_nothing_loaded_for_nothing(pages):
    """8. One viewport tag; MathJax only on a page with formulas; toggle-button and tab files only
    on a page that has one; no 1.5 MB icon script; the search index on the search page only."""
    for path, soup in pages.items():
        assert len(soup.find_all("meta", attrs={"name": "viewport"})) == 1, f"{path}: viewport tags"
        files, inline = scripts_and_styles(soup)
        formulas = bool(soup.select(".math"))
        assert any("mathjax" in f for f in files) == formulas, f"{path}: MathJax and {formulas} formulas"
        assert ("window.MathJax" in inline) == formulas
        if not soup.select(".toggle, .admonition.dropdown"):
            assert not [f for f in files if "togglebutton" in f] and "toggleHint" not in inline, path
        if not soup.select(".sd-tab-set"):
            assert not [f for f in files if "design-tabs" in f], path
        assert not [f for f in files if "fontawesome" in f], f"{path}: the icon script"
        if path != "search.html":
            assert not [f for f in files if re.search(r"searchindex|searchtools", f)], path
    assert not pages["index.html"].select(".math"), "the front page needs no MathJax"


def test_the_icons_the_pages_show_are_drawn_by_a_small_stylesheet(site, pages):
    drawn = (site / "_static" / "course-icons.css").read_text()
    assert len(drawn) < 20_000
    for path, soup in pages.items():
        for icon in soup.select("i[class*=fa-], span[class*=fa-]"):
            for name in [c for c in icon["class"] if c.startswith("fa-") and c not in ("fa-solid", "fa-lg")]:
                assert f".{name}::before {{ width" in drawn, f"{path}: no shape for the icon {name}"
    assert "a.reference.download::before { width" in drawn
    assert not list(site.rglob("fontawesome.js"))


def test_a_first_visit_has_a_valid_theme_mode(pages):
    """5. The theme's default mode is never empty ("Got invalid theme mode" on a first visit)."""
    for path, soup in pages.items():
        assert soup.body.get("data-default-mode") in ("auto", "light", "dark"), path
        [setter] = [s.get_text() for s in soup.find_all("script") if "dataset.mode" in s.get_text()]
        assert re.search(r'getItem\("mode"\) \|\| "(auto|light|dark)"', setter), f"{path}: {setter.strip()}"


def png_size(path):
    import struct

    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is no PNG"
    return struct.unpack(">II", header[16:24])


def test_link_previews_and_canonical_links_from_the_site_address(site, pages):
    """8. og:url and the canonical link are the page's address under the configured base URL;
    og:image is the course's 1,200 x 630 picture, shipped with the site."""
    import yaml

    from helpers.course.site import OG_IMAGE, OG_SIZE, site_url

    base = site_url(yaml.safe_load((ROOT / "website" / "_config.yml").read_text()))
    assert base.startswith("https://") and base.endswith("/")
    for path, soup in pages.items():
        metas = {m.get("property") or m.get("name"): m.get("content") for m in soup.find_all("meta")}
        canonical = soup.find("link", rel="canonical")
        assert canonical and canonical["href"] == base + path == metas.get("og:url"), path
        assert metas.get("og:image") == f"{base}_static/{OG_IMAGE}", path
        assert (metas.get("og:image:width"), metas.get("og:image:height")) == tuple(map(str, OG_SIZE))
        assert metas.get("twitter:card") == "summary_large_image" and metas.get("og:image:alt")
    assert png_size(site / "_static" / OG_IMAGE) == OG_SIZE
    assert (site / "_static" / OG_IMAGE).read_bytes() == (ROOT / "website" / "assets" / OG_IMAGE).read_bytes()


def test_the_preview_picture_is_drawn_by_its_script(tmp_path):
    from helpers.course.site import OG_SIZE, draw_og_image

    assert png_size(draw_og_image(tmp_path / "og.png")) == OG_SIZE


def search_sentences(site, stem):
    text = (site / "_static" / "search" / f"{stem}.js").read_text().strip()
    assert text.startswith("CourseSearch.add(") and text.endswith(");")
    page, sections, sentences = json.loads("[" + text.removeprefix("CourseSearch.add(")[:-2] + "]")
    assert page == stem
    return sections, sentences


def test_search_snippets_come_from_each_pages_sentences(site, pages):
    """3. The search page shows no snippet of its own (Sphinx's fetches the page, which fails from
    file://, and starts at the theme's contents); course.js picks the sentence that matches from
    _static/search/PAGE.js, formulas as plain text. The browser check searches for real."""
    assert "SHOW_SEARCH_SUMMARY: false" in (site / "_static" / "documentation_options.js").read_text()
    js = (site / "_static" / "course.js").read_text()
    assert "CourseSearch" in js and "_static/search/" in js and "fetch(" not in js
    for stem in STEMS:
        sections, sentences = search_sentences(site, stem)
        assert len(sentences) > 50 and all(0 <= s < len(sections) for s, _ in sentences)
        tex = [t for _, t in sentences if re.search(r"\\[A-Za-z(\[]|\$", t)]
        assert not tex, f"{stem}: TeX in the search text: {tex[:2]}"
        assert not [t for _, t in sentences if "Contents" == t or "Run the exercise copy" in t]
    _, sentences = search_sentences(site, "09_translation")
    assert any(t.startswith("Characters alone would also be a closed vocabulary, with much longer sequences")
               for _, t in sentences)


LEARNER_PAGE_PARTS = ["How to start", "The notebooks", "Download everything", "On your own machine",
                      "Licence", "For maintainers"]
FOR_MAINTAINERS = ["test suite", "local CPU wheel", "this README", "course's own machines", "kernel families",
                   "CI", "seed"]


def test_the_front_page_is_written_for_a_learner(pages):
    """7. What the course is, who it is for, how to start, the notebooks, the licence; the
    maintainers' detail is a link to the repository; formulas typeset; the contributors named
    once in the footer."""
    article = pages["index.html"].select_one("article")
    text = norm(article.get_text())
    headings = [norm(h.get_text()).rstrip("#") for h in article.find_all("h2")]
    assert headings == LEARNER_PAGE_PARTS, headings
    for said in FOR_MAINTAINERS:
        assert not re.search(rf"\b{re.escape(said)}\b", text), f"the front page says {said!r}"
    assert article.find("a", href=f"{course.REPO_URL}#for-contributors")
    assert "QKᵀ/√d_k" not in text and article.find("sup"), "softmax(QKᵀ/√d_k)V untypeset"
    numbers = next(p for p in article.find_all("p") if "Will my numbers match?" in p.get_text())
    assert len(numbers.get_text().split()) < 90, "a long answer to 'Will my numbers match?'"
    footer = norm(pages["index.html"].select_one("footer.bd-footer-content").get_text())
    assert footer.count("The original Transformer, step by step contributors") == 1, footer


def test_a_notebooks_data_licence_is_named_once_it_is_on_the_site(monkeypatch, pages):
    from helpers.course import site as site_module

    readme = notebooks.README.read_text()
    eleven = [s for s in STEMS if s.startswith("11_")]
    if not eleven:
        assert "Tatoeba" not in site_module.licence_section(readme)
        monkeypatch.setattr(course, "NOTEBOOKS", [*course.NOTEBOOKS, ("11_sentences", "Real sentences", "")])
    for said in (site_module.licence_section(readme), site_module.footer()):
        for part in ("Tatoeba Project", "tatoeba.org", "CC BY 2.0 FR", "manythings.org/anki"):
            assert part in said, part
    if eleven:
        assert "CC BY 2.0 FR" in pages["index.html"].select_one("article").get_text()
        assert "CC BY 2.0 FR" in pages[f"{eleven[0]}.html"].select_one("footer .course-footer").get_text()


def test_phone_tables_break_only_words_that_cannot_fit(pages):
    """4. On a phone a table wraps between words (the browser check measures every word at 390 px);
    06's comparison of four columns is one card per row, each cell after its column's name."""
    narrow = re.findall(r"@media \(max-width: *\d+px\) *\{(.*?)\n\}", css(), re.S)[0]
    for rule in re.findall(r"([^{}]*\b(?:td|th)\b[^{}]*)\{([^}]*)\}", narrow):
        assert "anywhere" not in rule[1] and "hyphens" not in rule[1], f"a table rule breaks words: {rule}"
    tables = pages["06_parameter_count.html"].select("article table.course-cards")
    assert len(tables) == 1
    heads = [norm(th.get_text()) for th in tables[0].select("thead th")]
    for row in tables[0].select("tbody tr"):
        assert [td.get("data-label") for td in row.find_all("td")] == heads
    assert re.search(r"table\.course-cards td[^{]*::before *\{[^}]*attr\(data-label\)", narrow)


LAYOUT = set("""a an the of and or by to in on from with each one two three four five six seven eight nine
ten eleven twelve sixteen per side left right top bottom up down read grid grids panel panels diagram
diagrams chart charts line lines bar bars box boxes column columns row rows curve curves plot plots
group groups""".split())


@pytest.mark.parametrize("stem", STEMS)
def test_every_alt_text_says_what_its_figure_shows(pages, stem):
    """6. Not only the layout ("Three grids.", "Two columns of boxes, read from the bottom up."):
    at least three words of what the figure shows."""
    for img in pages[f"{stem}.html"].select("article img"):
        if "_images/" in img["src"]:
            said = [w for w in re.findall(r"[A-Za-z]+", img.get("alt", "")) if w.lower() not in LAYOUT]
            assert len(said) >= 3, f"{img['src']}: the alt text {img.get('alt')!r} gives only the layout"
