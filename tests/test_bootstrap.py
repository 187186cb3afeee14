"""The bootstrap cell, as Colab and Kaggle run it: a notebook alone in an empty folder.

No network: COURSE_REPO_URL points the clone at a local repository made from this
working tree.
"""

import os
import subprocess
import sys

import pytest

from helpers.course import notebooks
from platforms import local_course_repo


@pytest.fixture(scope="module")
def local_remote(tmp_path_factory):
    """A git repository holding this working tree's helpers/, on the branch REPO_REF."""
    from helpers import course
    return local_course_repo(tmp_path_factory.mktemp("remote") / "course", course.REPO_REF)


def run_bootstrap(cwd, url):
    code = notebooks.bootstrap_source() + "\nimport helpers.positions; print('imported', helpers.__file__)"
    env = {**os.environ, "COURSE_REPO_URL": url, "GIT_TERMINAL_PROMPT": "0"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_bootstrap_clones_once_and_is_idempotent(tmp_path, local_remote):
    from helpers import course
    first = run_bootstrap(tmp_path, local_remote)
    second = run_bootstrap(tmp_path, local_remote)
    for run in (first, second):
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""
        assert run.stdout == f"imported {tmp_path / course.CLONE_DIR / 'helpers' / '__init__.py'}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [course.CLONE_DIR]
    assert not (tmp_path / course.CLONE_DIR / course.CLONE_DIR).exists()


def test_bootstrap_offline_says_what_to_switch_on(tmp_path):
    code = notebooks.bootstrap_source()
    env = {**os.environ, "COURSE_REPO_URL": (tmp_path / "nowhere").as_uri(), "GIT_TERMINAL_PROMPT": "0"}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == ""
    assert run.stdout.count("\n") == 1 and "switch Internet on" in run.stdout


def test_bootstrap_finds_the_checkout_without_cloning():
    run = run_bootstrap(notebooks.EXERCISES, "file:///nonexistent")
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"imported {notebooks.ROOT / 'helpers' / '__init__.py'}\n"


# Every notebook, with its exercise copy, runs alone in an empty folder: tests/notebook_runs.py.


def test_skipping_the_setup_cell_says_to_run_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", notebooks.GUARD], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last == ("ModuleNotFoundError: No module named 'helpers': run the setup cell at the top first.")
