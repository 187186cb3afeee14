"""Every reference to a section in the notebooks' text names a section that exists.

A reference is "§M" or "section M" (or a list: "§4 and §5", "sections 2 and 4", "§4–§5"). It points
into the notebook named just before it ("notebook NN, §M", "notebook NN (§M)", "notebook NN's
§M"), into the notebook last named in the same cell ("its §M"), or else into its own notebook.
The paper's sections ("§3.2.1", "Section 4 of the paper", "the paper (§4)") are left alone.
Where the reference gives a title ("§7, Where the parameters are", '§2 "A vector for each
position"', "§4 (The positions in the trained model)"), the heading must carry that title. And a
few topics, named with a notebook in brackets ("the causal mask (notebook 04)"), must name the
notebook that teaches them.

A reference is best written short and linked: "[notebook 02, §7](02_layer_norm.ipynb#7-post-norm-...)",
"[§5](#5-the-shuffle-test-on-a-real-ticket)". A link to a notebook's section must name a notebook
that exists and the anchor its section's heading has on the website (myst_heading_anchors, GitHub's
rule): the anchor carries the heading's title, so the link says which section it means and breaks
when that section is renamed; and the "§M" of its text must be that section's number.

    python tests/test_references.py     # every broken reference of the course, one a line
"""

import pathlib
import re
import sys

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers import course  # noqa: E402
from helpers.course.site import myst_anchor  # noqa: E402

STEMS = {stem[:2]: stem for stem, *_ in course.NOTEBOOKS}
NUMBER = r"\d+(?:\.\d+)*"
REFERENCE = re.compile(
    r"(?:(?P<nb>[Nn]otebook\s(?P<nn>\d\d))(?:'s)?,?\s\(?|(?P<its>\bits)\s)?"
    r"(?P<word>§ ?|[Ss]ections? )(?P<first>" + NUMBER + r")"
    r"(?P<more>(?:(?:,? and|,| or| to|–|-) ?(?:§ ?)?\d+(?!\.\d))*)")
TITLE = re.compile(r"""^(?:,\s*["“]?|\s*\(\s*["“]?|\s+["“])(?P<title>[A-Z][^.;:)"”\n]*)""")
PAPER = re.compile(r"paper(?:'s)?\W{0,3}(?:\(|,)?\s*$", re.I)

# What each topic means when a sentence names it with a notebook in brackets: where it is taught.
TOPICS = {
    "causal mask": {"04"},
    "the masks": {"04"},
    "padding mask": {"04", "07"},
    "label smoothing": {"05"},
    "beam search": {"08"},
    "KV cache": {"08"},
    "BLEU": {"09"},
}
# Topics whose section a reference right before them must be ("notebook 03 (§9) built dropout").
SECTION_TOPICS = ["dropout", "label smoothing", "warmup", "beam search", "kv cache", "gelu", "rmsnorm",
                  "pre-norm", "padding mask", "perplexity"]
LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<file>\d\d_\w+\.ipynb)?#(?P<anchor>[^)\s]+)\)")
TOPIC = re.compile(r"(?P<topic>" + "|".join(map(re.escape, TOPICS)) + r")e?s?[^()\n]{0,12}"
                   r"\((?:see |as in |from )?notebook (?P<nn>\d\d)\b", re.I)


def headings(stem):
    """{number: [title, its ### subsections' titles]} of a solution notebook's numbered ## headings."""
    nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    found, current = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for level, line in re.findall(r"^(#{2,3}) +(.+?)\s*$", cell.source, re.M):
                numbered = re.match(r"(\d+)\. +(.+)", line)
                if level == "##":
                    current = numbered[1] if numbered else None
                    if numbered:
                        found[current] = [numbered[2]]
                elif current is not None:
                    found[current].append(line)
    return found


def anchors(stem):
    """{anchor: section number or None} of every ## and ### heading of a solution notebook."""
    nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    found, current = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for level, line in re.findall(r"^(#{2,3}) +(.+?)\s*$", cell.source, re.M):
                numbered = re.match(r"(\d+)\. +", line)
                if level == "##":
                    current = numbered[1] if numbered else None
                found.setdefault(myst_anchor(line), current if level == "##" else None)
    return found


def link_problems(stem, text, i, all_anchors):
    """Every broken link to a section in one cell's text: [notebook NN, §M](NN_name.ipynb#anchor)."""
    out = []
    for m in LINK.finditer(text):
        target = m["file"][:-len(".ipynb")] if m["file"] else stem
        if target not in all_anchors:
            out.append(f"{stem[:2]} cell {i}: {m.group(0)!r}: there is no notebook {m['file']}")
            continue
        if m["anchor"] not in all_anchors[target]:
            out.append(f"{stem[:2]} cell {i}: {m.group(0)!r}: notebook {target[:2]} has no heading "
                       f"with the anchor #{m['anchor']}")
            continue
        named = re.search(r"[Nn]otebook (\d\d)", m["text"])
        if named and named[1] != target[:2]:
            out.append(f"{stem[:2]} cell {i}: {m.group(0)!r}: the text names notebook {named[1]}, "
                       f"the link {target[:2]}")
        number = re.search(r"(?:§ ?|[Ss]ection )(\d+)\b", m["text"])
        if number and all_anchors[target][m["anchor"]] != number[1]:
            out.append(f"{stem[:2]} cell {i}: {m.group(0)!r}: #{m['anchor']} is not §{number[1]}'s heading")
    return out


def plain(text):
    return re.sub(r"[`*_\"“”]", "", text).strip().lower()


def problems(stem, all_headings, all_anchors=None):
    """Every broken reference in one notebook's markdown, one line each."""
    all_anchors = ALL_ANCHORS if all_anchors is None else all_anchors
    nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = cell.source
        out += link_problems(stem, text, i, all_anchors)
        last_target, last_end = None, -1000
        for m in REFERENCE.finditer(text):
            numbers = [m["first"], *re.findall(r"\d+", m["more"] or "")]
            before, after = text[max(0, m.start() - 40):m.start()], text[m.end():]
            paper = after.startswith(" of the paper") or (not m["nb"] and PAPER.search(before))
            if "." in m["first"] or paper:
                continue
            between = text[last_end:m.start()]
            if m["nn"]:
                target = m["nn"]
            elif (last_target and len(between) < 100 and ". " not in between
                  and re.search(r"(?:\band|\bor|,)\s*$", between)):
                target = last_target             # "notebook 04, §1 (Title) and §3": still notebook 04
            elif m["its"]:
                named = re.findall(r"[Nn]otebook (\d\d)", text[:m.start()])
                target = named[-1] if named else stem[:2]
            else:
                target = stem[:2]
            quoted = m.group(0).strip()
            last_target, last_end = target, m.end()
            if target not in all_headings:
                out.append(f"{stem[:2]} cell {i}: {quoted!r}: there is no notebook {target}")
                continue
            for number in numbers:
                if number not in all_headings[target]:
                    out.append(f"{stem[:2]} cell {i}: {quoted!r}: notebook {target} has no §{number}")
            title = TITLE.match(after)
            if title and len(numbers) == 1 and numbers[0] in all_headings[target]:
                said = plain(title["title"])
                if not any(plain(h).startswith(said) or said.startswith(plain(h))
                           for h in all_headings[target][numbers[0]]):
                    out.append(f"{stem[:2]} cell {i}: {quoted!r} says {title['title']!r}, but notebook "
                               f"{target}'s §{numbers[0]} is {all_headings[target][numbers[0]][0]!r}")
            if m["nn"] and len(numbers) == 1 and numbers[0] in all_headings.get(target, {}):
                for word in SECTION_TOPICS:
                    about = [n for n, titles in all_headings[target].items() if word in plain(titles[0])]
                    if word in after[:40].lower() and about and numbers[0] not in about:
                        out.append(f"{stem[:2]} cell {i}: {quoted!r} ... {word}: notebook {target}'s "
                                   f"section on {word} is §{about[0]}")
        for m in TOPIC.finditer(text):
            taught = next(v for k, v in TOPICS.items() if k.lower() == m["topic"].lower())
            if m["nn"] not in taught:
                out.append(f"{stem[:2]} cell {i}: {m.group(0)!r}: {m['topic']} is taught in notebook "
                           f"{' or '.join(sorted(taught))}")
    return out


ALL_HEADINGS = {stem[:2]: headings(stem) for stem in STEMS.values()}
ALL_ANCHORS = {stem: anchors(stem) for stem in STEMS.values()}


@pytest.mark.parametrize("stem", list(STEMS.values()))
def test_every_section_reference_names_a_section(stem):
    found = problems(stem, ALL_HEADINGS)
    assert not found, "\n".join(found)


def test_the_rules_catch_what_they_should():
    fake = {"03": {"8": ["Where the parameters are"], "9": ["Dropout: training mode"]},
            "07": {"4": ["The positions"]}}
    cell = ("Notebook 03 (section 10) built it; notebook 03 (section 8) built dropout; "
            "notebook 03, §8, Where the parameters are; "
            "notebook 03 (§9, \"Where the parameters are\"); notebook 07, §4 and §5; its §9; "
            "the paper (§4) and §3.2.1; Section 4 of the paper; a causal mask (notebook 07). Notebook\n"
            "03, §8 (Where the parameters are) and §9 (Dropout: training mode).")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(cell)])
    path = ROOT / "solutions" / "_references_test.ipynb"
    try:
        nbformat.write(nb, path)
        found = problems("_references_test", {**fake, "_r": {}}, ALL_ANCHORS)
    finally:
        path.unlink()
    assert any("no §10" in line for line in found)
    assert any("'Where the parameters are'" in line and "§9" in line for line in found)
    assert any("no §5" in line for line in found)
    assert any("causal mask is taught in notebook 04" in line for line in found)
    assert any("section on dropout is §9" in line for line in found)
    assert not any("§8" in line and "says" in line for line in found)
    assert not any("4)" in line or "3.2.1" in line or "of the paper" in line for line in found)
    assert any("'its §9': notebook 07 has no §9" in line for line in found)   # its: the last one named
    assert len(found) == 6, found            # the last sentence: a line break, and "and §9" in 03


def test_a_short_link_must_name_the_section_its_anchor_is():
    stem = STEMS["02"]
    seven = next(a for a, n in ALL_ANCHORS[stem].items() if n == "7")
    right = f"[notebook 02, §7]({stem}.ipynb#{seven})"
    assert not link_problems("05_x", right, 0, ALL_ANCHORS)
    wrong = [f"[notebook 02, §6]({stem}.ipynb#{seven})",          # another section's number
             f"[notebook 03, §7]({stem}.ipynb#{seven})",          # another notebook in the text
             f"[notebook 02, §7]({stem}.ipynb#7-a-title-it-does-not-have)",
             f"[notebook 02, §7](02_no_such_notebook.ipynb#{seven})",
             f"[§7](#{seven})"]                                   # no such heading in its own notebook
    found = [link_problems("05_x", text, 0, {**ALL_ANCHORS, "05_x": {}}) for text in wrong]
    assert all(len(lines) == 1 for lines in found), found
    # the references test reads the link text too: "notebook 02, §9" must exist
    assert any("no §9" in line for line in problems_in("[notebook 02, §9](x)"))


def problems_in(text):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    path = ROOT / "solutions" / "_references_test.ipynb"
    try:
        nbformat.write(nb, path)
        return problems("_references_test", ALL_HEADINGS, ALL_ANCHORS)
    finally:
        path.unlink()


if __name__ == "__main__":
    lines = [line for stem in STEMS.values() for line in problems(stem, ALL_HEADINGS)]
    print("\n".join(lines) or "every reference resolves")
    print(f"{len(lines)} broken references")
