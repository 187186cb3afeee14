"""helpers/ in three parts, and one direction of dependence between them (read from the imports).

- the paper's concepts (``helpers/*.py``) import only concepts;
- the course's small worlds (``helpers/tasks/``) import concepts and worlds;
- the checks (``helpers/checks/``) import concepts, worlds and checks;
- the machinery (``helpers/course/``) may import anything;
- no notebook imports the machinery, and no concept, world or check does either.
"""

import ast
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
HELPERS = ROOT / "helpers"
ALLOWED = {"concept": {"concept"}, "task": {"concept", "task"}, "check": {"concept", "task", "check"},
           "machinery": {"concept", "task", "check", "machinery"}, "notebook": {"concept", "task", "check"}}


def part(module):
    """The part of helpers a dotted module name belongs to, or None outside helpers."""
    names = module.split(".")
    if names[0] != "helpers":
        return None
    if len(names) == 1:
        return "concept"                       # helpers/__init__.py: seed_all
    return {"tasks": "task", "checks": "check", "course": "machinery"}.get(names[1], "concept")


def module_of(path):
    rel = path.relative_to(ROOT).with_suffix("")
    names = list(rel.parts)
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def imported(source, module=""):
    """Every helpers module that source imports (``from helpers import x`` counts as helpers.x
    where x is a module, else as helpers)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                path = ROOT.joinpath(*full.split("."))
                found.add(full if path.with_suffix(".py").is_file() or path.is_dir() else node.module)
    return {m for m in found if m.split(".")[0] == "helpers"}


def wrong_arrows(files):
    """(importer, imported) pairs that go against the allowed direction."""
    wrong = []
    for name, kind, source in files:
        for target in imported(source):
            if part(target) not in ALLOWED[kind]:
                wrong.append((name, target))
    return wrong


def helper_files():
    for path in sorted(HELPERS.rglob("*.py")):
        module = module_of(path)
        yield module, part(module), path.read_text()


def notebook_files():
    for folder in ("solutions", "notebooks"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            cells = json.loads(path.read_text())["cells"]
            code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
            code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
            yield f"{folder}/{path.name}", "notebook", code


def test_the_folder_shows_three_parts():
    assert (HELPERS / "tasks" / "__init__.py").is_file() and (HELPERS / "course" / "__init__.py").is_file()
    kinds = {part(m) for m, _, _ in helper_files()}
    assert kinds == {"concept", "task", "check", "machinery"}


def test_every_import_runs_one_way():
    assert wrong_arrows(list(helper_files())) == []


def test_no_notebook_imports_the_machinery():
    assert wrong_arrows(list(notebook_files())) == []


@pytest.mark.parametrize("kind, source, target", [
    ("concept", "from helpers.tasks import reversal", "helpers.tasks.reversal"),
    ("concept", "from helpers.tasks.numbers import tokenize", "helpers.tasks.numbers"),
    ("concept", "import helpers.checks.encoder", "helpers.checks.encoder"),
    ("task", "from helpers.checks import checker", "helpers.checks"),
    ("check", "from helpers import course", "helpers.course"),
    ("notebook", "from helpers.course import notebooks", "helpers.course.notebooks"),
    ("notebook", "    from helpers.course.timing import minutes", "helpers.course.timing"),
])
def test_a_planted_wrong_import_is_found(kind, source, target):
    code = source if not source.startswith(" ") else "def f():\n" + source
    assert wrong_arrows([("planted", kind, code)]) == [("planted", target)]


def test_the_allowed_arrows_pass():
    assert wrong_arrows([("a", "task", "from helpers.model import Transformer\nfrom helpers import seed_all"),
                         ("b", "check", "from helpers.tasks import numbers\nimport helpers.attention"),
                         ("c", "machinery", "from helpers.checks import checker")]) == []
