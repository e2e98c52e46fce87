"""Grade a whole class: discovery, sharding, parallel workers, resume, summaries, merge.

Layout (nbgrader's): <course>/submitted/<student>/<assignment>/<notebook>.ipynb,
or the submitted/ folder itself. Every submission gets exactly one result file,
written atomically when it is graded, so an interrupted run resumes where it
stopped and nothing is graded twice. Workers are separate judge processes
(torch imported once each, every submission still in its own sandboxed
child), each pinned to its own core, so a timing check never shares a core
with another grading.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import hashlib
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.chapters import CHAPTERS


@dataclass(frozen=True)
class Job:
    student: str
    assignment: str
    notebook: str  # "" when the submission folder holds no notebook
    sha256: str

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}"


def submitted_dir(path: Path) -> Path:
    return path / "submitted" if (path / "submitted").is_dir() else path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def discover(root: Path) -> list[Job]:
    """One job per <student>/<assignment> folder, even when it holds no notebook."""
    jobs = []
    for folder in sorted(p for p in submitted_dir(root).glob("*/*") if p.is_dir()):
        notebooks = sorted(folder.glob("*.ipynb"))
        preferred = [nb for nb in notebooks if nb.stem == folder.name] or notebooks
        nb = preferred[0] if preferred else None
        jobs.append(Job(folder.parent.name, folder.name, str(nb) if nb else "", _sha(nb) if nb else ""))
    return jobs


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


def _done(out: Path, job: Job) -> bool:
    path = result_path(out, job)
    if not path.exists():
        return False
    try:
        return json.loads(path.read_text())["extra_data"]["sha256"] == job.sha256
    except (ValueError, KeyError, TypeError):
        return False  # a damaged result file is graded again


# -- the worker side ------------------------------------------------------------

_CORE: Any = None


def _init_worker(counter: Any) -> None:
    """Pin this worker (and the sandboxes it starts) to one core of its own."""
    cores = sorted(os.sched_getaffinity(0))
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    os.sched_setaffinity(0, {cores[slot % len(cores)]})


def grade_job(job: Job, out: str, device: str, junit: bool) -> dict[str, Any]:
    """Grade one submission and write its result file; returns the summary row."""
    from autograder.judge import Grade, GraderError, grade
    from autograder.report import gradescope

    started = time.perf_counter()
    if not job.notebook:
        g = Grade(Path(f"{job.assignment}.ipynb"), job.assignment, device,
                  notes=["No .ipynb file was found in this submission folder."])
    else:
        assignment = job.assignment if job.assignment in CHAPTERS else None
        report = Path(out) / "junit" / f"{job.student}__{job.assignment}.xml" if junit else None
        if report is not None:
            report.parent.mkdir(parents=True, exist_ok=True)
        try:
            g = grade(Path(job.notebook), assignment, device, junit=report)
        except GraderError as e:  # a broken kit must not lose the row
            g = Grade(Path(job.notebook), assignment, device, notes=[f"grader error: {e}"])
    g.execution_time = time.perf_counter() - started
    result = gradescope(g)
    result["extra_data"].update(student=job.student, sha256=job.sha256)
    _write_atomic(result_path(Path(out), job), json.dumps(result, indent=2))
    return row(result)


ROW_FIELDS = ["student", "assignment", "score", "max_score", "seconds", "status", "notes"]


def row(result: dict[str, Any]) -> dict[str, Any]:
    extra = result["extra_data"]
    return {
        "student": extra["student"], "assignment": extra["assignment"] or "", "score": result["score"],
        "max_score": result["max_score"], "seconds": result["execution_time"],
        "status": "error" if result["output"] and result["score"] == 0 else "graded",
        "notes": result["output"].replace("\n", " ")[:300],
    }


# -- the coordinator ----------------------------------------------------------------


def _progress(done: int, total: int, below: int, errors: int, started: float) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    rate = done / max(time.monotonic() - started, 1e-9)
    eta = (total - done) / rate if rate else 0.0
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} graded, {total - done} left, "
                     f"{below} below full marks, {errors} errors, ~{eta:.0f} s left ")
    sys.stderr.flush()


def grade_all(root: Path, out: Path, workers: int, device: str = "cpu", shard_spec: str | None = None,
              junit: bool = False) -> int:
    jobs = discover(root)
    if shard_spec:
        i, n = (int(x) for x in shard_spec.split("/"))
        jobs = shard(jobs, i, n)
    todo = [j for j in jobs if not _done(out, j)]
    print(f"{len(jobs)} submissions, {len(jobs) - len(todo)} already graded, {len(todo)} to grade "
          f"with {workers} worker(s)", file=sys.stderr)
    started = time.monotonic()
    done, below, errors = len(jobs) - len(todo), 0, 0
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("i", 0)
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(counter,)) as pool:
        futures = {pool.submit(grade_job, job, str(out), device, junit): job for job in todo}
        try:
            for future in cf.as_completed(futures):
                r = future.result()
                done += 1
                below += r["score"] < r["max_score"]
                errors += r["status"] == "error"
                _progress(done, len(jobs), below, errors, started)
        except KeyboardInterrupt:
            pool.shutdown(cancel_futures=True)
            print("\ninterrupted: graded results are kept; run the same command again to resume", file=sys.stderr)
            return 130
    print(file=sys.stderr)
    results = [json.loads(result_path(out, j).read_text()) for j in jobs]
    off = sorted({p for r in results for p in r["extra_data"].get("sandbox", {}).get("off", [])})
    if off:
        print(f"warning: sandbox protections off on this machine: {'; '.join(off)}", file=sys.stderr)
    write_summaries(out, results)
    return 0


def write_summaries(out: Path, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = sorted((row(r) for r in results), key=lambda r: (r["student"], r["assignment"]))
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "summary.json", json.dumps(rows, indent=2))
    with open(out / "summary.csv.tmp", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(out / "summary.csv.tmp", out / "summary.csv")
    return rows


def merge(parts: list[Path], out: Path) -> int:
    """Join shard outputs; a submission graded in two shards is an error, not a silent pick."""
    seen: dict[str, Path] = {}
    results = []
    for part in parts:
        for path in sorted((part / "results").glob("*/*.json")):
            key = f"{path.parent.name}/{path.stem}"
            if key in seen:
                print(f"error: {key} is in both {seen[key]} and {part}", file=sys.stderr)
                return 2
            seen[key] = part
            text = path.read_text()
            _write_atomic(out / "results" / path.parent.name / path.name, text)
            results.append(json.loads(text))
    write_summaries(out, results)
    print(f"merged {len(results)} results from {len(parts)} parts into {out}", file=sys.stderr)
    return 0
