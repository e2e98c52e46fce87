"""What a grading found, as types: each check's outcome and measured figures, and the results file.

`Outcome` says what happened in one check. It is set where that is decided (the exception types of
autograder/judging/student.py and expect.py carry theirs; autograder/judging/plugin.py sets passed, skipped,
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
from typing import Final, Literal, TypedDict, cast


# Not StrEnum: its str() and f-strings give 'passed' where this class's give 'Outcome.PASSED'.
class Outcome(str, enum.Enum):  # noqa: UP042
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


class SubmissionStatus(str, enum.Enum):  # noqa: UP042 (not StrEnum, as Outcome)
    """What became of one submission, as grade-all's summaries and the class report write it."""

    GRADED = "graded"
    ERROR = "error"  # 0 points and notes on the whole notebook (no notebook, one that cannot be read...)
    GRADER_ERROR = "grader-error"  # the grader failed on it: no score, graded again on the next run
    UNREADABLE = "unreadable"  # the class report: its result file cannot be read
    MISSING = "missing"  # the class report: no notebook was handed in

    def __str__(self) -> str:
        return self.value  # in f-strings and CSV cells, the text the files have always held

    @property
    def scored(self) -> bool:
        """Whether the submission has a score (ERROR's is 0, a score too)."""
        return self in (SubmissionStatus.GRADED, SubmissionStatus.ERROR)


# What a StudentError's `mistake` may name besides a check's named mistakes: the judge's own findings about a
# call (autograder/judging/student.py), which the class report lists for review.
NOT_DEFINED: Final = "name-not-defined"  # the answer cell does not define the name the checks call (renamed?)
TIMED_OUT: Final = "timed-out"  # a call did not finish within its time
OVER_LIMIT: Final = "over-a-limit"  # the process died of a limit (memory, CPU time, file size)


# -- measured figures --------------------------------------------------------------------------

RecordProperty = Callable[[str, object], None]  # pytest's record_property fixture
MEASURED = "measured"  # the name of the property a check records its figures under (see record_measured)
NOTE = "note"  # the property a check records a note under (see record_note)

# The names of the figures checks measure, as Measured's keys.
RATIO: Final = "ratio"
NEEDED_RATIO: Final = "needed_ratio"
CUDA_EVENTS_RATIO: Final = "cuda_events_ratio"
AMP_MEMORY_RATIO: Final = "amp_memory_ratio"
STUDENT_SECONDS: Final = "seconds"
REFERENCE_SECONDS: Final = "reference_seconds"
MEMORY_MIB: Final = "memory_mib"
MEMORY_BAR_MIB: Final = "memory_bar_mib"
LOOP_RATIO: Final = "loop_ratio"


class Measured(TypedDict, total=False):
    """The figures a check measured (CheckResult.measured, a test's extra_data.measured), each a finite float."""

    ratio: float  # how many times faster than the reference (median per call, or per step)
    needed_ratio: float  # the ratio the check requires
    cuda_events_ratio: float  # the same ratio from CUDA events (child-reported, informative)
    amp_memory_ratio: float  # peak memory of the AMP step / that of the float32 step
    seconds: float  # median seconds per call (per step) of the student's code
    reference_seconds: float  # the same of the reference
    memory_mib: float  # how far the box's memory rose during a call, at its peak, in MiB (the kernel's accounting)
    memory_bar_mib: float  # the most it may rise
    loop_ratio: float  # median CPU time per call of the student's code / the vectorized reference's


def figures(values: Mapping[str, object]) -> Measured:
    """`values` as measured figures: finite numbers only (JSON has no inf or nan), as floats."""
    numbers = {name: cast(float, v) for name, v in values.items() if isinstance(name, str) and _number(v)}
    return cast(Measured, {name: float(v) for name, v in numbers.items() if math.isfinite(v)})


def record_measured(record_property: RecordProperty, values: Measured) -> None:
    """Hand the plugin figures a check measured; a check may call this more than once."""
    record_property(MEASURED, figures(values))


def record_note(record_property: RecordProperty, note: str) -> None:
    """Hand the plugin a line for a passing check's output (a failing check says it in its message)."""
    record_property(NOTE, note)


# -- the results file ------------------------------------------------------------------------------


class TestExtra(TypedDict, total=False):
    """A test's own extra_data. Absent in files written before outcomes were recorded; problem, hint and mistake
    are absent in files written before failures kept them as fields, and wherever the check gave none."""

    outcome: str  # an Outcome's value
    measured: Measured
    problem: str  # a failed check's: what exactly differs (the message's "Problem:" line)
    hint: str  # what to fix (its "Hint:" line)
    mistake: str  # the stable id of the named mistake the check saw (or the judge's: student.NOT_DEFINED...)
    alone: str  # not_scored for a broken rule: the Outcome's value the check gave on its own


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
    integrity: list[str]  # constructs reaching into grader internals (judging/static/review.py), the first 20
    integrity_count: int  # how many there are in all; absent in older files, which list them all
    bonus: Bonus  # stretch tasks' points, included in the score
    out_of_time: bool  # the notebook's grading time ran out before some check; absent in older files
    missing: list[str]  # answer cells (grade_ids) deleted from the notebook; absent in older files
    output_dropped: bool  # the student's prints beyond 1 MiB were dropped (a note only); absent in older files
    undefined: list[str]  # answer cells that ran but do not define their name (renamed?); absent in older files
    device_note: str  # the CPU grading's device note (judging/static/devices.py), also in output; advice only
    student: str  # grade-all: the submission folder's name
    sha256: str  # grade-all: of the notebook graded ("" when there was none)
    graded_with: str  # grade-all: the release and grader it was graded with (course.batch.fingerprint)
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


_TEST_EXTRA = {"outcome": _is_outcome, "measured": _is_measured, "problem": _is_str, "hint": _is_str,
               "mistake": _is_str, "alone": _is_outcome}
_TEST = {"name": _is_str, "score": _number, "max_score": _number, "output": _is_str, "tags": _strings,
         "visibility": _is_str}
_TEST_OPTIONAL = {"status": lambda v: v in ("passed", "failed"),
                  "extra_data": lambda v: isinstance(v, dict)}
_EXTRA_OPTIONAL = {
    "assignment": lambda v: v is None or isinstance(v, str), "notebook": _is_str, "device": _is_str,
    "sandbox": lambda v: isinstance(v, dict) and all(_strings(v.get(k, [])) for k in ("active", "off")),
    "integrity": _strings, "integrity_count": lambda v: type(v) is int and v >= 0,
    "out_of_time": lambda v: isinstance(v, bool), "output_dropped": lambda v: isinstance(v, bool),
    "student": _is_str, "sha256": _is_str,
    "grader_error": _is_str, "missing": _strings, "undefined": _strings, "graded_with": _is_str,
    "device_note": _is_str,
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


def measured(test: TestResult) -> Measured:
    """The figures the check measured ({} when none, or in an older file)."""
    return Measured(**test.get("extra_data", {}).get("measured", {}))


def grader_error(results: Results) -> str | None:
    """Why the grader failed on this submission (grade-all then records no score), or None."""
    return results["extra_data"].get("grader_error") or None


def sandbox_off(results: Results) -> list[str]:
    """The sandbox protections this grading's machine could not apply."""
    return list(results["extra_data"].get("sandbox", {}).get("off", []))
