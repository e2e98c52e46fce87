"""The assignments the grader knows, derived from the source notebooks: nbgrader's metadata is the registry.

`python -m autograder.judging.registry` (and `python -m autograder build`) reads every
source/<id>/<id>.ipynb and writes what grading needs into autograder/chapters/chapters.json: the title, the
answer cells (a `solution` cell's grade_id is the name it defines), the preamble (the locked `imports` cell)
and the points of each task (its `check_<name>` grade cell). Grading reads that file with the standard
library alone: GPU runners have no Jupyter packages. tests/chapters/test_chapters.py proves it says what the
notebooks say. Each registered chapter has its folder, autograder/chapters/ch<id>/.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from autograder import CHECKOUT, PACKAGE
from autograder.judging.chapter import Chapter, ChapterConfig

CHAPTERS_DIR = PACKAGE / "chapters"  # one folder ch<id>/ per chapter: all of it the grader needs
REGISTRY = CHAPTERS_DIR / "chapters.json"
SOURCE = CHECKOUT / "source"


class RegistryError(ValueError):
    """A source notebook's metadata does not say what grading needs; the message says what is missing."""


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def entry(nb: dict[str, Any], chapter_id: str) -> dict[str, Any]:
    """What grading needs from one source notebook, read from its nbgrader metadata."""
    kit = nb.get("metadata", {}).get("kit", {})
    if kit.get("assignment") != chapter_id:
        raise RegistryError(f"{chapter_id}: the notebook's metadata kit.assignment is {kit.get('assignment')!r}")
    graded = [(cell, cell["metadata"]["nbgrader"]) for cell in nb["cells"] if "nbgrader" in cell.get("metadata", {})]
    answers = [meta["grade_id"] for cell, meta in graded if meta.get("solution") and cell["cell_type"] == "code"]
    imports = [_source(cell) for cell, meta in graded if meta.get("grade_id") == "imports" and meta.get("locked")]
    if len(imports) != 1:
        raise RegistryError(f"{chapter_id}: needs exactly one locked code cell with grade_id 'imports'")
    points: dict[str, float] = {}
    bonus: dict[str, float] = {}
    for cell, meta in graded:
        if meta.get("grade"):
            task = meta["grade_id"].removeprefix("check_")
            if task not in answers or task == meta["grade_id"]:
                raise RegistryError(f"{chapter_id}: grade cell {meta['grade_id']!r} is not named check_<answer cell>")
            extra = cell["metadata"].get("kit", {}).get("bonus")
            if extra is None:
                points[task] = meta["points"]
            elif meta["points"] != 0 or isinstance(extra, bool) or not isinstance(extra, (int, float)) or extra <= 0:
                raise RegistryError(f"{chapter_id}: stretch check cell {meta['grade_id']!r} needs 0 nbgrader points "
                                    f"and a positive kit.bonus (it has {meta['points']!r} and {extra!r})")
            else:
                bonus[task] = extra
    return {"title": kit.get("title", chapter_id), "answers": answers, "preamble": imports[0], "points": points,
            "bonus": bonus}


def derive(source: Path = SOURCE) -> dict[str, dict[str, Any]]:
    """The registry of every chapter under `source` (one <id>/<id>.ipynb each)."""
    notebooks = sorted(p for p in source.glob("*/*.ipynb") if p.stem == p.parent.name)
    return {p.stem: entry(json.loads(p.read_text()), p.stem) for p in notebooks}


def write_registry(source: Path = SOURCE, registry: Path = REGISTRY) -> None:
    registry.write_text(json.dumps(derive(source), indent=1) + "\n")


def chapter(chapter_id: str, found: dict[str, Any], folder: Path, config: ChapterConfig | None = None) -> Chapter:
    """A chapter from its registry entry and its folder (checks.py, and harness.py if it has one)."""
    harness = folder / "harness.py"
    return Chapter(chapter_id, found["title"], tuple(found["answers"]), dict(found["points"]), found["preamble"],
                   folder / "checks.py", harness if harness.exists() else None, config or ChapterConfig(),
                   dict(found.get("bonus", {})))


def folder_config(folder: Path) -> ChapterConfig:
    """The CONFIG a chapter's folder declares in its __init__.py (importing it imports no torch)."""
    if folder.parent == CHAPTERS_DIR:
        module = importlib.import_module(f"autograder.chapters.{folder.name}")
    else:  # a chapter kept elsewhere (a course's own, a test's): its folder is a package of that name
        spec = importlib.util.spec_from_file_location(folder.name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        if spec is None or spec.loader is None:
            raise RegistryError(f"{folder}: a chapter's folder needs an __init__.py (with its CONFIG)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[folder.name] = module
        spec.loader.exec_module(module)
    config = getattr(module, "CONFIG", ChapterConfig())
    if not isinstance(config, ChapterConfig):
        raise RegistryError(f"{folder.name}/__init__.py: CONFIG must be a ChapterConfig, not {config!r}")
    return config


def chapter_module(chapter: Chapter, name: str) -> ModuleType | None:
    """The module `name` of the chapter's folder (checks, or an optional one such as selftest), imported; None if
    the folder has no such file. A folder kept elsewhere is imported as the package of its name (folder_config)."""
    if not (chapter.folder / f"{name}.py").is_file():
        return None
    package = f"autograder.chapters.{chapter.folder.name}" if chapter.folder.parent == CHAPTERS_DIR \
        else chapter.folder.name
    return importlib.import_module(f"{package}.{name}")


def load(registry: Path = REGISTRY, chapters_dir: Path = CHAPTERS_DIR) -> dict[str, Chapter]:
    """The registry, each chapter with its folder ch<id>/ under `chapters_dir`, found by its id."""
    chapters = {}
    for cid, found in json.loads(registry.read_text()).items():
        folder = chapters_dir / f"ch{cid}"
        if not (folder / "checks.py").is_file():
            raise RegistryError(f"{cid}: the notebook is registered, but {folder}/checks.py is missing")
        chapters[cid] = chapter(cid, found, folder, folder_config(folder))
    return chapters


CHAPTERS: dict[str, Chapter] = load()

if __name__ == "__main__":
    write_registry()
    print(f"{REGISTRY.relative_to(CHECKOUT)}: {', '.join(derive())}")
