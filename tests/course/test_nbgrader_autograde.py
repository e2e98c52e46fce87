"""The kit preprocessor's verdicts, read back with nbgrader's own grading function.

nbgrader scores a code grade cell from its outputs (nbgrader.utils.determine_grade): an error or
stderr output is 0, a numeric execute_result is partial credit, and no output at all is full
marks. These tests write verdicts into the real release notebook and score them as nbgrader does.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import dataclasses
import os
from pathlib import Path
from typing import Any, cast

import nbformat
import pytest
from nbgrader import utils

from autograder.course.batch import Job
from autograder.course.nbgrader.autograde import Ahead, KitGradingError, record_extra_credit, write_verdicts
from autograder.course.nbgrader.gradebook import interpreter_bin_first
from autograder.judging.registry import CHAPTERS
from autograder.judging.results import Results
from autograder.judging.results import TestResult as Check  # not "Test*": pytest would try to collect it
from tests.kit import ROOT, release_path

CH = "07_numerical_stability"
NAN_MESSAGE = "Call: softmax(logits)\nGot:      [nan, 0.]\nHint:     Subtract the maximum along `dim` first."


def _test(task: str, name: str, score: float, points: float, status: str = "passed", output: str = "",
          visible: bool = False) -> Check:
    return {"name": f"[{task}] {name}", "score": score, "max_score": points, "output": output, "tags": [task],
            "visibility": "visible" if visible else "after_published", "status": cast(Any, status)}


def _result(tests: list[Check], notes: str = "", device: str = "cpu") -> Results:
    return {"score": sum(t["score"] for t in tests), "max_score": sum(t["max_score"] for t in tests),
            "output": notes, "tests": tests, "extra_data": {"device": device, "assignment": CH}}


def _bonus(name: str, score: float, points: float, status: str = "passed", output: str = "") -> Check:
    """A check of 07's stretch task log_softmax: its points are extra credit."""
    return {**_test("log_softmax", name, score, points, status, output), "tags": ["log_softmax", "bonus"],
            "name": f"[bonus: log_softmax] {name}"}


NO_MAX = _result([
    _test("softmax", "matches the example", 0, 4, "failed", NAN_MESSAGE, visible=True),
    _test("softmax", "matches torch.softmax on batches", 6, 6),
    _test("softmax_cross_entropy", "matches log_softmax", 10, 10),
    _bonus("matches torch.log_softmax", 0, 4, "failed", "not implemented"),
])
CHECK_CELLS = ["check_softmax", "check_softmax_cross_entropy", "check_log_softmax"]


@pytest.fixture(autouse=True)
def _a_stretch_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests use 07 as it was released when log_softmax was its stretch task (4 points of extra credit,
    softmax and softmax_cross_entropy 10 points each, no robust_loss): the registry's entry to match _notebook."""
    monkeypatch.setitem(CHAPTERS, CH, dataclasses.replace(
        CHAPTERS[CH], points={"softmax": 10, "softmax_cross_entropy": 10}, bonus={"log_softmax": 4}))


def _notebook() -> nbformat.NotebookNode:
    """07's release with log_softmax as a stretch task (see _a_stretch_task): a chapter with every kind of cell."""
    nb = nbformat.read(release_path(CH), as_version=4)
    nb.cells = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") not in {"robust_loss", "check_robust_loss"}]
    for grade_id, points in (("check_softmax", 10), ("check_softmax_cross_entropy", 10), ("check_log_softmax", 0)):
        _cell(nb, grade_id).metadata.nbgrader["points"] = points
    _cell(nb, "check_log_softmax").metadata["kit"] = {"bonus": 4}
    return nb


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o["text"] for o in cell.outputs if o["output_type"] == "stream")


def test_partial_credit_is_what_nbgrader_reads() -> None:
    nb = _notebook()
    assert write_verdicts(nb, NO_MAX) == ({"check_softmax": 6.0, "check_softmax_cross_entropy": 10.0,
                                           "check_log_softmax": 0.0}, {"check_log_softmax": 0.0})
    softmax, xent = _cell(nb, "check_softmax"), _cell(nb, "check_softmax_cross_entropy")
    assert utils.determine_grade(softmax) == (6.0, 10.0)
    assert utils.determine_grade(xent) == (10.0, 10.0)
    for cell in (softmax, xent):
        assert [(o["output_type"], o.get("name")) for o in cell.outputs] == [("stream", "stdout"),
                                                                            ("execute_result", None)]
        assert not utils.has_failed(cell)  # nothing on stderr, no error output: nbgrader would score those 0
    text = _text(softmax)
    assert "softmax: 6 / 10 points" in text
    assert "FAIL 0/4  matches the example\n" in text and "PASS 6/6  matches torch.softmax on batches (hidden)" in text
    assert "Got:      [nan, 0.]" in text and "Subtract the maximum" in text
    # the Out[ ] beside a score set later by hand in Formgrader is explained where it is shown
    assert text.rstrip().endswith("Recorded: 6 of 10 points, the number below; a score set by hand in Formgrader "
                                  "takes its place."), text
    nbformat.validate(nb)


def test_every_other_cell_is_left_as_it_was() -> None:
    nb, before = _notebook(), _notebook()
    write_verdicts(nb, NO_MAX)
    changed = [c.metadata.get("nbgrader", {}).get("grade_id") for c, b in zip(nb.cells, before.cells, strict=True)
               if c != b]
    assert changed == CHECK_CELLS
    for cell, old in zip(nb.cells, before.cells, strict=True):
        if "nbgrader" in cell.metadata:  # sources and metadata unchanged: nbgrader's checksums still hold
            assert (cell.source, cell.metadata) == (old.source, old.metadata)


def test_a_code_grade_cell_without_kit_checks_fails_the_autograde() -> None:
    nb = _notebook()
    extra = copy.deepcopy(_cell(nb, "check_softmax"))
    extra.metadata.nbgrader["grade_id"] = "check_bonus"
    nb.cells.append(extra)
    # Left without output, nbgrader would give it full marks:
    assert utils.determine_grade(extra) == (10.0, 10.0)
    with pytest.raises(KitGradingError, match="grade cell 'check_bonus' has no checks in the kit"):
        write_verdicts(nb, NO_MAX)


def test_points_are_scaled_when_the_checks_that_ran_are_worth_more_than_the_cell() -> None:
    nb = _notebook()
    _cell(nb, "check_softmax").metadata.nbgrader["points"] = 14  # 08 on CUDA: a 2-point speed check more
    result = _result([_test("softmax", "on CUDA", 13, 14), _test("softmax", "speed on CUDA", 2, 2),
                      _test("softmax_cross_entropy", "xent", 0, 10, "failed", "wrong"), _bonus("bonus", 0, 4)],
                     device="cuda")
    result["tests"][0]["score"] = 13  # 15 of 16
    assert write_verdicts(nb, result)[0]["check_softmax"] == 13.125
    cell = _cell(nb, "check_softmax")
    assert utils.determine_grade(cell) == (13.125, 14.0)
    assert "This cell is worth 14 points, so it records 13.125 (15/16 of them)." in _text(cell)


def test_a_task_whose_checks_all_skipped_fails_the_autograde() -> None:
    result = _result([
        cast(Check, {**_test("softmax", "on CUDA", 0, 0, output="skipped: no CUDA GPU"), "status": "skipped"}),
        _test("softmax_cross_entropy", "xent", 10, 10), _bonus("bonus", 0, 4)], device="cuda")
    with pytest.raises(KitGradingError, match="no check of task 'softmax' ran on this machine"):
        write_verdicts(_notebook(), result)


def test_an_unreadable_notebook_scores_zero_with_its_reason_once() -> None:
    nb = _notebook()
    reason = "07_numerical_stability.ipynb is damaged: cell 3 is not a JSON object. Re-download the release."
    assert write_verdicts(nb, _result([], notes=reason)) == ({cell: 0.0 for cell in CHECK_CELLS}, {})
    first, second = _cell(nb, "check_softmax"), _cell(nb, "check_softmax_cross_entropy")
    assert utils.determine_grade(first) == (0.0, 10.0) and utils.determine_grade(second) == (0.0, 10.0)
    shown = " ".join(_text(first).split())  # wrapped at 100 columns
    assert reason in shown and "damaged" not in _text(second)


def test_text_from_student_code_cannot_drive_a_terminal() -> None:
    nb = _notebook()
    hostile = copy.deepcopy(NO_MAX)
    hostile["tests"][0]["output"] = "Got: \x1b[2J\x1b[31mred\rover"
    write_verdicts(nb, hostile)
    text = _text(_cell(nb, "check_softmax"))
    assert "\x1b" not in text and "\r" not in text and "\\x1b[2J" in text


def test_a_stretch_task_is_extra_credit_and_nbgrader_reads_zero_points() -> None:
    nb = _notebook()
    cell = _cell(nb, "check_log_softmax")
    assert (cell.metadata.nbgrader["points"], cell.metadata["kit"]) == (0, {"bonus": 4})
    cell.metadata["kit"]["bonus"] = 400  # the student's copy: never read; the registry's 4 is
    stretch = [_bonus("matches torch.log_softmax", 2, 2), _bonus("its own backward", 0, 1, "failed", "Got: nan"),
               _bonus("huge logits", 1, 1)]
    recorded, extra = write_verdicts(nb, cast(Results, {**NO_MAX, "tests": [*NO_MAX["tests"][:3], *stretch]}))
    assert recorded["check_log_softmax"] == 0.0 and extra == {"check_log_softmax": 3.0}
    assert utils.determine_grade(cell) == (0.0, 0.0)  # more than 0 would make nbgrader's SaveAutoGrades fail
    text = _text(cell)
    assert "bonus: log_softmax: 3 / 4 extra-credit points" in text and "FAIL 0/1  its own backward (hidden)" in text
    assert "Recorded: 3 extra-credit points (nbgrader counts a stretch task's cell as 0 of 0 points" in text, text
    # on a device where the stretch checks are worth 8, the share of the registry's 4 points
    six_of_eight = cast(Results, {**NO_MAX, "tests": [*NO_MAX["tests"][:3], _bonus("x", 6, 8)]})
    _, extra = write_verdicts(_notebook(), six_of_eight)
    assert extra == {"check_log_softmax": 3.0}


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own, on add_submission
def test_extra_credit_goes_into_the_gradebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", os.environ["PATH"])
    interpreter_bin_first()  # nbgrader makes the database with `alembic` from PATH
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment(CH)
        gb.add_notebook(CH, CH)
        for name, points in (("check_softmax", 10), ("check_log_softmax", 0)):
            gb.add_grade_cell(name, CH, CH, max_score=points, cell_type="code")
        gb.add_student("ada")
        gb.add_submission(CH, "ada")
    record_extra_credit(url, {"notebook": CH, "assignment": CH, "student": "ada"}, {"check_log_softmax": 3.0})
    with Gradebook(url) as gb:
        grades = {g.name: g.extra_credit for g in gb.find_submission_notebook(CH, CH, "ada").grades}
    assert grades == {"check_softmax": None, "check_log_softmax": 3.0}


def test_a_config_copied_before_the_layers_still_names_the_preprocessor() -> None:
    """Courses whose nbgrader_config.py names autograder.nbgrader_autograde.KitAutograde (the path before the
    course layer existed) keep grading with the kit: nbgrader resolves that name to the same preprocessor."""
    from traitlets.utils.importstring import import_item

    from autograder.course.nbgrader.autograde import KitAutograde

    assert import_item("autograder.nbgrader_autograde.KitAutograde") is KitAutograde
    assert "autograder.course.nbgrader.autograde.KitAutograde" in (ROOT / "nbgrader_config.py").read_text()


# A student's exception text: one 20,000-character token with no space to break at, under every check of a task.
TOKEN = "Q" * 20_000
HOSTILE = f"`softmax(logits)` raised an error:\nValueError: {TOKEN}"


def test_long_lines_wrap_and_a_repeated_message_is_shown_once() -> None:
    nb = _notebook()
    result = _result([*(_test("softmax", f"check {i}", 0, 10 / 8, "failed", HOSTILE) for i in range(8)),
                      _test("softmax_cross_entropy", "matches log_softmax", 0, 10, "failed", HOSTILE),
                      _bonus("matches torch.log_softmax", 0, 4, "failed", "not implemented")],
                     notes="Answer cell 'softmax' raised ValueError: " + "word " * 100)
    write_verdicts(nb, result)
    first, second = _text(_cell(nb, "check_softmax")), _text(_cell(nb, "check_softmax_cross_entropy"))
    for text in (first, second, _text(_cell(nb, "check_log_softmax"))):
        assert max(map(len, text.splitlines())) <= 100, "a line Formgrader's <pre> would not wrap"
    assert "".join(line.strip() for line in first.splitlines()).count(TOKEN) == 1  # whole, once
    assert "word word word" in first  # the notes, wrapped at the spaces
    assert first.count("(the same message as under softmax: 'check 0' above)") == 7
    assert "FAIL 0/1.25  check 7 (hidden)" in first
    assert TOKEN[:200] not in second and "(the same message as under softmax: 'check 0' above)" in second
    nbformat.validate(nb)


def test_a_long_error_line_in_messages_about_different_calls_is_shown_once() -> None:
    nb = _notebook()
    calls = [f"`softmax(tensor(shape=[{i}, 5]))` raised an error:\nValueError: {TOKEN}" for i in range(8)]
    write_verdicts(nb, _result([*(_test("softmax", f"check {i}", 0, 10 / 8, "failed", call)
                                  for i, call in enumerate(calls)),
                                _test("softmax_cross_entropy", "xent", 10, 10), _bonus("d", 0, 4)]))
    text = _text(_cell(nb, "check_softmax"))
    assert "".join(line.strip() for line in text.splitlines()).count(TOKEN) == 1
    assert all(f"shape=[{i}, 5]" in text for i in range(8))  # each call still named
    assert text.count("(the same 20012-character line as under softmax: 'check 0' above)") == 7


def test_short_repeated_messages_stay_where_they_are() -> None:
    nb = _notebook()
    write_verdicts(nb, _result([_test("softmax", "a", 0, 4, "failed", NAN_MESSAGE),
                                _test("softmax", "b", 0, 6, "failed", NAN_MESSAGE),
                                _test("softmax_cross_entropy", "c", 10, 10), _bonus("d", 0, 4)]))
    assert _text(_cell(nb, "check_softmax")).count("Subtract the maximum") == 2


@pytest.mark.parametrize("dotted", ["autograder.nbgrader_autograde.KitAutograde",
                                    "autograder.course.nbgrader_autograde.KitAutograde",
                                    "autograder.course.missing_cells.MissingCells"])
def test_the_names_earlier_course_configs_give_still_load_the_preprocessors(dotted: str) -> None:
    """nbgrader_config.py files copied from earlier releases name the preprocessors by these paths."""
    import importlib

    from autograder.course.nbgrader.autograde import KitAutograde
    from autograder.course.nbgrader.missing_cells import MissingCells

    module, name = dotted.rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) in (KitAutograde, MissingCells)


def test_a_result_graded_ahead_is_taken_once_and_only_for_the_very_bytes_nbgrader_grades() -> None:
    """A judge process graded the submission when nbgrader's run began; if the student resubmitted since (other
    bytes), the release or grader changed, or the worker died, nbgrader's own process grades it again."""
    ahead = Ahead()
    job = Job("ada", CH, f"/course/submitted/ada/{CH}/{CH}.ipynb", "a" * 64, fingerprint="f" * 64)
    graded: cf.Future[Results] = cf.Future()
    graded.set_result(_result([_test("softmax", "softmax values", 5, 5)]))
    ahead.futures[("ada", CH, f"{CH}.ipynb")] = ((job.sha256, job.fingerprint), graded)
    assert ahead.take(dataclasses.replace(job, sha256="b" * 64)) is None
    ahead.futures[("ada", CH, f"{CH}.ipynb")] = ((job.sha256, job.fingerprint), graded)
    assert ahead.take(dataclasses.replace(job, student="bea")) is None
    assert ahead.take(dataclasses.replace(job, fingerprint="g" * 64)) is None  # graded before a rebuild
    ahead.futures[("ada", CH, f"{CH}.ipynb")] = ((job.sha256, job.fingerprint), graded)
    assert ahead.take(job) is graded.result()
    assert ahead.take(job) is None
    died: cf.Future[Results] = cf.Future()
    died.set_exception(cf.process.BrokenProcessPool("a worker died"))
    ahead.futures[("ada", CH, f"{CH}.ipynb")] = ((job.sha256, job.fingerprint), died)
    assert ahead.take(job) is None
