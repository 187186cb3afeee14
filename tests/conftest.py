import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pytest_make_parametrize_id(config, val, argname):
    """Test ids that are the same in every pytest-xdist worker: no memory address in them."""
    import re
    if isinstance(val, str) and " at 0x" in val:
        return re.sub(r" at 0x[0-9a-fA-F]+", "", val)
    return None
