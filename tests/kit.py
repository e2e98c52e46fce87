"""Helpers for the kit's own tests: build submissions and grade them in-process."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from autograder import CHECKOUT
from autograder.course.reference import release_path as release_path  # re-exported: the tests read releases here
from autograder.course.reference import solution_cells, with_answers
from autograder.judging.judge import Grade, GradeOptions, grade
from autograder.judging.registry import CHAPTERS, Chapter
from autograder.judging.results import Outcome
from autograder.sandbox import launcher
from autograder.sandbox.limits import Limits
from autograder.sandbox.runtime.wire import RemoteObject

ROOT = CHECKOUT

# The test process judges as the command line does (autograder.cli): one torch thread, set here for the whole
# process, since the judge's idle threads would spin on the cores that timed children need.
torch.set_num_threads(1)

# Short limits keep hanging submissions cheap to test; real grading uses the defaults.
FAST = Limits(call_seconds=5.0, load_seconds=20.0)
# A chapter whose calls train models (ChapterConfig.trains): 5 s is too tight on a loaded 2-core machine.
TRAINING = Limits(call_seconds=20.0, load_seconds=20.0)


def limits_for(chapter: str) -> Limits:
    """The tests' short limits, or the training ones for a chapter whose calls train models."""
    return TRAINING if CHAPTERS[chapter].config.trains else FAST


def write_submission(directory: Path, chapter: str, cells: dict[str, str], name: str | None = None) -> Path:
    """The release notebook with some answer cells replaced, as a student would save it."""
    nb = with_answers(chapter, cells)
    path = directory / (name or f"{chapter}.ipynb")
    path.write_text(json.dumps(nb, indent=1))
    return path


def solved(directory: Path, chapter: str, **replace: str) -> Path:
    """A full-marks submission, optionally with some cells replaced by other code."""
    return write_submission(directory, chapter, {**solution_cells(chapter), **replace})


def zygote() -> launcher.Zygote:
    """The zygote every grading of the test process forks from (started on first use, closed at exit)."""
    return launcher.zygote()


def grade_fast(path: Path, registry: Mapping[str, Chapter] | None = None, zygote: launcher.Zygote | None = None,
               **options: Any) -> Grade:
    """grade() with a fixed seed, short limits and the test process's zygote, unless told otherwise (`options`:
    GradeOptions' fields)."""
    options.setdefault("seed", 1234)
    options.setdefault("limits", FAST)
    return grade(path, options=GradeOptions(**options), zygote=zygote or launcher.zygote(), registry=registry)


def by_name(g: Grade) -> dict[str, Any]:
    """Check results keyed by check function name (the part of the nodeid after ::)."""
    return {r.nodeid.split("::")[-1]: r for r in g.results}


def task_scores(g: Grade) -> dict[str, float]:
    """Points earned per graded task (answer cell); stretch tasks, which earn bonus points, are left out."""
    stretch = {r.task for r in g.results if r.bonus}
    return {task: got for task, (got, _) in g.by_task().items() if task not in stretch}


def scores_on_their_own(g: Grade) -> dict[str, float]:
    """Points per task from the checks that passed on their own, whether or not a broken rule voided them (rule
    checks left out): what the grading did, for attacks whose load-time code also breaks a rule read from the
    source (07's)."""
    scores: dict[str, float] = {}
    for r in g.results:
        if not r.rule:
            scores[r.task] = scores.get(r.task, 0.0) + (r.points if Outcome.PASSED in (r.outcome, r.alone) else 0.0)
    return scores


def check_count(chapter: str) -> int:
    """How many checks grade `chapter`: its checks module's @check declarations (stretch tasks included)."""
    import importlib.util

    from autograder.judging.plugin import declared_checks
    from autograder.judging.registry import CHAPTERS

    path = CHAPTERS[chapter].checks
    spec = importlib.util.spec_from_file_location(f"_counted_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return len(declared_checks(module))


# What no report may carry from student code: characters a terminal acts on (C0 controls but tab and newline,
# DEL, C1 controls, bidirectional overrides) and lone surrogates, which no UTF-8 file can hold.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def strings(value: Any) -> Iterator[str]:
    """Every string in a decoded value, dict keys and a remote object's type name included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, RemoteObject):
        yield value.type_name
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def unsafe(value: Any) -> list[str]:
    """The strings in `value` that hold an unsafe character (see UNSAFE)."""
    return [s for s in strings(value) if UNSAFE.search(s)]


# What code may not hold once loaded (untrusted.safe_code): what no UTF-8 file can hold, and terminal escapes.
UNSAFE_IN_CODE = re.compile("[\x1b\x9b\ud800-\udfff]")


def unsafe_code(value: Any) -> list[str]:
    """The strings in `value` that hold a character code may not (see UNSAFE_IN_CODE)."""
    return [s for s in strings(value) if UNSAFE_IN_CODE.search(s)]
