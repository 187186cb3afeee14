"""Every reference to a section in the notebooks' text names a section that exists.

A reference is "§M" or "section M" (or a list: "§4 and §5", "sections 2 and 4", "§4–§5"). It points
into the notebook named just before it ("notebook NN, §M", "notebook NN (§M)", "notebook NN's
§M"), into the notebook last named in the same cell ("its §M"), or else into its own notebook.
The paper's sections ("§3.2.1", "Section 4 of the paper", "the paper (§4)") are left alone.
Where the reference gives a title ("§7, Where the parameters are", '§2 "A vector for each
position"', "§4 (The positions in the trained model)"), the heading must carry that title. And a
few topics, named with a notebook in brackets ("the causal mask (notebook 04)"), must name the
notebook that teaches them.

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


def plain(text):
    return re.sub(r"[`*_\"“”]", "", text).strip().lower()


def problems(stem, all_headings):
    """Every broken reference in one notebook's markdown, one line each."""
    nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = cell.source
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
        found = problems("_references_test", {**fake, "_r": {}})
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


if __name__ == "__main__":
    lines = [line for stem in STEMS.values() for line in problems(stem, ALL_HEADINGS)]
    print("\n".join(lines) or "every reference resolves")
    print(f"{len(lines)} broken references")
