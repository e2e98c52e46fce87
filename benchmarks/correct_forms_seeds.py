"""Do correct forms keep every point under every seed? Each chapter's reference solution and every correct form
of its cases.py (@right) is graded N times, each with another input seed, on the checks it is declared for (speed
checks left out: benchmarks/timing_stability.py measures those); every check that does not pass is printed.

    .venv/bin/python benchmarks/correct_forms_seeds.py --seeds 3
    .venv/bin/python benchmarks/correct_forms_seeds.py --seeds 10 --chapter 01_basics --chapter 02_modules

It ends with the number of gradings that lost a point: 0 is the kit's promise that honest code never does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course.cases import cases
from autograder.course.reference import solution_cells
from autograder.judging.judge import GradeOptions, grade
from autograder.judging.registry import CHAPTERS
from tests.kit import limits_for, write_submission, zygote


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--chapter", action="append", choices=sorted(CHAPTERS), help="default: all")
    args = parser.parse_args()
    lost = 0
    for chapter in args.chapter or sorted(CHAPTERS):
        forms: list[tuple[str, dict[str, str], str]] = [("reference", {}, "not speed")]
        forms += [(r.name, r.cells, f"({r.only}) and not speed") for r in cases(chapter).right]
        for name, cells, only in forms:
            path = write_submission(Path(tempfile.mkdtemp()), chapter, {**solution_cells(chapter), **cells})
            for seed in range(args.seeds):
                options = GradeOptions(seed=seed * 7919 + 13, limits=limits_for(chapter), only=only)
                g = grade(path, options=options, zygote=zygote())
                failed = [r for r in g.results if r.status == "failed"]
                lost += bool(failed)
                for r in failed:
                    print(f"{chapter} / {name} / seed {seed}: {r.name}: {r.output[:200]}", flush=True)
        print(f"{chapter}: {len(forms)} forms x {args.seeds} seeds graded", flush=True)
    print(f"gradings that lost a point: {lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
