"""Do the speed checks hold on a noisy machine? N speed-only gradings of the solution and
N of a loop version, each with a fresh secret seed, beside a process spinning on one core.

    .venv/bin/python benchmarks/timing_stability.py --chapter 04_overloaded_ops --runs 50
    .venv/bin/python benchmarks/timing_stability.py --chapter 05_batch_gather --runs 50

Every solution grading must pass every speed check, and every loop grading fail them.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.checks.ch05_batch_gather import LOOP_SRC
from autograder.judge import grade
from tests.kit import solution_code, write_submission
from tests.test_ch04_overloaded_ops import DISTANCE_LOOP, ROW_LOOP

LOOPS = {
    "04_overloaded_ops": {"row_sum": ROW_LOOP, "pairwise_sq_distances": DISTANCE_LOOP},
    "05_batch_gather": {"batch_gather": LOOP_SRC.replace("batch_gather_loop", "batch_gather")},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", choices=sorted(LOOPS), default="04_overloaded_ops")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-hog", action="store_true", help="leave the machine quiet")
    args = parser.parse_args()
    hog = None if args.no_hog else subprocess.Popen([sys.executable, "-c", "while True: pass"])
    outcomes: dict[str, dict[str, int]] = {}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            versions = {"solution": solution_code(args.chapter), "loop": LOOPS[args.chapter]}
            for run in range(args.runs):
                for version, cells in versions.items():
                    path = write_submission(Path(tmp), args.chapter, cells, name=f"{version}.ipynb")
                    for r in grade(path, only="speed", seed=secrets.randbits(62)).results:
                        counts = outcomes.setdefault(f"{version:8s} {r.nodeid.split('::')[-1]}", {})
                        counts[r.status] = counts.get(r.status, 0) + 1
                        if (r.status == "passed") != (version == "solution"):
                            print(f"  run {run}: unexpected {r.status} for {version}: {r.output.splitlines()[:1]}")
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"{args.chapter}: {args.runs} gradings of each version, speed checks only, "
          f"{'with' if hog else 'without'} a CPU hog, {time.monotonic() - started:.0f} s")
    for name, counts in sorted(outcomes.items()):
        print(f"  {name}: passed {counts.get('passed', 0)}, failed {counts.get('failed', 0)}")


if __name__ == "__main__":
    main()
