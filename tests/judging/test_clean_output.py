"""Clean output: text from student code never brings terminal control characters to the
instructor's terminal, CSV or logs, and stays HTML-escaped in the feedback pages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import pytest

from autograder import cli
from autograder.course.batch import row
from autograder.course.nbgrader.gradebook import feedback_html, write_feedback
from autograder.judging.judge import Grade
from autograder.judging.plugin import CheckResult
from autograder.judging.report import clean, gradescope, table, text
from autograder.judging.results import Outcome, Results
from tests.kit import solved

CH = "07_numerical_stability"
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\rover\x9b31m\u202eevil\x00 <script>alert(1)</script>"
# Control characters a terminal acts on: all C0 but tab and newline, DEL, C1, bidi overrides.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_clean_makes_control_characters_visible_and_keeps_the_rest() -> None:
    out = clean(HOSTILE + "\ttab\nline é 中")
    assert not RAW.search(out)
    assert "\\x1b]0;owned\\x07" in out and "\\r" in out and "\\x9b" in out and "\\u202e" in out
    assert out.endswith("\ttab\nline é 中")


def _grade() -> Grade:
    failed = CheckResult("x::check_softmax", "softmax is right", "softmax", 5.0, False, Outcome.STUDENT_ERROR,
                         f"`softmax` raised an error:\nRuntimeError: {HOSTILE}")
    return Grade(Path(f"{CH}.ipynb"), CH, "cpu", [failed], notes=[f"Answer cell 'softmax' raised {HOSTILE}"])


def test_the_text_report_and_the_table_are_clean() -> None:
    unread = Grade(Path(f"{CH}.ipynb"), CH, "cpu", notes=[HOSTILE])  # the table shows its first note
    for report in (text(_grade()), table([("ada", unread)])):
        assert not RAW.search(report) and "\\x1b]0;owned" in report


def test_results_and_summary_rows_are_clean() -> None:
    result = gradescope(_grade())
    result["extra_data"]["student"], result["extra_data"]["sha256"] = "ada\x1b[8m", ""
    assert not RAW.search(result["output"] + result["tests"][0]["output"])
    r = row(result)
    assert not RAW.search(r["notes"] + r["student"]) and "\\x1b[2J" in r["notes"]


def test_feedback_pages_escape_html_from_student_code(tmp_path: Path) -> None:
    result = gradescope(_grade())
    result["extra_data"]["student"], result["extra_data"]["sha256"] = "<b>ada</b>", ""
    page = feedback_html(result)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>ada</b>" not in page and not RAW.search(page)


def test_feedback_is_not_written_for_grader_errors(tmp_path: Path) -> None:
    ok = gradescope(_grade())
    ok["extra_data"]["student"], ok["extra_data"]["sha256"] = "ada", ""
    lost = cast(Results, {**ok, "extra_data": {**ok["extra_data"], "student": "bea", "grader_error": "worker died"}})
    assert write_feedback(tmp_path, [ok, lost]).written == 1
    assert [p.parent.parent.name for p in tmp_path.glob("feedback/*/*/*.html")] == ["ada"]


def test_feedback_never_replaces_a_page_the_kit_did_not_write(tmp_path: Path) -> None:
    """nbgrader generate_feedback's page holds the instructor's manual grades and comments: grade-all
    --feedback afterwards keeps it, and replaces only its own pages."""
    ada = gradescope(_grade())
    ada["extra_data"]["student"], ada["extra_data"]["sha256"] = "ada", ""
    bea = cast(Results, {**ada, "extra_data": {**ada["extra_data"], "student": "bea"}})
    assert write_feedback(tmp_path, [ada, bea]).written == 2
    assignment = str(ada["extra_data"]["assignment"])
    theirs = tmp_path / "feedback" / "ada" / assignment / f"{assignment}.html"
    theirs.write_text("<html>15 / 20. Comment: half of the overflow case.</html>")
    done = write_feedback(tmp_path, [ada, bea])
    assert (done.written, done.kept) == (1, [str(theirs.relative_to(tmp_path))])
    assert "half of the overflow case" in theirs.read_text()


def test_feedback_pages_carry_what_release_feedback_reads(tmp_path: Path) -> None:
    """nbgrader release_feedback opens timestamp.txt and submission_secret.txt beside each page: a kit page
    without them made it fail for every student."""
    ada = gradescope(_grade())
    ada["extra_data"]["student"], ada["extra_data"]["sha256"] = "ada", ""
    assignment = str(ada["extra_data"]["assignment"])
    submitted = tmp_path / "submitted" / "ada" / assignment
    submitted.mkdir(parents=True)
    (submitted / "timestamp.txt").write_text("2026-11-26 10:00:00.000000 UTC")
    (submitted / "submission_secret.txt").write_text("s3cret")
    write_feedback(tmp_path, [ada])
    folder = tmp_path / "feedback" / "ada" / assignment
    assert (folder / "timestamp.txt").read_text().startswith("2026-11-26")
    assert (folder / "submission_secret.txt").read_text() == "s3cret"


def test_pages_release_feedback_cannot_release_are_listed(tmp_path: Path) -> None:
    """A notebook copied into submitted/ by hand has no timestamp.txt: nbgrader release_feedback stops with a
    traceback on its page, so grade-all names those pages for the instructor to hand out."""
    ada, bea = gradescope(_grade()), gradescope(_grade())
    for result, name in ((ada, "ada"), (bea, "bea")):
        result["extra_data"]["student"], result["extra_data"]["sha256"] = name, ""
    assignment = str(ada["extra_data"]["assignment"])
    (tmp_path / "submitted" / "ada" / assignment).mkdir(parents=True)
    (tmp_path / "submitted" / "ada" / assignment / "timestamp.txt").write_text("2026-11-26 10:00:00.000000 UTC")
    (tmp_path / "submitted" / "bea" / assignment).mkdir(parents=True)
    done = write_feedback(tmp_path, [ada, bea])
    assert done.by_hand == [f"feedback/bea/{assignment}/{assignment}.html"]


ESCAPES_AT_IMPORT = f"raise RuntimeError({HOSTILE!r})\n"


def test_the_grade_command_prints_no_escape_sequences_from_student_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = solved(tmp_path, CH, softmax=ESCAPES_AT_IMPORT)
    assert cli.main(["grade", str(path), "--seed", "1", "--timeout", "5", "--only", "guide_example"]) == 0
    out = capsys.readouterr().out
    assert "\\x1b]0;owned" in out and not RAW.search(out), out


def test_a_long_message_repeated_under_every_check_is_shown_once_on_the_feedback_page() -> None:
    result = gradescope(_grade())
    result["extra_data"]["student"], result["extra_data"]["sha256"] = "ada", ""
    long = "`softmax(x)` raised an error:\nValueError: " + "Q" * 2000
    result["tests"] = [{**result["tests"][0], "name": f"[softmax] check {i}", "output": long} for i in range(8)]
    page = feedback_html(result)
    assert page.count("Q" * 2000) == 1
    assert page.count("(the same message as under &#x27;[softmax] check 0&#x27; above)") == 7
