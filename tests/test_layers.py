"""The architecture as the tree shows it: each layer imports only the layers below it.

sandbox/runtime/ (copied beside student code) imports nothing else of the kit; sandbox/ knows no notebooks,
chapters or pytest; judging/ never reaches up into course/ or the chapters (it finds a chapter's folder
through the registry, at run time); a chapter imports the kit through one surface, judging/authoring.py (its
torch-free __init__.py: ChapterConfig from judging/chapter.py; its harness, run in the student's process: the child
runtime), never the sandbox or the course layer otherwise.
Read statically, from every module's imports, so a new import that breaks
a layer fails here before it fails in a sandboxed child or on a GPU runner without Jupyter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autograder import PACKAGE

# layer (a folder of the package) -> the kit modules it must never import (prefixes of dotted names)
FORBIDDEN = {
    "sandbox/runtime": ("autograder.sandbox.launcher", "autograder.sandbox.process", "autograder.sandbox.limits",
                        "autograder.judging", "autograder.course", "autograder.chapters", "autograder.cli"),
    "sandbox": ("autograder.judging", "autograder.course", "autograder.chapters", "autograder.cli", "pytest"),
    "judging": ("autograder.course", "autograder.chapters", "autograder.cli"),
    "chapters": ("autograder.course", "autograder.cli", "autograder.sandbox", "autograder.judging"),
    "course": ("autograder.cli",),
}
# module (a glob, matched from the right) -> the kit modules it may import all the same
# A harness runs in the student's process, where the child runtime is the only kit code there is: it may build on it.
ALLOWED = {"chapters/*/__init__.py": ("autograder.judging.chapter",),
           "chapters/*/harness.py": ("autograder.sandbox.runtime.child",),
           "chapters/*/*.py": ("autograder.judging.authoring",)}


def imports(source: str) -> set[str]:
    """Every module the code imports, at any depth (lazy imports count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return found


def layer(path: Path) -> str | None:
    rel = path.relative_to(PACKAGE).as_posix()
    return next((name for name in FORBIDDEN if rel.startswith(name + "/")), None)


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if layer(p) is not None)


def breaks(path: Path, source: str | None = None) -> list[str]:
    """The imports of the module at `path` (its file, or `source`) that its layer must not make."""
    rel = path.relative_to(PACKAGE)
    allowed = next((ok for pattern, ok in ALLOWED.items() if rel.match(pattern)), ())
    forbidden = FORBIDDEN[layer(path) or ""]
    found = imports(path.read_text() if source is None else source)
    return sorted(m for m in found if m.startswith(forbidden) and not m.startswith(allowed))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_a_module_imports_only_the_layers_below_its_own(path: Path) -> None:
    assert breaks(path) == [], f"{path.relative_to(PACKAGE)} ({layer(path)}) imports a layer above it"


def test_the_rule_catches_an_import_that_reaches_up() -> None:
    """The check can fail: a judging module that imports the course layer, lazily, is caught; so is runtime
    code that imports the judge's side of the sandbox."""
    lazy = "def f():\n    from autograder.course import batch\n"
    assert breaks(PACKAGE / "judging" / "new.py", lazy) == ["autograder.course", "autograder.course.batch"]
    assert breaks(PACKAGE / "sandbox" / "runtime" / "new.py", "import autograder.sandbox.limits\n") == [
        "autograder.sandbox.limits"]
    ch = PACKAGE / "chapters" / "ch99_x"
    assert breaks(ch / "cases.py", "from autograder.judging.authoring import wrong\n") == []
    assert breaks(ch / "cases.py", "from autograder.course.cases import wrong\n") == ["autograder.course.cases",
                                                                                     "autograder.course.cases.wrong"]
    assert breaks(ch / "harness.py", "from autograder.sandbox.runtime.child import Trace\n") == []
    assert breaks(ch / "harness.py", "from autograder.sandbox.launcher import Zygote\n") == [
        "autograder.sandbox.launcher", "autograder.sandbox.launcher.Zygote"]
    assert breaks(ch / "checks.py", "from autograder.sandbox.runtime import wire\n") == [
        "autograder.sandbox.runtime", "autograder.sandbox.runtime.wire"]
    assert breaks(ch / "checks.py", "import autograder.judging.expect\n") == ["autograder.judging.expect"]
    assert breaks(ch / "__init__.py", "from autograder.judging.chapter import ChapterConfig\n") == []


def test_every_layer_has_modules() -> None:
    """A renamed folder would make the rules above vacuous."""
    assert {layer(p) for p in MODULES} == set(FORBIDDEN)
