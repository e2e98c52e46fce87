"""What a grading found, as types: each check's outcome and measured figures, and the results file.

`Outcome` says what happened in one check. It is set where that is decided (the exception types of
autograder/judging/remote.py and expect.py carry theirs; autograder/judging/plugin.py sets passed, skipped,
not scored and the kit's own failures) and never read back out of a message.

The results file is Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/),
written by autograder/judging/report.py and read by grade-all, the class report, the gradebook and nbgrader's
autograde. Its shape is defined here once, as TypedDicts; `parse` and `load` check a file against it. Facts
Gradescope has no field for go in `extra_data`: the grading's at the top, each check's (its outcome and
measured figures) in that test's own `extra_data`, which Gradescope's format also provides.

This module imports neither torch nor pytest: grade-all's coordinator and the class report use it.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, TypedDict, cast


class Outcome(str, enum.Enum):
    """What happened in one check."""

    PASSED = "passed"
    WRONG = "wrong"  # the check found a wrong answer (CheckFailure, or an assert of the check)
    STUDENT_ERROR = "student_error"  # the student's code raised, crashed, or sent back something unusable
    TIMEOUT = "timeout"  # a call ran out of time, or the process died of a limit (CPU time, memory, file size)
    NOT_IMPLEMENTED = "not_implemented"  # the stub still raises NotImplementedError
    NOT_RUN = "not_run"  # the notebook's code could not run at all (unreadable, a cell that exits or hangs...)
    NOT_SCORED = "not_scored"  # the task broke its stated rule (a rule check failed): none of its checks counts
    GRADER_ERROR = "grader_error"  # the kit failed, not the student
    SKIPPED = "skipped"  # not run here (CUDA-only on CPU): no points either way

    @property
    def status(self) -> Literal["passed", "failed", "skipped"]:
        """pytest's and Gradescope's verdict: passed, failed or skipped."""
        if self is Outcome.PASSED:
            return "passed"
        return "skipped" if self is Outcome.SKIPPED else "failed"


# -- measured figures --------------------------------------------------------------------------

RecordProperty = Callable[[str, object], None]  # pytest's record_property fixture
MEASURED = "measured"  # the name of the property a check records its figures under (see record_measured)

# The figures checks measure (CheckResult.measured, a test's extra_data.measured): name -> a float.
RATIO = "ratio"  # how many times faster than the reference (median per call, or per step)
NEEDED_RATIO = "needed_ratio"  # the ratio the check requires
CUDA_EVENTS_RATIO = "cuda_events_ratio"  # the same ratio from CUDA events (child-reported, informative)
AMP_MEMORY_RATIO = "amp_memory_ratio"  # peak memory of the AMP step / that of the float32 step
STUDENT_SECONDS = "seconds"  # median seconds per call (per step) of the student's code
REFERENCE_SECONDS = "reference_seconds"  # the same of the reference
OPS_SMALL = "ops_small"  # tensor operations issued on the smaller input
OPS_LARGE = "ops_large"  # on the larger input
MEMORY_MIB = "memory_mib"  # how far the box's memory rose during a call, at its peak, in MiB (the kernel's accounting)
MEMORY_BAR_MIB = "memory_bar_mib"  # the most it may rise
LOOP_RATIO = "loop_ratio"  # median CPU time per call of the student's code / the vectorized reference's


def figures(values: Mapping[str, float]) -> dict[str, float]:
    """`values` as measured figures: finite numbers only (JSON has no inf or nan), as floats."""
    return {name: float(v) for name, v in values.items() if isinstance(name, str) and _number(v)
            and math.isfinite(v)}


def record_measured(record_property: RecordProperty, **values: float) -> None:
    """Hand the plugin figures a check measured (names above); a check may call this more than once."""
    record_property(MEASURED, figures(values))


# -- the results file ------------------------------------------------------------------------------


class TestExtra(TypedDict, total=False):
    """A test's own extra_data. Absent in files written before outcomes were recorded."""

    outcome: str  # an Outcome's value
    measured: dict[str, float]


class _Test(TypedDict):
    name: str  # "[task] the check's description" ("[bonus: task] ..." for a stretch task)
    score: float
    max_score: float  # 0 when skipped
    output: str  # the message the student sees
    tags: list[str]  # [task], or [task, "bonus"]
    visibility: str  # visible | after_published


class TestResult(_Test, total=False):
    """One check, as Gradescope's `tests` entry."""

    status: Literal["passed", "failed"]  # absent when skipped: Gradescope has no such status
    extra_data: TestExtra


class SandboxRecord(TypedDict, total=False):
    active: list[str]  # the sandbox's protections in force
    off: list[str]  # those this machine could not apply


class Bonus(TypedDict):
    score: float
    max_score: float


class _Extra(TypedDict):
    assignment: str | None


class ExtraData(_Extra, total=False):
    """The grading's facts that Gradescope has no field for."""

    notebook: str
    device: str
    sandbox: SandboxRecord
    integrity: list[str]  # constructs reaching into grader internals (autograder/judging/scan.py), the first 20
    integrity_count: int  # how many there are in all; absent in older files, which list them all
    bonus: Bonus  # stretch tasks' points, included in the score
    out_of_time: bool  # the notebook's grading time ran out before some check; absent in older files
    missing: list[str]  # answer cells (grade_ids) deleted from the notebook; absent in older files
    student: str  # grade-all: the submission folder's name
    sha256: str  # grade-all: of the notebook graded ("" when there was none)
    grader_error: str  # grade-all: the grader failed on this submission; no score


class _Results(TypedDict):
    score: float
    max_score: float
    output: str  # notes on the whole notebook
    tests: list[TestResult]
    extra_data: ExtraData


class Results(_Results, total=False):
    """A results.json file."""

    execution_time: float
    visibility: str


class ResultsError(ValueError):
    """Data that is not a results file (a damaged or foreign file)."""


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_fields(record: object, what: str, required: Mapping[str, Callable[[object], bool]],
                  optional: Mapping[str, Callable[[object], bool]]) -> dict[str, object]:
    if not isinstance(record, dict):
        raise ResultsError(f"{what} is a {type(record).__name__}, not a record")
    for key in required:
        if key not in record:
            raise ResultsError(f"{what} has no {key!r}")
    for key, ok in {**required, **optional}.items():
        if key in record and not ok(record[key]):
            raise ResultsError(f"{what}: {key!r} is of the wrong type")
    return record


def _is_str(v: object) -> bool:
    return isinstance(v, str)


_OUTCOMES = frozenset(o.value for o in Outcome)


def _is_outcome(v: object) -> bool:
    return isinstance(v, str) and v in _OUTCOMES


def _is_measured(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _number(x) for k, x in v.items())


_TEST_EXTRA = {"outcome": _is_outcome, "measured": _is_measured}
_TEST = {"name": _is_str, "score": _number, "max_score": _number, "output": _is_str, "tags": _strings,
         "visibility": _is_str}
_TEST_OPTIONAL = {"status": lambda v: v in ("passed", "failed"),
                  "extra_data": lambda v: isinstance(v, dict)}
_EXTRA_OPTIONAL = {
    "assignment": lambda v: v is None or isinstance(v, str), "notebook": _is_str, "device": _is_str,
    "sandbox": lambda v: isinstance(v, dict) and all(_strings(v.get(k, [])) for k in ("active", "off")),
    "integrity": _strings, "integrity_count": lambda v: type(v) is int and v >= 0,
    "out_of_time": lambda v: isinstance(v, bool), "student": _is_str, "sha256": _is_str,
    "grader_error": _is_str, "missing": _strings,
    "bonus": lambda v: isinstance(v, dict) and _number(v.get("score")) and _number(v.get("max_score"))}
_RESULTS = {"score": _number, "max_score": _number, "output": _is_str, "tests": lambda v: isinstance(v, list),
            "extra_data": lambda v: isinstance(v, dict)}
_RESULTS_OPTIONAL = {"execution_time": _number, "visibility": _is_str}


def parse(data: object) -> Results:
    """`data` (a decoded results file) checked against Results; ResultsError says what does not fit.

    Fields a file of an older version lacks (a test's extra_data, out_of_time, integrity...) may be
    absent; every field present must have its type."""
    record = _check_fields(data, "the results", _RESULTS, _RESULTS_OPTIONAL)
    _check_fields(record["extra_data"], "extra_data", {}, _EXTRA_OPTIONAL)
    for i, test in enumerate(cast(list[object], record["tests"])):
        fields = _check_fields(test, f"test {i}", _TEST, _TEST_OPTIONAL)
        if "extra_data" in fields:
            _check_fields(fields["extra_data"], f"test {i}'s extra_data", {}, _TEST_EXTRA)
    return cast(Results, record)


def load(path: Path) -> Results:
    """A results file; OSError when it cannot be read, ValueError (ResultsError) when it is not one."""
    return parse(json.loads(path.read_text()))


def dumps(results: Results) -> str:
    return json.dumps(results, indent=2)


def outcome(test: TestResult) -> Outcome | None:
    """The check's outcome; None for a file written before outcomes were recorded."""
    value = test.get("extra_data", {}).get("outcome")
    return Outcome(value) if value is not None else None


def measured(test: TestResult) -> dict[str, float]:
    """The figures the check measured ({} when none, or in an older file)."""
    return dict(test.get("extra_data", {}).get("measured", {}))


def grader_error(results: Results) -> str | None:
    """Why the grader failed on this submission (grade-all then records no score), or None."""
    return results["extra_data"].get("grader_error") or None


def sandbox_off(results: Results) -> list[str]:
    """The sandbox protections this grading's machine could not apply."""
    return list(results["extra_data"].get("sandbox", {}).get("off", []))
