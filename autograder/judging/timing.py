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
  judge times that alone in the clean reference child and subtracts it, or, for
  a bar against a vectorized reference, leaves it in both times (see compare_speed);
- every output of every timed call comes back whole inside the timed request (the timer stops once the
  reply has arrived) and the judge compares it with its own oracle (torch.allclose with the check's
  tolerance): nothing the student's process says about its outputs is taken on trust, and caching or
  deferring work cannot help. Checks keep the outputs small, so that sending them costs little beside
  the calls (benchmarks/timing_stability.py --transfer measures the share);
- the verdict uses each request's fastest round: on a busy machine noise only ever adds time, so the
  fastest round is the closest to the cost of the calls (as timeit's documentation advises), and a spike
  that slows some rounds of the reference or of input making cannot inflate the ratio either way;
- on CUDA the child synchronizes before it answers, so queued kernels count.

Since the clock sees all the work a call does, in torch, numpy or plain Python, it also decides whether
code is vectorized: a loop over rows pays a fixed cost per row, which a bar against the vectorized reference
(at a size where rows are many and each is small) exposes whatever library the loop uses.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import torch

from autograder.judging.api import Remote
from autograder.judging.expect import failure
from autograder.judging.notebook import Submission
from autograder.judging.results import (
    CUDA_EVENTS_RATIO,
    NEEDED_RATIO,
    RATIO,
    REFERENCE_SECONDS,
    STUDENT_SECONDS,
    Measured,
    RecordProperty,
    record_measured,
    record_note,
)
from autograder.judging.student import Student, StudentError
from autograder.sandbox.runtime.child import make_input

T = TypeVar("T")
Spec = dict[str, Any]  # one input tensor, made in the child from the round's seed (child.make_input)


def randn(*shape: int, dtype: str = "float32") -> Spec:
    return {"kind": "randn", "shape": list(shape), "dtype": dtype}


def randint(low: int, high: int, *shape: int, dtype: str = "int64") -> Spec:
    return {"kind": "randint", "low": low, "high": high, "shape": list(shape), "dtype": dtype}


@dataclass
class Speed:
    student: float  # seconds per call in the fastest round, on the judge's clock, input making subtracted
    reference: float
    rounds: int
    making: float = 0.0  # seconds per input set to make the inputs, fastest round (subtracted from both)
    student_events: float | None = None  # per call from CUDA events, fastest round (child-reported, informative)
    reference_events: float | None = None
    making_subtracted: bool = True  # False: both times include making their inputs (the same work in both)

    @property
    def speedup(self) -> float:
        return self.reference / self.student

    @property
    def events_speedup(self) -> float | None:
        """The speed-up from CUDA events, where the child reported them."""
        if self.student_events is None or self.reference_events is None:
            return None
        return self.reference_events / max(self.student_events, 1e-12)

    @property
    def slowdown(self) -> float:
        """The student's time per call over the reference's."""
        return self.student / self.reference

    def describe(self, student_name: str, reference_name: str) -> str:
        text = (f"your {student_name}: {self.student * 1e3:.3g} ms per call; {reference_name}: "
                f"{self.reference * 1e3:.3g} ms per call: {self.slowdown:.2g}x its time "
                f"(fastest of {self.rounds} interleaved rounds, fresh inputs each round"
                + ("" if self.making_subtracted else ", made inside each timed call: the same work in both") + ")")
        if self.student_events is not None and self.reference_events is not None:
            text += (f"; CUDA events: {self.student_events * 1e3:.3g} ms vs {self.reference_events * 1e3:.3g} ms "
                     f"({self.student_events / max(self.reference_events, 1e-12):.2g}x its time)")
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


def _mismatch(got: Any, want: torch.Tensor, rtol: float, atol: float) -> str | None:
    """What is wrong with one output of a timed call, or None when it matches the oracle's."""
    if not isinstance(got, torch.Tensor):
        return f"a {type(got).__name__}, not a tensor"
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"shape {list(got.shape)} {str(got.dtype).removeprefix('torch.')} where the oracle gives "
                f"{list(want.shape)} {str(want.dtype).removeprefix('torch.')}")
    if not torch.allclose(got, want, rtol=rtol, atol=atol):
        return "values that differ from the oracle's"
    return None


@dataclass(frozen=True)
class Run(Generic[T]):
    """One timed unit of a comparison: `call(seed)` makes one request to `process`."""

    process: Student
    call: Callable[[int], T]


def interleave(runs: Sequence[Run[T]], rng: torch.Generator, rounds: int, warmup: int,
               verify: Callable[[int, list[T]], None], budget: float = math.inf,
               decided: Callable[[list[list[tuple[float, T]]]], bool] | None = None,
               warmed: float = math.inf) -> list[list[tuple[float, T]]]:
    """The timing engine: each round draws a fresh seed from `rng` and times every run once on it, on the
    judge's clock, in an order that rotates every round; then `verify(seed, replies in the runs' order)`.
    Every other run's process is frozen from before a run's timer starts until after it stops; the timer stops
    when the run's last reply has arrived (Student.arrived), before the judge decodes it.
    For each run, (seconds, reply) of every round after the `warmup` rounds. Once the first run's requests
    have taken `budget` seconds in all, warm-up ends and two measured rounds are enough (code that slow is
    far from any bar, and its cost does not shrink with more rounds). A round whose first run's request took
    `warmed` seconds or more ends the warm-up: calls that long are past their one-time costs. `decided(timed so
    far)`, asked after each measured round, ends the rounds early: the verdict is certain whatever the rounds left
    could show."""
    timed: list[list[tuple[float, T]]] = [[] for _ in runs]
    spent = 0.0
    for r in itertools.count():
        seed = int(torch.randint(0, 2**62, (), generator=rng))
        replies: dict[int, tuple[float, T]] = {}
        for i in [*range(r % len(runs), len(runs)), *range(r % len(runs))]:
            others = {id(run.process): run.process for run in runs if run.process is not runs[i].process}
            with contextlib.ExitStack() as stack:
                for process in others.values():
                    stack.enter_context(process.control.frozen())
                started = time.perf_counter()
                reply = runs[i].call(seed)
                arrived = runs[i].process.arrived  # before the judge decoded the reply
                replies[i] = ((arrived if arrived > started else time.perf_counter()) - started, reply)
        verify(seed, [replies[i][1] for i in range(len(runs))])
        if r < warmup and replies[0][0] >= warmed:
            warmup = r + 1
        spent += replies[0][0]
        over = spent > budget
        if r >= warmup or over:
            for i, t in replies.items():
                timed[i].append(t)
        if len(timed[0]) >= rounds or (over and len(timed[0]) >= 2) or (
                decided is not None and r >= warmup and decided(timed)):
            break
    return timed


def _events(reply: dict[str, Any], count: int) -> float | None:
    """Seconds per call from CUDA events, as the child reports it (informative), or None."""
    events = reply.get("events_ms")
    return float(events) / 1e3 / count if isinstance(events, (int, float)) else None


# Subtracting input making removes at most this share of a request's time: when the calls themselves cost
# less than the noise of that subtraction, the figure stays finite instead of jumping to thousands of x.
MAX_SUBTRACTED = 0.9
# Seconds of the student's timed requests after which a comparison takes no more rounds than it must.
STUDENT_BUDGET = 3.0
# The time limit of one timed request of the student's (`count` calls).
TIMED_REQUEST_SECONDS = 60.0
# A comparison against a bar (compare_speed's `at_most`) stops after DECIDED_ROUNDS measured rounds once its ratio is
# below at_most / PASS_MARGIN or above at_most * FAIL_MARGIN. The rounds left could only lower each side's fastest
# time. Noise inflates one side's fastest of 3 by up to 5x under a load of 12 on 2 cores: to pass early, a loop (14x
# to 800x the reference here) would need its reference inflated 7x and more in every one of DECIDED_ROUNDS rounds,
# and to fail early a correct form (1x to 6x, benchmarks/timing_stability.py) its own calls 5x and more.
DECIDED_ROUNDS = 5
PASS_MARGIN, FAIL_MARGIN = 4.0, 4.0
# Far beyond the bar, fewer rounds decide: a time above at_most * FAR_MARGIN in FAR_ROUNDS measured rounds fails at
# once. A correct form (6x the reference at most) would need its own calls inflated 21x and more in each of those
# rounds, while the reference's, timed between them with the student's box frozen, were not; the loops the bar is
# for are 14x to 800x the reference (benchmarks/timing_stability.py).
FAR_ROUNDS = 2
FAR_MARGIN = 16.0
# A student's request (`count` calls) taking this long in a warm-up round ends the warm-up: a correct form's
# request takes milliseconds, so this shortens only a loop's timing (its first request alone runs `count` calls).
WARMED_SECONDS = 0.1


def certain(slowdown: float, measured: int, at_most: float) -> bool:
    """Whether `measured` rounds whose fastest times give `slowdown` decide the bar `at_most`, whatever the rounds
    left could show (DECIDED_ROUNDS, PASS_MARGIN, FAIL_MARGIN; FAR_ROUNDS, FAR_MARGIN)."""
    if measured >= FAR_ROUNDS and slowdown > at_most * FAR_MARGIN:
        return True
    return measured >= DECIDED_ROUNDS and (slowdown < at_most / PASS_MARGIN or slowdown > at_most * FAIL_MARGIN)


def input_sets(specs: list[Spec] | list[list[Spec]]) -> list[list[Spec]]:
    """The spec lists that timed calls take their inputs from in turn: `specs` is one input set, or several."""
    return [cast(list[Spec], specs)] if all(isinstance(s, dict) for s in specs) else cast(list[list[Spec]], specs)


def compare_speed(
    student: Remote[..., Any], reference: Remote[..., Any], specs: list[Spec] | list[list[Spec]],
    oracle: Callable[..., torch.Tensor], rng: torch.Generator,
    *, constants: tuple[int | float, ...] = (), count: int = 5, rounds: int = 7, warmup: int = 2, rtol: float = 1e-4,
    atol: float = 0.0, budget: float = STUDENT_BUDGET, subtract_making: bool = True, at_most: float | None = None,
) -> Speed:
    """Per-call times of the student's function and a reference (in a clean process, see reference_process),
    each from its fastest of `rounds` interleaved rounds.

    `specs` describes the inputs of one call (a list of specs), or of several kinds of call that the `count`
    calls of a request take in turn (a list of such lists). Each round times three requests on the same
    fresh seed, in a rotating order: the student's calls, the reference's calls, and input making alone in
    the reference's clean process. The fastest round of the last is subtracted from the fastest of the first
    two. Without `subtract_making`, the last is not timed and both times keep the making of their inputs,
    which costs the same in both: a bar of "at most K times the reference's time" then leans towards every
    correct form, and its verdict does not hang on subtracting two noisy times (a loop's cost per row still
    dwarfs the making). Every output of the first two must match `oracle` on the same inputs (torch.allclose
    with `rtol` and `atol`). Once the student's requests have taken `budget` seconds, two measured rounds are
    enough (interleave), and a request of WARMED_SECONDS ends the warm-up. Given the bar `at_most` (the most the
    student's time may be, in reference times), the rounds stop as soon as the verdict is certain (DECIDED_ROUNDS,
    PASS_MARGIN, FAIL_MARGIN; FAR_ROUNDS and FAR_MARGIN far beyond the bar).
    """
    sets = input_sets(specs)
    # A loop can take seconds per request: it fails the bar, not the grading's limit on one call.
    student = student.using(timeout=max(student.options.timeout or 0.0, TIMED_REQUEST_SECONDS))

    def verify(seed: int, replies: list[dict[str, Any]]) -> None:
        gen = torch.Generator().manual_seed(seed)
        calls = [[make_input(spec, gen) for spec in sets[j % len(sets)]] for j in range(count)]
        expected = [oracle(*inputs, *constants) for inputs in calls]
        for fn, reply in zip((student, reference), replies, strict=False):
            outputs = reply["outputs"]
            problems = [(j, m) for j, (got, want) in enumerate(zip(outputs, expected, strict=False))
                        if (m := _mismatch(got, want, rtol, atol)) is not None]
            if len(outputs) != count:
                problems.insert(0, (count, f"{len(outputs)} outputs for {count} calls"))
            if problems:
                j, problem = problems[0]
                shapes = ", ".join(str(list(t.shape)) for t in calls[min(j, count - 1)])
                raise failure(problem=f"`{fn.name}` gave wrong results during the timed run (fresh random inputs "
                                      f"each round): on inputs of shape {shapes} it returned {problem}.",
                              hint="Compute every result from its inputs; caching or reusing earlier outputs does "
                                   "not work here.")

    for process in (student.student, reference.student):
        process.start()  # before any timer: starting a process is no part of its calls
    runs = [Run(student.student, lambda seed: student.timed(sets, seed, count, constants)),
            Run(reference.student, lambda seed: reference.timed(sets, seed, count, constants))]
    if subtract_making:
        runs.append(Run(reference.student, lambda seed: reference.student.timed_run(None, sets, seed, count)))
    def decided(timed: list[list[tuple[float, dict[str, Any]]]]) -> bool:
        return at_most is not None and certain(_speed(timed, count, subtract_making).slowdown, len(timed[0]), at_most)

    return _speed(interleave(runs, rng, rounds, warmup, verify, budget, decided, WARMED_SECONDS), count,
                  subtract_making)


def _speed(timed: list[list[tuple[float, dict[str, Any]]]], count: int, subtract_making: bool) -> Speed:
    """compare_speed's figures from its rounds so far."""
    # Noise on a busy machine only ever adds time: the fastest round of each request is the closest to its cost.
    fastest = [min(t for t, _ in times) / count for times in timed]
    making = fastest[2] if subtract_making else 0.0

    def net(seconds: float) -> float:
        return seconds - min(making, MAX_SUBTRACTED * seconds)

    def events(runs: list[tuple[float, dict[str, Any]]]) -> float | None:
        values = [e for _, reply in runs if (e := _events(reply, count)) is not None]
        return min(values) if values else None

    return Speed(net(fastest[0]), net(fastest[1]), len(timed[0]), making, events(timed[0]), events(timed[1]),
                 subtract_making)


def expect_within(speed: Speed, at_most: float, student_name: str, reference_name: str, problem: str, hint: str,
                  record_property: RecordProperty, explain: Callable[[], str] | None = None) -> None:
    """Fail when the student's calls take more than `at_most` times the reference's, saying `problem` and, if
    given, what `explain()` adds (asked only then); either way the measured figures go in the check's output,
    and in its `measured` (autograder/judging/results.py: the ratio is the reference's time over the
    student's, so the check needs at least 1 / at_most)."""
    timing = speed.describe(student_name, reference_name)
    record_note(record_property, f"Timing:   {timing} (allowed: at most {at_most:g}x its time)")
    events = speed.events_speedup
    figures: Measured = {RATIO: speed.speedup, NEEDED_RATIO: 1 / at_most, STUDENT_SECONDS: speed.student,
                         REFERENCE_SECONDS: speed.reference}
    if events is not None:
        figures[CUDA_EVENTS_RATIO] = events
    record_measured(record_property, figures)
    if speed.student > at_most * speed.reference:
        more = explain() if explain is not None else ""
        raise failure(timing=timing, problem=f"took more than {at_most:g}x the time of {reference_name}: {problem}"
                                             + (f" {more}" if more else ""), hint=hint)


def operations_growth(fn: Remote[..., Any], small: tuple[Any, ...], large: tuple[Any, ...], sizes: tuple[str, str]
                      ) -> str:
    """What the tensor operations `fn` issues on small and on large inputs say about a slow call. The trace is
    made in the student's process: it may shape a message, never a verdict."""
    try:
        ops_small, ops_large = fn.traced(*small)[1], fn.traced(*large)[1]
    except StudentError:
        return ""
    if len(ops_large) > len(ops_small):
        return (f"It issued {len(ops_small)} tensor operations for {sizes[0]} and {len(ops_large)} for {sizes[1]}: "
                "a loop of torch operations.")
    return (f"Its tensor operations do not grow with the input ({len(ops_small)} for {sizes[0]}, {len(ops_large)} "
            f"for {sizes[1]}), so the work that grows happens elsewhere: loops in numpy or over Python numbers "
            "(.tolist(), .item()) count too.")
