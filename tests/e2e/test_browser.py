"""A student in JupyterLab and an instructor in Formgrader, in a real browser (make e2e).

Screenshots of every step go to e2e-screenshots/ (E2E_SCREENSHOTS to move it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import Shots, jupyter_lab
from tests.kit import release_path, solution_code

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
        _replace_and_run(page, xent_cell, solution_code(CH)["softmax_cross_entropy"])
        xent_check = _code_cell(page, "# Visible check for softmax_cross_entropy")
        _run(page, xent_check)
        passed = _output(xent_check).filter(has_text="softmax_cross_entropy: visible checks passed")
        passed.wait_for(timeout=RUN_MS)
        assert "Error" not in _output(xent_check).all_inner_texts()[0]
        xent_check.scroll_into_view_if_needed()
        shot(page, "cross-entropy-check-passes")

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

        # Shift by the row maximum: the check passes and validation succeeds.
        _replace_and_run(page, softmax_cell, solution_code(CH)["softmax"])
        _run(page, softmax_check)
        _output(softmax_check).filter(has_text="softmax: visible checks passed").wait_for(timeout=RUN_MS)
        softmax_check.scroll_into_view_if_needed()
        shot(page, "stable-softmax-check-passes")
        dialog = _validate(page)
        assert "Success! Your notebook passes all the tests." in dialog.inner_text()
        shot(page, "validate-succeeds")
        dialog.get_by_role("button", name="Ok").click()

    # What the browser saved is the student's code.
    saved = json.loads((student / f"{CH}.ipynb").read_text())
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in saved["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    assert answers == solution_code(CH)


def _validate(page: Page) -> Locator:
    page.locator(".jp-NotebookPanel-toolbar").get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
    dialog.wait_for(timeout=300_000)
    return dialog
