"""A student in JupyterLab and an instructor in Formgrader, in a real browser (make e2e).

Screenshots of every step go to e2e-screenshots/ (E2E_SCREENSHOTS to move it).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import Shots, formgrader, jupyter_lab, nbgrader
from tests.kit import release_path, solution_cells, write_submission

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.e2e

CH = "07_numerical_stability"
# The textbook softmax: no max subtraction, so exp(1000) overflows to inf and inf / inf is nan.
NAIVE_SOFTMAX = '''def softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `logits` along `dim`."""
    e = torch.exp(logits)
    return e / e.sum(dim=dim, keepdim=True)
'''
RUN_MS = 120_000  # one cell, torch's first import included
VALIDATE_MS = AUTOGRADE_MS = 300_000  # nbgrader runs the whole notebook; the kit grades it in its sandbox
STUDENT = "ada"
COMMENT = "Subtract each row's maximum before exp: exp(1000) overflows float32 to inf, and inf / inf is nan."


def _code_cell(page: Page, text: str) -> Locator:
    """The one code cell whose source contains `text`."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has=page.locator(".jp-InputArea", has_text=text))
    cell.first.wait_for()
    assert cell.count() == 1, f"{cell.count()} code cells contain {text!r}"
    return cell


def _output(cell: Locator) -> Locator:
    return cell.locator(".jp-OutputArea-output")


def _replace_and_run(page: Page, cell: Locator, code: str) -> None:
    """Type `code` over the cell's source and run it (Shift+Enter); the kernel runs cells in order."""
    cell.locator(".cm-content").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)
    page.keyboard.press("Shift+Enter")


def _run(page: Page, cell: Locator) -> None:
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Shift+Enter")


def test_student_runs_fixes_checks_and_validates(page: Page, tmp_path: Path) -> None:
    shot = Shots("student")
    student = tmp_path / "student"
    student.mkdir()
    shutil.copy(release_path(CH), student)
    with jupyter_lab(student, tmp_path / "jupyter") as lab:
        page.goto(lab.at("/lab"))
        page.locator(".jp-DirListing-item").filter(has_text=f"{CH}.ipynb").dblclick()
        page.locator(".jp-NotebookPanel .jp-Notebook").wait_for()
        page.locator(".jp-NotebookPanel-toolbar").get_by_text("Python 3 (ipykernel)").wait_for()
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
        shot(page, "opened-release-notebook")

        # Run everything: execution stops at the first stub.
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        softmax_cell = _code_cell(page, "def softmax(logits")
        softmax_check = _code_cell(page, "# Visible check for softmax.")
        stub_error = _output(softmax_check).filter(has_text="NotImplementedError")
        stub_error.wait_for(timeout=RUN_MS)
        assert "not implemented yet: replace this line" in stub_error.inner_text()
        softmax_check.scroll_into_view_if_needed()
        shot(page, "run-all-stops-at-the-softmax-stub")

        # Fix the cross-entropy stub: its visible check passes.
        xent_cell = _code_cell(page, "def softmax_cross_entropy(labels")
        _replace_and_run(page, xent_cell, solution_cells(CH)["softmax_cross_entropy"])
        xent_check = _code_cell(page, "# Visible check for softmax_cross_entropy")
        _run(page, xent_check)
        passed = _output(xent_check).filter(has_text="softmax_cross_entropy: visible checks passed")
        passed.wait_for(timeout=RUN_MS)
        xent_check.scroll_into_view_if_needed()
        shot(page, "cross-entropy-check-passes")
        for task, banner in (("log_softmax", "# Visible check for log_softmax"),
                             ("robust_loss", "# Visible check for robust_loss")):  # the other two tasks, solved
            _replace_and_run(page, _code_cell(page, f"def {task}(" if task == "robust_loss" else "class LogSoftmax("),
                             solution_cells(CH)[task])
            check = _code_cell(page, banner)
            if task == "robust_loss":  # Run All stopped above the lesson cells its check uses: run them
                for lesson in ("def padded_batch():", "def first_nan(loss_fn):"):
                    _run(page, _code_cell(page, lesson))
            _run(page, check)
            _output(check).filter(has_text=f"{task}: visible checks passed").wait_for(timeout=RUN_MS)

        # The textbook softmax: its visible check fails and says why.
        _replace_and_run(page, softmax_cell, NAIVE_SOFTMAX)
        _run(page, softmax_check)
        failed = _output(softmax_check).filter(has_text="AssertionError")
        failed.wait_for(timeout=RUN_MS)
        assert "softmax([1000., 0.]) gave tensor([nan, 0.])" in failed.inner_text()
        softmax_check.scroll_into_view_if_needed()
        shot(page, "naive-softmax-check-fails-with-nan")

        # Validate (it saves first): nbgrader names the failing check cell and its message.
        dialog = _validate(page)
        text = dialog.inner_text()
        assert "The following cell failed" in text and "gave tensor([nan, 0.])" in text, text
        assert "Success!" not in text
        dialog.locator(".jp-Dialog-body").evaluate("body => body.scrollTop = body.scrollHeight")  # to the message
        shot(page, "validate-fails-on-the-softmax-check")
        dialog.get_by_role("button", name="Ok").click()
        dialog.wait_for(state="detached")

        # Shift by the row maximum: the check passes and validation succeeds.
        _replace_and_run(page, softmax_cell, solution_cells(CH)["softmax"])
        _run(page, softmax_check)
        _output(softmax_check).filter(has_text="softmax: visible checks passed").wait_for(timeout=RUN_MS)
        softmax_check.scroll_into_view_if_needed()
        shot(page, "stable-softmax-check-passes")
        dialog = _validate(page)
        assert "Success! Your notebook passes all the tests." in dialog.inner_text()
        shot(page, "validate-succeeds")
        dialog.get_by_role("button", name="Ok").click()
        dialog.wait_for(state="detached")

    # What the browser saved is the student's code, and Validate passed.
    def answers(path: Path) -> dict[str, str]:
        cells = json.loads(path.read_text())["cells"]
        return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in cells
                if c["metadata"].get("nbgrader", {}).get("solution")}

    solved = {task: solution_cells(CH)[task] for task in ("softmax", "softmax_cross_entropy", "log_softmax",
                                                          "robust_loss")}
    assert answers(student / f"{CH}.ipynb") == {**answers(release_path(CH)), **solved}


def _validate(page: Page) -> Locator:
    page.locator(".jp-NotebookPanel-toolbar").get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
    dialog.wait_for(timeout=VALIDATE_MS)
    return dialog


def _submit(course: Path, student: str, cells: dict[str, str], name: tuple[str, str] = ("Ada", "Lovelace"),
            when: str = "2026-11-20 10:00:00.000000 UTC") -> None:
    """A submission as `nbgrader collect` leaves it (a resubmission replaces the one before), and the student in
    the gradebook with a name."""
    from nbgrader.api import Gradebook

    folder = course / "submitted" / student / CH
    folder.mkdir(parents=True, exist_ok=True)
    write_submission(folder, CH, cells)
    (folder / "timestamp.txt").write_text(when)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_student(student, first_name=name[0], last_name=name[1])


def _ok(modal: Locator, message: str, while_open: Callable[[], object] = lambda: None) -> None:
    """Wait for Formgrader's result dialog, check its message, and close it."""
    modal.wait_for(timeout=AUTOGRADE_MS)
    ok = modal.get_by_role("button", name="OK")
    ok.hover()  # waits until the button stands still: Bootstrap's slide-in is over
    assert message in modal.inner_text(), modal.inner_text()
    while_open()
    ok.click()
    modal.wait_for(state="detached")


def test_instructor_autogrades_adjusts_and_gives_feedback(page: Page, course: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect  # waits for Formgrader's scripts, which fill the page after it loads

    shot = Shots("instructor")
    home = tmp_path / "jupyter"
    nbgrader(course, home, "generate_assignment", CH, "--force")
    _submit(course, STUDENT, {**solution_cells(CH), "softmax": NAIVE_SOFTMAX})

    with jupyter_lab(course, home) as lab:
        fg, _ = formgrader(page, lab, CH)
        fg.locator("#main-table tr").filter(has_text=CH).locator("td.num-submissions a").click()

        # Manage Submissions: collected, not yet graded.
        row = fg.locator("#main-table tr").filter(has_text=STUDENT)
        expect(row.locator("td.status")).to_have_text("needs autograding")
        expect(row.locator("td.score")).to_have_text("")
        shot(page, "submission-needs-autograding")

        # Autograde: the kit's partial credit, 3/6 for the textbook softmax and full marks for the rest.
        row.locator("td.autograde a").click()
        _ok(fg.locator("#success-modal"), f"Successfully autograded '{CH}' for student '{STUDENT}'")
        expect(row.locator("td.score")).to_have_text("19 / 22")
        expect(row.locator("td.status")).to_have_text("graded")
        shot(page, "autograded-19-of-22")

        # Manual grading: each check cell shows the kit's checks and messages.
        fg.get_by_role("link", name="Manual Grading").click()
        fg.locator("#main-table").get_by_role("link", name=CH, exact=True).click()  # the assignment
        fg.locator("#main-table").get_by_role("link", name=CH, exact=True).click()  # its notebook
        fg.locator("#main-table").get_by_role("link", name="Submission #1").click()
        check = fg.locator("div.cell").filter(has=fg.locator(".nbgrader_cell code", has_text="check_softmax")).first
        check.wait_for()
        expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", "3")  # the auto score
        expect(fg.locator("#check_softmax_cross_entropy")).to_have_attribute("placeholder", "6")
        expect(fg.locator("#softmax-comment")).to_have_attribute("placeholder", re.compile("."))  # comments loaded
        text = check.locator(".output_area").first.inner_text()
        assert "softmax: 3 / 6 points" in text, text
        assert "found nan (not a number)" in text and "overflows" in text, text
        assert "Recorded: 3 of 6 points, the number below; a score set by hand in Formgrader" in text, text
        # The cell's score box (auto score 3) at the top, under Formgrader's fixed bar, the messages below.
        check.evaluate("cell => { cell.scrollIntoView({block: 'start'}); window.scrollBy(0, -80); }")
        shot(page, "manual-grading-shows-the-kit-messages")

        # One point of extra credit on check_softmax, and a comment on the answer.
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"):
            fg.locator("#check_softmax_extra_credit").fill("1")
            fg.locator("#check_softmax_extra_credit").press("Tab")
        with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT"):
            fg.locator("#softmax-comment").fill(COMMENT)
            fg.locator("#softmax-comment").press("Tab")
        fg.locator("#softmax-comment").scroll_into_view_if_needed()
        shot(page, "extra-credit-and-comment")

        fg.locator(".breadcrumb").get_by_role("link", name="Manual Grading").click()
        fg.get_by_role("link", name="Manage Assignments").click()
        fg.locator("#main-table tr").filter(has_text=CH).locator("td.num-submissions a").click()
        expect(row.locator("td.score")).to_have_text("20 / 22")
        shot(page, "adjusted-20-of-22")

        # Generate feedback, then read it as the student will.
        row.locator("td.generate-feedback a").click()
        _ok(fg.locator("#success-modal"), f"Successfully generated feedback for '{CH}' for student '{STUDENT}'",
            lambda: shot(page, "feedback-generated"))
        page.goto(lab.at(f"/files/feedback/{STUDENT}/{CH}/{CH}.html"))
        assert f"{CH} (Score: 20.0 / 22.0)" in page.locator("body").inner_text()
        shot(page, "feedback-score")
        page.locator("a[href='#comment-softmax']").click()  # log_softmax has one too
        cell = page.locator(".panel").filter(has=page.locator("code", has_text="check_softmax")).first
        assert "Score: 4.0 / 6.0" in cell.inner_text()  # 3 from the kit, 1 extra credit
        body = page.locator("body").inner_text()
        assert COMMENT in body and "softmax: 3 / 6 points" in body and "found nan (not a number)" in body
        shot(page, "feedback-comment-and-messages")
