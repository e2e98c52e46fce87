"""Long messages wrap where an instructor or a student reads them (make e2e).

A submission whose softmax raises an error with a 20,000-character token (no space to break at) is
autograded by the kit through nbgrader; Formgrader's manual grading page, nbgrader's feedback page, the
kit's own feedback page and the class report are opened in chromium, and no output box may be wider
than the box that holds it (its scrollWidth at most its clientWidth), nor the page wider than the window.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import Shots, jupyter_lab, nbgrader
from tests.e2e.test_browser import CH, STUDENT, _submit
from tests.kit import solution_cells

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e

TOKEN = "Q" * 20_000
HOSTILE_SOFTMAX = '''def softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    raise ValueError("Q" * 20_000)  # the message is long, the student's source line is not
'''
# Output boxes of nbconvert's classic template (Formgrader and nbgrader's feedback: code cells' sources are
# code, which scrolls), and the kit's pages' cells and messages.
OUTPUTS = ".output_subarea, .output_area pre"
KIT_BOXES = "td, pre, .msg"
WIDTHS = (1400, 1000)  # the rig's window, and Formgrader's column as the reviewer saw it


def overflowing(page: Page, boxes: str) -> list[str]:
    """Boxes (and the page itself) whose content is wider than they are."""
    return page.evaluate(
        """sel => {
            const wide = [...document.querySelectorAll(sel)].filter(e => e.scrollWidth > e.clientWidth + 1)
                .map(e => `${e.tagName}.${e.className} in ${e.parentElement.className}: ${e.scrollWidth} > `
                          + `${e.clientWidth}: ${e.innerText.slice(0, 80)}`);
            const doc = document.documentElement;
            if (doc.scrollWidth > window.innerWidth + 1) wide.push(`page: ${doc.scrollWidth} > ${window.innerWidth}`);
            return wide;
        }""", boxes)


def assert_wraps(page: Page, shot: Shots, step: str, boxes: str = OUTPUTS) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        assert overflowing(page, boxes) == [], f"{step} at {width} px"
        shot(page, f"{step}-{width}px")


def test_formgrader_and_feedback_pages_wrap_a_hostile_error(page: Page, course: Path, tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    shot = Shots("wrapping")
    home = tmp_path / "jupyter"
    nbgrader(course, home, "generate_assignment", CH, "--force")
    _submit(course, STUDENT, {"softmax": HOSTILE_SOFTMAX,
                              "softmax_cross_entropy": solution_cells(CH)["softmax_cross_entropy"]})
    nbgrader(course, home, "autograde", CH, "--student", STUDENT)
    nbgrader(course, home, "generate_feedback", CH, "--student", STUDENT)

    page.goto((course / "feedback" / STUDENT / CH / f"{CH}.html").as_uri())
    body = page.locator("body").inner_text()
    assert "QQQQQQQQ" in body and "-character line as under softmax:" in body, body[:3000]  # shown once
    page.get_by_text("the kit's checks", exact=False).first.scroll_into_view_if_needed()  # for the screenshots
    assert_wraps(page, shot, "nbgrader-feedback")

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook_id = gb.find_submission_notebook(CH, CH, STUDENT).id
    with jupyter_lab(course, home) as lab:
        page.goto(lab.at(f"/formgrader/submissions/{notebook_id}/?index=0"))
        check = page.locator("div.cell").filter(has=page.locator(".nbgrader_cell code", has_text="check_softmax"))
        check.first.wait_for()
        assert "QQQQQQQQ" in check.first.inner_text()
        check.first.locator(".output_area").first.scroll_into_view_if_needed()
        assert_wraps(page, shot, "formgrader-manual-grading")


def test_the_kits_own_pages_wrap_a_hostile_error(page: Page, tmp_path: Path) -> None:
    from autograder.course.nbgrader.gradebook import feedback_html
    from autograder.course.report import write_report
    from tests.course.test_class_report import softmax_result, write

    shot = Shots("wrapping-kit")
    message = f"`softmax(logits)` raised an error:\nValueError: {TOKEN}"
    result = softmax_result(TOKEN[:3000], [("failed", message), ("failed", message), ("passed", "")], output=message)
    graded = tmp_path / "graded"
    write(graded, result, folder="hostile")
    write(graded, softmax_result("ada", [("passed", ""), ("passed", ""), ("passed", "")]))
    page.goto(write_report(graded).as_uri())
    assert "QQQQQQQQ" in page.locator("body").inner_text()
    assert_wraps(page, shot, "class-report", KIT_BOXES)

    feedback = tmp_path / "feedback.html"
    feedback.write_text(feedback_html(copy.deepcopy(result)), encoding="utf-8")  # type: ignore[arg-type]
    page.goto(feedback.as_uri())
    assert_wraps(page, shot, "kit-feedback", KIT_BOXES)
