"""Load a submitted notebook: find its assignment and its answer cells.

A notebook is JSON. We read it with `json` rather than nbformat on purpose:
the grading path must import with torch, numpy and pytest alone (GPU runners
have no Jupyter packages), and we only need a few well-known fields, each of
which is checked here with a clear message.

The file is student text: its answer cells and every message about it (which names the file) are made safe
text here, where they enter the judge (autograder/judging/untrusted.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.judging.handin import NotOwnFile, read_own
from autograder.judging.registry import CHAPTERS, Chapter
from autograder.judging.untrusted import safe_code, safe_name, safe_text


class NotebookError(Exception):
    """The file is not a notebook we can grade; the message says why."""


@dataclass
class Submission:
    path: Path
    chapter: Chapter
    cells: list[dict[str, str]] = field(default_factory=list)  # [{"id": grade_id, "source": code}]
    missing: list[str] = field(default_factory=list)  # answer cells not found
    error: str | None = None  # set when the notebook could not be read at all


MAX_NOTEBOOK_BYTES = 50 << 20  # larger files are refused unread
# The answer cells travel to the child in one frame header (autograder.sandbox.runtime.wire.MAX_HEADER, 8 MiB):
# 2 MiB of JSON-encoded source leaves room for the harness and the preamble.
MAX_ANSWER_BYTES = 2 << 20
REPAIR = ("It was probably damaged while editing or uploading: download your last checkpoint (File > Revert "
          "Notebook to Checkpoint) or re-download the release and copy your answers in.")


def too_large(name: str) -> str:
    return (f"{name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MB, too large to grade. Clear its outputs (Edit > "
            "Clear All Outputs), save it and submit it again.")


def read_notebook(path: Path, within: Path | None = None) -> dict[str, Any]:
    """The notebook's JSON, checked for every field the grader reads; NotebookError says what is wrong, and that
    it is not the student's own file (handin.open_own: a link, a FIFO, on the way from `within`, default its
    folder)."""
    name = safe_name(path.name)  # a student's name for the file, printed on one line
    try:
        raw = read_own(path, MAX_NOTEBOOK_BYTES, within)
    except NotOwnFile as e:
        raise NotebookError(str(e)) from None
    except OSError as e:
        raise NotebookError(f"cannot read {name}: {e.strerror}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(too_large(name))
    try:
        nb = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise NotebookError(f"{name} is not a notebook: its JSON is nested too deeply. {REPAIR}") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, integers too long to convert
        raise NotebookError(f"{name} is not valid notebook JSON ({e}). {REPAIR}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{name} is JSON but not a Jupyter notebook (no list of cells).")
    if "nbformat" not in nb:
        raise NotebookError(f"{name} has no nbformat version, so it is not a saved Jupyter notebook. {REPAIR}")
    if nb["nbformat"] != 4:
        raise NotebookError(f"{name} has nbformat {nb['nbformat']!r}; save it as nbformat 4.")
    problem = _problem(nb)
    if problem:
        raise NotebookError(f"{name} is damaged: {problem}. {REPAIR}")
    return nb


def _problem(nb: dict[str, Any]) -> str | None:
    """The first field the grader reads that has the wrong type, or None."""
    meta = nb.get("metadata", {})
    if not isinstance(meta, dict):
        return "the notebook's metadata is not a JSON object"
    kit = meta.get("kit", {})
    if not isinstance(kit, dict) or not isinstance(kit.get("assignment", ""), str):
        return "the notebook's kit metadata is not an object with a text 'assignment'"
    for i, cell in enumerate(nb["cells"], 1):
        if not isinstance(cell, dict):
            return f"cell {i} is not a JSON object"
        cell_meta = cell.get("metadata", {})
        grader = cell_meta.get("nbgrader", {}) if isinstance(cell_meta, dict) else None
        source = cell.get("source", "")
        if not isinstance(cell.get("cell_type"), str):
            return f"cell {i} has no text cell_type"
        if not isinstance(cell_meta, dict):
            return f"the metadata of cell {i} is not a JSON object"
        if not isinstance(grader, dict):
            return f"the nbgrader metadata of cell {i} is not a JSON object"
        if not isinstance(grader.get("grade_id", ""), str):
            return f"the grade_id of cell {i} is not text"
        if not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(x, str) for x in source))):
            return f"the source of cell {i} is neither text nor a list of lines"
    return None


def _nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell: dict[str, Any]) -> str:
    """The cell's code as safe text (untrusted.safe_code). Python reads \\r\\n and \\r as line ends: they become
    \\n, which no terminal acts on."""
    src = cell.get("source", "")
    code = "".join(src) if isinstance(src, list) else src
    return safe_code(code.replace("\r\n", "\n").replace("\r", "\n"))


def detect_assignment(nb: dict[str, Any] | None, path: Path, registry: Mapping[str, Chapter] | None = None
                      ) -> str | None:
    """One of `registry`'s chapters (default: the installed ones): from the kit's notebook metadata, else the
    file name, else the answer cell ids.

    `nb` is a notebook read_notebook accepted, so its fields have the right types."""
    chapters = CHAPTERS if registry is None else registry
    if nb is not None:
        kit = nb.get("metadata", {}).get("kit", {})
        if kit.get("assignment") in chapters:
            return str(kit["assignment"])
    if path.stem in chapters:
        return path.stem
    if nb is not None:
        ids = {_nbgrader(c).get("grade_id") for c in nb["cells"]}
        for chapter in chapters.values():
            if set(chapter.answers) <= ids:
                return chapter.id
    return None


def load_submission(path: Path, assignment: str | None = None, registry: Mapping[str, Chapter] | None = None
                    ) -> Submission:
    """The submission, for one of `registry`'s chapters (default: the installed ones). Never raises for a bad
    notebook: problems end up in `Submission.error`; NotebookError when no chapter is found for it."""
    chapters = CHAPTERS if registry is None else registry
    nb: dict[str, Any] | None = None
    error = None
    try:
        nb = read_notebook(path)
    except NotebookError as e:
        error = safe_text(str(e))
    assignment = assignment or detect_assignment(nb, path, chapters)
    if assignment is None or assignment not in chapters:
        known = ", ".join(chapters)
        raise NotebookError(
            (error + " " if error else "")
            + f"Cannot tell which assignment {safe_name(path.name)} is for; pass --assignment (one of: {known})."
        )
    sub = Submission(path=path, chapter=chapters[assignment], error=error)
    if nb is None:
        return sub
    found = set()
    for cell in nb["cells"]:
        grade_id = _nbgrader(cell).get("grade_id")
        if cell.get("cell_type") == "code" and grade_id in sub.chapter.answers:
            sub.cells.append({"id": str(grade_id), "source": _source(cell)})
            found.add(grade_id)
    sub.missing = [cid for cid in sub.chapter.answers if cid not in found]
    size = len(json.dumps([c["source"] for c in sub.cells]))
    if size > MAX_ANSWER_BYTES:
        sub.error = (f"Your answer cells hold {size / 2**20:.1f} MB of code; the grader accepts at most "
                     f"{MAX_ANSWER_BYTES >> 20} MB. Keep data out of the answer cells.")
        sub.cells = []
    return sub
