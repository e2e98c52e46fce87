"""nbgrader's autograde with the kit's grader in place of nbgrader's Execute.

nbgrader_config.py puts KitAutograde first in `Autograde.autograde_preprocessors`, so
`nbgrader autograde`, Formgrader's Autograde button and `grade-all --gradebook` all record the
kit's scores through nbgrader's own SaveAutoGrades. For each submitted notebook it

- grades the notebook as submitted with the kit's sandboxed grader (autograder.course.batch.grade_submission,
  the call grade-all's workers make: same seed for the same student, so the same score), or takes the
  result grade-all already made of these very bytes (`results_dir`);
- writes into each check cell `check_<task>` the task's checks, points and messages as stdout text,
  and the task's points as a numeric execute_result, which nbgrader reads as partial credit (a
  stretch task's check cell is worth 0: its points go in as that cell's extra credit).

The text is wrapped at WIDTH columns and a message repeated under several checks is shown once: see
`wrap` and `task_verdict`.

No other cell is executed: answer and lesson cells keep no output in the autograded notebook.
Sources, metadata and checksums are nbgrader's (its sanitizing step has already restored locked
cells and points from gradebook.db), so locked cells, `generate_feedback` and `export` work as usual.

Submissions are graded ahead: at the first submission of a run, every submission nbgrader matched is handed to
the course's warm judge (warm.py: a service of `workers` judge processes, grade-all's workers, each pinned to a
core, torch and a zygote loaded once, shared by consecutive `nbgrader autograde` processes and Formgrader's
buttons, started by the first of them and exiting `warm_seconds` after its last use). Without one
(`warm_seconds` 0, a private folder that is not private, a service that fails), a run that will autograde
`ahead_from` or more hands them to a pool of such judge processes kept warm for the life of nbgrader's process.
Each notebook then takes its own result, graded by the same call (grade_submission, same seed) from the very bytes
nbgrader hands it (else it is graded here, in nbgrader's process, as a single submission is).

A grader error (no sandbox on this machine, a kit bug) raises: nbgrader logs it, removes that
autograded notebook, records no score and exits non-zero; Formgrader shows the submission as not
autograded. A code grade cell the kit has no checks for also raises, since nbgrader would score a
cell without output as full marks.

Needs nbgrader (the dev extras); the grading path never imports this module.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import re
import textwrap
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Enum, Float, Int, Unicode

from autograder.course.batch import (
    Job,
    _init_worker,
    default_workers,
    file_sha256,
    fingerprint,
    grade_submission,
    stored_result,
)
from autograder.course.nbgrader import warm as warm_judge
from autograder.course.nbgrader.warm import GRADED_SHA256, GRADED_WITH
from autograder.judging import results as fmt
from autograder.judging.handin import NotOwnFile, own_folder
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import clean
from autograder.judging.results import Results, TestResult
from autograder.judging.untrusted import safe_name
from autograder.sandbox import launcher

MARK = {"passed": "PASS", "failed": "FAIL"}


def stock_options() -> list[str]:
    """`nbgrader autograde` options that restore nbgrader's own preprocessors (its Execute runs the
    notebook), for comparisons with the kit's (benchmarks/one_notebook.py)."""
    from nbgrader.converters import Autograde

    stock = Autograde.class_traits()["autograde_preprocessors"].make_dynamic_default()
    return [f"--Autograde.autograde_preprocessors={pp.__module__}.{pp.__qualname__}" for pp in stock]


class KitGradingError(RuntimeError):
    """The kit could not grade this submission: nbgrader must fail it, not record a score."""


def _by_task(result: Results) -> dict[str, list[TestResult]]:
    tasks: dict[str, list[TestResult]] = {}
    for test in result["tests"]:
        tasks.setdefault(test["tags"][0], []).append(test)
    return tasks


def _indent(text: str) -> str:
    return "\n".join("           " + line for line in text.splitlines())


# Formgrader and nbgrader's feedback page show a stream output in a <pre> that never wraps: a long line (a
# student's exception text, a token with no space) ran past the column and cut off the Problem and the Hint.
# The kit wraps the text it writes instead of patching nbgrader's templates or writing HTML: the same plain
# text then reads whole in Formgrader, the feedback page, JupyterLab and `nbgrader export`, with no markup
# from student text to sanitise. 100 columns of monospace fit Formgrader's ~1,000 px column.
WIDTH = 100


def wrap(text: str, width: int = WIDTH) -> str:
    """Every line of `text` at most `width` columns: broken at spaces where it can, inside a word where it
    must; continuation lines keep the line's indent plus two spaces."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())][:width // 2]
        lines += textwrap.wrap(line.strip(), width, initial_indent=indent, subsequent_indent=indent + "  ",
                               break_long_words=True, break_on_hyphens=False, replace_whitespace=False) or [""]
    return "\n".join(lines)


# A message repeated under several checks (a hostile exception text, a deleted cell) longer than this is
# shown in full once, then named by where it was shown.
REPEAT_SHOWN_ONCE = 160


def task_verdict(task: str, tests: list[TestResult], cell_points: float, device: str,
                 bonus: bool = False, shown: dict[str, str] | None = None) -> tuple[str, float]:
    """(the text shown in the check cell, the points recorded) for one task's checks.

    When the checks that ran are worth other than the cell's points (the CUDA-only speed check of 08
    runs on CUDA only), the task's share of the cell's points is recorded, and the text says so.
    A stretch task's (`bonus`) points are extra credit worth `cell_points`, the registry's kit.bonus.
    `shown` maps the long messages already written above (in this cell or an earlier one) to where they
    are; a repeat is named, not written again, and this task's new ones are added."""
    shown = {} if shown is None else shown
    earned = sum(float(t["score"]) for t in tests)
    possible = sum(float(t["max_score"]) for t in tests)
    if possible <= 0:
        raise KitGradingError(f"no check of task '{task}' ran on this machine ({device}): nothing to score")
    recorded = earned if possible == cell_points else min(cell_points, earned * cell_points / possible)
    label, kind = (f"bonus: {task}", "extra-credit points") if bonus else (task, "points")
    lines = [f"{label}: {earned:g} / {possible:g} {kind} from the kit's checks (visible and hidden)"]
    if possible != cell_points:
        lines.append(f"This cell is worth {cell_points:g} {kind}, so it records {recorded:g} "
                     f"({earned:g}/{possible:g} of them).")
    for t in tests:
        status = t.get("status", "skipped")
        hidden = "" if t.get("visibility") == "visible" else " (hidden)"
        name = t["name"].removeprefix(f"[{label}] ")
        lines.append(f"  {MARK.get(status, 'SKIP')} {t['score']:g}/{t['max_score']:g}  {name}{hidden}")
        output = t["output"].strip()
        if output in shown:
            lines.append(_indent(f"(the same message as {shown[output]} above)"))
        elif output:
            lines.append(_indent(_long_lines_once(t["output"], f"under {label}: '{name}'", shown)))
            if len(output) > REPEAT_SHOWN_ONCE:
                shown[output] = f"under {label}: '{name}'"
    if bonus:  # Formgrader shows the cell as "0 / 0.0 + N (extra credit)"
        lines.append(f"Recorded: {recorded:g} extra-credit points (nbgrader counts a stretch task's cell as 0 of 0 "
                     "points, plus its extra credit); a score set by hand in Formgrader takes their place.")
    else:  # the execute_result below, which nbgrader reads, shows as Out[ ] beside any later manual score
        lines.append(f"Recorded: {recorded:g} of {cell_points:g} points, the number below; a score set by hand in "
                     "Formgrader takes its place.")
    return wrap(clean("\n".join(lines))) + "\n", recorded


def _long_lines_once(output: str, where: str, shown: dict[str, str]) -> str:
    """`output` with each long line already shown above (the same exception text in messages about different
    calls) replaced by where it is; its new long lines are added to `shown`."""
    lines = []
    for line in output.splitlines():
        key = line.strip()
        if len(key) > REPEAT_SHOWN_ONCE and key in shown:
            lines.append(line[:len(line) - len(line.lstrip())] + f"(the same {len(key)}-character line as "
                         f"{shown[key]} above)")
            continue
        if len(key) > REPEAT_SHOWN_ONCE:
            shown[key] = where
        lines.append(line)
    return "\n".join(lines)


def write_verdicts(nb: NotebookNode, result: Results) -> tuple[dict[str, float], dict[str, float]]:
    """Write the kit's result into the notebook's check cells; returns the points recorded per cell, and
    the extra credit of stretch tasks' check cells (0 points in nbgrader, kit.bonus in the registry).

    Each code grade cell `check_<task>` gets exactly two outputs: stdout text (never stderr, which
    nbgrader scores 0) and the points as an execute_result. Notes on the whole notebook (a missing
    answer cell, code reaching into the grader) go above the first check cell's checks."""
    tasks = _by_task(result)
    device = result["extra_data"].get("device", "cpu")
    chapter = CHAPTERS.get(result["extra_data"].get("assignment") or "")
    notes = clean(result.get("output", ""))
    shown = {notes.strip(): "in the notes on the whole notebook"} if len(notes.strip()) > REPEAT_SHOWN_ONCE else {}
    recorded: dict[str, float] = {}
    extra_credit: dict[str, float] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
            continue  # markdown and answer grade cells are nbgrader's manual grading
        grade_id = cell.metadata.nbgrader.get("grade_id", "")
        task = grade_id.removeprefix("check_")
        points = float(cell.metadata.nbgrader["points"])
        if result["tests"] and (task == grade_id or task not in tasks):
            raise KitGradingError(f"grade cell '{grade_id}' has no checks in the kit (it grades the cells "
                                  f"check_<task> for the tasks {', '.join(tasks)}); nbgrader would give it "
                                  "full marks unexecuted")
        bonus = bool(tasks.get(task)) and "bonus" in tasks[task][0]["tags"]
        if bonus:  # a stretch task: nbgrader's 0 points, its share of the registry's bonus as extra credit
            worth = chapter.bonus[task] if chapter is not None and task in chapter.bonus else None
            text, extra_credit[grade_id] = task_verdict(
                task, tasks[task], worth if worth is not None else sum(t["max_score"] for t in tasks[task]), device,
                bonus=True, shown=shown)
            score = 0.0
        elif tasks:
            text, score = task_verdict(task, tasks[task], points, device, shown=shown)
        else:  # a notebook the grader could not read: zero, with the reason
            text, score = f"{task}: 0 / {points:g}: the notebook could not be graded.\n", 0.0
        if notes and not recorded:
            text = wrap("Notes on the whole notebook:\n" + _indent(notes)) + "\n\n" + text
        cell.outputs = [new_output("stream", name="stdout", text=text),
                        new_output("execute_result", data={"text/plain": repr(score)}, execution_count=None)]
        cell.execution_count = None
        recorded[grade_id] = score
    return recorded, extra_credit


# Formgrader and nbgrader's feedback page style the notebook with Bootstrap 3, whose `summary {display: block}`
# takes away the disclosure triangle: a lesson's collapsed hints read as bare lines "Hint 1", "Hint 2" with
# nothing to say they open. The autograded copy (what both pages show) gives each summary its marker back.
SUMMARY = "<summary>"
SUMMARY_SHOWN = '<summary style="display: list-item; cursor: pointer">'


def hints_marked(nb: NotebookNode) -> None:
    """Every `<summary>` of the notebook's lesson cells (markdown, not answers) with its disclosure marker shown,
    whatever the page's stylesheet; nothing else changes."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and SUMMARY in cell.source and not utils.is_solution(cell):
            cell.source = cell.source.replace(SUMMARY, SUMMARY_SHOWN)


def record_extra_credit(db_url: str, nbgrader: dict[str, str], extra_credit: dict[str, float]) -> None:
    """Stretch tasks' points as the extra credit of their check cells (SaveAutoGrades sets auto scores only)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        for grade_id, points in extra_credit.items():
            gb.find_grade(grade_id, nbgrader["notebook"], nbgrader["assignment"], nbgrader["student"]).extra_credit \
                = points
        gb.db.commit()


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's threads set to one while the kit grades in nbgrader's process, as in grade-all's workers (the
    judge's idle threads would spin on the cores that timed children need); nbgrader's setting is restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _grade_in_worker(job: Job, root: str, device: str) -> Results:
    """A pool worker's grading of one submission (its zygote started by batch._init_worker)."""
    return grade_submission(job, root, device, junit=False, zygote=launcher.zygote())


def _key(job: Job) -> tuple[str, str, str]:
    return job.student, job.assignment, Path(job.notebook).name


class Ahead:
    """The judge processes of nbgrader's process and the submissions handed to them (by _key)."""

    def __init__(self) -> None:
        self.pool: cf.ProcessPoolExecutor | None = None
        self.workers = 0
        self.futures: dict[tuple[str, str, str], tuple[tuple[str, str], cf.Future[Results]]] = {}
        self.planned: set[int] = set()  # the converter runs whose submissions were handed over

    def executor(self, workers: int, warm: bool) -> cf.ProcessPoolExecutor:
        if self.pool is None or self.workers != workers:
            self.close()
            ctx = multiprocessing.get_context("spawn")
            self.pool = cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                               initargs=(ctx.Value("i", 0), warm))
            self.workers = workers
        return self.pool

    def submit(self, jobs: list[Job], root: Path, device: str, workers: int) -> None:
        warm = any(c.loads_dynamo for c in (CHAPTERS.get(j.assignment) for j in jobs) if c is not None)
        pool = self.executor(workers, warm)
        for job in jobs:
            self.futures[_key(job)] = (
                (job.sha256, job.fingerprint), pool.submit(_grade_in_worker, job, str(root), device))

    def take(self, job: Job) -> Results | None:
        """The result graded ahead of this very notebook, or None (not handed over, another version of it,
        or its worker died: graded again in nbgrader's process)."""
        graded, future = self.futures.pop(_key(job), (("", ""), None))
        if future is None or graded != (job.sha256, job.fingerprint):
            return None
        try:
            return future.result()
        except BrokenProcessPool:
            self.close()
            return None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool, self.futures = None, {}


AHEAD = Ahead()
atexit.register(AHEAD.close)


class Handed:
    """The submissions of nbgrader's current run handed to the course's warm judge (warm.py), by _key."""

    def __init__(self) -> None:
        self.judge: warm_judge.Warm | None = None
        self.jobs: dict[tuple[str, str, str], Job] = {}

    def hand(self, judge: warm_judge.Warm, jobs: list[Job]) -> None:
        self.close()
        self.judge, self.jobs = judge, {_key(j): j for j in jobs}

    def take(self, job: Job) -> tuple[Results | None, str]:
        """(the warm judge's result of this very notebook, "") or (None, why not: it was not handed over, or
        another version of it was); Unavailable when the warm judge failed."""
        if self.judge is None or self.jobs.pop(_key(job), None) is None:
            return None, ""
        return self.judge.take(job)

    def left(self) -> list[Job]:
        """The submissions handed over and not taken yet."""
        return list(self.jobs.values())

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()
        self.judge, self.jobs = None, {}


HANDED = Handed()


class KitAutograde(NbGraderPreprocessor):
    """Grades a submission with the kit and writes the verdicts into its check cells (see the module)."""

    device = Enum(["cpu", "cuda"], "cpu", help="device the kit grades on").tag(config=True)
    results_dir = Unicode("", help="a grade-all output folder: a submission whose result there was made "
                          "from the same notebook bytes is recorded from it, not graded again").tag(config=True)
    grade_missing = Bool(True, help="grade a submission that has no current result in results_dir; "
                         "False fails it instead (grade-all --gradebook records only what it graded)"
                         ).tag(config=True)
    workers = Int(0, help="judge processes that grade a run's submissions ahead, in parallel, kept warm while "
                  "nbgrader's process lives (0: one per core; 1: each submission in nbgrader's own process)"
                  ).tag(config=True)
    # Each judge process imports torch and starts a zygote (seconds of CPU): for a few submissions nbgrader's own
    # process grades them sooner than starting the processes would let them be graded side by side.
    ahead_from = Int(16, help="grade a run's submissions ahead when it autogrades at least this many (or the "
                     "judge processes are warm already)").tag(config=True)
    # Each `nbgrader autograde <assignment>` is a process of its own: the course's warm judge (warm.py) spares the
    # next ones the judge start, and grades every run's submissions ahead, however few.
    warm_seconds = Float(180.0, help="seconds the course's warm judge (judge processes shared by consecutive "
                         "nbgrader processes and Formgrader, started by the first) waits for the next submission "
                         "before it exits; 0: no warm judge, each nbgrader process grades on its own"
                         ).tag(config=True)
    grade_course_ahead = Bool(False, help="the warm judge also grades, while idle, the course's other submissions "
                              "that no autograded copy records, so that the next `nbgrader autograde <assignment>` "
                              "finds them graded (CPU spent on submissions nobody may ask for: off by default)"
                              ).tag(config=True)

    def _converter(self) -> Any:
        parent = self.parent
        while parent is not None and not isinstance(getattr(parent, "assignments", None), dict):
            parent = parent.parent
        return parent

    def _plan(self, root: Path, current: Job) -> None:
        """Hand every submission this nbgrader run will autograde (`current`, the one it autogrades now, among them)
        to the judge processes, once a run, when there are `ahead_from` of them (or the processes are warm)."""
        converter = self._converter()
        workers = self.workers or default_workers()
        if converter is None or id(converter.assignments) in AHEAD.planned or workers < 2 or (
                self.results_dir and not self.grade_missing):
            return
        AHEAD.planned.add(id(converter.assignments))
        coursedir = converter.coursedir
        regexp = coursedir.format_path(coursedir.submitted_directory, "(?P<student_id>.*)", "(?P<assignment_id>.*)",
                                       escape=True)
        excluded = set(coursedir.student_id_exclude.split(",")) if coursedir.student_id_exclude else set()
        within = Path(coursedir.root, coursedir.submitted_directory)
        jobs = []
        prints: dict[str, str] = {}  # each assignment's fingerprint, stamped on what is graded ahead too
        for folder in sorted(converter.assignments):
            m = re.match(regexp, folder)
            if m is None or m["student_id"] in excluded:
                continue
            for notebook in sorted(converter.assignments[folder]):
                dest = Path(coursedir.format_path(coursedir.autograded_directory, m["student_id"], m["assignment_id"]),
                            Path(notebook).name)
                if dest.exists() and not converter.force and (m["student_id"], m["assignment_id"]) != (
                        current.student, current.assignment):
                    continue  # nbgrader skips it, unless the submission is newer: then it is graded here
                try:
                    assignment = m["assignment_id"]
                    if assignment not in prints:
                        prints[assignment] = fingerprint(Path(coursedir.root), assignment)
                    job = Job(m["student_id"], assignment, str(Path(coursedir.root, notebook)),
                              file_sha256(Path(coursedir.root, notebook), within), fingerprint=prints[assignment])
                except (NotOwnFile, OSError):
                    continue  # preprocess refuses it
                if not (self.results_dir and stored_result(root / self.results_dir, job) is not None):
                    jobs.append(job)
        autograded = coursedir.format_path(coursedir.autograded_directory, "{student}", "{assignment}")
        if jobs and self.warm_seconds > 0 and self._hand_to_warm_judge(jobs, root, within, autograded, workers):
            return
        self._ahead(jobs, root, workers)

    def _ahead(self, jobs: list[Job], root: Path, workers: int) -> None:
        if len(jobs) >= self.ahead_from or (jobs and AHEAD.pool is not None):
            AHEAD.submit(jobs, root, self.device, workers)

    def _hand_to_warm_judge(self, jobs: list[Job], root: Path, within: Path, autograded: str, workers: int) -> bool:
        """Hand every job to the course's warm judge (found warm, or started now); False, logged, when there is none
        to use: then nbgrader's process grades them."""
        warm = any(c.loads_dynamo for c in (CHAPTERS.get(j.assignment) for j in jobs) if c is not None)
        try:
            judge = warm_judge.connect(root, workers, self.warm_seconds, warm,
                                       log=lambda line: self.log.warning("kit: %s", line))
            judge.submit(jobs, self.device, within, autograded if self.grade_course_ahead else "", self.warm_seconds)
        except warm_judge.Unavailable as e:
            HANDED.close()
            self.log.warning("kit: no warm judge for this course (%s): grading in nbgrader's process", e)
            return False
        HANDED.hand(judge, jobs)
        self.log.info("kit: the warm judge of this course (pid %d, %s judge processes) %s: %d submissions handed to "
                      "it", judge.pid, judge.hello.get("workers"), judge.how, len(jobs))
        return True

    def _from_warm_judge(self, job: Job, root: Path) -> Results | None:
        """The warm judge's result of this very notebook, or None (logged): then it is graded ahead or here. When
        the warm judge fails, the submissions left are graded here (ahead, when `ahead_from` of them are left)."""
        try:
            result, why = HANDED.take(job)
        except warm_judge.Unavailable as e:
            left = [j for j in HANDED.left() if _key(j) != _key(job)]
            HANDED.close()
            self.log.warning("kit: the warm judge of this course failed (%s): %s/%s and the %d submissions left of "
                             "this run are graded in nbgrader's process", e, job.student, job.assignment, len(left))
            self._ahead(left, root, self.workers or default_workers())
            return None
        if result is not None:
            self.log.info("kit: %s/%s graded by the warm judge of this course%s", job.student, job.assignment,
                          " before this run asked (it grades the course's submissions no autograded copy records)"
                          if why == "ahead" else "")
        elif why:
            self.log.warning("kit: %s/%s: %s; graded in nbgrader's process", job.student, job.assignment, why)
        return result

    def _coursedir(self) -> Any:
        parent = self.parent
        while parent is not None and getattr(parent, "coursedir", None) is None:
            parent = parent.parent
        if parent is None:
            raise KitGradingError("KitAutograde runs inside nbgrader's Autograde converter only")
        return parent.coursedir

    def _result(self, job: Job, root: Path) -> Results:
        if self.results_dir:
            stored = stored_result(root / self.results_dir, job)
            if stored is not None:
                self.log.info("kit: %s/%s from %s", job.student, job.assignment, self.results_dir)
                return stored
            if not self.grade_missing:
                raise KitGradingError(f"no result of this notebook in {self.results_dir} "
                                      "(grade-all has not graded this version, or it was a grader error)")
        self._plan(root, job)
        ahead = self._from_warm_judge(job, root)
        if ahead is not None:
            result = ahead
        elif (ahead := AHEAD.take(job)) is not None:
            self.log.info("kit: %s/%s graded ahead by a judge process", job.student, job.assignment)
            result = ahead
        else:
            chapter = CHAPTERS.get(job.assignment)  # as grade-all's workers: chapters that trace load torch._dynamo
            # nbgrader's process keeps one zygote for all its gradings; it imports torch while the judge imports
            # its own
            zygote = launcher.zygote(chapter is not None and chapter.loads_dynamo)
            with one_torch_thread():
                result = grade_submission(job, str(root), self.device, junit=False, zygote=zygote)
        error = fmt.grader_error(result)
        if error:
            raise KitGradingError(f"grader error, no score recorded (autograde it again): {error}")
        return result

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info = resources["nbgrader"]
        coursedir = self._coursedir()
        submitted = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]),
                         f"{info['notebook']}.ipynb")
        if not os.path.lexists(submitted):
            raise KitGradingError(f"the submitted notebook {safe_name(str(submitted))} is gone")
        # nbgrader has read the notebook through any link already: raising removes what it made of it (the
        # answer key, a classmate's work) from autograded/ and records no score
        # ... and has copied the submission's other files into autograded/ following links (a link to the
        # gradebook, to /proc/self/environ): failing the submission has nbgrader remove those copies too
        within = Path(coursedir.root, coursedir.submitted_directory)
        try:
            sha256 = file_sha256(submitted, within)
            own_folder(submitted.parent, within)
        except NotOwnFile as e:
            raise KitGradingError(f"not graded: {e}") from None
        # graded here, it is stamped with today's release and grader, as grade-all stamps its results
        job = Job(info["student"], info["assignment"], str(submitted), sha256,
                  fingerprint=fingerprint(Path(coursedir.root), info["assignment"]))
        result = self._result(job, Path(coursedir.root))
        recorded, extra_credit = write_verdicts(nb, result)
        hints_marked(nb)
        if extra_credit:
            record_extra_credit(info["db_url"], info, extra_credit)
        if not isinstance(nb.metadata.get("kit"), dict):
            nb.metadata["kit"] = {}
        nb.metadata["kit"][GRADED_SHA256] = job.sha256  # what grade-all --gradebook compares
        nb.metadata["kit"][GRADED_WITH] = result["extra_data"].get("graded_with", "")
        for task in _by_task(result):
            if f"check_{task}" not in recorded:
                self.log.warning("kit: %s/%s has no check cell check_%s: nbgrader records no score for it",
                                 job.student, job.assignment, task)
        self.log.info("kit: %s/%s: %s", job.student, job.assignment,
                      ", ".join(f"{cell} {score:g}" + (f" +{extra_credit[cell]:g} extra credit" if cell in
                                                     extra_credit else "") for cell, score in recorded.items()))
        return nb, resources
