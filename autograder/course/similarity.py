"""Similar answers: pairs of students whose answer cells, or whole submissions, are unusually alike, for review.

    python -m autograder similarity graded/

It never changes a score and nothing leaves the machine: the pairs go to the class report's review section
(graded/report/report.html) and to graded/similarity/pairs.csv. grade-all keeps each submission's answer cells
in graded/answers/<student>/<assignment>.json (save_answers; merge copies them), so this step needs only graded/.

Why copydetect (PyPI, MIT) and not Dolos. Both fingerprint code with winnowing, the algorithm behind MOSS, and
both run offline. copydetect is a Python package: it installs with the kit's other tools into .venv, takes code
as text (no files per cell), tokenizes with pygments and writes every name as one letter (V, F, O), so renamed
variables, functions and classes leave the fingerprints as they were; comments and whitespace are dropped, and
a set of fingerprints does not care in which order functions come. It also takes "boilerplate" fingerprints to
leave out: the release's starter code, and the class's common code (below). Dolos's tree-sitter tokens are
finer (and it is the more active project: copydetect's last release is 0.5.0, March 2024), but it needs
Node.js and its npm packages beside the kit, run as another process over files on disk; its PyPI namesake is
another project. Dolos would be the choice for a course in several languages; this one is Python only, and
copydetect is small enough (600 lines over numpy and pygments) to read and, if need be, to keep.

Independent correct answers must not be flagged. Three rules, per task (one answer cell):
- the release's own code of that cell (the stub, the signature, the docstring) is boilerplate;
- a fingerprint found in at least COMMON_SHARE of the class's submissions, and in at least COMMON_MIN, is the
  class's common way of writing it (MOSS's -m), not evidence: it is left out too;
- a pair is flagged only when what it shares covers at least MIN_MATCH characters of tokenized code and at least
  THRESHOLD of the smaller answer's fingerprinted code: a one-line puzzle that everyone writes the same way is
  below the size, however alike.
The figures are calibrated on the kit's own correct forms (autograder/chapters/*/cases.py: every pair of
different correct forms of one task, references included) against copies of each behind renames, reordering and
new comments (benchmarks/similarity.py prints it): every copy sharing 120 characters or more scored 0.79 or more;
honest pairs scored at most 0.67, but for one form written as an edit of the reference (06's TarImageDataset,
0.77), which shares the reference's helpers word for word and is rightly flagged. Shorter copies (the one-line
puzzles, AffineScalar, grad_of) cannot be told from honest answers, which are as alike there: not flagged.

Whole submissions, as MOSS compares files. A student who copies every short answer of a notebook shares under
MIN_MATCH in each task (07's softmax and cross entropy: 82 and 94 characters), so no task tells. Each pair is
therefore also compared as whole submissions: one assignment's answer cells together, then every assignment
both students handed in (the whole course). The same rules protect honest students, applied to what the pair
shares in all: per task the starter code and the class's common code are left out, and so is the chapter's own
solution (source/), the form the notebook teaches, which honest students write alike word for word in the
short tasks (two who both hand in 07's reference share 157 characters of tokens and nothing of their own); a
pair is flagged when the tasks together share MIN_MATCH characters and WHOLE_THRESHOLD of the smaller
submission's remaining code. Each task is fingerprinted once per student and compared with the same task's
answer (a k-gram never spans two cells). benchmarks/similarity_calibration.py measures both rates on classes of
5 to 200 made of the kit's own forms, with copies behind renames, reordering, comments, inlining and a helper
pulled out. At WHOLE_THRESHOLD 0.73 no honest pair was flagged by its whole notebooks that a task did not flag,
and the copies found rose from 55, 45, 20, 15 and 15% (a task alone) to 95, 65, 50, 30 and 20% (classes of 5, 10,
25, 50, 100; at 200 both 45%, where few students write a form of their own). The highest honest score was 0.63
and the lowest copy's 0.53: a lower bar finds more (0.6: 95% at 10) and flags an honest pair now and then.

copydetect is imported here only (it imports matplotlib): the grading path never loads it, and without it the
step says how to install it. Student code is hostile text: the page escapes every character of it.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import html
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from autograder.course.batch import discover, result_path, submitted_dir
from autograder.course.reference import release_path, solution_cells
from autograder.judging.handin import NotOwnFile, read_own, readers, write_private
from autograder.judging.notebook import MAX_ANSWER_BYTES, NotebookError, load_submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import clean, csv_cell
from autograder.judging.untrusted import safe_name

ANSWERS = "answers"  # graded/answers/<student>/<assignment>.json: {"sha256", "cells": {grade_id: code}}
MAX_ANSWERS_BYTES = 4 * MAX_ANSWER_BYTES  # one answers file: the answer cells' code (bounded), JSON-escaped
FOLDER = "similarity"  # graded/similarity/pairs.json and pairs.csv

# copydetect's k (noise threshold) and winnowing window (guarantee - noise + 1), in characters of tokenized code,
# where a name is one letter: 25 is about a dozen tokens, the size of one ordinary line.
NOISE = 25
WINDOW = 1
COMMON_SHARE = 0.10  # a fingerprint in at least this share of the class is common knowledge ...
COMMON_MIN = 5  # ... and in at least this many submissions (a small class has no "common" code)
THRESHOLD = 0.73  # of the larger share: what the two answers share over the smaller one's fingerprinted code
WHOLE_THRESHOLD = THRESHOLD  # the same share, of whole submissions (the chapter's solution left out too)
MIN_MATCH = 120  # characters of tokenized code shared, at the least (about 5 ordinary lines)
MAX_CODE = 50_000  # characters of one cell compared: a longer cell is compared on its first ones
WHOLE = "(whole submission)"  # pairs.csv's task column for a pair of whole submissions
COURSE = "the whole course"  # a Whole's scope: every assignment both students handed in
MAX_SHOWN = 20  # pairs shown per task on the page; pairs.csv has them all


class MissingTool(RuntimeError):
    """copydetect is not installed; the message says how to install it."""


@dataclass(frozen=True)
class Pair:
    """Two students' answers to one task that share unusually much code."""

    assignment: str
    task: str
    students: tuple[str, str]
    score: float  # the larger of `shares`
    shares: tuple[float, float]  # the code shared over each answer's fingerprinted code
    matched: int  # characters of tokenized code shared
    code: tuple[str, str]
    spans: tuple[list[tuple[int, int]], list[tuple[int, int]]]  # the shared regions in each code, as offsets


@dataclass(frozen=True)
class Whole:
    """Two students whose whole submissions (one assignment's answer cells, or all the course's) share unusually
    much code in all, though perhaps no one task does."""

    scope: str  # the assignment, or COURSE
    students: tuple[str, str]
    score: float  # the larger of `shares`
    shares: tuple[float, float]  # the code shared over each whole submission's fingerprinted code
    matched: int  # characters of tokenized code shared, all tasks together
    parts: list[Pair]  # each task in which they share code: both codes, the shared spans


@dataclass
class Found:
    """What the step found in a graded folder."""

    pairs: list[Pair] = field(default_factory=list)
    compared: dict[str, dict[str, int]] = field(default_factory=dict)  # assignment -> task -> answers compared
    notes: list[str] = field(default_factory=list)
    wholes: list[Whole] = field(default_factory=list)  # pairs of whole submissions flagged
    # assignment -> task -> the second longest answer, in characters of tokens, where it is under MIN_MATCH: no
    # pair of answers to that task can be flagged on its own (they count in the whole submissions)
    short: dict[str, dict[str, int]] = field(default_factory=dict)


# -- the answers, kept by grade-all -------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, text.encode("utf-8"), mode)


def save_answers(root: Path, graded: Path) -> int:
    """Keep the answer cells of every graded submission of `root` in graded/answers (those of a shard only, with
    --shard: those with a result); returns how many were written. A notebook that cannot be read has none."""
    written = 0
    for job in discover(root):
        target = graded / ANSWERS / job.student / f"{job.assignment}.json"
        if not result_path(graded, job).exists():
            continue
        try:
            if json.loads(target.read_text(encoding="utf-8")).get("sha256") == job.sha256:
                continue
        except (OSError, ValueError, AttributeError):
            pass
        try:  # a refused notebook (a link to a classmate's) is read for nothing: no answers
            sub = load_submission(Path(job.notebook), job.assignment if job.assignment in CHAPTERS else None) if (
                job.notebook and not job.refused) else None
        except NotebookError:
            sub = None
        if sub is None or sub.error:  # no notebook, or not one: no answers (those of an earlier version go)
            target.unlink(missing_ok=True)
            continue
        cells = {c["id"]: c["source"] for c in sub.cells}
        _write_atomic(target, json.dumps({"sha256": job.sha256, "assignment": sub.chapter.id, "cells": cells}),
                      readers(Path(job.notebook), submitted_dir(root)))  # the student's code: as private as theirs
        written += 1
    return written


def merge_answers(parts: Iterable[Path], out: Path) -> None:
    """merge: the answers of each shard's folder, beside its results."""
    for part in parts:
        for path in sorted((part / ANSWERS).glob("*/*.json")):
            try:  # a shard's folder: its own files only, of bounded size (a link or a FIFO there is skipped)
                raw = read_own(path, MAX_ANSWERS_BYTES, part)
            except (NotOwnFile, OSError):
                continue
            if len(raw) <= MAX_ANSWERS_BYTES:
                _write_atomic(out / ANSWERS / path.parent.name / path.name, raw.decode("utf-8", errors="replace"),
                              readers(path, part))  # as private as the shard's copy


def answers_mode(graded: Path) -> int:
    """The mode of a page or file that may show any student's answers (pairs.json, the class report): private
    when one student's kept answers are (save_answers gives them their submission's readers)."""
    mode = 0o644
    for path in (graded / ANSWERS).glob("*/*.json"):
        with contextlib.suppress(OSError):
            mode &= os.lstat(path).st_mode | 0o600
    return mode


def read_answers(graded: Path) -> dict[str, dict[str, dict[str, str]]]:
    """assignment -> student -> task -> code, from graded/answers; damaged files are skipped, and so are the
    answers of a submission whose result grade-all has set aside (its folder is gone)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted((graded / ANSWERS).glob("*/*.json")):
        if not (graded / "results" / path.parent.name / path.name).is_file():
            continue
        try:
            raw = read_own(path, MAX_ANSWERS_BYTES, graded)
            if len(raw) > MAX_ANSWERS_BYTES:
                continue
            data = json.loads(raw.decode("utf-8"))
            assignment, cells = str(data["assignment"]), data["cells"]
            code = {str(k): str(v) for k, v in cells.items() if isinstance(v, str)}
        except (NotOwnFile, OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        out.setdefault(assignment, {})[safe_name(path.parent.name)] = code  # a folder name: student text
    return out


def starter_cells(assignment: str) -> dict[str, str]:
    """The release's code of each answer cell (grade_id -> code); {} when the release is not in this checkout."""
    path = release_path(assignment)
    if assignment not in CHAPTERS or not path.is_file():
        return {}
    return {c["id"]: c["source"] for c in load_submission(path, assignment).cells}


# -- finding pairs ------------------------------------------------------------------------------------------------


def _copydetect() -> Any:
    try:
        import copydetect  # the similarity step's alone: never imported by grading
    except ImportError:
        raise MissingTool("copydetect is not installed: run `make setup` (it is in the kit's dev extra) or "
                          "`.venv/bin/pip install copydetect`") from None
    return copydetect


def _fingerprint(cd: Any, name: str, code: str, boilerplate: Any) -> Any:
    return cd.CodeFingerprint(name, NOISE, WINDOW, boilerplate=boilerplate, fp=io.StringIO(code), language="python")


def _drop(fp: Any, hashes: set[int]) -> None:
    """Leave `hashes` (the class's common code) out of a fingerprint, as copydetect leaves boilerplate out."""
    from copydetect.utils import get_token_coverage

    gone = fp.hashes & hashes
    if gone:
        fp.hashes = fp.hashes - gone
        fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in gone}
        fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


def _spans(slices: Any) -> list[tuple[int, int]]:
    """copydetect's 2 x N array of starts and ends, as (start, end) pairs."""
    if not len(slices) or not len(slices[0]):
        return []
    return [(int(a), int(b)) for a, b in zip(slices[0], slices[1], strict=True)]


def _prints(cd: Any, answers: Mapping[str, str], starter: str) -> dict[str, Any]:
    """student -> the fingerprint of their answer, the starter code and the class's common code left out."""
    import numpy as np

    boiler = _fingerprint(cd, "release", starter, None) if starter else None
    boilerplate = np.array(sorted(boiler.hashes)) if boiler is not None else None
    prints = {}
    for student, code in sorted(answers.items()):
        fp = _fingerprint(cd, student, code[:MAX_CODE], boilerplate)
        if fp.hashes:  # nothing but the starter code (a stub), or too short to fingerprint
            prints[student] = fp
    counts = Counter(h for fp in prints.values() for h in fp.hashes)
    limit = max(COMMON_MIN, COMMON_SHARE * len(prints))
    common = {h for h, n in counts.items() if n >= limit}
    for fp in prints.values():
        _drop(fp, common)
    return prints


def _without(fp: Any, hashes: set[int]) -> Any:
    """A copy of `fp` with `hashes` left out (the original stays as it was)."""
    out = copy.copy(fp)
    _drop(out, hashes)
    return out


def _compared(cd: Any, assignment: str, task: str, prints: Mapping[str, Any]) -> Iterator[Pair]:
    """Every pair of `prints` that shares a fingerprint, compared (flagged or not)."""
    # Only pairs sharing a fingerprint can match: an index from fingerprint to students finds them.
    holders: dict[int, list[str]] = {}
    for student, fp in prints.items():
        for h in fp.hashes:
            holders.setdefault(h, []).append(student)
    candidates = {pair for group in holders.values() for pair in combinations(group, 2)}
    for a, b in sorted(candidates):
        fa, fb = prints[a], prints[b]
        matched, (share_a, share_b), (slices_a, slices_b) = cd.compare_files(fa, fb)
        score = min(1.0, max(float(share_a), float(share_b)))
        yield Pair(assignment, task, (a, b), round(score, 4), (round(float(share_a), 4), round(float(share_b), 4)),
                   int(matched), (fa.raw_code, fb.raw_code), (_spans(slices_a), _spans(slices_b)))


def _flagged(p: Pair | Whole) -> bool:
    return p.matched >= MIN_MATCH and p.score >= (WHOLE_THRESHOLD if isinstance(p, Whole) else THRESHOLD)


def task_pairs(assignment: str, task: str, answers: Mapping[str, str], starter: str = "") -> Iterator[Pair]:
    """The flagged pairs among `answers` (student -> code of this task's cell), `starter` left out."""
    cd = _copydetect()
    yield from filter(_flagged, _compared(cd, assignment, task, _prints(cd, answers, starter)))


def _textbook(cd: Any, code: str, starter: str) -> set[int]:
    """The fingerprints of the kit's own solution of a task: the form the chapter teaches."""
    import numpy as np

    boiler = _fingerprint(cd, "release", starter, None) if starter else None
    fp = _fingerprint(cd, "solution", code, np.array(sorted(boiler.hashes)) if boiler is not None else None)
    return set(fp.hashes)


@dataclass
class _Tally:
    """What a pair of whole submissions share, task by task."""

    parts: list[Pair] = field(default_factory=list)
    over: list[float] = field(default_factory=lambda: [0.0, 0.0])  # characters of tokens shared, on each side
    scopes: set[str] = field(default_factory=set)


def _whole(scope: str, students: tuple[str, str], tally: _Tally, coverage: tuple[float, float]) -> Whole:
    shares = tuple(round(min(1.0, o / c), 4) if c else 0.0 for o, c in zip(tally.over, coverage, strict=True))
    return Whole(scope, students, max(shares), (shares[0], shares[1]), int(min(tally.over)), tally.parts)


def find(graded: Path) -> Found:
    """Every flagged pair of every task of every assignment in graded/answers, and every pair of whole
    submissions (one assignment's, then the whole course's) that share unusually much code in all."""
    cd = _copydetect()
    found = Found()
    course: dict[tuple[str, str], _Tally] = {}
    sizes: dict[tuple[str, str], float] = {}  # (student, assignment) -> characters of tokens fingerprinted
    for assignment, students in sorted(read_answers(graded).items()):
        starter = starter_cells(assignment)
        if not starter:
            found.notes.append(f"{assignment}: its release notebook is not in this checkout, so its starter code "
                               "is not left out")
        try:
            solution = solution_cells(assignment) if assignment in CHAPTERS else {}
        except (OSError, ValueError, KeyError):
            solution = {}
        if not solution:
            found.notes.append(f"{assignment}: its solution is not in this checkout, so the whole submissions are "
                               "compared with the chapter's own answers counted")
        tasks = list(CHAPTERS[assignment].answers) if assignment in CHAPTERS else sorted(
            {t for cells in students.values() for t in cells})
        found.compared[assignment] = {}
        tallies: dict[tuple[str, str], _Tally] = {}
        for task in tasks:
            answers = {s: cells[task] for s, cells in students.items() if task in cells}
            found.compared[assignment][task] = len(answers)
            prints = _prints(cd, answers, starter.get(task, ""))
            lengths = sorted((fp.token_coverage for fp in prints.values()), reverse=True)
            if len(answers) > 1 and (len(lengths) < 2 or lengths[1] < MIN_MATCH):  # no pair can reach the floor
                found.short.setdefault(assignment, {})[task] = int(lengths[1]) if len(lengths) > 1 else 0
            found.pairs += filter(_flagged, _compared(cd, assignment, task, prints))
            # The whole submission: the chapter's own solution left out too (two students who both write the
            # form it teaches share nothing but the lesson), then each task's share counted toward the pair's.
            taught = _textbook(cd, solution[task], starter.get(task, "")) if task in solution else set()
            whole = {s: _without(fp, taught) for s, fp in prints.items()}
            for student, fp in whole.items():
                sizes[(student, assignment)] = sizes.get((student, assignment), 0.0) + float(fp.token_coverage)
            for p in _compared(cd, assignment, task, whole):
                if not p.matched:
                    continue
                tally = tallies.setdefault(p.students, _Tally())
                tally.parts.append(p)
                for side, student in enumerate(p.students):
                    tally.over[side] += p.shares[side] * float(whole[student].token_coverage)
        for pair, tally in sorted(tallies.items()):
            mine = _whole(assignment, pair, tally, (sizes[(pair[0], assignment)], sizes[(pair[1], assignment)]))
            if _flagged(mine):
                found.wholes.append(mine)
            total = course.setdefault(pair, _Tally())
            total.parts += tally.parts
            total.over = [x + y for x, y in zip(total.over, tally.over, strict=True)]
            total.scopes.add(assignment)
    for pair, tally in sorted(course.items()):
        both = [a for a in found.compared if (pair[0], a) in sizes and (pair[1], a) in sizes]
        if len(both) < 2:  # one assignment in common: its own comparison says it all
            continue
        mine = _whole(COURSE, pair, tally, (sum(sizes[(pair[0], a)] for a in both),
                                            sum(sizes[(pair[1], a)] for a in both)))
        if _flagged(mine):
            found.wholes.append(mine)
    found.pairs.sort(key=lambda p: (p.assignment, p.task, -p.score, p.students))
    found.wholes.sort(key=lambda w: (w.scope == COURSE, w.scope, -w.score, w.students))
    return found


# -- files ---------------------------------------------------------------------------------------------------------


def write(graded: Path) -> Found:
    """Find the pairs and write graded/similarity/pairs.json (the page's data) and pairs.csv."""
    found = find(graded)
    folder = graded / FOLDER
    _write_atomic(folder / "pairs.json", json.dumps(asdict(found)), answers_mode(graded))
    tmp = folder / f".pairs.csv.{os.getpid()}.tmp"
    with tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "task", "student_a", "student_b", "score", "share_a", "share_b", "matched"])
        writer.writerows([csv_cell(p.assignment), csv_cell(p.task), csv_cell(p.students[0]), csv_cell(p.students[1]),
                          p.score, p.shares[0], p.shares[1], p.matched] for p in found.pairs)
        writer.writerows([csv_cell(w.scope), WHOLE, csv_cell(w.students[0]), csv_cell(w.students[1]), w.score,
                          w.shares[0], w.shares[1], w.matched] for w in found.wholes)
    os.replace(tmp, folder / "pairs.csv")
    return found


def load(graded: Path) -> Found | None:
    """What the last run wrote, or None (never run, or a damaged file)."""
    try:
        data = json.loads((graded / FOLDER / "pairs.json").read_text(encoding="utf-8"))
        wholes = [Whole(w["scope"], tuple(w["students"]), w["score"], tuple(w["shares"]), w["matched"],
                        [_as_pair(p) for p in w["parts"]]) for w in data.get("wholes", [])]
        return Found([_as_pair(p) for p in data["pairs"]], data["compared"], data["notes"], wholes,
                     data.get("short", {}))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _as_pair(p: dict[str, Any]) -> Pair:
    return Pair(p["assignment"], p["task"], tuple(p["students"]), p["score"], tuple(p["shares"]), p["matched"],
                tuple(p["code"]), (_as_spans(p["spans"][0]), _as_spans(p["spans"][1])))


def _as_spans(value: Any) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in value]


def review(graded: Path) -> dict[tuple[str, str], str]:
    """(student, assignment) -> why the class report's review list names it: the tasks alike and with whom."""
    found = load(graded)
    alike: dict[tuple[str, str], list[str]] = {}
    for p in found.pairs if found is not None else []:
        for me, other in (p.students, p.students[::-1]):
            alike.setdefault((me, p.assignment), []).append(f"{p.task} with {other} ({p.score:.0%})")
    for w in found.wholes if found is not None else []:
        what = "the whole notebook" if w.scope != COURSE else "the whole course"
        for assignment in sorted({p.assignment for p in w.parts}):
            for me, other in (w.students, w.students[::-1]):
                alike.setdefault((me, assignment), []).append(f"{what} with {other} ({w.score:.0%})")
    return {key: "answers alike (see Similar answers; no points depend on it): " + ", ".join(tasks)
            for key, tasks in alike.items()}


def update(root: Path | None, graded: Path) -> str:
    """grade-all's and merge's step (root: the course, whose answers are saved first): a line for the console.
    A failure is a note, never the run's: the scores are written already."""
    try:
        if root is not None:
            save_answers(root, graded)
        found = write(graded)
    except MissingTool as e:
        return f"similarity: not checked ({e})"
    except Exception as e:  # a bug here must not fail a grading run
        return clean(f"warning: similarity not checked: {type(e).__name__}: {e}")
    return summary(found, graded)


def summary(found: Found, graded: Path) -> str:
    return (f"similarity: {len(found.pairs)} pair(s) of answers and {len(found.wholes)} pair(s) of whole "
            f"submissions flagged for review in {graded / FOLDER / 'pairs.csv'} and the class report")


# -- the class report's section ----------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return html.escape(clean(text), quote=True)


def _marked(code: str, spans: list[tuple[int, int]]) -> str:
    """The code, escaped, with its shared regions in <mark>."""
    parts, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        parts.append(_esc(code[at:start]) + "<mark>" + _esc(code[start:end]) + "</mark>")
        at = end
    return "".join(parts) + _esc(code[at:])


STYLE = ("<style>table.sim{table-layout:fixed;width:100%}.sim th{width:50%}.sim pre{margin:0;white-space:pre-wrap;"
         "overflow-wrap:anywhere;font:12px ui-monospace,monospace}.sim mark{background:#ffd86b}</style>")


def _side_by_side(p: Pair, head: str) -> str:
    return (f"<table class=sim><tr><th colspan=2>{head}</th></tr><tr><th>{_esc(p.students[0])}</th>"
            f"<th>{_esc(p.students[1])}</th></tr><tr><td><pre>{_marked(p.code[0], p.spans[0])}</pre></td>"
            f"<td><pre>{_marked(p.code[1], p.spans[1])}</pre></td></tr></table>")


def _whole_html(w: Whole) -> str:
    """A pair of whole submissions: what they share, task by task (in the notebooks' order), side by side."""
    parts = w.parts
    return (f"<details><summary>{_esc(w.students[0])} · {_esc(w.students[1])}: {w.score:.0%} ({w.shares[0]:.0%} / "
            f"{w.shares[1]:.0%} of each, {w.matched} characters of tokens in {len(parts)} task(s))</summary>"
            + "".join(_side_by_side(p, f"{_esc(p.assignment)} · {_esc(p.task)}: {p.matched} characters of tokens")
                      for p in parts[:MAX_SHOWN])
            + (f"<p class=muted>and {len(parts) - MAX_SHOWN} more task(s)</p>" if len(parts) > MAX_SHOWN else "")
            + "</details>")


TOO_SHORT = ("too short to compare on its own: answers under {} characters of tokenized code (about {} tokens); "
             "counted in the whole submissions")


NOTHING = "nothing to compare: at most one answer goes beyond the starter code"


def section(graded: Path) -> str:
    """The class report's HTML section on similar answers, from graded/similarity/pairs.json."""
    head = ("<h2>Similar answers</h2><p class=muted>Pairs of students whose answer cells to one task, or whose "
            "whole submissions (one notebook's answer cells, or the whole course's), share unusually much code "
            "once names, comments, spacing and order are set aside, the release's starter code and the code most of "
            "the class wrote left out (copydetect's winnowing fingerprints); whole submissions leave the chapter's "
            "own solution out too. A lead for review, never a verdict: no score depends on it. Shared code is "
            "highlighted.</p>")
    found = load(graded)
    if found is None:
        return head + ("<p>Not checked yet: run <code>python -m autograder similarity "
                       f"{_esc(str(graded))}</code>.</p>")
    parts = [head] + [f'<p class="note">{_esc(n)}</p>' for n in found.notes]
    for assignment, tasks in found.compared.items():
        pairs = [p for p in found.pairs if p.assignment == assignment]
        wholes = [w for w in found.wholes if w.scope == assignment]
        short = found.short.get(assignment, {})
        parts.append(f"<h3>{_esc(assignment)}</h3><table><tr><th>task</th><th>answers</th><th>pairs flagged</th></tr>"
                     + "".join(f"<tr><td>{_esc(task)}</td><td class=n>{n}</td><td>"
                               + (f"{sum(p.task == task for p in pairs)}" if any(p.task == task for p in pairs)
                                  else _esc(TOO_SHORT.format(MIN_MATCH, MIN_MATCH // 2)) if short.get(task)
                                  else NOTHING if task in short
                                  else "none") + "</td></tr>" for task, n in tasks.items())
                     + "</table>")
        if wholes:
            parts.append(f"<h4>Whole notebooks: {len(wholes)} pair(s)</h4>" + "".join(map(_whole_html, wholes)))
        if not pairs and not wholes:
            parts.append(f"<p>No pair flagged ({max(tasks.values(), default=0)} submissions compared).</p>")
            continue
        counts = Counter(p.students for p in pairs)
        if counts:
            parts.append("<table><tr><th>students</th><th>tasks alike</th><th>highest score</th></tr>" + "".join(
                f"<tr><td>{_esc(a)} · {_esc(b)}</td><td class=n>{n}</td>"
                f"<td class=n>{max(p.score for p in pairs if p.students == (a, b)):.0%}</td></tr>"
                for (a, b), n in counts.most_common()) + "</table>")
        for task in tasks:
            shown = [p for p in pairs if p.task == task]
            if not shown:
                continue
            parts.append(f"<h4>{_esc(task)}: {len(shown)} pair(s) of {tasks[task]} answers</h4>")
            for p in shown[:MAX_SHOWN]:
                parts.append(
                    f"<details><summary>{_esc(p.students[0])} · {_esc(p.students[1])}: {p.score:.0%} "
                    f"({p.shares[0]:.0%} / {p.shares[1]:.0%} of each, {p.matched} characters of tokens)</summary>"
                    + _side_by_side(p, _esc(task)) + "</details>")
            if len(shown) > MAX_SHOWN:
                parts.append(f"<p class=muted>{len(shown) - MAX_SHOWN} more in similarity/pairs.csv.</p>")
    course = [w for w in found.wholes if w.scope == COURSE]
    if course:
        parts.append(f"<h3>The whole course: {len(course)} pair(s)</h3><p class=muted>Every assignment both "
                     "handed in, together.</p>" + "".join(map(_whole_html, course)))
    return STYLE + "".join(parts)
