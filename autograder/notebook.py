"""Load a submitted notebook: find its assignment and its answer cells.

A notebook is JSON. We read it with `json` rather than nbformat on purpose:
the grading path must import with torch, numpy and pytest alone (GPU runners
have no Jupyter packages), and we only need a few well-known fields, each of
which is checked here with a clear message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.chapters import CHAPTERS, Chapter


class NotebookError(Exception):
    """The file is not a notebook we can grade; the message says why."""


@dataclass
class Submission:
    path: Path
    chapter: Chapter
    cells: list[dict[str, str]] = field(default_factory=list)  # [{"id": grade_id, "source": code}]
    missing: list[str] = field(default_factory=list)  # answer cells not found
    error: str | None = None  # set when the notebook could not be read at all


def read_notebook(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise NotebookError(f"cannot read {path.name}: {e.strerror}") from None
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise NotebookError(
            f"{path.name} is not valid notebook JSON ({e}). It was probably damaged while "
            "editing or uploading: download your last checkpoint (File > Revert Notebook "
            "to Checkpoint) or re-download the release and copy your answers in."
        ) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path.name} is JSON but not a Jupyter notebook (no list of cells).")
    if nb.get("nbformat") != 4:
        raise NotebookError(f"{path.name} has nbformat {nb.get('nbformat')!r}; save it as nbformat 4.")
    return nb


def _nbgrader(cell: Any) -> dict[str, Any]:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    grader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return grader if isinstance(grader, dict) else {}


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def detect_assignment(nb: dict[str, Any] | None, path: Path) -> str | None:
    """From the kit's notebook metadata, else the file name, else the answer cell ids."""
    if nb is not None:
        kit = nb.get("metadata", {}).get("kit", {})
        if isinstance(kit, dict) and kit.get("assignment") in CHAPTERS:
            return str(kit["assignment"])
    if path.stem in CHAPTERS:
        return path.stem
    if nb is not None:
        ids = {_nbgrader(c).get("grade_id") for c in nb["cells"]}
        for chapter in CHAPTERS.values():
            if set(chapter.answers) <= ids:
                return chapter.id
    return None


def load_submission(path: Path, assignment: str | None = None) -> Submission:
    """Never raises for a bad notebook: problems end up in `Submission.error`."""
    nb: dict[str, Any] | None = None
    error = None
    try:
        nb = read_notebook(path)
    except NotebookError as e:
        error = str(e)
    assignment = assignment or detect_assignment(nb, path)
    if assignment not in CHAPTERS:
        known = ", ".join(CHAPTERS)
        raise NotebookError(
            (error + " " if error else "")
            + f"Cannot tell which assignment {path.name} is for; pass --assignment (one of: {known})."
        )
    sub = Submission(path=path, chapter=CHAPTERS[assignment], error=error)
    if nb is None:
        return sub
    found = set()
    for cell in nb["cells"]:
        grade_id = _nbgrader(cell).get("grade_id")
        if cell.get("cell_type") == "code" and grade_id in sub.chapter.answers:
            sub.cells.append({"id": str(grade_id), "source": _source(cell)})
            found.add(grade_id)
    sub.missing = [cid for cid in sub.chapter.answers if cid not in found]
    return sub
