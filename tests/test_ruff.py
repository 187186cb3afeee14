import subprocess
import sys

from helpers.course import notebooks


def test_ruff_is_clean():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."],
                         cwd=notebooks.ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
