import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pytest_make_parametrize_id(config, val, argname):
    """Test ids that are the same in every pytest-xdist worker: no memory address in them."""
    import re
    if isinstance(val, str) and " at 0x" in val:
        return re.sub(r" at 0x[0-9a-fA-F]+", "", val)
    return None


@pytest.fixture(scope="class")
def local_remote(tmp_path_factory):
    """A git repository holding this working tree's helpers/, on the branch REPO_REF: the URL a
    setup cell clones from in the tests (COURSE_REPO_URL), with no network. One per class, so
    that each exercise copy's test (its own class) makes its own."""
    from helpers import course
    from platforms import local_course_repo
    return local_course_repo(tmp_path_factory.mktemp("remote") / "course", course.REPO_REF)

