"""Do 03's never-tiles checks hold for every form, every time? N gradings of those two checks for each correct
form of chapter 03 (the solution and cases.py's other correct forms) and each tiling or looping form (cases.py's,
and tests/chapters/test_ch03_broadcasting.py's attacks), each with a fresh secret seed, beside a process spinning
on one core.

    .venv/bin/python benchmarks/never_tiles.py --runs 20
    .venv/bin/python benchmarks/never_tiles.py --runs 20 --accounting VmHWM   # as without a memory cgroup

Every grading of a correct form must pass both checks, every grading of a wrong form fail the check it names.
It prints each form's pass count per check, the memory rise it measured (MiB, largest) and the loop part's time
ratio (B = 16384 over B = 16: smallest / median / largest).
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

from autograder.course.cases import cases
from autograder.judging.judge import GradeOptions, grade
from autograder.judging.results import LOOP_RATIO, MEMORY_MIB
from autograder.sandbox import control
from tests.chapters.test_ch03_broadcasting import ADDITIVE_TILERS, MERGE_HEAD, MERGE_TILERS, PREALLOCATED
from tests.kit import limits_for, solution_cells, write_submission, zygote

CH = "03_broadcasting"
CHECKS = {"Merge": "check_merge_never_tiles", "additive_scores": "check_additive_scores_never_tiles"}


def forms() -> dict[str, tuple[bool, dict[str, str]]]:
    """name -> (correct?, the cells it replaces)."""
    found: dict[str, tuple[bool, dict[str, str]]] = {"solution": (True, {})}
    for right in cases(CH).right:
        found[right.name] = (True, right.cells)
    for wrong in cases(CH).wrong:
        if set(wrong.fails) & set(CHECKS.values()):
            found[wrong.name] = (False, wrong.cells)
    for name, code in {**MERGE_TILERS, "reserved beforehand": PREALLOCATED}.items():
        found[f"Merge: {name}"] = (False, {"Merge": code + MERGE_HEAD})
    for name, code in ADDITIVE_TILERS.items():
        found[f"additive_scores: {name}"] = (False, {"additive_scores": code})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-hog", action="store_true", help="leave the machine quiet")
    parser.add_argument("--accounting", choices=["auto", "VmHWM"], default="auto",
                        help="VmHWM: no memory group, as on a machine without one")
    args = parser.parse_args()
    if args.accounting == "VmHWM":
        roles = control.machine()
        control.machine = lambda: {**roles, "memory": None}
    hog = None if args.no_hog else subprocess.Popen([sys.executable, "-c", "while True: pass"])
    rows: dict[tuple[str, str], list[tuple[bool, float | None, float | None]]] = {}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.runs):
                for form, (correct, cells) in forms().items():
                    graded = [CHECKS[c] for c in cells if c in CHECKS] if cells else list(CHECKS.values())
                    path = write_submission(Path(tmp), CH, {**solution_cells(CH), **cells}, name="form.ipynb")
                    options = GradeOptions(seed=secrets.randbits(62), limits=limits_for(CH), only=" or ".join(graded))
                    g = grade(path, options=options, zygote=zygote())
                    for r in g.results:
                        check = r.nodeid.split("::")[-1]
                        rows.setdefault((form, check), []).append(
                            (r.status == "passed", r.measured.get(MEMORY_MIB), r.measured.get(LOOP_RATIO)))
                        if (r.status == "passed") != correct:
                            print(f"  {form}: {r.status} {check}: {r.output.splitlines()[:3]}", flush=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"{CH}: {args.runs} gradings of each form, never-tiles checks only, accounting {args.accounting}, "
          f"{'with' if hog else 'without'} a CPU hog, {time.monotonic() - started:.0f} s")
    print(f"  {'form':48s} {'check':34s} passed  memory MiB (max)  time ratio (min / median / max)")
    for (form, check), results in rows.items():
        memory = [m for _, m, _ in results if m is not None]
        ratios = sorted(t for _, _, t in results if t is not None)
        spread = (f"{ratios[0]:.1f} / {ratios[len(ratios) // 2]:.1f} / {ratios[-1]:.1f}" if ratios else "-")
        print(f"  {form:48s} {check:34s} {sum(p for p, _, _ in results):3d}/{len(results):<3d} "
              f"{max(memory) if memory else '-'!s:>8}          {spread}")


if __name__ == "__main__":
    main()
