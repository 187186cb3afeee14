"""The tests that run a model, once more under another CPU kernel family.

CI runs on one CPU; a learner's CPU rounds differently. PyTorch's ``ATEN_CPU_CAPABILITY`` makes
this machine use another kernel family (another CPU's rounding), so a test whose verdict rests on
a model's rounding fails here, on the developers' machine, not on a learner's. The tests marked
``cpu_sensitive`` (they run a trained, shipped or randomly initialised model and assert what it
writes or which hint a check prints) are re-run in a subprocess under a family this CPU has other
than its own (``tests/kernels.py``). ``tests/cpu_variants.py`` runs the whole suite under every
family and thread count.
"""

import os
import pathlib
import subprocess
import sys

import kernels
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def rerun(family, *paths):
    """pytest on the cpu_sensitive tests of paths (default: tests/) under ATEN_CPU_CAPABILITY=family."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=family)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "-p", "no:xdist", "-m", "cpu_sensitive", "-rf", *(paths or ["tests/"])],
                          cwd=ROOT, env=env, capture_output=True, text=True)


@pytest.mark.skipif(len(kernels.families()) < 2, reason="this CPU has one kernel family only")
def test_model_tests_pass_under_another_kernel_family():
    family = kernels.other()
    done = rerun(family)
    summary = "\n".join(line for line in done.stdout.splitlines()
                        if line.startswith(("FAILED", "ERROR")) or " passed" in line or " failed" in line)
    assert done.returncode == 0, f"under ATEN_CPU_CAPABILITY={family}:\n{summary or done.stdout[-2000:]}"
    assert " passed" in summary and " deselected" in done.stdout     # it ran the marked tests, not all
