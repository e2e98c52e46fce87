"""Speed checks: a submission against a reference, as a ratio measured in one run.

Why not torch.utils.benchmark here: the code under test runs in another
process and the judge must time it on its own clock, so each timed unit is
one request to the child, measured with time.perf_counter in the judge.
`interleave` is the engine every speed check uses (compare_speed here, and
chapter 08's training steps). The method follows the same care as
torch.utils.benchmark:

- the reference runs in its own clean child, so student code cannot slow it;
- while one process is timed, every other process of the comparison is frozen whole, the student's
  box with every process it started (autograder/sandbox/control.py): nothing of the student's runs
  while the reference is timed;
- warm-up rounds are discarded;
- student and reference alternate within each round, in an order that rotates every round;
- every round uses fresh inputs (a new seed) that the child makes inside the
  timed request: they do not exist before the judge's timer starts, so no work
  on them can be done outside it. Making them costs the same everywhere; the
  judge times that alone in the clean reference child and subtracts it;
- outputs are verified against the judge's oracle from digests computed
  inside the timed request, so caching or deferring work cannot help;
- the verdict uses the median per-call time over rounds;
- on CUDA the child synchronizes before it answers, so queued kernels count.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch

from autograder.judging.api import Remote
from autograder.judging.expect import failure
from autograder.judging.notebook import Submission
from autograder.judging.remote import Student
from autograder.judging.results import (
    CUDA_EVENTS_RATIO,
    NEEDED_RATIO,
    RATIO,
    REFERENCE_SECONDS,
    STUDENT_SECONDS,
    RecordProperty,
    record_measured,
)
from autograder.sandbox.runtime.child import digest, make_input

T = TypeVar("T")


def randn(*shape: int, dtype: str = "float32") -> dict[str, Any]:
    return {"kind": "randn", "shape": list(shape), "dtype": dtype}


def randint(low: int, high: int, *shape: int, dtype: str = "int64") -> dict[str, Any]:
    return {"kind": "randint", "low": low, "high": high, "shape": list(shape), "dtype": dtype}


@dataclass
class Speed:
    student: float  # median seconds per call, on the judge's clock, input making subtracted
    reference: float
    rounds: int
    making: float = 0.0  # median seconds per input set to make the inputs (subtracted from both)
    student_events: float | None = None  # median per call from CUDA events (child-reported, informative)
    reference_events: float | None = None

    @property
    def speedup(self) -> float:
        return self.reference / self.student

    @property
    def events_speedup(self) -> float | None:
        """The speed-up from CUDA events, where the child reported them."""
        if self.student_events is None or self.reference_events is None:
            return None
        return self.reference_events / max(self.student_events, 1e-12)

    def describe(self, student_name: str, reference_name: str) -> str:
        text = (f"your {student_name}: {self.student * 1e3:.3g} ms per call; {reference_name}: "
                f"{self.reference * 1e3:.3g} ms per call; {self.speedup:.1f}x "
                f"(median of {self.rounds} interleaved rounds, fresh inputs each round)")
        if self.student_events is not None and self.reference_events is not None:
            text += (f"; CUDA events: {self.student_events * 1e3:.3g} ms vs {self.reference_events * 1e3:.3g} ms "
                     f"({self.events_speedup:.1f}x)")
        return text


@contextlib.contextmanager
def reference_process(student: Student, code: str) -> Iterator[Student]:
    """A second, clean child running only kit code (the reference to time against)."""
    sub = Submission(path=Path("<reference>"), chapter=student.submission.chapter,
                     cells=[{"id": "reference", "source": code}])
    ref = Student(sub, student.device, student.limits, student.deadline, student.zygote)
    try:
        yield ref
    finally:
        ref.close()


def _close(got: dict[str, Any], want: dict[str, Any], rtol: float) -> bool:
    if got.get("shape") != want["shape"] or got.get("dtype") != want["dtype"]:
        return False
    scale = want["abs"] + 1e-6
    return (abs(got["sum"] - want["sum"]) <= rtol * scale and abs(got["abs"] - want["abs"]) <= rtol * scale
            and isinstance(got.get("sample"), torch.Tensor)
            and bool(torch.allclose(got["sample"], want["sample"], rtol=rtol, atol=rtol * scale / 16)))


@dataclass(frozen=True)
class Run(Generic[T]):
    """One timed unit of a comparison: `call(seed)` makes one request to `process`."""

    process: Student
    call: Callable[[int], T]


def interleave(runs: Sequence[Run[T]], rng: torch.Generator, rounds: int, warmup: int,
               verify: Callable[[int, list[T]], None]) -> list[list[tuple[float, T]]]:
    """The timing engine: each round draws a fresh seed from `rng` and times every run once on it, on the
    judge's clock, in an order that rotates every round; then `verify(seed, replies in the runs' order)`.
    Every other run's process is frozen from before a run's timer starts until after it stops.
    For each run, (seconds, reply) of every round after the `warmup` rounds."""
    timed: list[list[tuple[float, T]]] = [[] for _ in runs]
    for r in range(warmup + rounds):
        seed = int(torch.randint(0, 2**62, (), generator=rng))
        replies: dict[int, tuple[float, T]] = {}
        for i in [*range(r % len(runs), len(runs)), *range(r % len(runs))]:
            others = {id(run.process): run.process for run in runs if run.process is not runs[i].process}
            with contextlib.ExitStack() as stack:
                for process in others.values():
                    stack.enter_context(process.frozen())
                started = time.perf_counter()
                reply = runs[i].call(seed)
                replies[i] = (time.perf_counter() - started, reply)
        verify(seed, [replies[i][1] for i in range(len(runs))])
        if r >= warmup:
            for i, t in replies.items():
                timed[i].append(t)
    return timed


def _events(reply: dict[str, Any], count: int) -> float | None:
    """Seconds per call from CUDA events, as the child reports it (informative), or None."""
    events = reply.get("events_ms")
    return float(events) / 1e3 / count if isinstance(events, (int, float)) else None


# Subtracting input making removes at most this share of a request's time: when the calls themselves cost
# less than the noise of that subtraction, the figure stays finite instead of jumping to thousands of x.
MAX_SUBTRACTED = 0.9


def compare_speed(
    student: Remote[..., Any], reference: Remote[..., Any], specs: list[dict[str, Any]],
    oracle: Callable[..., torch.Tensor], rng: torch.Generator,
    *, count: int = 5, rounds: int = 7, warmup: int = 2, rtol: float = 1e-4,
) -> Speed:
    """Median per-call times of the student's function and a reference (in a clean process, see
    reference_process) over interleaved rounds.

    Each round times three requests on the same fresh seed, in a rotating order: the student's
    calls, the reference's calls, and input making alone in the reference's clean process.
    The last is subtracted from the first two, round by round.
    """
    def verify(seed: int, replies: list[dict[str, Any]]) -> None:
        gen = torch.Generator().manual_seed(seed)
        expected = [digest(oracle(*[make_input(spec, gen) for spec in specs])) for _ in range(count)]
        for fn, reply in zip((student, reference), replies, strict=False):
            digests = reply["digests"]
            if len(digests) != count or not all(_close(g, w, rtol) for g, w in zip(digests, expected, strict=True)):
                raise failure(problem=f"`{fn.name}` gave wrong results during the timed run (fresh random inputs "
                                      "each round).",
                              hint="Compute every result from its inputs; caching or reusing earlier outputs does "
                                   "not work here.")

    timed = interleave([Run(student.student, lambda seed: student.timed(specs, seed, count)),
                        Run(reference.student, lambda seed: reference.timed(specs, seed, count)),
                        Run(reference.student, lambda seed: reference.student.timed_run(None, specs, seed, count))],
                       rng, rounds, warmup, verify)
    making = [t / count for t, _ in timed[2]]

    def net(runs: list[tuple[float, dict[str, Any]]]) -> float:
        return statistics.median(t / count - min(m, MAX_SUBTRACTED * t / count)
                                 for (t, _), m in zip(runs, making, strict=True))

    def events(runs: list[tuple[float, dict[str, Any]]]) -> float | None:
        values = [e for _, reply in runs if (e := _events(reply, count)) is not None]
        return statistics.median(values) if values else None

    return Speed(net(timed[0]), net(timed[1]), rounds, statistics.median(making), events(timed[0]),
                 events(timed[1]))


def expect_speedup(speed: Speed, at_least: float, student_name: str, reference_name: str, hint: str,
                   record_property: RecordProperty) -> None:
    """Fail below `at_least`; either way the measured figures go in the check's output, and in its
    `measured` (autograder/judging/results.py)."""
    record_property("note", f"Timing:   {speed.describe(student_name, reference_name)} (needs {at_least:g}x)")
    events = speed.events_speedup
    record_measured(record_property, **{RATIO: speed.speedup, NEEDED_RATIO: at_least, STUDENT_SECONDS: speed.student,
                                        REFERENCE_SECONDS: speed.reference},
                    **({CUDA_EVENTS_RATIO: events} if events is not None else {}))
    if speed.speedup < at_least:
        raise failure(timing=speed.describe(student_name, reference_name),
                      problem=f"needs to be at least {at_least:g}x faster than {reference_name}.", hint=hint)
