"""Where a grading's time goes: per chapter, per stage and per check.

    .venv/bin/python benchmarks/grading_profile.py [--chapter 07_numerical_stability ...] [--repeats 2] [--checks]

Each chapter's solved notebook (or, with --form, its first named wrong form or the release) is graded `--repeats`
times in this one process (as grade-all's workers and nbgrader's KitAutograde do: torch imported and the zygote
started once; the first grading also pays the checks module's import, so the figures are each stage's fastest
grading). The judge's own methods are wrapped with time.perf_counter, nothing in them changes:

- judge start: importing the judge (torch) with the zygote starting beside it, until its first child answers;
- load: reading the notebook; static: the judge's own reading of the cells (review flags, rules);
- isolation: forking the student's child from the zygote, isolating it and running its cells (a restart after a
  crash counts here too); reference start: the same for the clean reference children of speed checks;
- student calls: the judge's requests to the student's child, reply decoding included;
- timed runs: the timed requests of speed checks (student's and reference's, warm-up rounds included);
- reference calls: other requests to the reference children;
- judge's own work: the rest of the checks' time: oracles, the judge's replays and trainings, comparisons;
- pytest: collecting and running the checks module around the checks; report: the Gradescope result.

With --checks it also prints each check's time split the same way. The figures it printed on a machine are kept
in benchmarks/grading_profile.md, with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

started = time.perf_counter()
from autograder.sandbox import launcher  # noqa: E402  # torch-free: the zygote starts before torch loads

ZYGOTE = launcher.zygote(warm=True)

import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.course.cases import mutants  # noqa: E402
from autograder.course.reference import solution_cells  # noqa: E402
from autograder.judging import judge, student  # noqa: E402
from autograder.judging.registry import CHAPTERS  # noqa: E402
from autograder.judging.report import gradescope  # noqa: E402
from autograder.sandbox import process  # noqa: E402
from tests.kit import write_submission  # noqa: E402

STAGES = ["load", "static", "isolation", "reference start", "student calls", "timed runs", "reference calls",
          "judge's own work", "pytest", "report"]
CHECK_PARTS = ["isolation", "reference start", "student calls", "timed runs", "reference calls"]


class Clock:
    """Seconds per stage of the grading in progress, and per check."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = defaultdict(float)
        self.checks: dict[str, dict[str, float]] = {}
        self.depth = 0  # nested wrapped calls count once, in the outermost

    def wrap(self, owner: Any, name: str, stage: Callable[..., str]) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return inner(*args, **kwargs)
            self.depth += 1
            t = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.stages[stage(*args, **kwargs)] += time.perf_counter() - t
                self.depth -= 1
        setattr(owner, name, timed)


CLOCK = Clock()


def _is_reference(runner: student.Student) -> bool:
    return str(runner.submission.path) == "<reference>"


def _request_stage(runner: student.Student, name: str, header: dict[str, Any], *_: Any, **__: Any) -> str:
    if header.get("op") == "run":
        return "timed runs"
    return "reference calls" if _is_reference(runner) else "student calls"


def _start_stage(box: process.Sandbox, *_: Any, **__: Any) -> str:
    return "reference start" if box.program.cells[:1] and box.program.cells[0].get("id") == "reference" \
        else "isolation"


CLOCK.wrap(process.Sandbox, "start", _start_stage)
CLOCK.wrap(student.Student, "_request", _request_stage)
CLOCK.wrap(judge, "load_submission", lambda *a, **k: "load")
CLOCK.wrap(judge, "scan_submission", lambda *a, **k: "static")


class CheckTimer:
    """A pytest plugin: each check's wall time and the stages' share of it."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        before = dict(CLOCK.stages)
        t = time.perf_counter()
        yield
        total = time.perf_counter() - t
        parts = {k: CLOCK.stages[k] - before.get(k, 0.0) for k in CHECK_PARTS}
        parts["judge's own work"] = total - sum(parts.values())
        parts["total"] = total
        CLOCK.checks[item.name] = parts


_main = pytest.main


def _pytest_main(args: list[str], plugins: list[Any]) -> Any:
    t = time.perf_counter()
    before = dict(CLOCK.stages)
    checks_before = set(CLOCK.checks)
    code = _main(args, plugins=[*plugins, CheckTimer()])
    inside = sum(CLOCK.stages[k] - before.get(k, 0.0) for k in CHECK_PARTS)
    checks = sum(c["total"] for n, c in CLOCK.checks.items() if n not in checks_before)
    CLOCK.stages["judge's own work"] += checks - inside
    CLOCK.stages["pytest"] += time.perf_counter() - t - checks
    return code


pytest.main = _pytest_main  # type: ignore[assignment]  # judge.grade_loaded calls pytest.main


def grade_once(path: Path) -> tuple[dict[str, float], dict[str, dict[str, float]], float, float]:
    """(seconds per stage, per check, in all, the score) of one grading."""
    CLOCK.stages.clear()
    CLOCK.checks.clear()
    t = time.perf_counter()
    g = judge.grade(path, zygote=ZYGOTE)
    r = time.perf_counter()
    gradescope(g)
    CLOCK.stages["report"] += time.perf_counter() - r
    total = time.perf_counter() - t
    return dict(CLOCK.stages), {k: dict(v) for k, v in CLOCK.checks.items()}, total, g.score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", action="append", choices=sorted(CHAPTERS), help="default: all")
    parser.add_argument("--repeats", type=int, default=2, help="gradings of each notebook; the fastest is shown")
    parser.add_argument("--checks", action="store_true", help="also each check's time")
    parser.add_argument("--form", choices=["solution", "wrong", "empty"], default="solution",
                        help="the notebook graded: solved, its chapter's first named wrong form (cases.py, as "
                             "class_grading.py's wrong submissions), or the release left as it is")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as grade-all's workers and the command line
    # judge start: the zygote's first child, with torch imported here beside it
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"grading-profile-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    chapters = args.chapter or sorted(CHAPTERS)
    cells = {"solution": solution_cells, "wrong": lambda c: {**solution_cells(c), **mutants(c)[0].cells},
             "empty": lambda c: {}}[args.form]
    paths = {c: write_submission(tmp, c, cells(c)) for c in chapters}
    warmup = judge.grade(paths[chapters[0]], zygote=ZYGOTE, options=judge.GradeOptions(only="nothing-at-all"))
    print(f"judge start (import torch and the judge, zygote's first child ready): "
          f"{time.perf_counter() - started:.2f} s ({len(warmup.results)} checks)")
    load = os.getloadavg()
    print(f"load average: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} cores")
    rows = []
    for c in chapters:
        runs = [grade_once(paths[c]) for _ in range(args.repeats)]
        stages, checks, total, score = min(runs, key=lambda run: run[2])
        rows.append((c, stages, total, score, runs[0][2]))
        if args.checks:
            print(f"\n{c}: {total:.2f} s, score {score:g}")
            print(f"  {'check':58s} {'total':>6s} " + " ".join(f"{k[:9]:>9s}" for k in [*CHECK_PARTS, "judge"]))
            for name, parts in sorted(checks.items(), key=lambda kv: -kv[1]["total"]):
                print(f"  {name[:58]:58s} {parts['total']:6.2f} "
                      + " ".join(f"{parts[k]:9.2f}" for k in [*CHECK_PARTS, "judge's own work"]))
    print(f"\nseconds per grading of the {args.form} notebook, fastest of {args.repeats}, one process, one torch "
          "thread")
    print("(first: the process's first grading of the chapter, which imports its checks module)")
    print("| chapter | first | total | " + " | ".join(STAGES) + " |")
    print("| --- " * (len(STAGES) + 3) + "|")
    for c, stages, total, _, first in rows:
        print(f"| {c} | {first:.2f} | {total:.2f} | " + " | ".join(f"{stages.get(k, 0.0):.2f}" for k in STAGES) + " |")
    sums = {k: sum(s.get(k, 0.0) for _, s, _, _, _ in rows) for k in STAGES}
    print(f"| all | {sum(r[4] for r in rows):.2f} | {sum(r[2] for r in rows):.2f} | "
          + " | ".join(f"{sums[k]:.2f}" for k in STAGES) + " |")


if __name__ == "__main__":
    main()
