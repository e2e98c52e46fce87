"""Grade one synthetic class with stock `nbgrader autograde` (nbgrader's Execute), with `grade-all`, and with
`nbgrader autograde` running the kit's preprocessor (Formgrader's path), in one run.

    .venv/bin/python benchmarks/class_grading.py [--submissions 40] [--workers 2] [--no-stock] [--no-kit]

The class mixes correct, wrong, empty (the release) and broken (corrupt JSON,
os._exit at import) submissions across every chapter that exists. It prints
wall time, seconds per notebook, checks run and the score agreement on the
honest submissions, with the load average before each figure.

The kit's `nbgrader autograde` rows: one process per assignment with the course's
warm judge (autograder/course/nbgrader/warm.py) started by the first of them (with
--grade-course-ahead it also grades the other assignments' submissions while idle), the same again with
--force and the judge warm (every submission autograded already, so none is graded
ahead: each process waits for its own), and one process for the class with the
judge cold (stopped before).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course.batch import grade_all
from autograder.course.build import generate_release
from autograder.course.cases import mutants
from autograder.course.nbgrader import warm
from autograder.course.nbgrader.autograde import stock_options
from autograder.judging.registry import CHAPTERS
from tests.kit import ROOT, solution_cells, write_submission

KINDS = ["correct", "wrong", "empty", "broken"]


def _wrong_cells(chapter: str) -> dict[str, str]:
    """The chapter's first named wrong implementation (its folder's cases.py)."""
    return {**solution_cells(chapter), **mutants(chapter)[0].cells}


def make_class(course: Path, count: int) -> dict[str, tuple[str, str]]:
    chapters = [c for c in CHAPTERS if (ROOT / "source" / c).is_dir()]
    for c in chapters:
        generate_release(c, course)
    kinds = {}
    for i in range(count):
        chapter, kind = chapters[i % len(chapters)], KINDS[(i // len(chapters)) % len(KINDS)]
        student = f"s{i:03d}"
        folder = course / "submitted" / student / chapter
        folder.mkdir(parents=True)
        cells = {"correct": solution_cells(chapter), "wrong": _wrong_cells(chapter), "empty": {},
                 "broken": {next(iter(CHAPTERS[chapter].answers)): "import os\nos._exit(0)\n"}}[kind]
        path = write_submission(folder, chapter, cells)
        if kind == "broken" and i % 2:
            path.write_text(path.read_text()[:300])
        kinds[student] = (chapter, kind)
    return kinds


def nbgrader_autograde(course: Path, chapters: set[str] | None, options: list[str]) -> float:
    """Seconds for `nbgrader autograde <chapter> --force` of every chapter, one process each (as stock nbgrader is
    run), or with `chapters` None for one `nbgrader autograde --assignment='*' --force` of the whole class (one
    process, as Formgrader's server is); `options` choose the preprocessors (none: the course's
    nbgrader_config.py, the kit's)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    started = time.perf_counter()
    for chapter in sorted(chapters) if chapters is not None else ["--assignment=*"]:
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", chapter, "--force", *options],
                       cwd=course, env=env, capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - started


def nbgrader_scores(course: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for a in gb.assignments for s in a.submissions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-stock", action="store_true", help="leave stock nbgrader out (minutes)")
    parser.add_argument("--no-kit", action="store_true", help="leave nbgrader autograde with the kit out")
    parser.add_argument("--grade-course-ahead", action="store_true",
                        help="the warm judge grades the other assignments' submissions while idle (off by default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        kinds = make_class(course, args.submissions)
        chapters = {c for c, _ in kinds.values()}
        loads = {}
        kit = [f"--KitAutograde.workers={args.workers}",
               f"--KitAutograde.grade_course_ahead={args.grade_course_ahead}"]
        loads["stock"] = os.getloadavg()
        t_nbgrader = 0.0 if args.no_stock else nbgrader_autograde(course, chapters, stock_options())
        theirs = {} if args.no_stock else nbgrader_scores(course)
        loads["grade-all"] = os.getloadavg()
        started = time.perf_counter()
        grade_all(course, Path(tmp) / "graded", args.workers)
        t_kit = time.perf_counter() - started
        rows = []  # (name, seconds, recorded scores, load before)
        if not args.no_kit:
            warm.stop(course)
            for name, chosen in (("one process per assignment, warm judge started by the first", chapters),
                                 ("one process per assignment again (--force), warm judge warm", chapters),
                                 ("one process for the class, warm judge cold", None)):
                if chosen is None:
                    warm.stop(course)
                load = os.getloadavg()
                rows.append((name, nbgrader_autograde(course, chosen, kit), nbgrader_scores(course), load))
            warm.stop(course)
        results = {p.parent.name: json.loads(p.read_text()) for p in (Path(tmp) / "graded" / "results").glob("*/*")}
    checks = sum(len(r["tests"]) for r in results.values())
    honest = [s for s, (_, k) in kinds.items() if k in ("correct", "empty")]
    # Stock nbgrader knows no bonus (a stretch check cell is worth 0 there): compare the scores without it.
    graded = {s: r["score"] - r["extra_data"].get("bonus", {}).get("score", 0) for s, r in results.items()}
    n = args.submissions
    load = os.getloadavg()
    print(f"{n} submissions over {len(chapters)} chapters ({', '.join(sorted(chapters))}); load average at the end "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    def before(name: str) -> str:
        return "load before {:.1f} {:.1f} {:.1f}".format(*loads[name])

    print(f"grade-all x{args.workers}      : {t_kit:7.1f} s  ({t_kit / n:.2f} s/notebook, {checks} checks; "
          f"{before('grade-all')})")
    if not args.no_stock:
        agree = sum(abs(theirs.get(s, 0) - graded[s]) < 1e-9 for s in honest)
        print(f"nbgrader autograde : {t_nbgrader:7.1f} s  ({t_nbgrader / n:.2f} s/notebook, {2 * n}-ish test cells; "
              f"{before('stock')})")
        print(f"speed-up           : {t_nbgrader / t_kit:.1f}x")
        print(f"honest submissions with equal scores: {agree}/{len(honest)}")
    # a stretch task's points are extra credit there, which nbgrader's score counts
    for name, seconds, recorded, load in rows:
        same = sum(abs(recorded.get(s, 0) - r["score"]) < 1e-9 for s, r in results.items())
        print(f"nbgrader autograde with the kit, {name}: {seconds:7.1f} s ({seconds / t_kit:.2f}x grade-all; "
              f"the goal is at most 1.5x); {same}/{len(graded)} recorded as grade-all scored them; load before "
              "{:.1f} {:.1f} {:.1f}".format(*load))


if __name__ == "__main__":
    main()
