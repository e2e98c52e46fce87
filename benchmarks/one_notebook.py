"""One notebook in a cold process: `python -m autograder grade` against `nbgrader autograde`, side by side.

    .venv/bin/python benchmarks/one_notebook.py [--chapter 07_numerical_stability] [--repeats 3]

Both grade the same solved submission in a fresh process each time (nbgrader
starts a kernel that imports torch; the kit starts its judge and its zygote).
It prints the median wall time of each and the ratio; the goal is at most 0.5.
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

from autograder.build import generate_release
from tests.kit import ROOT, solution_code, write_submission


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
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        generate_release(args.chapter, course)
        folder = course / "submitted" / "ada" / args.chapter
        folder.mkdir(parents=True)
        notebook = write_submission(folder, args.chapter, solution_code(args.chapter))
        nbgrader, kit = [], []
        for _ in range(args.repeats):  # alternated, so both see the same machine
            nbgrader.append(_timed([sys.executable, "-m", "nbgrader", "autograde", args.chapter, "--force"],
                                   course, env))
            kit.append(_timed([sys.executable, "-m", "autograder", "grade", str(notebook)], ROOT, env))
    t_nb, t_kit = statistics.median(nbgrader), statistics.median(kit)
    print(f"{args.chapter}, one solved notebook, cold process, median of {args.repeats}")
    print(f"nbgrader autograde : {t_nb:6.2f} s  ({', '.join(f'{t:.2f}' for t in nbgrader)})")
    print(f"autograder grade   : {t_kit:6.2f} s  ({', '.join(f'{t:.2f}' for t in kit)})")
    print(f"ratio              : {t_kit / t_nb:.2f} (goal: at most 0.5)")


if __name__ == "__main__":
    main()
