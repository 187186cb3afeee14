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
    for path, soup in pages.items():
        remote = [t.get("src") or t.get("href") for t in soup.find_all(["script", "link"])
                  if external(t.get("src") or t.get("href") or "")]
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
    assert starts and all(a.find_parent(class_="course-notebooks") for a in starts)
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
    """The commands of the README's section "On your own machine"."""
    readme = notebooks.README.read_text()
    section = re.search(r"^## On your own machine\n(.*?)(?=^## )", readme, re.S | re.M)[1]
    return [norm(c) for c in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_the_front_page_links_the_paper_says_how_to_run_it_and_where_it_comes_from(pages):
    """6. The paper, the README's commands, the licence, meta tags, the version, the repository."""
    article = pages["index.html"].select_one("article")
    assert article.find("a", href="https://arxiv.org/abs/1706.03762"), "no link to the paper"
    shown = [norm(pre.get_text()) for pre in article.find_all("pre")]
    commands = readme_commands()
    assert len(commands) >= 2 and all(c in shown for c in commands), "the README's commands are missing"
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
    check searches); no source maps or Jinja templates in the site."""
    scripts = [s["src"].split("?")[0] for s in pages["search.html"].find_all("script", src=True)]
    assert any(s.endswith("_static/course.js") for s in scripts)
    js = (site / "_static" / "course.js").read_text()
    assert "Search.htmlToText" in js and ".math" in js
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
