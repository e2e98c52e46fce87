"""What an instructor sees in Formgrader after grading again from the command line (make e2e).

A resubmission over grades given by hand in Formgrader waits for the instructor's choice, then keeps or clears
them; a release edited after grading is refused by `build` while its points disagree with the checks, and its
results, named by grade-all, are graded again with --regrade; the autograded copy that Formgrader shows keeps
the lesson's hints openable. Screenshots go to e2e-screenshots/ (E2E_SCREENSHOTS to move it).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.conftest import Lab, Shots, formgrader, jupyter_lab, nbgrader, server_env
from tests.e2e.test_browser import CH, COMMENT, NAIVE_SOFTMAX, _ok, _submit
from tests.kit import ROOT, solution_cells

if TYPE_CHECKING:
    from playwright.sync_api import Frame, FrameLocator, Locator, Page

pytestmark = pytest.mark.e2e

NAIVE = {**solution_cells(CH), "softmax": NAIVE_SOFTMAX}  # 19 / 22: 3 of softmax's 6 points
SOLVED = solution_cells(CH)  # 22 / 22
# ada keeps what she was given by hand on her resubmission, bob's is cleared
STUDENTS = {"ada": ("Ada", "Lovelace"), "bob": ("Bob", "Babbage")}
RESUBMITTED = "2026-11-21 09:30:00.000000 UTC"
GRADE_ALL = ("grade-all", ".", "--gradebook", "--workers", "1")
# A take-away the instructor adds to the release after grading (the outro is a locked lesson cell: nbgrader's
# autograde puts the release's text into the autograded copy, which Formgrader shows).
REVISED = "When in doubt, compare with the same computation in float64."


@pytest.fixture(autouse=True)
def _one_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """One grading secret for the server and every command of the test (server_env makes one per call else)."""
    monkeypatch.setenv("AUTOGRADER_SECRET", secrets.token_hex(32))


def _kit(course: Path, home: Path, *args: str) -> tuple[int, str]:
    """`python -m autograder ARGS` run in the course folder: its exit status and what it said, on one line."""
    done = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=course, env=server_env(home),
                          capture_output=True, text=True, timeout=300)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def _submissions(fg: FrameLocator, frame: Frame, lab: Lab) -> None:
    """Manage Submissions of the assignment, loaded afresh (the command line wrote the gradebook)."""
    frame.goto(f"{lab.url}/formgrader/manage_submissions/{CH}")
    fg.locator("#main-table td.student-id").first.wait_for()


def _row(fg: FrameLocator, student: str) -> Locator:
    return fg.locator("#main-table tr").filter(has=fg.locator("td.student-id", has_text=re.compile(f"^{student}$")))


def _grading_page(fg: FrameLocator, frame: Frame, lab: Lab, course: Path, student: str) -> None:
    """Formgrader's manual grading page of the student's notebook, its grades and comments loaded."""
    from nbgrader.api import Gradebook
    from playwright.sync_api import expect

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook_id = gb.find_submission_notebook(CH, CH, student).id
    frame.goto(f"{lab.url}/formgrader/submissions/{notebook_id}")
    expect(fg.locator("#softmax-comment")).to_have_attribute("placeholder", re.compile("."))  # comments loaded
    expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", re.compile("."))  # grades loaded


def _check_cell(fg: FrameLocator) -> Locator:
    """check_softmax's cell on the manual grading page, scrolled to the top under Formgrader's fixed bar."""
    cell = fg.locator("div.cell").filter(has=fg.locator(".nbgrader_cell code", has_text="check_softmax")).first
    cell.evaluate("cell => { cell.scrollIntoView({block: 'start'}); window.scrollBy(0, -80); }")
    return cell


def _saved(page: Page, what: str, field: Locator, value: str) -> None:
    """Type a grade or comment into Formgrader and wait until its API stored it."""
    with page.expect_response(lambda r: f"/formgrader/api/{what}/" in r.url and r.request.method == "PUT"):
        field.fill(value)
        field.press("Tab")


def test_a_resubmission_over_manual_grades_is_held_then_kept_or_cleared(page: Page, course: Path,
                                                                         tmp_path: Path) -> None:
    from playwright.sync_api import expect

    shot = Shots("resubmission")
    home = tmp_path / "jupyter"
    nbgrader(course, home, "generate_assignment", CH, "--force")
    for student, name in STUDENTS.items():
        _submit(course, student, NAIVE, name)

    with jupyter_lab(course, home) as lab:
        fg, frame = formgrader(page, lab, CH)
        fg.locator("#main-table tr").filter(has_text=CH).locator("td.num-submissions a").click()

        # Autograded in Formgrader: 3 of softmax's 6 points each.
        for student in STUDENTS:
            _row(fg, student).locator("td.autograde a").click()
            _ok(fg.locator("#success-modal"), f"Successfully autograded '{CH}' for student '{student}'")
            expect(_row(fg, student).locator("td.score")).to_have_text("19 / 22")

        # By hand, on each: one point of extra credit on check_softmax, and a comment on the answer.
        for student in STUDENTS:
            _grading_page(fg, frame, lab, course, student)
            expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", "3")
            _saved(page, "grade", fg.locator("#check_softmax_extra_credit"), "1")
            _saved(page, "comment", fg.locator("#softmax-comment"), COMMENT)
        _submissions(fg, frame, lab)
        for student in STUDENTS:
            expect(_row(fg, student).locator("td.score")).to_have_text("20 / 22")
        shot(page, "graded-by-hand-20-of-22")

        # ada hands in her fixed softmax: grade-all grades it and holds it, naming what she was given by hand.
        _submit(course, "ada", SOLVED, STUDENTS["ada"], RESUBMITTED)
        rc, said = _kit(course, home, *GRADE_ALL)
        assert rc == 3, said
        assert "0 submissions recorded by nbgrader autograde, 1 already recorded" in said, said
        assert "1 changed notebooks not recorded" in said and "--manual-grades keep" in said, said
        assert f"ada/{CH}: check_softmax +1 extra credit, a comment on softmax" in said, said
        # Formgrader, as nbgrader does for any notebook handed in after the record, lists it as waiting (its
        # Autograde button would carry the grades given by hand over: grade-all's choice is the way on).
        _submissions(fg, frame, lab)
        expect(_row(fg, "ada").locator("td.status")).to_have_text("needs autograding")
        expect(_row(fg, "ada").locator("td.score")).to_have_text("")
        expect(_row(fg, "ada").locator("td.timestamp")).to_contain_text("2026-11-21")
        expect(_row(fg, "bob").locator("td.score")).to_have_text("20 / 22")
        shot(page, "resubmission-held-needs-autograding")

        # Kept: the new auto score, 22, and the extra credit on top: above the maximum, which grade-all says.
        rc, said = _kit(course, home, *GRADE_ALL, "--manual-grades", "keep")
        assert rc == 0, said
        assert "1 submissions recorded by nbgrader autograde, 1 already recorded" in said, said
        assert f"kept for 1 changed notebooks (review them in Formgrader): ada/{CH}" in said, said
        assert "1 scores in the gradebook are above the maximum, raised by manual grading in Formgrader (check " \
               f"they are meant): ada/{CH}: 23 / 22 (check_softmax: +1 extra credit)" in said, said

        # Cleared: bob hands in his fixed softmax too; his new auto score alone, no comment.
        _submit(course, "bob", SOLVED, STUDENTS["bob"], RESUBMITTED)
        rc, said = _kit(course, home, *GRADE_ALL, "--manual-grades", "clear")
        assert rc == 0, said
        assert "1 submissions recorded by nbgrader autograde, 1 already recorded" in said, said
        assert f"cleared for 1 changed notebooks: bob/{CH}: check_softmax +1 extra credit, a comment on " \
               "softmax" in said, said
        assert f"ada/{CH}: 23 / 22" in said and f"bob/{CH}: 2" not in said, said  # ada's warning stands alone

        _submissions(fg, frame, lab)
        for student, score in (("ada", "23 / 22"), ("bob", "22 / 22")):
            expect(_row(fg, student).locator("td.score")).to_have_text(score)
            expect(_row(fg, student).locator("td.timestamp")).to_contain_text("2026-11-21")
            expect(_row(fg, student).locator("td.status")).to_have_text("graded")
        shot(page, "kept-23-cleared-22-of-22")

        # The manual grading pages: the new notebook's checks (6 / 6) under each; ada's +1 and comment kept,
        # bob's gone.
        for student, extra, comment in (("ada", "1", COMMENT), ("bob", "", "")):
            _grading_page(fg, frame, lab, course, student)
            expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", "6")
            expect(fg.locator("#check_softmax")).to_have_value("")  # no manual score: the auto score counts
            expect(fg.locator("#check_softmax_extra_credit")).to_have_value(extra)
            expect(fg.locator("#softmax-comment")).to_have_value(comment)
            text = _check_cell(fg).locator(".output_area").first.inner_text()
            assert "softmax: 6 / 6 points" in text, text
            shot(page, f"{student}-check-softmax-6-of-6")
            fg.locator("#softmax-comment").evaluate(
                "box => { box.scrollIntoView({block: 'center'}); }")
            shot(page, f"{student}-softmax-comment")


def _cell(nb: dict[str, Any], grade_id: str) -> dict[str, Any]:
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def _points(nb: dict[str, Any]) -> dict[str, float]:
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"] for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade")}


def _hint_marker(fg: FrameLocator, page: Page, shot: Shots) -> None:
    """The lesson's first hint on the manual grading page: a summary with its disclosure marker, which opens."""
    from playwright.sync_api import expect

    hint = fg.locator("details > summary", has_text=re.compile(r"^\s*Hint 1\s*$")).first
    details = hint.locator("xpath=..")
    hint.evaluate("s => { s.scrollIntoView({block: 'center'}); }")
    # How the summary is laid out, and a bare <details><summary> put beside it as a control: Bootstrap 3's
    # `summary {display: block}` takes the marker away from a summary the kit did not mark.
    measure = """s => {
        const box = s.getBoundingClientRect(), text = document.createRange();
        text.selectNodeContents(s);
        const c = getComputedStyle(s);
        return {display: c.display, marker: c.listStyleType, open: s.parentElement.open,
                indent: Math.round(text.getBoundingClientRect().left - box.left), text: s.innerText.trim()};
    }"""
    closed = hint.evaluate(measure)
    bare = hint.evaluate(f"""s => {{
        const d = document.createElement('details');
        d.innerHTML = '<summary>Hint 1</summary><p>x</p>';
        s.parentElement.after(d);
        const got = ({measure})(d.firstChild);
        d.remove();
        return got;
    }}""")
    assert closed["display"] == "list-item" and closed["marker"] == "disclosure-closed", closed
    assert closed["text"] == "Hint 1" and closed["open"] is False, closed
    assert bare["display"] == "block" and bare["indent"] == 0, bare  # Bootstrap's rule, without the kit's style
    assert closed["indent"] >= 8, closed  # the triangle's room before the words
    expect(details.get_by_text("The figure above says two things")).to_be_hidden()
    shot(page, "hints-closed-with-markers")
    hint.click()
    opened = hint.evaluate(measure)
    assert opened["open"] is True and opened["marker"] == "disclosure-open", opened
    expect(details.get_by_text("The figure above says two things")).to_be_visible()
    shot(page, "hint-1-opened")


def test_an_edited_release_is_refused_by_build_then_regraded(page: Page, course: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    shot = Shots("edited-release")
    home = tmp_path / "jupyter"
    # The course is a checkout of the kit, as the repository is: `python -m autograder build` builds the
    # checkout it runs from, so the copy's, never the repository's.
    shutil.copytree(ROOT / "autograder", course / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    source = course / "source" / CH / f"{CH}.ipynb"
    written = json.loads(source.read_text())
    in_repository = (ROOT / "source" / CH / f"{CH}.ipynb").read_bytes()
    nbgrader(course, home, "generate_assignment", CH, "--force")
    _submit(course, "ada", NAIVE)
    rc, said = _kit(course, home, *GRADE_ALL)
    assert rc == 0 and "1 submissions recorded by nbgrader autograde" in said, said

    # The instructor edits check_softmax's points, 6 -> 8, and adds a take-away: build refuses the points.
    edited = json.loads(json.dumps(written))
    _cell(edited, "check_softmax")["metadata"]["nbgrader"]["points"] = 8
    outro = _cell(edited, "outro")
    outro["source"] = "".join(outro["source"]) + f"\n* {REVISED}"
    source.write_text(json.dumps(edited, indent=1))
    release = course / "release" / CH / f"{CH}.ipynb"
    registry = course / "autograder" / "chapters" / "chapters.json"
    before = release.read_bytes(), registry.read_bytes()
    rc, said = _kit(course, home, "build", CH)
    assert rc == 1, said
    assert f"source/{CH}/{CH}.ipynb: task 'softmax': its checks carry 6 points, its check cell in the notebook 8" \
           in said, said
    assert "nothing was built" in said, said
    assert (release.read_bytes(), registry.read_bytes()) == before
    assert not (course / "solutions").exists() and not (course / "examples").exists()

    # The points set back as the checks carry them; the take-away stays.
    _cell(edited, "check_softmax")["metadata"]["nbgrader"]["points"] = 6
    source.write_text(json.dumps(edited, indent=1))

    with jupyter_lab(course, home) as lab:
        fg, frame = formgrader(page, lab, CH)
        # Released again with Formgrader's Generate (nbgrader generate_assignment --force).
        fg.locator("#main-table tr").filter(has_text=CH).locator("td.assign a").click()
        _ok(fg.locator("#success-modal"), f"Successfully created the student version of '{CH}'")
        assert REVISED in release.read_text()

        # grade-all names ada's result, graded with the release before, and lets it stand.
        rc, said = _kit(course, home, *GRADE_ALL)
        assert rc == 0, said
        assert "1 results were graded with another release or grader than today's" in said, said
        assert f"Rerun with --regrade to grade them again (--gradebook then records the new scores): ada/{CH}" \
               in said, said
        assert "1 submissions, 1 already graded, 0 to grade" in said, said
        assert "0 submissions recorded by nbgrader autograde, 1 already recorded" in said, said
        revised = fg.locator(".text_cell_render").filter(has_text=REVISED)
        _grading_page(fg, frame, lab, course, "ada")
        expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", "3")
        expect(fg.locator(".text_cell_render").filter(has_text="Take-aways")).to_have_count(1)
        expect(revised).to_have_count(0)  # the record made from the release before
        fg.locator(".text_cell_render").filter(has_text="Take-aways").evaluate(
            "cell => { cell.scrollIntoView({block: 'center'}); }")
        shot(page, "named-not-regraded-take-aways-as-before")

        # --regrade: graded again and recorded; Formgrader shows the regraded record.
        rc, said = _kit(course, home, *GRADE_ALL, "--regrade")
        assert rc == 0, said
        assert "1 submissions, 0 already graded, 1 to grade" in said, said
        assert "1 submissions recorded by nbgrader autograde, 0 already recorded" in said, said
        assert "another release" not in said, said
        _submissions(fg, frame, lab)
        expect(_row(fg, "ada").locator("td.score")).to_have_text("19 / 22")
        expect(_row(fg, "ada").locator("td.status")).to_have_text("graded")
        shot(page, "regraded-19-of-22")
        _grading_page(fg, frame, lab, course, "ada")
        expect(fg.locator("#check_softmax")).to_have_attribute("placeholder", "3")
        expect(fg.locator("#check_softmax_cross_entropy")).to_have_attribute("placeholder", "6")
        text = _check_cell(fg).locator(".output_area").first.inner_text()
        assert "softmax: 3 / 6 points" in text and "found nan (not a number)" in text, text
        shot(page, "regraded-check-softmax-3-of-6")
        expect(revised).to_have_count(1)  # the autograded copy now follows the release it was graded with
        revised.evaluate("cell => { cell.scrollIntoView({block: 'center'}); }")
        shot(page, "regraded-with-the-revised-take-aways")

        _hint_marker(fg, page, shot)

    # What the instructor wrote stays: the check cells' points as before the edit, the take-away added; the
    # repository's source untouched.
    now = json.loads(source.read_text())
    assert _points(now) == _points(written) and REVISED in "".join(_cell(now, "outro")["source"])
    assert (ROOT / "source" / CH / f"{CH}.ipynb").read_bytes() == in_repository
