"""How long a notebook takes a learner: a stated method, computed from the notebook itself.

A learner reads the text, reads and runs the code, looks at each figure, does each
exercise and answers each question. The estimate adds those up, from what the exercise
copy shows (cells left out of it, the worked answers, are not counted):

- prose: the words of the text cells, at WORDS_PER_MINUTE (technical text with formulas);
- code: the lines of the code cells (the setup cell aside), at LINES_PER_MINUTE;
- running: MINUTES_PER_CELL per code cell (run it, read its output), plus the cell's own
  run time where it trains (RUN_MINUTES, a cell whose stored output is a progress bar);
- figures: MINUTES_PER_FIGURE each;
- exercises ("Your turn"): MINUTES_PER_EXERCISE each; questions ("Check your
  understanding"): MINUTES_PER_QUESTION each;

rounded up to 5 minutes. ``python -m helpers.timing`` prints the breakdown of every notebook.
The generator writes the result into each notebook's first cell ("**Time:** about N min")
and into the README's table.
"""

import math
import pathlib
import re

import nbformat

WORDS_PER_MINUTE = 110
LINES_PER_MINUTE = 20
MINUTES_PER_CELL = 0.25
RUN_MINUTES = 1.0
MINUTES_PER_FIGURE = 1.0
MINUTES_PER_EXERCISE = 8.0
MINUTES_PER_QUESTION = 2.0

QUESTIONS_HEADING = "check your understanding"


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _trains(cell):
    return any(o.get("output_type") == "stream" and o.get("name") == "stderr"
               and re.search(r"\d+/\d+ \[", o.get("text", "")) for o in cell.get("outputs", []))


def breakdown(nb):
    """The parts of the estimate for a solution notebook, and its minutes."""
    seen = [c for c in nb.cells if "solution-only" not in _tags(c)]
    words = sum(len(c.source.split()) for c in seen if c.cell_type == "markdown")
    code = [c for c in seen if c.cell_type == "code" and "bootstrap" not in _tags(c)]
    lines = sum(len((c.metadata.get("exercise", c.source) if "solution" in _tags(c) else c.source)
                    .splitlines()) for c in code)
    figures = sum(1 for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    training = sum(1 for c in code if _trains(c))
    exercises = questions = 0
    in_questions = False
    for cell in seen:
        if cell.cell_type == "markdown":
            for line in cell.source.lower().splitlines():
                if line.startswith("#") and QUESTIONS_HEADING in line:
                    in_questions = True
                elif line.startswith("## ") and ("recap" in line or "limits" in line):
                    in_questions = False
        elif "solution" in _tags(cell):
            if in_questions:
                questions += 1
            else:
                exercises += 1
    parts = {
        "prose": words / WORDS_PER_MINUTE,
        "code": lines / LINES_PER_MINUTE,
        "running": len(code) * MINUTES_PER_CELL + training * RUN_MINUTES,
        "figures": figures * MINUTES_PER_FIGURE,
        "exercises": exercises * MINUTES_PER_EXERCISE,
        "questions": questions * MINUTES_PER_QUESTION,
    }
    counts = {"training cells": training, "words": words, "code lines": lines, "code cells": len(code),
              "figures": figures, "exercises": exercises, "questions": questions}
    return counts, parts, 5 * math.ceil(sum(parts.values()) / 5)


def minutes(nb):
    """The estimate for a solution notebook, in minutes (a multiple of 5)."""
    return breakdown(nb)[2]


def total(minutes_list):
    """'8 h 25 min' for a list of minutes."""
    m = sum(minutes_list)
    return f"{m // 60} h {m % 60:02d} min" if m >= 60 else f"{m} min"


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    rows = []
    print("| # | training cells | words | code lines | code cells | figures | exercises | questions | "
          "prose | code | running | figures | exercises | questions | minutes |")
    print("|---|" + "---|" * 14)
    for path in sorted((root / "solutions").glob("*.ipynb")):
        counts, parts, m = breakdown(nbformat.read(path, as_version=4))
        rows.append(m)
        print(f"| {path.stem[:2]} | " + " | ".join(str(v) for v in counts.values()) + " | "
              + " | ".join(f"{v:.0f}" for v in parts.values()) + f" | {m} |")
    print(f"\ntotal: {total(rows)}")


if __name__ == "__main__":
    main()
