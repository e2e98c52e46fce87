"""What the device note (autograder/judging/static/devices.py) adds to grading one notebook on the CPU.

Paired in one run: the same notebook graded with the judge's reading of devices and without it (the reading
replaced by one that finds nothing), in alternating order, N rounds; the reading's cache is cleared before each
grading, as a fresh grading finds it. Also the reading alone, timed on its own.

    PYTHONPATH=. .venv/bin/python benchmarks/device_notes_cost.py [--notebook PATH] [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

from autograder import CHECKOUT
from autograder.judging import judge
from autograder.judging.judge import GradeOptions, grade
from autograder.judging.notebook import load_submission
from autograder.judging.static import devices
from autograder.sandbox import launcher

DEFAULT = CHECKOUT / "examples" / "submitted" / "ada" / "03_broadcasting" / "03_broadcasting.ipynb"


def graded(notebook: Path, reading: bool) -> float:
    devices._read.cache_clear()
    started = time.perf_counter()
    if reading:
        grade(notebook, options=GradeOptions("cpu", 1234), zygote=launcher.zygote())
    else:
        with mock.patch.object(judge.devices, "read_submission", lambda sub: []):
            grade(notebook, options=GradeOptions("cpu", 1234), zygote=launcher.zygote())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    graded(args.notebook, True)  # warm: torch, the zygote, the checks module
    on: list[float] = []
    off: list[float] = []
    for i in range(args.rounds):
        for reading in ((True, False) if i % 2 == 0 else (False, True)):
            (on if reading else off).append(graded(args.notebook, reading))
    sub = load_submission(args.notebook)
    alone = []
    for _ in range(50):
        devices._read.cache_clear()
        started = time.perf_counter()
        found = devices.read_submission(sub)
        alone.append(time.perf_counter() - started)
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    print(f"{args.notebook.name}: {len(sub.cells)} answer cells, {len(found)} device note line(s)")
    print(f"grading with the reading:    median {statistics.median(on):.3f} s over {args.rounds}")
    print(f"grading without it:          median {statistics.median(off):.3f} s")
    print(f"paired difference:           median {statistics.median(diffs) * 1000:+.1f} ms "
          f"(min {min(diffs) * 1000:+.1f}, max {max(diffs) * 1000:+.1f})")
    print(f"the reading alone:           median {statistics.median(alone) * 1000:.2f} ms over 50")


if __name__ == "__main__":
    main()
