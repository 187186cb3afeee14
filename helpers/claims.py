"""Claims about a trained model, checked in the cell that makes them.

Training amplifies rounding: the same notebook trained on another CPU, or with another
seed, ends with slightly different numbers. So every number the text quotes about a
trained model comes with the range that several training runs of ours gave, and the
cell checks that this run falls inside it:

    expect("exact match at step 500", em, 0.60, 1.00, "{:.1%}")

prints the value and the range, and raises if the value is outside it. The
maintainers' seed sweep (``python tests/seed_sweep.py``) re-runs each training
notebook with several values of its ``SEED`` and collects every ``expect`` into one
table, which is how the ranges were measured.
"""

import json
import os

RECORD = "COURSE_CLAIMS_FILE"  # set by the seed sweep: append each claim there, never raise


def _record(row):
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
