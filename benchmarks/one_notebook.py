"""One notebook in a cold process: `python -m autograder grade`, `nbgrader autograde` with the kit's
preprocessor (the course's nbgrader_config.py) and stock `nbgrader autograde` (nbgrader's Execute), side by side.

    .venv/bin/python benchmarks/one_notebook.py [--chapter 07_numerical_stability] [--repeats 3] [--students 1]

Each grades the same solved submission in a fresh process each time (stock nbgrader
starts a kernel that imports torch; the kit starts its judge and its zygote).
It prints the median wall time of each and the ratios to stock nbgrader; the goal for `grade` is at most 0.5.
With --students N, both `nbgrader autograde` runs grade N copies of the submission in one process (the
kit's judge imports torch and starts its zygote once per process; stock nbgrader starts a kernel per notebook).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course.build import generate_release
from autograder.course.nbgrader.autograde import stock_options
from tests.kit import ROOT, solution_cells, write_submission


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", default="07_numerical_stability")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--students", type=int, default=1, help="submissions in each nbgrader autograde run")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        generate_release(args.chapter, course)
        for i in range(args.students):
            folder = course / "submitted" / f"student{i:03d}" / args.chapter
            folder.mkdir(parents=True)
            notebook = write_submission(folder, args.chapter, solution_cells(args.chapter))
        autograde = [sys.executable, "-m", "nbgrader", "autograde", args.chapter, "--force"]
        times: dict[str, list[float]] = {"stock nbgrader autograde": [], "nbgrader autograde, kit": [],
                                         "autograder grade": []}
        for _ in range(args.repeats):  # alternated, so all see the same machine
            times["stock nbgrader autograde"].append(_timed([*autograde, *stock_options()], course, env))
            times["nbgrader autograde, kit"].append(_timed(autograde, course, env))
            times["autograder grade"].append(_timed([sys.executable, "-m", "autograder", "grade", str(notebook)],
                                                    ROOT, env))
    stock = statistics.median(times["stock nbgrader autograde"])
    print(f"{args.chapter}, solved notebooks, cold process, median of {args.repeats}: nbgrader autograde grades "
          f"{args.students} of them, autograder grade one")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:25s}: {median:6.2f} s  ({', '.join(f'{t:.2f}' for t in runs)})  ratio to stock "
              f"{median / stock:.2f}")
    if args.students == 1:
        print("goal: autograder grade at most 0.5 of stock nbgrader autograde")


if __name__ == "__main__":
    main()
