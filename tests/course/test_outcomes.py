"""grade-all, the class report and the self-test read each check's outcome and figures from the results,
never from its message; files written before outcomes were recorded are still read."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from autograder.course import selftest
from autograder.course.batch import Job, file_sha256, grade_job
from autograder.course.report import analyse
from autograder.judging import results as fmt
from autograder.judging.judge import Grade, GradeOptions, grade
from autograder.judging.plugin import CheckResult
from autograder.judging.results import Outcome
from tests.course.test_class_report import CH, NOT_IMPL, softmax_result, write
from tests.kit import FAST, solved, zygote

POSING = "The grader itself failed in this check"  # the kit's own words for its failure
RAISES = f"def softmax(logits, dim=-1):\n    raise ValueError({POSING!r})\n"
KIT_FAILED = ("The grader itself failed in this check (KeyError: 'x'). This is an error in the course kit, not "
              "necessarily in your code: please tell your instructor.")
OUT_OF_TIME = "The time limit for grading this notebook ran out before this check."
GRADER_FAILED = "the grader failed inside a check"
RAN_OUT = "ran out of grading time"


def with_outcomes(result: dict[str, Any], *outcomes: Outcome, out_of_time: bool = False) -> dict[str, Any]:
    """A result file as this version writes it: each test's outcome in its extra_data, out_of_time said."""
    result = copy.deepcopy(result)
    for test, outcome in zip(result["tests"], outcomes, strict=True):
        test["extra_data"] = {"outcome": outcome.value, "measured": {}}
    result["extra_data"]["out_of_time"] = out_of_time
    fmt.parse(result)  # the format, as written
    return result


def reasons(graded: Path) -> dict[str, list[str]]:
    return {f.student: f.reasons for f in analyse(graded).flagged}


def test_a_student_error_that_reads_like_the_kits_failure_is_the_students(tmp_path: Path) -> None:
    """Graded for real through grade-all's worker: results.json says student_error, the class report agrees."""
    course, out = tmp_path / "course", tmp_path / "graded"
    (course / "ada" / CH).mkdir(parents=True)
    notebook = solved(course / "ada" / CH, CH, softmax=RAISES)
    row = grade_job(Job("ada", CH, str(notebook), file_sha256(notebook)), str(out), "cpu", False)
    assert row["status"] == "graded" and 0 < row["score"] < row["max_score"]
    result = fmt.load(out / "results" / "ada" / f"{CH}.json")
    posing = [t for t in result["tests"] if POSING in t["output"]]
    assert posing and {fmt.outcome(t) for t in posing} == {Outcome.STUDENT_ERROR}
    assert GRADER_FAILED not in reasons(out).get("ada", [])
    report = analyse(out)
    assert {f.kind for f in report.failures if POSING in f.example} == {"wrong"}
    assert sum(c.wrong for c in report.checks) == len(posing)


def test_the_kits_failure_is_flagged_by_its_outcome_whatever_its_message(tmp_path: Path) -> None:
    write(tmp_path, with_outcomes(softmax_result("ada", [("failed", "KeyError: 'x'"), ("passed", ""),
                                                         ("passed", "")]),
                                  Outcome.GRADER_ERROR, Outcome.PASSED, Outcome.PASSED))
    write(tmp_path, with_outcomes(softmax_result("bea", [("failed", f"`softmax(x)` raised an error:\nValueError: "
                                                                    f"{POSING}"), ("passed", ""), ("passed", "")]),
                                  Outcome.STUDENT_ERROR, Outcome.PASSED, Outcome.PASSED))
    assert GRADER_FAILED in reasons(tmp_path)["ada"]
    assert GRADER_FAILED not in reasons(tmp_path).get("bea", [])


def test_files_without_outcomes_are_read_by_their_messages(tmp_path: Path) -> None:
    """Files of older versions: the text fallback, for those files only."""
    write(tmp_path, softmax_result("old", [("failed", KIT_FAILED), ("failed", OUT_OF_TIME),
                                           ("failed", NOT_IMPL.format("softmax_cross_entropy"))]))
    write(tmp_path, with_outcomes(softmax_result("new", [("failed", KIT_FAILED), ("failed", OUT_OF_TIME),
                                                         ("failed", NOT_IMPL.format("softmax_cross_entropy"))]),
                                  Outcome.STUDENT_ERROR, Outcome.TIMEOUT, Outcome.STUDENT_ERROR))
    flagged = reasons(tmp_path)
    assert GRADER_FAILED in flagged["old"] and RAN_OUT in flagged["old"]
    assert GRADER_FAILED not in flagged["new"] and RAN_OUT not in flagged["new"]  # out_of_time: False
    checks = {c.name: c for c in analyse(tmp_path).checks}
    xent = checks["matches -sum(labels * log_softmax)"]
    assert (xent.not_run, xent.wrong) == (1, 1)  # old: the stub by its message; new: what its outcome says


def test_the_grading_running_out_of_time_is_flagged_from_the_result(tmp_path: Path) -> None:
    write(tmp_path, with_outcomes(softmax_result("ada", [("failed", OUT_OF_TIME), ("passed", ""), ("passed", "")]),
                                  Outcome.TIMEOUT, Outcome.PASSED, Outcome.PASSED, out_of_time=True))
    loop = ("`softmax(x)` did not finish within 20 s (an infinite loop, or far too slow?). Later checks of it were not "
            "run.")
    write(tmp_path, with_outcomes(softmax_result("bea", [("failed", loop), ("passed", ""), ("passed", "")]),
                                  Outcome.TIMEOUT, Outcome.PASSED, Outcome.PASSED))
    flagged = reasons(tmp_path)
    assert RAN_OUT in flagged["ada"] and RAN_OUT not in flagged.get("bea", [])


def test_stubs_and_code_that_could_not_run_are_not_run_others_wrong(tmp_path: Path) -> None:
    write(tmp_path, with_outcomes(softmax_result("ada", [("failed", "stub"), ("failed", "no notebook"),
                                                         ("failed", "Not scored: ...")]),
                                  Outcome.NOT_IMPLEMENTED, Outcome.NOT_RUN, Outcome.NOT_SCORED))
    checks = [(c.passed, c.wrong, c.not_run) for c in analyse(tmp_path).checks]
    assert checks == [(0, 0, 1), (0, 0, 1), (0, 1, 0)]
    assert reasons(tmp_path)["ada"] == ["broke the stated rule of softmax_cross_entropy: those tasks scored 0",
                                        "zero score"]


def _speed(output: str, **measured: float) -> CheckResult:
    return CheckResult("x::check_row_sum_speed", "at least 4x faster", "row_sum", 2.0, False, Outcome.PASSED,
                       output, measured=fmt.figures(measured))


def test_the_selftests_speed_row_reads_the_measured_figures_not_the_message() -> None:
    row = selftest.speed_row("04_overloaded_ops", _speed("", **{fmt.RATIO: 12.34, fmt.NEEDED_RATIO: 4.0}))
    assert (row.ok, row.values["ratio"], row.values["needs"]) == (True, 12.34, 4.0)
    assert row.result == "12.3x, needs 4x"
    misleading = ("Timing:   your row_sum: 1 ms per call; the loop: 99 ms per call; 99.0x (median of 9 rounds) "
                  "(needs 1x)")
    row = selftest.speed_row("04_overloaded_ops", _speed(misleading, **{fmt.RATIO: 5.0, fmt.NEEDED_RATIO: 4.0}))
    assert (row.values["ratio"], row.values["needs"]) == (5.0, 4.0)
    row = selftest.speed_row("08_mixed_precision", _speed("", **{fmt.RATIO: 2.0, fmt.NEEDED_RATIO: 1.3,
                                                                 fmt.AMP_MEMORY_RATIO: 0.61}))
    assert row.values["amp_memory_ratio"] == 0.61 and row.result == "2x, needs 1.3x, AMP peak memory 0.61x"


def test_the_selftests_speed_row_of_a_real_grading_is_the_checks_measurement() -> None:
    def speed_only(notebook: Path, device: str, only: str | None) -> Grade:
        options = GradeOptions(device, selftest.SEED, FAST, only="check_row_sum_speed")
        return grade(notebook, options=options, zygote=zygote())

    rows = selftest.solution_rows("04_overloaded_ops", "cpu", speed_only)
    (speed,) = [r for r in rows if r.kind == "speed"]
    measured = speed.values["measured"]
    assert speed.ok and speed.values["ratio"] == measured[fmt.RATIO] >= speed.values["needs"] == 1 / 8  # at most 8x
    written = json.loads(json.dumps(selftest.as_json("cpu", rows, 1.0)))["rows"]
    assert [r["values"]["ratio"] for r in written if r["kind"] == "speed"] == [measured[fmt.RATIO]]
