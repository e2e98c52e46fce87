"""Grade a whole class: discovery, sharding, parallel workers, resume, summaries, merge.

Layout (nbgrader's): <course>/submitted/<student>/<assignment>/<notebook>.ipynb,
or the submitted/ folder itself. Every submission gets exactly one result file,
written atomically when it is graded, so an interrupted run resumes where it
stopped and nothing is graded twice. Workers are separate judge processes
(torch imported once each, every submission still in its own sandboxed
child), each pinned to its own core, so a timing check never shares a core
with another grading.

Nothing loses a row: an exception while grading one submission, or a worker
process that dies (out of memory, killed), becomes a "grader-error" result (SubmissionStatus.GRADER_ERROR)
that is counted apart from scores, retried on the next run, and makes
grade_all return 3.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import dataclasses
import functools
import hashlib
import json
import multiprocessing
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from autograder import PACKAGE
from autograder.course import shards
from autograder.judging import results as fmt
from autograder.judging.handin import NotOwnFile, open_own, read_own, refusal
from autograder.judging.notebook import MAX_NOTEBOOK_BYTES, too_large
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import clean, csv_cell
from autograder.judging.results import Results, SubmissionStatus
from autograder.judging.untrusted import safe_name, safe_text
from autograder.sandbox import launcher


@dataclass(frozen=True)
class Job:
    student: str
    assignment: str
    notebook: str  # "" when the submission folder holds no notebook
    sha256: str
    refused: str = ""  # why the submission is not the student's own files (a link, a FIFO): not graded
    fingerprint: str = ""  # of the release and the grader it is graded with (fingerprint()); "" when not known

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}"

    # The folders' names, as the files name them, are students' text: results hold them made safe.
    @property
    def student_text(self) -> str:
        return safe_name(self.student)

    @property
    def assignment_text(self) -> str:
        return safe_name(self.assignment)


def files_sha256(paths: list[Path]) -> str:
    """Of the kit's files `paths` (each named by its path in the package, then its bytes), in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def _kit_sha256() -> str:
    """Of the kit's grading code (judging/ and sandbox/, every .py file), read once per process."""
    return files_sha256([*(PACKAGE / "judging").rglob("*.py"), *(PACKAGE / "sandbox").rglob("*.py")])


def fingerprint(course: Path, assignment: str) -> str:
    """What a result was graded with, as 16 hex digits: the course's released notebook of `assignment` (if it has
    one), the chapter's registry entry (its tasks' points, answers, preamble) and folder (checks, harness), and
    the kit's grading code. A result whose fingerprint differs from today's was graded by another release or
    grader (grade-all --regrade grades it again)."""
    digest = hashlib.sha256(_kit_sha256().encode())
    release = course / "release" / assignment / f"{assignment}.ipynb"
    if release.is_file():
        digest.update(b"release\0" + release.read_bytes())
    chapter = CHAPTERS.get(assignment)
    if chapter is not None:
        entry = {"answers": chapter.answers, "points": chapter.points, "bonus": chapter.bonus,
                 "preamble": chapter.preamble, "config": dataclasses.asdict(chapter.config)}  # no paths: any checkout
        digest.update(json.dumps(entry, sort_keys=True).encode())
        for path in sorted(chapter.folder.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def course_of(root: Path) -> Path:
    """The course folder of grade-all's ROOT: ROOT itself, or the folder above a submitted/ folder."""
    return root if (root / "submitted").is_dir() else root.parent


def submitted_dir(path: Path) -> Path:
    return path / "submitted" if (path / "submitted").is_dir() else path


def file_sha256(path: Path, within: Path | None = None) -> str:
    """The sha256 of the student's own notebook (handin.open_own: NotOwnFile for a link or a FIFO on the way from
    `within`, and for a file larger than the grader reads, which a sparse file can be by terabytes)."""
    digest = hashlib.sha256()
    with open_own(path, within) as f:
        if os.fstat(f.fileno()).st_size > MAX_NOTEBOOK_BYTES:
            raise NotOwnFile(too_large(safe_name(path.name)))
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


LINKED_STUDENT = "(linked folder)"  # the assignment of the one row of a student folder that is a link


def _entries(folder: Path) -> list[tuple[str, int]]:
    """The names in `folder` with their lstat modes, sorted, hidden ones left out (as a glob does)."""
    return sorted((e.name, e.stat(follow_symlinks=False).st_mode) for e in os.scandir(folder)
                  if not e.name.startswith("."))


def _linked_folder(path: Path, mode: int) -> bool:
    """A link to a folder (a row, refused), rather than a real folder (graded) or a stray file (no row)."""
    return stat.S_ISLNK(mode) and path.is_dir()


# The result file of a row is named after its folders (results/<student>/<assignment>.json, written through
# .<assignment>.json.<pid>.tmp; --junit's <student>__<assignment>.xml): a longer folder name (a file name holds
# 255 bytes) is a refused row under a cut name, or writing its row would stop the batch.
MAX_NAME_BYTES = 120
LONG_STUDENT = "(folder name too long)"  # the assignment of the one row of a student folder so named


def _long(name: str) -> str:
    """Why a folder of this name is not graded, or "" when its name fits."""
    size = len(os.fsencode(name))
    return "" if size <= MAX_NAME_BYTES else (
        f"the folder name {safe_name(name[:40])}... is {size} bytes long, more than the {MAX_NAME_BYTES} the kit "
        "names its files after: it is not graded. Rename the folder to the student's id or the assignment's name.")


def _cut(name: str) -> str:
    """A name that fits MAX_NAME_BYTES, the same for the same name: its beginning and a hash of the whole."""
    if len(os.fsencode(name)) <= MAX_NAME_BYTES:
        return name
    kept = ""
    for char in name:
        if len(os.fsencode(kept + char)) > MAX_NAME_BYTES - 12:
            break
        kept += char
    return f"{kept}~{hashlib.sha256(os.fsencode(name)).hexdigest()[:10]}"


def _refused(student: str, assignment: str, notebook: str, why: str) -> Job:
    # sha256 of the reason: the refused row is kept until the submission changes, as a graded one is
    return Job(student, assignment, notebook, hashlib.sha256(why.encode(errors="surrogateescape")).hexdigest(), why)


def discover(root: Path) -> list[Job]:
    """One job per <student>/<assignment> folder, even when it holds no notebook. A student or assignment
    folder that is a link or whose name is too long for the kit's files (MAX_NAME_BYTES), or a notebook that is
    not the student's own regular file (handin.open_own), is a refused job: read nowhere, never graded."""
    base = submitted_dir(root)
    jobs = []
    for student, mode in _entries(base):
        if _linked_folder(base / student, mode):
            jobs.append(_refused(_cut(student), LINKED_STUDENT, "", refusal(student, mode, "folder")))
        if not stat.S_ISDIR(mode):
            continue
        if _long(student):
            jobs.append(_refused(_cut(student), LONG_STUDENT, "", _long(student)))
            continue
        for assignment, amode in _entries(base / student):
            folder = base / student / assignment
            if _linked_folder(folder, amode):
                jobs.append(_refused(student, _cut(assignment), "", refusal(assignment, amode, "folder")))
            if not stat.S_ISDIR(amode):
                continue
            if _long(assignment):
                jobs.append(_refused(student, _cut(assignment), "", _long(assignment)))
                continue
            # every .ipynb name but folders: a link or a FIFO so named is refused, not passed over for another
            notebooks = [folder / n for n, m in _entries(folder) if n.endswith(".ipynb") and not stat.S_ISDIR(m)]
            preferred = [nb for nb in notebooks if nb.stem == assignment] or notebooks
            nb = preferred[0] if preferred else None
            try:
                jobs.append(Job(student, assignment, str(nb) if nb else "", file_sha256(nb, base) if nb else ""))
            except NotOwnFile as e:
                jobs.append(_refused(student, assignment, str(nb), str(e)))
            except OSError as e:  # not readable by the grader (a mode of 000 kept by tar): that row, not the batch
                name = safe_name(nb.name) if nb else assignment
                jobs.append(_refused(student, assignment, str(nb), f"{name} cannot be read: {e.strerror}"))
    return jobs


def set_aside_stale(out: Path, jobs: list[Job]) -> list[str]:
    """Move each result whose submission folder is gone (a misspelled assignment folder, renamed since) from
    <out>/results to <out>/stale, so that the summaries, the class report, the gradebook and the feedback see
    every submission once; returns the "<student>/<assignment>" of each one moved."""
    keep = {result_path(out, j) for j in jobs}
    moved = []
    for path in sorted((out / "results").glob("*/*.json")):
        if path not in keep:
            aside = out / "stale" / path.parent.name / path.name
            aside.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, aside)
            moved.append(safe_name(f"{path.parent.name}/{path.stem}"))
    return moved


def shard(jobs: list[Job], index: int, count: int) -> list[Job]:
    """Shard i of n (1-based): a stable split by student and assignment, independent of order."""
    if not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: need 1 <= i <= n")
    return [j for j in jobs if int(hashlib.sha256(j.key.encode()).hexdigest(), 16) % count == index - 1]


def result_path(out: Path, job: Job) -> Path:
    return out / "results" / job.student / f"{job.assignment}.json"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def stored_result(out: Path, job: Job) -> Results | None:
    """The result graded from this very notebook, or None: no result, another version of the notebook,
    a damaged file (graded again) or a grader error (never done)."""
    path = result_path(out, job)
    if not path.exists():
        return None
    try:
        result = fmt.load(path)
    except (OSError, ValueError):
        return None
    return result if result["extra_data"].get("sha256") == job.sha256 and not fmt.grader_error(result) else None


def _done(out: Path, job: Job) -> bool:
    return stored_result(out, job) is not None


def error_result(job: Job, device: str, message: str) -> Results:
    """The result of a submission the grader failed on: no score, and retried on the next run. The message may
    name the student's files, so it is made safe (whole: it is the instructor's account of the failure)."""
    message = safe_text(message, limit=None)
    return {
        "score": 0.0, "max_score": 0.0, "execution_time": 0.0,
        "output": f"grader error: {message}", "visibility": "visible", "tests": [],
        "extra_data": {"assignment": job.assignment_text, "notebook": safe_name(Path(job.notebook).name),
                       "device": device, "sandbox": {}, "student": job.student_text, "sha256": job.sha256,
                       "grader_error": message},
    }


def default_workers() -> int:
    """One grade-all worker per core this process may run on (os.sched_getaffinity where the OS has it, as
    Linux does; else every core): asked only when grade-all runs, so that no command needs it to parse."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else os.cpu_count() or 1)


# -- the worker side ------------------------------------------------------------


def _init_worker(counter: Any, warm: bool, judge: bool = True) -> None:
    """Set up this worker process, which only judges: pin it (and the sandboxes it starts, held there by a cpuset
    where one can be made: sandbox/control.py) to one core of its own, start its zygote, and give torch one thread.
    `warm`: some assignment's grading imports torch._dynamo (Chapter.loads_dynamo), so the zygote imports it at
    once. Without `judge` (grade_all's `work` is a stand-in that grades nothing) it is only pinned."""
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    if hasattr(os, "sched_setaffinity"):  # Linux; elsewhere (macOS) the OS places the workers itself
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[slot % len(cores)]})
    if not judge:
        return
    launcher.zygote(warm)  # on this core too; it imports torch while the worker imports its own
    import torch

    torch.set_num_threads(1)  # the whole worker: one core is all it has, as the sandbox's children have


def grade_job(job: Job, out: str, device: str, junit: bool) -> SummaryRow:
    """Grade one submission and write its result file; returns the summary row. Never raises
    for a grading that fails: that is a grader-error result."""
    started = time.perf_counter()
    try:
        result = grade_submission(job, out, device, junit, launcher.zygote())  # the worker's (_init_worker)
    except Exception as e:  # a bug in the kit or a broken machine must not lose the row
        result = error_result(job, device, f"{type(e).__name__}: {e}")
    result["execution_time"] = round(time.perf_counter() - started, 3)
    _write_atomic(result_path(Path(out), job), fmt.dumps(result))
    return row(result)


def grade_submission(job: Job, out: str, device: str, junit: bool, zygote: launcher.Zygote) -> Results:
    """The result of one submission (a grader-error result when the machine failed it), its sandboxes forked by
    `zygote`; writes nothing but its JUnit report. grade-all's workers and nbgrader's autograde
    (course.nbgrader.autograde) call it."""
    from autograder.judging.judge import Grade, GradeOptions, GraderError, grade
    from autograder.judging.report import gradescope

    if job.refused or not job.notebook:
        g = Grade(Path(job.notebook or f"{job.assignment}.ipynb"), job.assignment_text, device,
                  notes=[job.refused or "No .ipynb file was found in this submission folder."])
        result = gradescope(g)
    else:
        assignment = job.assignment if job.assignment in CHAPTERS else None
        report = Path(out) / "junit" / f"{job.student}__{job.assignment}.xml" if junit else None
        if report is not None:
            report.parent.mkdir(parents=True, exist_ok=True)
        try:
            options = GradeOptions(device, junit=report, student=job.student)
            result = gradescope(grade(Path(job.notebook), assignment, options, zygote=zygote))
        except GraderError as e:
            result = error_result(job, device, str(e))
    result["extra_data"]["student"], result["extra_data"]["sha256"] = job.student_text, job.sha256
    if job.fingerprint:
        result["extra_data"]["graded_with"] = job.fingerprint
    return result


class SummaryRow(TypedDict):
    """One submission in summary.json and summary.csv."""

    student: str
    assignment: str
    score: float
    max_score: float
    seconds: float
    status: SubmissionStatus  # GRADED, ERROR or GRADER_ERROR (written as their values)
    notes: str


ROW_FIELDS = ["student", "assignment", "score", "max_score", "seconds", "status", "notes"]  # SummaryRow's keys


def row(result: Results) -> SummaryRow:
    """A summary row; every text in it is cleaned of terminal control characters, and the names of newlines."""
    extra = result["extra_data"]
    if fmt.grader_error(result):
        status = SubmissionStatus.GRADER_ERROR
    else:  # a note that is advice only (the device note) makes no error
        said = result["output"].replace(extra.get("device_note", "\0"), "").strip()
        status = SubmissionStatus.ERROR if said and result["score"] == 0 else SubmissionStatus.GRADED
    return {
        # names on one line, whatever version of the kit wrote the result
        "student": safe_name(extra["student"]), "assignment": safe_name(extra["assignment"] or ""),
        "score": result["score"], "max_score": result["max_score"], "seconds": result["execution_time"],
        "status": status, "notes": clean(result["output"].replace("\n", " ")[:300]),
    }


# -- the coordinator ----------------------------------------------------------------


class Progress:
    """The progress line on stderr: done, left, below full marks, errors and grader errors apart."""

    def __init__(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.below = self.errors = self.grader_errors = 0
        self.started = time.monotonic()

    def add(self, r: SummaryRow) -> None:
        self.done += 1
        if r["status"] is SubmissionStatus.GRADER_ERROR:
            self.grader_errors += 1
        else:
            self.below += r["score"] < r["max_score"]
            self.errors += r["status"] is SubmissionStatus.ERROR
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        eta = (self.total - self.done) / rate if rate else 0.0
        sys.stderr.write("\r" + clean(
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} graded, "
            f"{self.total - self.done} left, {self.below} below full marks, {self.errors} errors, "
            f"{self.grader_errors} grader errors, ~{eta:.0f} s left "))
        sys.stderr.flush()


Work = Callable[[Job, str, str, bool], SummaryRow]


def _run(todo: list[Job], workers: int, submit: Callable[[cf.Executor, Job], cf.Future[SummaryRow]],
         new_pool: Callable[[], cf.Executor], graded: Callable[[SummaryRow], None],
         failed: Callable[[Job, str], None]) -> None:
    """Run every job of `todo` on process pools, `workers` at a time, surviving workers that die.

    When a worker dies, concurrent.futures fails every job in flight and the pool is
    unusable. Only the jobs in flight (at most `workers`: no more are submitted) can be
    to blame; each is retried alone in a fresh pool before any other job, so a job that
    breaks a pool a second time, alone, is the one that kills its worker: `failed`.
    """
    pending = deque(todo)
    suspects: deque[Job] = deque()
    strikes: dict[Job, int] = {}
    while pending or suspects:
        with new_pool() as pool:
            running: dict[cf.Future[SummaryRow], Job] = {}
            broken = False
            while (pending or suspects or running) and not broken:
                if suspects:
                    if not running:
                        job = suspects.popleft()
                        running[submit(pool, job)] = job
                else:
                    while pending and len(running) < workers:
                        job = pending.popleft()
                        running[submit(pool, job)] = job
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                if any(isinstance(f.exception(), BrokenProcessPool) for f in finished):
                    broken = True
                    finished, _ = cf.wait(running)  # a broken pool fails all its futures at once
                for future in finished:
                    job = running.pop(future)
                    error = future.exception()
                    if isinstance(error, BrokenProcessPool):
                        strikes[job] = strikes.get(job, 0) + 1
                        if strikes[job] >= 2:
                            failed(job, "the worker process grading this submission died twice (killed, usually "
                                        "for using too much memory); it is graded again on the next run")
                        else:
                            suspects.append(job)
                    elif error is not None:
                        failed(job, f"{type(error).__name__}: {error}")
                    else:
                        graded(future.result())


def graded_by_another(out: Path, jobs: list[Job]) -> list[Job]:
    """The jobs whose result, graded from this very notebook, was graded with another release or grader than the
    job's (Job.fingerprint); a result that does not say (an older kit's) is not counted."""
    stale = []
    for job in jobs:
        result = stored_result(out, job)
        if result is not None and result["extra_data"].get("graded_with", job.fingerprint) != job.fingerprint:
            stale.append(job)
    return stale


def grade_all(root: Path, out: Path, workers: int, device: str = "cpu", shard_spec: str | None = None,
              junit: bool = False, work: Work = grade_job, regrade: bool = False) -> int:
    """Grade the class; 0 when every submission has a result, 3 when some are grader errors
    (listed on stderr, retried by the next run), 130 when interrupted.

    `work` grades one job in a worker (grade_job; the tests pass stand-ins). A folder that is neither a course
    (holding submitted/) nor a submitted/ folder is refused with 2: any folder tree would pass for one.
    A result graded with another release or grader (fingerprint()) is named and kept, or, with `regrade`,
    graded again.
    """
    if not (root / "submitted").is_dir() and root.name != "submitted":
        print(f"{safe_name(str(root))} is not a course folder (it holds no submitted/ folder) nor a submitted/ "
              "folder: nothing graded. Give the course folder, the one with submitted/<student>/<assignment>/ in "
              "it.", file=sys.stderr)
        return 2
    try:
        part = shards.parse(shard_spec) if shard_spec else None
    except shards.ShardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    jobs = discover(root)
    prints = {a: fingerprint(course_of(root), a) for a in {j.assignment for j in jobs}}
    jobs = [dataclasses.replace(j, fingerprint=prints[j.assignment]) for j in jobs]
    for stale in set_aside_stale(out, jobs):
        print(f"{stale}: its submission folder is gone (renamed or removed); its old result is set aside in "
              f"{out / 'stale'} and counts nowhere", file=sys.stderr)
    if part is not None:
        jobs = shard(jobs, part.index, part.count)
    todo = [j for j in jobs if not _done(out, j)]
    another = graded_by_another(out, jobs)
    if regrade:
        todo += another
    elif another:
        print(f"{len(another)} results were graded with another release or grader than today's (the released "
              "notebook, its points, or the kit's checks changed since): they stand as they were graded. Rerun "
              "with --regrade to grade them again (--gradebook then records the new scores): "
              + ", ".join(j.key for j in another), file=sys.stderr)
    workers = max(1, min(workers, len(todo)))  # a worker with nothing to grade would only start a judge
    print(f"{len(jobs)} submissions, {len(jobs) - len(todo)} already graded, {len(todo)} to grade "
          f"with {workers} worker(s)", file=sys.stderr)
    progress = Progress(len(jobs), len(jobs) - len(todo))
    ctx = multiprocessing.get_context("spawn")
    warm = any(c.loads_dynamo for c in (CHAPTERS.get(j.assignment) for j in todo) if c is not None)

    def new_pool() -> cf.Executor:
        counter = ctx.Value("i", 0)
        return cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                      initargs=(counter, warm, work is grade_job))

    def failed(job: Job, message: str) -> None:
        result = error_result(job, device, message)
        _write_atomic(result_path(out, job), fmt.dumps(result))
        progress.add(row(result))

    try:
        _run(todo, workers, lambda pool, job: pool.submit(work, job, str(out), device, junit), new_pool,
             progress.add, failed)
    except KeyboardInterrupt:
        print("\ninterrupted: graded results are kept; run the same command again to resume", file=sys.stderr)
        return 130
    print(file=sys.stderr)
    results = [fmt.load(result_path(out, j)) for j in jobs]
    off = sorted({p for r in results for p in fmt.sandbox_off(r)})
    if off:
        print(f"warning: sandbox protections off on this machine: {'; '.join(off)}", file=sys.stderr)
    rows = write_summaries(out, results)
    lost = [r for r in rows if r["status"] is SubmissionStatus.GRADER_ERROR]
    if lost:
        print(f"{len(lost)} grader errors (no score; graded again when you rerun the same command):",
              file=sys.stderr)
        for r in lost:
            print(f"  {r['student']}/{r['assignment']}: {r['notes']}", file=sys.stderr)
        return 3
    return 0


TABLE_ROWS = 60  # grade-all's score table shows this many submissions; summary.csv has them all


def score_table(out: Path) -> str:
    """The score table grade-all prints at the end, from <out>/summary.json: one line per submission (the first
    TABLE_ROWS), its score, status and the start of its notes; "" without a summary."""
    try:
        rows = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return ""
    head = ["student", "assignment", "score", "status", "notes"]
    body = [[clean(str(r.get("student", ""))), clean(str(r.get("assignment", ""))),
             f"{r.get('score', 0):g} / {r.get('max_score', 0):g}", clean(str(r.get("status", ""))),
             clean(str(r.get("notes", "")))[:70]] for r in rows[:TABLE_ROWS] if isinstance(r, dict)]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head) - 1)]
    line = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    rule = "  ".join("-" * w for w in widths) + "  -----"
    more = [f"... and {len(rows) - TABLE_ROWS} more in {out / 'summary.csv'}"] if len(rows) > TABLE_ROWS else []
    return "\n".join([line.format(*head), rule, *(line.format(*row).rstrip() for row in body), *more])


def write_summaries(out: Path, results: list[Results]) -> list[SummaryRow]:
    rows = sorted((row(r) for r in results), key=lambda r: (r["student"], r["assignment"]))
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "summary.json", json.dumps(rows, indent=2))
    with open(out / "summary.csv.tmp", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS)
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    os.replace(out / "summary.csv.tmp", out / "summary.csv")
    return rows


# A result holds bounded texts (untrusted.MAX_TEXT each, at most a few hundred checks): far below this.
MAX_RESULT_BYTES = 16 << 20


def merge(parts: list[Path], out: Path) -> int:
    """Join shard outputs; a submission graded in two shards is an error, not a silent pick, and so is a result
    that is a link, a special file or too large (handin.open_own)."""
    seen: dict[str, Path] = {}
    results = []
    for part in parts:
        for path in sorted((part / "results").glob("*/*.json")):
            key = f"{path.parent.name}/{path.stem}"
            if key in seen:
                print(f"error: {key} is in both {seen[key]} and {part}", file=sys.stderr)
                return 2
            seen[key] = part
            try:  # a shard's folder came from another machine: its results are files grade-all wrote, or refused
                raw = read_own(path, MAX_RESULT_BYTES, part)
            except (NotOwnFile, OSError) as e:
                print(f"error: {safe_name(str(path))}: {e}; not a result grade-all wrote, nothing merged",
                      file=sys.stderr)
                return 2
            if len(raw) > MAX_RESULT_BYTES:
                print(f"error: {safe_name(str(path))} is larger than {MAX_RESULT_BYTES >> 20} MB, which no result "
                      "grade-all writes is; nothing merged", file=sys.stderr)
                return 2
            text = raw.decode("utf-8", errors="replace")
            result = fmt.parse(json.loads(text))
            if result["extra_data"].get("student") != safe_name(path.parent.name):  # grade-all files it so
                print(f"error: {safe_name(str(path))} is the result of student "
                      f"{safe_name(str(result['extra_data'].get('student')))!r}, not of the folder it is in; "
                      "nothing merged", file=sys.stderr)
                return 2
            _write_atomic(out / "results" / path.parent.name / path.name, text)
            results.append(result)
    write_summaries(out, results)
    print(f"merged {len(results)} results from {len(parts)} parts into {out}", file=sys.stderr)
    return 0
