"""The assignments the grader knows, derived from the source notebooks: nbgrader's metadata is the registry.

`python -m autograder.chapters` (and `python -m autograder build`) reads every source/<id>/<id>.ipynb and
writes what grading needs into chapters.json: the title, the answer cells (a `solution` cell's grade_id is
the name it defines), the preamble (the locked `imports` cell) and the points of each task (its
`check_<name>` grade cell). Grading reads that file with the standard library alone: GPU runners have no
Jupyter packages. tests/test_chapters.py proves it says what the notebooks say.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
CHECKS_DIR = PACKAGE / "checks"
HARNESS_DIR = PACKAGE / "harness"
REGISTRY = PACKAGE / "chapters.json"
SOURCE = PACKAGE.parent / "source"
# Chapters whose grading imports torch._dynamo (1-2 s): operator traces (TorchDispatchMode), an optimizer's first
# step, torch.func. The zygote then imports it once, before forking, instead of every child on its own.
LOADS_DYNAMO = frozenset({"01_basics", "02_modules", "03_broadcasting", "04_overloaded_ops", "05_batch_gather",
                          "07_numerical_stability", "08_mixed_precision"})


class RegistryError(ValueError):
    """A source notebook's metadata does not say what grading needs; the message says what is missing."""


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    answers: tuple[str, ...]  # grade_ids of the answer cells; each defines the name it is called by
    points: dict[str, float]  # task (an answer cell) -> the points of its check cell
    preamble: str  # the notebook's locked imports cell, run before the answer cells
    checks: Path  # the checks module: the chapter's API declaration and its checks
    harness: Path | None = None  # kit code run in the student's process before the answer cells
    loads_dynamo: bool = False  # see LOADS_DYNAMO
    # stretch tasks -> their bonus points (metadata kit.bonus of a 0-point check cell), shown apart from `points`
    bonus: dict[str, float] = field(default_factory=dict)

    @property
    def tasks(self) -> dict[str, float]:
        """Every task's points, stretch tasks included."""
        return {**self.points, **self.bonus}

    def harness_source(self) -> str:
        """Kit code run in the student's process before the answer cells (no secrets in it)."""
        return self.harness.read_text() if self.harness is not None else ""

    def cell_defining(self, name: str) -> str | None:
        return name if name in self.answers else None


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


def chapter(chapter_id: str, found: dict[str, Any], checks: Path, harness: Path | None = None) -> Chapter:
    """A chapter from its registry entry and its kit-side files."""
    return Chapter(chapter_id, found["title"], tuple(found["answers"]), dict(found["points"]), found["preamble"],
                   checks, harness, chapter_id in LOADS_DYNAMO, dict(found.get("bonus", {})))


def load(registry: Path = REGISTRY) -> dict[str, Chapter]:
    """The registry, with each chapter's checks module and harness (if any) found by its id."""
    chapters = {}
    for cid, found in json.loads(registry.read_text()).items():
        harness = HARNESS_DIR / f"ch{cid}.py"
        chapters[cid] = chapter(cid, found, CHECKS_DIR / f"ch{cid}.py", harness if harness.exists() else None)
    return chapters


CHAPTERS: dict[str, Chapter] = load()

if __name__ == "__main__":
    write_registry()
    print(f"{REGISTRY.relative_to(PACKAGE.parent)}: {', '.join(derive())}")
