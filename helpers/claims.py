"""Claims about a trained model, checked in the cell that makes them.

Training amplifies rounding: the same notebook trained on another CPU, or with another
seed, ends with slightly different numbers. So every number the text quotes about a
trained model comes with the range that several training runs of ours gave, and the
cell checks that this run falls inside it:

    expect("exact match at step 500", em, 0.60, 1.00, "{:.1%}")

prints the value and the range (``show=False``: nothing), and raises if the value is outside
it. ``table()`` prints every claim this kernel has checked, this run's value beside our runs'
range: a notebook's one table of ranges, printed where its runs end. The
maintainers' seed sweep (``python tests/seed_sweep.py``) re-runs each training
notebook with several values of its ``SEED`` and collects every ``expect`` into one
table, which is how the ranges were measured.
"""

import json
import os

RECORD = "COURSE_CLAIMS_FILE"  # set by the seed sweep: append each claim there, never raise
CHECKED = {}                   # every claim this kernel checked: what -> its row (the last run of its cell)


def _record(row):
    CHECKED[row["what"]] = row
    path = os.environ.get(RECORD)
    if not path:
        return False
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    return True


def expect(what, value, low, high, fmt="{:.3g}", show=True):
    """Check that a trained model's number lies in [low, high]; print it with the range.

    what: what the number is, as the text says it; fmt formats value, low and high. The
    range is what the seed sweep measured, widened by a margin for other CPUs.
    """
    value = float(value)
    held = low <= value <= high
    row = {"what": what, "value": value, "low": low, "high": high, "fmt": fmt, "held": held}
    sweeping = _record(row)
    if show:
        print(f"{what}: {fmt.format(value)} "
              f"(our training runs, with a margin: {fmt.format(low)} to {fmt.format(high)})")
    if not held and not sweeping:
        raise AssertionError(f"{what} = {fmt.format(value)}, outside the range "
                             f"{fmt.format(low)} to {fmt.format(high)} that our runs gave")
    return value


def expect_true(what, condition, show=False):
    """Check a statement about a trained model that held in every run of ours."""
    held = bool(condition)
    sweeping = _record({"what": what, "value": held, "held": held})
    if show:
        print(f"{what}: {held}")
    if not held and not sweeping:
        raise AssertionError(f"expected, as in every run of ours: {what}")
    return held


def table():
    """Print every claim checked so far in this kernel, in the order first checked: this run's
    value and the range our training runs gave (a statement: yes or no, and "yes in every run")."""
    lines = []
    for row in CHECKED.values():
        if "low" in row:
            fmt = row["fmt"]
            lines.append((row["what"], fmt.format(row["value"]),
                          f"{fmt.format(row['low'])} to {fmt.format(row['high'])}"))
        else:
            lines.append((row["what"], "yes" if row["value"] else "no", "yes in every run"))
    width = max([len("claim")] + [len(what) for what, _, _ in lines])
    value_width = max([len("this run")] + [len(value) for _, value, _ in lines])
    print(f"{'claim':<{width}}  {'this run':>{value_width}}  our training runs, with a margin")
    for what, value, expected in lines:
        print(f"{what:<{width}}  {value:>{value_width}}  {expected}")
