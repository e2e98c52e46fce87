"""What the judge's hold on a box costs (autograder/sandbox/control.py): per box start and per freeze and thaw.

    .venv/bin/python benchmarks/box_control.py [--starts 30] [--cycles 200]

Needs root for the groups (else it measures the stop-signal sweep only). It prints the median Student.start
(fork, isolate, the chapter's setup, the cells) with the box attached to its groups and with the attach
skipped, alternating, and the median freeze-and-thaw of a live box, idle and with two spinning processes,
for each way this machine allows: its own choice of groups, v1's freezer where it has one, and the sweep.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.sandbox import control
from autograder.sandbox.control import BoxControl, Hierarchy
from tests.kit import FAST, solved, zygote

IDLE = "def softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n"
SPINNING = """
import os
for _ in range(2):
    if os.fork() == 0:
        while True:
            pass
def softmax(logits, dim=-1):
    return torch.softmax(logits, dim)
"""


def started(code: str) -> Student:
    student = Student(load_submission(solved(Path(tempfile.mkdtemp()), "07_numerical_stability", softmax=code)),
                      "cpu", FAST, time.monotonic() + 600, zygote())
    student.start()
    assert student.sandbox is not None and student.sandbox.alive, student.fatal
    return student


def box_starts(count: int) -> dict[str, float]:
    attach = BoxControl.attach
    times: dict[str, list[float]] = {"attached": [], "attach skipped": []}
    started(IDLE).close()  # the zygote's own start
    try:
        for _ in range(count):
            for way, runs in times.items():
                BoxControl.attach = attach if way == "attached" else lambda self, box: None  # type: ignore[method-assign]
                begun = time.perf_counter()
                student = started(IDLE)
                runs.append(time.perf_counter() - begun)
                student.close()
    finally:
        BoxControl.attach = attach  # type: ignore[method-assign]
    return {way: statistics.median(runs) for way, runs in times.items()}


def freeze_cycles(roles: dict[str, Hierarchy | None], code: str, cycles: int) -> float:
    machine = control.machine
    control.machine = lambda: roles
    try:
        student = started(code)
    finally:
        control.machine = machine
    time.sleep(0.5)
    times = []
    for _ in range(cycles):
        begun = time.perf_counter()
        with student.control.frozen():
            pass
        times.append(time.perf_counter() - begun)
    student.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=200)
    args = parser.parse_args()
    here = control.machine()
    print("groups here:", {role: f"v{h.version}" if h else None for role, h in here.items()})
    for way, seconds in box_starts(args.starts).items():
        print(f"Student.start, {way}: median {seconds * 1e3:.1f} ms over {args.starts}")
    ways: dict[str, dict[str, Hierarchy | None]] = {"this machine's groups": here}
    v1 = [h for h in control.candidates()["freezer"] if h.version == 1]
    if v1 and here["freezer"] != v1[0]:
        ways["v1 freezer"] = {**here, "freezer": v1[0]}
    ways["stop-signal sweep, no group"] = dict.fromkeys(control.ROLES)
    for way, roles in ways.items():
        for box, code in (("idle box", IDLE), ("box with 2 spinning processes", SPINNING)):
            seconds = freeze_cycles(roles, code, args.cycles)
            print(f"freeze and thaw, {way}, {box}: median {seconds * 1e3:.3f} ms over {args.cycles}")


if __name__ == "__main__":
    main()
