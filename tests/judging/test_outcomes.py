"""Each check's outcome is set where it is decided and travels as a field; measured figures too.

Outcomes never come from reading a message: a student's own exception text that reads like the kit's
failure stays the student's error. Chapter 07 unless said otherwise; FAST limits (tests/kit.py).
"""

from __future__ import annotations

import json
import signal
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import pytest

from autograder.course.cases import mutant
from autograder.judging import results as fmt
from autograder.judging.expect import CheckFailure, JudgeError, error_type
from autograder.judging.judge import Grade
from autograder.judging.plugin import _measured, _outcome
from autograder.judging.report import gradescope
from autograder.judging.results import Outcome
from autograder.judging.student import StudentError
from autograder.sandbox.process import ChildDied, Sandbox
from tests.kit import FAST, by_name, grade_fast, solved, write_submission

CH = "07_numerical_stability"
POSING = "The grader itself failed in this check"  # the kit's own words for its failure, raised by the student
RAISES = f"def softmax(logits, dim=-1):\n    raise ValueError({POSING!r})\n"
WRONG_LOG_SOFTMAX = ("def log_softmax(logits, dim=-1):\n"
                     "    return logits - logits.exp().sum(dim=dim, keepdim=True)  # forgot the log\n")
LOOPS = "def softmax(logits, dim=-1):\n    while True:\n        pass\n"


def _tests(g: Grade) -> dict[str, fmt.TestResult]:
    """results.json as written and read back, its tests by check function name."""
    result = fmt.parse(json.loads(json.dumps(gradescope(g))))
    return dict(zip(by_name(g), result["tests"], strict=True))


def test_each_kind_of_failure_gets_its_outcome_in_the_grade_and_in_results_json(tmp_path: Path) -> None:
    path = write_submission(tmp_path, CH, {"softmax": RAISES, "log_softmax": WRONG_LOG_SOFTMAX})  # xent: the stub
    g = grade_fast(path, only="guide_example or log_softmax_values")
    checks = by_name(g)
    expected = {"check_softmax_guide_example": Outcome.STUDENT_ERROR,
                "check_xent_guide_example": Outcome.NOT_IMPLEMENTED,
                "check_log_softmax_values": Outcome.WRONG}
    assert {name: checks[name].outcome for name in expected} == expected
    assert POSING in checks["check_softmax_guide_example"].output  # the message is the student's, unchanged
    assert all(checks[name].status == "failed" and checks[name].score == 0 for name in expected)
    tests = _tests(g)
    assert {name: fmt.outcome(tests[name]) for name in expected} == expected
    assert tests["check_softmax_guide_example"]["extra_data"]["outcome"] == "student_error"
    assert tests["check_softmax_guide_example"]["status"] == "failed"  # Gradescope's field, as before
    # A wrong answer's mistake travels as fields too, as its message shows them; a student's error has none.
    wrong = tests["check_log_softmax_values"]
    problem, hint = wrong["extra_data"]["problem"], wrong["extra_data"]["hint"]
    assert f"Problem:  {problem.splitlines()[0]}" in wrong["output"] and f"Hint:     {hint.splitlines()[0]}" in \
        wrong["output"]
    assert "problem" not in tests["check_softmax_guide_example"]["extra_data"]


def test_a_failure_keeps_its_problem_hint_and_mistake_as_fields() -> None:
    from autograder.judging.expect import failure

    e = failure(call="f(x)", problem="off by one", hint="Count from 0.", mistake="off-by-one", breaks_rule=True)
    assert str(e) == "Call: f(x)\nProblem:  off by one\nHint:     Count from 0."  # the text students see, as before
    assert (e.problem, e.hint, e.mistake) == ("off by one", "Count from 0.", "off-by-one")


def test_a_call_out_of_time_is_a_timeout_and_so_are_the_later_calls_it_stopped(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=LOOPS), only="check_softmax_guide_example or random_batches",
                   limits=replace(FAST, call_seconds=2.0))
    checks = by_name(g)
    assert "did not finish within 2 s" in checks["check_softmax_guide_example"].output
    assert checks["check_softmax_guide_example"].outcome is Outcome.TIMEOUT
    assert checks["check_softmax_random_batches"].outcome is Outcome.TIMEOUT  # not called again
    assert not g.out_of_time  # the per-call limit, not the grading's time
    assert gradescope(g)["extra_data"]["out_of_time"] is False


def test_the_gradings_time_running_out_is_a_timeout_and_said_for_the_whole_grading(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH), only="check_softmax_guide_example", total_seconds=0.0)
    (result,) = g.results
    assert "The time limit for grading this notebook ran out" in result.output
    assert result.outcome is Outcome.TIMEOUT and g.out_of_time
    assert gradescope(g)["extra_data"]["out_of_time"] is True


def test_a_notebook_whose_code_cannot_run_is_not_run(tmp_path: Path) -> None:
    path = solved(tmp_path, CH)
    path.write_text(path.read_text()[:500])
    g = grade_fast(path, only="guide_example")
    assert g.results and all(r.outcome is Outcome.NOT_RUN for r in g.results)
    assert "not valid notebook JSON" in g.results[0].output


def test_a_broken_rule_voids_its_task_alone_and_each_check_says_how_it_did_on_its_own(tmp_path: Path) -> None:
    library = "def softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n"
    g = grade_fast(solved(tmp_path, "07_numerical_stability", softmax=library))
    checks = by_name(g)
    rule = checks["check_softmax_by_hand"]
    assert rule.outcome is Outcome.WRONG and "cell 'softmax', line 2: torch.softmax" in rule.output, rule.output
    softmax = [r for r in g.results if r.task == "softmax" and not r.rule]
    assert softmax and all(r.outcome is Outcome.NOT_SCORED and r.score == 0 for r in softmax)
    assert all("On its own this check passed" in r.output for r in softmax), [r.output for r in softmax]
    others = [r for r in g.results if r.task != "softmax"]
    assert others and all(r.outcome is Outcome.PASSED for r in others), [(r.name, r.output) for r in others]
    assert not g.integrity  # a rule is not a suspicion: nothing to review


def test_a_wrong_example_answer_costs_the_rule_check_its_point_but_voids_nothing(tmp_path: Path) -> None:
    """The textbook softmax keeps the rule (built by hand) but overflows on the notebook's example: the rule
    check fails as a wrong answer, not as a broken rule, so the task keeps the points of its other checks."""
    g = grade_fast(solved(tmp_path, CH, softmax=mutant(CH, "no max subtraction").cells["softmax"]))
    rule = by_name(g)["check_softmax_by_hand"]
    assert rule.outcome is Outcome.WRONG and "nan" in rule.output, rule.output
    softmax = [r for r in g.results if r.task == "softmax" and not r.rule]
    assert not [r for r in softmax if r.outcome is Outcome.NOT_SCORED]
    assert 0 < sum(r.score for r in softmax) < sum(r.points for r in softmax)


def test_a_speed_checks_figures_arrive_in_measured_and_in_results_json(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "04_overloaded_ops"), only="check_row_sum_speed")
    speed = by_name(g)["check_row_sum_speed"]
    assert speed.outcome is Outcome.PASSED
    figures = speed.measured
    # The bar is at most 8x the reference's time: the ratio (the reference's time over the student's) >= 1 / 8.
    assert figures[fmt.NEEDED_RATIO] == 1 / 8 and figures[fmt.RATIO] >= 1 / 8
    assert figures[fmt.RATIO] == pytest.approx(figures[fmt.REFERENCE_SECONDS] / figures[fmt.STUDENT_SECONDS])
    assert f"{1 / figures[fmt.RATIO]:.2g}x its time (fastest" in speed.output  # the note the student reads
    assert fmt.CUDA_EVENTS_RATIO not in figures  # on CPU there are no CUDA events
    tests = _tests(g)
    assert fmt.measured(tests["check_row_sum_speed"]) == figures
    assert fmt.outcome(tests["check_row_sum_speed"]) is Outcome.PASSED


@pytest.mark.parametrize(("error", "outcome"), [
    (StudentError("`f(x)` raised an error:\nValueError: " + POSING), Outcome.STUDENT_ERROR),
    (StudentError("not implemented: ...", Outcome.NOT_IMPLEMENTED), Outcome.NOT_IMPLEMENTED),
    (CheckFailure("Problem:  wrong"), Outcome.WRONG),
    (AssertionError(), Outcome.WRONG),
    (JudgeError("the judge's mistake"), Outcome.GRADER_ERROR),
    (KeyError("a bug in a check"), Outcome.GRADER_ERROR),
])
def test_the_plugin_takes_the_outcome_from_the_exception_type_never_its_text(error: BaseException,
                                                                            outcome: Outcome) -> None:
    with pytest.raises(type(error)) as raised:
        raise error
    assert _outcome(raised) is outcome


def test_a_restated_error_keeps_its_outcome() -> None:
    stub = StudentError("not implemented: `f` still raises NotImplementedError.", Outcome.NOT_IMPLEMENTED)
    again = stub.restated(f"Reading 3 images:\n{stub}")
    assert again.outcome is Outcome.NOT_IMPLEMENTED and str(again).startswith("Reading 3 images")


def test_results_files_are_checked_against_the_format() -> None:
    test: fmt.TestResult = {"name": "[t] x", "score": 1.0, "max_score": 1.0, "output": "", "tags": ["t"],
                            "visibility": "visible", "status": "passed"}
    results: fmt.Results = {"score": 1.0, "max_score": 1.0, "output": "", "tests": [test],
                            "extra_data": {"assignment": CH}}
    assert fmt.parse(results) == results and fmt.outcome(test) is None and fmt.measured(test) == {}  # an older file
    for broken in ({**results, "tests": [{**test, "score": "1"}]},
                   {**results, "tests": [{**test, "extra_data": {"outcome": "lost"}}]},
                   {**results, "tests": [{**test, "extra_data": {"outcome": "wrong", "problem": 1}}]},
                   {**results, "extra_data": {"assignment": CH, "grader_error": 3}},
                   {k: v for k, v in results.items() if k != "extra_data"}, [results]):
        with pytest.raises(fmt.ResultsError):
            fmt.parse(broken)


def test_the_amp_speed_check_records_its_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chapter 08's CUDA-only check, its measurement stubbed (no GPU needed): the figures it records."""
    from autograder.chapters.ch08_mixed_precision import checks as ch08

    monkeypatch.setattr(ch08, "measure_amp_speed", lambda *args, **kwargs: ch08.AmpSpeed(0.5, 1.0, 5, 10, 0.6))
    recorded: list[tuple[str, object]] = []
    ch08.check_amp_speedup_on_cuda(ch08.Api(None), None, "cuda",  # type: ignore[arg-type]
                                   lambda name, value: recorded.append((name, value)))
    assert _measured(recorded) == {fmt.RATIO: 2.0, fmt.NEEDED_RATIO: ch08.MIN_SPEEDUP, fmt.STUDENT_SECONDS: 0.5,
                                   fmt.REFERENCE_SECONDS: 1.0, fmt.AMP_MEMORY_RATIO: 0.6}
    assert recorded[0] == ("note", f"Timing:   {ch08.AmpSpeed(0.5, 1.0, 5, 10, 0.6).describe()}")


@pytest.mark.parametrize(("signal_number", "outcome"), [(signal.SIGKILL, Outcome.TIMEOUT),
                                                         (signal.SIGXCPU, Outcome.TIMEOUT),
                                                         (signal.SIGSEGV, Outcome.STUDENT_ERROR)])
def test_a_process_that_dies_of_a_limit_is_a_timeout_other_crashes_the_students(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal_number: int, outcome: Outcome) -> None:
    def dies(self: Sandbox, header: object, buffers: object, timeout: float, during: str) -> NoReturn:
        raise ChildDied(-signal_number, during)

    monkeypatch.setattr(Sandbox, "request", dies)  # as the sandbox reports such a death
    g = grade_fast(solved(tmp_path, CH), only="check_softmax_guide_example")
    (result,) = g.results
    assert result.outcome is outcome and signal.Signals(signal_number).name in result.output


def test_the_type_a_student_raised_is_a_field_their_own_text_cannot_pose_as() -> None:
    """Which exception the code raised shapes the message ("raised X ... on the example too"): it is the field
    student.py sets from the child's report, kept when a check restates the error, never read back from the text."""
    posing = StudentError("The answer cell 'softmax' failed when run:\nRuntimeError: `f(x)` raised an error:\n"
                          "ValueError: looks like a call's error")
    assert error_type(posing) is None and error_type(posing.restated(f"{posing}\nHint: x")) is None
    raised = StudentError("`f(x)` raised an error:\nIndexError: 5", raised="IndexError")
    assert error_type(raised.restated("Reading it:\n" + str(raised))) == "IndexError"
