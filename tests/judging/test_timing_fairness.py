"""Speed checks measured only where the student's process cannot work ahead, and fair to every correct form.

The figures that set the thresholds come from benchmarks/timing_stability.py (50 gradings per form under
a CPU hog); these tests check the mechanism and a few of the slowest correct forms once each.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import torch

from autograder.chapters.ch07_numerical_stability.checks import Api
from autograder.chapters.ch08_mixed_precision.checks import Api as AmpApi
from autograder.chapters.ch08_mixed_precision.checks import measure_amp_speed
from autograder.judging.api import StudentApi, answer
from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.judging.timing import (
    DECIDED_ROUNDS,
    FAIL_MARGIN,
    FAR_MARGIN,
    FAR_ROUNDS,
    PASS_MARGIN,
    WARMED_SECONDS,
    Run,
    certain,
    compare_speed,
    interleave,
    randn,
    reference_process,
)
from benchmarks.timing_stability import FORMS
from tests.kit import FAST, by_name, grade_fast, solved, zygote

SOFTMAX = "def reference_softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n"


class Reference(StudentApi):
    @answer
    def reference_softmax(self, logits: torch.Tensor, dim: int = -1) -> torch.Tensor: ...


def test_timed_inputs_are_made_inside_the_timed_request_and_their_making_subtracted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    request = Student._request

    def logged(self: Student, name: str, header: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        sent.append(("reference" if self.submission.path.name == "<reference>" else "student", dict(header)))
        return request(self, name, header, *args, **kwargs)

    monkeypatch.setattr(Student, "_request", logged)
    student = Student(load_submission(solved(tmp_path, "07_numerical_stability")), "cpu", FAST,
                      time.monotonic() + 120, zygote())
    try:
        with reference_process(student, SOFTMAX) as ref:
            speed = compare_speed(Api(student).softmax, Reference(ref).reference_softmax, [randn(256, 64)],
                                  lambda x: torch.softmax(x.double(), -1).float(), torch.Generator().manual_seed(0),
                                  count=3, rounds=3, warmup=1)
    finally:
        student.close()
    # The student's process gets nothing but timed requests, each carrying the seed of inputs it makes then.
    to_student = [h for who, h in sent if who == "student"]
    assert len(to_student) == 4 and all(h["op"] == "run" and h["name"] == "softmax" for h in to_student)
    assert len({h["seed"] for h in to_student}) == 4 and all(h["count"] == 3 for h in to_student)
    # Making the inputs alone is timed in the clean reference process, once per round, and subtracted.
    making = [h for who, h in sent if who == "reference" and h["name"] is None]
    assert len(making) == 4 and speed.making > 0
    assert speed.student > 0 and speed.reference > 0


def test_the_broadcast_difference_form_earns_every_pairwise_point(tmp_path: Path) -> None:
    code = "def pairwise_sq_distances(x, y):\n    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)\n"
    g = grade_fast(solved(tmp_path, "04_overloaded_ops", pairwise_sq_distances=code), only="pairwise")
    checks = by_name(g)
    assert not any("speed" in name for name in checks), "the contract asks no speed of pairwise_sq_distances"
    assert g.score == g.max_score, [(r.name, r.output) for r in g.results if r.status != "passed"]


# The slowest correct forms in the benchmark's figures, once each.
SLOW_FORMS = [("05_batch_gather", "batch_gather", "one-hot bmm"), ("05_batch_gather", "batch_gather", "torch.vmap"),
              ("04_overloaded_ops", "row_sum", "torch.einsum")]


@pytest.mark.parametrize(("chapter", "cell", "form"), SLOW_FORMS)
def test_slow_but_vectorized_forms_pass_the_speed_check(tmp_path: Path, chapter: str, cell: str, form: str) -> None:
    vectorized, code = FORMS[chapter][cell][form]
    assert vectorized
    g = grade_fast(solved(tmp_path, chapter, **{cell: code}), only="speed")
    assert g.results and all(r.status == "passed" for r in g.results), [r.output for r in g.results]


def test_the_amp_speed_rounds_make_their_batch_inside_the_timed_call(tmp_path: Path) -> None:
    student = Student(load_submission(solved(tmp_path, "08_mixed_precision")), "cpu", FAST, time.monotonic() + 120,
                      zygote())
    try:
        with reference_process(student, "# kit code only") as ref:
            rigs = [(api, api.speed_rig(7, 32, 2, 16, "cpu")) for api in (AmpApi(student), AmpApi(ref))]
            # The same round seed gives both processes the same batch (their losses agree, AMP vs float32);
            # the rig alone holds no batch: a new seed gives new losses.
            first = [api.run_steps(rig, 1, api.student is student, 11)["losses"][0] for api, rig in rigs]
            other = [api.run_steps(rig, 1, api.student is student, 12)["losses"][0] for api, rig in rigs]
    finally:
        student.close()
    assert abs(first[0] - first[1]) < 0.05 * first[1] and abs(other[0] - other[1]) < 0.05 * other[1]
    assert abs(first[1] - other[1]) > 1e-3


def test_the_amp_speed_comparison_runs_on_the_timing_engine(tmp_path: Path) -> None:
    """The CUDA-only check's measurement, small and on CPU: interleaved rounds whose losses agree."""
    student = Student(load_submission(solved(tmp_path, "08_mixed_precision")), "cpu", FAST, time.monotonic() + 120,
                      zygote())
    try:
        speed = measure_amp_speed(student, torch.Generator().manual_seed(0), "cpu", width=32, batch=16, steps=2,
                                  rounds=3, warmup=1)
    finally:
        student.close()
    assert speed.amp > 0 and speed.float32 > 0 and speed.memory_ratio == 0  # memory is measured on CUDA only
    assert "(median of 3 interleaved rounds of 2 steps)" in speed.describe()


class _Process:
    """A stand-in for a timed child: nothing to freeze, its reply arrived when its call returned."""

    def __init__(self) -> None:
        self.arrived = 0.0
        self.control = self

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        yield


def _sleeping(process: _Process, seconds: float, calls: list[int]) -> Run[float]:
    def call(seed: int) -> float:
        time.sleep(seconds)
        process.arrived = time.perf_counter()
        calls.append(seed)
        return seconds

    return Run(cast(Student, process), call)


@pytest.mark.parametrize(("seconds", "requests"), [(WARMED_SECONDS * 1.5, 2), (0.0, 3)])
def test_a_long_request_ends_the_warm_up_and_short_ones_keep_it(seconds: float, requests: int) -> None:
    student, reference = _Process(), _Process()
    calls: list[int] = []
    timed = interleave([_sleeping(student, seconds, calls), _sleeping(reference, 0.0, [])], torch.Generator(),
                       rounds=1, warmup=2, verify=lambda seed, replies: None, warmed=WARMED_SECONDS)
    assert len(timed[0]) == 1 and len(calls) == requests  # one warm-up round for a long request, else two


def test_only_a_time_far_beyond_the_bar_is_decided_in_fewer_rounds() -> None:
    bar = 8.0
    assert certain(bar * FAR_MARGIN * 1.1, FAR_ROUNDS, bar)  # a loop hundreds of times the reference: failed now
    assert not certain(bar * FAR_MARGIN * 1.1, FAR_ROUNDS - 1, bar)
    assert not certain(bar * FAIL_MARGIN * 1.1, FAR_ROUNDS, bar)  # beyond the bar, but not far: more rounds
    assert certain(bar * FAIL_MARGIN * 1.1, DECIDED_ROUNDS, bar)
    assert not certain(6.0, DECIDED_ROUNDS, bar) and not certain(6.0, 100, bar)  # a slow correct form: all rounds
    assert certain(bar / PASS_MARGIN / 1.1, DECIDED_ROUNDS, bar) and not certain(1.0, FAR_ROUNDS, bar)
