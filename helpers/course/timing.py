"""How long a notebook takes a learner: a stated method, computed from the notebook itself.

A learner reads the text, reads and runs the code, looks at each figure, does each
exercise and answers each question. The estimate adds those up, from what the exercise
copy shows (cells left out of it, the worked answers, are not counted):

- reading: the words of the text cells at WORDS_PER_MINUTE (technical text with formulas),
  and the lines of the code cells (the setup cell aside) at LINES_PER_MINUTE;
- running: MINUTES_PER_CELL per code cell (run it, read its output), plus the cell's own run
  time where it was measured: ``python -m helpers.course.notebooks --execute NN`` records, in each
  code cell that ran for RECORDED_FROM seconds or more, ``metadata.run_seconds`` (on the
  course's 2-core CPU). A training cell (its stored output is a progress bar) with no record
  counts RUN_MINUTES;
- figures: MINUTES_PER_FIGURE each;
- exercises and questions: each one's own ``metadata.minutes`` (an estimate of what it asks,
  set in its ``solution`` cell), or MINUTES_PER_EXERCISE / MINUTES_PER_QUESTION without one.
  A question is a ``solution`` cell under a "Check your understanding" heading, or one whose
  metadata says ``"question": true`` (a question asked inside a section); every other
  ``solution`` cell is a "Your turn" exercise.

A part of a notebook may be **optional**: it starts at a markdown cell whose metadata says
``"optional": true`` (a section or subsection heading) and runs to the next heading of the same or
a higher level; no later cell needs it. It is estimated on its own, by the same method, and left
out of the notebook's main estimate: "**Time:** about 120–150 min, plus 25–40 min for the optional
parts", and the part's heading says its own time.

The result is a range, for a faster and a slower reader of the stated audience: the low end
reads READING_SPEEDS[0] times as fast as the rates above (25 % faster), the high end
READING_SPEEDS[1] times (25 % slower); running, figures, exercises and questions count the same
for both (each exercise's own estimate is already one for the stated audience). The low end is
rounded down, the high end up, to 5 minutes. ``python -m helpers.course.timing`` prints the
breakdown of every notebook. The generator writes the range into each notebook's first cell
("**Time:** about 140–170 min"), the README's table and the README's counts line.
"""

import math
import pathlib
import re

import nbformat

WORDS_PER_MINUTE = 110
LINES_PER_MINUTE = 20
MINUTES_PER_CELL = 0.25
RUN_MINUTES = 1.0
RECORDED_FROM = 2
MINUTES_PER_FIGURE = 1.0
MINUTES_PER_EXERCISE = 8
MINUTES_PER_QUESTION = 2
READING_SPEEDS = (1.25, 0.75)

QUESTIONS_HEADING = "check your understanding"


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _trains(cell):
    return any(o.get("output_type") == "stream" and o.get("name") == "stderr"
               and re.search(r"\d+/\d+ \[", o.get("text", "")) for o in cell.get("outputs", []))


def _heading_levels(cell):
    """The levels of the headings a markdown cell holds (2 for '## ...')."""
    if cell.cell_type != "markdown":
        return []
    return [len(m.group(1)) for m in re.finditer(r"^(#+) ", cell.source, flags=re.M)]


def optional_parts(nb):
    """The notebook's optional parts: a list of (heading cell, [its cells, the heading first])."""
    parts, current, level = [], None, 0
    for cell in nb.cells:
        levels = _heading_levels(cell)
        if current is not None and levels and min(levels) <= level:
            current = None
        if cell.cell_type == "markdown" and cell.metadata.get("optional") is True:
            if not levels:
                raise ValueError("an optional part starts at a heading: " + cell.source[:60])
            current, level = [cell], min(levels)
            parts.append((cell, current))
        elif current is not None:
            current.append(cell)
    return parts


def _in_optional(nb):
    return {id(c) for _, cells in optional_parts(nb) for c in cells}


def _optional_cells(nb):
    """The cells of all the notebook's optional parts, in order ([] when it has none)."""
    optional = _in_optional(nb)
    return [c for c in nb.cells if id(c) in optional]


def tasks(nb, cells=None):
    """The exercises and questions of the notebook (or of those of its cells given): two lists
    of (cell, minutes)."""
    wanted = None if cells is None else {id(c) for c in cells}
    exercises, questions = [], []
    in_questions = False
    for cell in nb.cells:
        if "solution-only" in _tags(cell):
            continue
        if cell.cell_type == "markdown":
            for line in cell.source.lower().splitlines():
                if line.startswith("#") and QUESTIONS_HEADING in line:
                    in_questions = True
                elif line.startswith("## "):
                    in_questions = False
        elif "solution" in _tags(cell):
            question = in_questions or cell.metadata.get("question") is True
            default = MINUTES_PER_QUESTION if question else MINUTES_PER_EXERCISE
            minutes = cell.metadata.get("minutes", default)
            if wanted is None or id(cell) in wanted:
                (questions if question else exercises).append((cell, minutes))
    return exercises, questions


def breakdown(nb, cells=None):
    """The parts of the estimate for a solution notebook, and its range (low, high) in minutes:
    of the notebook without its optional parts, or of the cells given."""
    if cells is None:
        optional = _in_optional(nb)
        cells = [c for c in nb.cells if id(c) not in optional]
    seen = [c for c in cells if "solution-only" not in _tags(c)]
    words = sum(len(c.source.split()) for c in seen if c.cell_type == "markdown")
    code = [c for c in seen if c.cell_type == "code" and "bootstrap" not in _tags(c)]
    lines = sum(len((c.metadata.get("exercise", c.source) if "solution" in _tags(c) else c.source)
                    .splitlines()) for c in code)
    figures = sum(1 for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    recorded = sum(c.metadata.get("run_seconds", 0) for c in code) / 60
    unrecorded = sum(1 for c in code if _trains(c) and "run_seconds" not in c.metadata)
    exercises, questions = tasks(nb, cells)
    parts = {
        "prose": words / WORDS_PER_MINUTE,
        "code": lines / LINES_PER_MINUTE,
        "running": len(code) * MINUTES_PER_CELL + recorded + unrecorded * RUN_MINUTES,
        "figures": figures * MINUTES_PER_FIGURE,
        "exercises": sum(m for _, m in exercises),
        "questions": sum(m for _, m in questions),
    }
    counts = {"training cells": sum(1 for c in code if _trains(c)), "words": words, "code lines": lines,
              "code cells": len(code), "figures": figures, "exercises": len(exercises),
              "questions": len(questions)}
    reading = parts["prose"] + parts["code"]
    rest = parts["running"] + parts["figures"] + parts["exercises"] + parts["questions"]
    low, high = (reading / speed + rest for speed in READING_SPEEDS)
    parts["at the stated rates"] = reading + rest
    return counts, parts, (5 * max(1, math.floor(low / 5)), 5 * math.ceil(high / 5))


def minutes(nb):
    """The estimate for a solution notebook without its optional parts: (low, high) minutes,
    multiples of 5."""
    return breakdown(nb)[2]


def optional_minutes(nb, cells=None):
    """The estimate of the notebook's optional parts (or of one part's cells): (low, high), or
    None when it has none."""
    cells = _optional_cells(nb) if cells is None else cells
    return breakdown(nb, cells)[2] if cells else None


def _said(nb, extra):
    """'140–170 min', followed by extra (formatted with the optional parts' low and high) if any."""
    (low, high), optional = minutes(nb), optional_minutes(nb)
    return f"{low}–{high} min" + (extra.format(*optional) if optional else "")


def stated(nb):
    """'140–170 min', or '120–150 min, plus 25–40 min for the optional parts', as the first cell
    says it."""
    return _said(nb, ", plus {}–{} min for the optional parts")


def in_table(nb):
    """'140–170 min', or '120–150 min (+25–40 optional)', as the README's table says it."""
    return _said(nb, " (+{}–{} optional)")


def total(minutes_list):
    """'8 h 25 min' for a list of minutes."""
    m = sum(minutes_list)
    return f"{m // 60} h {m % 60:02d} min" if m >= 60 else f"{m} min"


def course_range(ranges):
    """'19 h 40 min to 24 h 05 min' for a list of (low, high)."""
    return f"{total([lo for lo, _ in ranges])} to {total([hi for _, hi in ranges])}"


def counts_line(notebooks):
    """The README's sentence of counts for a list of solution notebooks, from the same code."""
    words = exercises = questions = 0
    ranges, extras = [], []
    for nb in notebooks:
        for cells in (None, _optional_cells(nb)):
            if cells == []:
                continue
            counts, _, span = breakdown(nb, cells)
            words, exercises, questions = (words + counts["words"], exercises + counts["exercises"],
                                           questions + counts["questions"])
            (ranges if cells is None else extras).append(span)
    line = (f"The course holds about {round(words, -3):,} words of text, {exercises} \"Your turn\" "
            f"exercises and {questions} questions: {course_range(ranges)} in all")
    return line + (f", plus {course_range(extras)} for the optional parts." if extras else ".")


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    ranges, notebooks = [], []
    print("| # | training cells | words | code lines | code cells | figures | exercises | questions | "
          "prose | code | running | figures | exercises | questions | at the rates | range |")
    print("|---|" + "---|" * 15)
    for path in sorted((root / "solutions").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        counts, parts, span = breakdown(nb)
        ranges.append(span)
        notebooks.append(nb)
        rows = [(path.stem[:2], counts, parts, span)]
        for head, cells in optional_parts(nb):
            title = next(line for line in head.source.splitlines() if line.startswith("#"))
            rows.append((f"{path.stem[:2]}, optional: {title.lstrip('# ')[:40]}", *breakdown(nb, cells)))
        for label, counts, parts, span in rows:
            print(f"| {label} | " + " | ".join(str(v) for v in counts.values()) + " | "
                  + " | ".join(f"{v:.0f}" for v in parts.values()) + f" | {span[0]}–{span[1]} |")
    print(f"\n{counts_line(notebooks)}")


if __name__ == "__main__":
    main()
