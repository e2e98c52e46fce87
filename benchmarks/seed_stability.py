"""Do wrong implementations score the same under every seed? Each named wrong implementation
of the kit's tests is graded N times, each time with another input seed, and the set of
scores it got is printed. One score per implementation means the checks are decisive.

    .venv/bin/python benchmarks/seed_stability.py --seeds 20
    .venv/bin/python benchmarks/seed_stability.py --seeds 5 --chapter 07_numerical_stability

Speed checks are left out by default (--only "not speed"): their verdict depends on the
machine's load, not on the seed (benchmarks/timing_stability.py measures them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.judging.judge import GradeOptions, grade
from autograder.judging.registry import CHAPTERS
from tests.kit import limits_for, solved, zygote


def named_wrong_implementations(chapters: list[str]) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(chapter, name, cells) of every named wrong implementation: the kit's registry and
    tests/judging/test_honest_checks.py, each distinct code once."""
    from autograder.course.cases import all_mutants
    from tests.judging.test_honest_checks import WRONG

    entries = [(m.chapter, m.name, m.cells) for m in all_mutants()]
    entries += [(w.chapter, w.name, {w.cell: w.code}) for w in WRONG]
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for chapter, name, cells in entries:
        key = (chapter, tuple(sorted(cells.items())))
        if chapter in chapters and key not in seen:
            seen.add(key)
            yield chapter, name, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="gradings per implementation (default: %(default)s)")
    parser.add_argument("--chapter", action="append", choices=sorted(CHAPTERS),
                        help="only this chapter (repeatable; default: all)")
    parser.add_argument("--only", default="not speed", help="pytest -k expression (default: %(default)r)")
    args = parser.parse_args()
    chapters = args.chapter or sorted(CHAPTERS)
    started = time.monotonic()
    unstable = 0
    with tempfile.TemporaryDirectory() as tmp:
        for chapter, name, cells in named_wrong_implementations(chapters):
            path = solved(Path(tmp), chapter, **cells)
            limits = limits_for(chapter)
            outcomes: dict[str, dict[str, list[tuple[int, str]]]] = {}  # check -> status -> (seed, output)
            scores: set[float] = set()
            for seed in range(args.seeds):
                g = grade(path, options=GradeOptions(seed=seed, limits=limits, only=args.only), zygote=zygote())
                scores.add(g.score)
                for r in g.results:
                    outcomes.setdefault(r.nodeid.split("::")[-1], {}).setdefault(r.status, []).append(
                        (seed, r.output))
            shown = ", ".join(f"{s:g}" for s in sorted(scores))
            varying = {check: by for check, by in outcomes.items() if len(by) > 1}
            unstable += len(scores) > 1
            print(f"{chapter} {name!r} ({', '.join(cells)}): {{{shown}}}"
                  + (f"  <- depends on the seed: {', '.join(varying)}" if len(scores) > 1 else ""), flush=True)
            for check, by in varying.items():
                for seed, output in by.get("failed", [])[:3]:
                    problem = next((line for line in output.splitlines() if line.startswith("Problem")),
                                   output.splitlines()[0] if output else "")
                    print(f"    seed {seed}, {check} failed: {problem[:200]}")
    print(f"{unstable} implementations scored differently under different seeds; {args.seeds} seeds each, "
          f"checks {args.only!r}, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
