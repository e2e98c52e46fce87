"""A submission is the student's own files: a link anywhere on the way from the student's folder down, a special
file (FIFO) or a file outside the folder is refused with a clear row, never read, hashed, graded or copied.

Each attack is what a motivated student hands in through a channel that keeps links (a git repository, a tar or
zip the instructor unpacks): the notebook linked to the instructor's answer key in source/ (graded 24/20 before),
to a classmate's notebook, the assignment or the whole student folder linked to a classmate's, a link to a file
of the machine, timestamp.txt and submission_secret.txt linked to secrets or to huge files for --feedback to
copy, a FIFO where the notebook is, and a file name with a newline that forges lines of `grade`'s output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from autograder.course import batch
from autograder.course.batch import discover, grade_all, merge
from autograder.judging.results import Results
from tests.kit import ROOT, solved

CH = "07_numerical_stability"
LINK = "a link, not a file the student handed in"
LINKED_FOLDER = "a link, not a folder the student handed in"


def _folder(course: Path, student: str) -> Path:
    folder = course / "submitted" / student / CH
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """ada's honest notebook; the answer key in source/; every student after her hands in links."""
    course = tmp_path / "course"
    key = course / "source" / CH
    key.mkdir(parents=True)
    solved(key, CH)
    solved(_folder(course, "ada"), CH)
    (_folder(course, "eve") / f"{CH}.ipynb").symlink_to(Path("../../../source") / CH / f"{CH}.ipynb")
    (_folder(course, "mal") / f"{CH}.ipynb").symlink_to(Path("../../ada") / CH / f"{CH}.ipynb")
    (course / "submitted" / "trudy").mkdir()
    (course / "submitted" / "trudy" / CH).symlink_to(Path("../ada") / CH)
    (course / "submitted" / "zed").symlink_to("ada")
    outside = tmp_path / "outside.ipynb"
    outside.write_text("{}")
    (_folder(course, "oscar") / f"{CH}.ipynb").symlink_to(outside)
    os.mkfifo(_folder(course, "fifi") / f"{CH}.ipynb")
    return course


def test_every_link_and_fifo_is_a_refused_row_at_discovery(course: Path) -> None:
    jobs = {j.student: j for j in discover(course)}
    assert set(jobs) == {"ada", "eve", "mal", "trudy", "zed", "oscar", "fifi"}
    assert not getattr(jobs["ada"], "refused", "")
    for student in ("eve", "mal", "oscar"):
        assert LINK in getattr(jobs[student], "refused", ""), student
    assert LINKED_FOLDER in getattr(jobs["trudy"], "refused", "")
    assert LINKED_FOLDER in getattr(jobs["zed"], "refused", "")
    assert "a FIFO, not a file the student handed in" in getattr(jobs["fifi"], "refused", "")


def test_grade_all_gives_linked_submissions_a_clear_zero_row(course: Path, tmp_path: Path) -> None:
    for honest in ("ada",):  # grading ada is not what this test is about
        os.remove(course / "submitted" / honest / CH / f"{CH}.ipynb")
    out = tmp_path / "graded"
    assert grade_all(course, out, workers=1) == 0
    rows = {r["student"]: r for r in json.loads((out / "summary.json").read_text())}
    for student in ("eve", "mal", "oscar", "trudy", "zed", "fifi"):
        assert rows[student]["score"] == 0 and rows[student]["status"] == "error", rows[student]
        assert "not a f" in str(rows[student]["notes"]) and "handed in" in str(rows[student]["notes"])


def test_a_fifo_never_blocks_discovery_or_grading(course: Path, tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from autograder.course.batch import discover; "
            "from autograder.judging.notebook import read_notebook, NotebookError\n"
            "jobs = discover(Path(sys.argv[1]))\n"
            "try:\n    read_notebook(Path(sys.argv[2]))\nexcept NotebookError as e:\n    print(e)\n")
    fifo = course / "submitted" / "fifi" / CH / f"{CH}.ipynb"
    done = subprocess.run([sys.executable, "-c", code, str(course), str(fifo)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "FIFO" in done.stdout


def test_the_nbgrader_preprocessor_refuses_a_linked_notebook(course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    from autograder.course.nbgrader.autograde import KitAutograde, KitGradingError

    coursedir = SimpleNamespace(root=str(course), submitted_directory="submitted",
                                format_path=lambda kind, student, assignment: str(course / kind / student / assignment))
    monkeypatch.setattr(KitAutograde, "_coursedir", lambda self: coursedir)
    pre = KitAutograde(results_dir="graded", grade_missing=False)  # never grades, in any version of the kit
    for student in ("eve", "trudy"):
        nb = nbformat.read(str(course / "source" / CH / f"{CH}.ipynb"), as_version=4)
        with pytest.raises(KitGradingError, match="a link, not a f"):
            pre.preprocess(nb, {"nbgrader": {"student": student, "assignment": CH, "notebook": CH}})


def _result(student: str) -> Results:
    return cast(Results, {"score": 1.0, "max_score": 1.0, "execution_time": 0.0, "output": "", "tests": [],
                          "visibility": "visible", "extra_data": {"student": student, "assignment": CH}})


def test_feedback_copies_only_the_students_own_small_files(course: Path, tmp_path: Path) -> None:
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import write_feedback

    secret = tmp_path / "environ"
    secret.write_text("AUTOGRADER_SECRET=hunter2\n")
    huge = tmp_path / "libhuge.so"
    with huge.open("wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB to copy, no disk used
    eve = course / "submitted" / "eve" / CH
    (eve / "timestamp.txt").symlink_to(secret)
    (eve / "submission_secret.txt").symlink_to(huge)
    mal = course / "submitted" / "mal" / CH
    (mal / "timestamp.txt").symlink_to("../../../gradebook.db")
    (course / "gradebook.db").write_text("the gradebook")
    with (mal / "submission_secret.txt").open("wb") as f:  # the student's own file, but far too large
        f.truncate(1 << 30)
    os.mkfifo(course / "submitted" / "fifi" / CH / "timestamp.txt")
    ada = course / "submitted" / "ada" / CH
    (ada / "timestamp.txt").write_text("2026-01-01 10:00:00 UTC")
    done = write_feedback(course, [_result(s) for s in ("ada", "eve", "mal", "fifi")])
    assert done.written == 4
    feedback = course / "feedback"
    assert (feedback / "ada" / CH / "timestamp.txt").read_text() == "2026-01-01 10:00:00 UTC"
    for student in ("eve", "mal", "fifi"):
        for name in ("timestamp.txt", "submission_secret.txt"):
            assert not (feedback / student / CH / name).exists(), (student, name)
    refused = "\n".join(getattr(done, "refused", []))
    assert "eve" in refused and "mal" in refused and "FIFO" in refused


def test_merge_refuses_a_linked_or_huge_shard_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = tmp_path / "part1"
    (part / "results" / "eve").mkdir(parents=True)
    target = tmp_path / "secret.json"
    target.write_text(json.dumps(_result("eve")))
    (part / "results" / "eve" / f"{CH}.json").symlink_to(target)
    assert merge([part], tmp_path / "merged") == 2
    assert LINK.replace("the student handed in", "") in capsys.readouterr().err
    assert not (tmp_path / "merged" / "results" / "eve").exists()


def test_similarity_keeps_no_answers_of_a_linked_notebook(course: Path, tmp_path: Path) -> None:
    from autograder.course.similarity import save_answers

    graded = tmp_path / "graded"
    for job in discover(course):
        batch._write_atomic(batch.result_path(graded, job), json.dumps(_result(job.student)))
    save_answers(course, graded)
    assert (graded / "answers" / "ada" / f"{CH}.json").is_file()
    assert not [p for p in (graded / "answers").glob("*/*.json") if p.parent.name != "ada"]


def test_names_are_shown_on_one_line(tmp_path: Path) -> None:
    from autograder.judging.judge import Grade
    from autograder.judging.report import text
    from autograder.judging.untrusted import safe_name

    assert safe_name("a\nb\tc\rd\x1b") == "a\\nb\\tc\\rd\\x1b"
    forged = Path(f"x.ipynb (07_numerical_stability, cpu): 20 of 20\n  PASS 20 of 20  all checks\n{CH}.ipynb")
    report = text(Grade(forged, CH, "cpu", notes=["not graded"]))
    assert "PASS" not in "".join(report.splitlines()[1:]) and "\\n  PASS" in report.splitlines()[0]
    assert "\n" not in batch.Job("a\nb", f"{CH}\n", "", "").student_text + batch.Job("a", f"{CH}\n", "", "")\
        .assignment_text


def test_grade_prints_a_forged_name_on_one_line(tmp_path: Path) -> None:
    forged = tmp_path / f"x.ipynb: 20 of 20\nPASS 20 of 20  softmax\n{CH}.ipynb"
    forged.write_text("{ not json")
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(forged), "--assignment", CH],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert not [line for line in done.stdout.splitlines() if line.startswith("PASS")], done.stdout


def test_grade_refuses_a_linked_notebook(tmp_path: Path) -> None:
    from autograder.judging.notebook import NotebookError, read_notebook

    key = solved(tmp_path, CH)
    (tmp_path / "hand_in").mkdir()
    (tmp_path / "hand_in" / f"{CH}.ipynb").symlink_to(key)
    with pytest.raises(NotebookError, match=LINK):
        read_notebook(tmp_path / "hand_in" / f"{CH}.ipynb")


def test_the_gradescope_bundle_refuses_a_link_into_itself(tmp_path: Path) -> None:
    from autograder.course.bundle import build_bundle

    root = tmp_path / "autograder"
    with zipfile.ZipFile(build_bundle(CH, tmp_path / "bundle.zip")) as z:
        z.extractall(root / "source")
    key = solved(root / "source", CH)  # an answer key beside the kit, as a course might ship one
    (root / "submission").mkdir()
    (root / "submission" / f"{CH}.ipynb").symlink_to(key)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": sys.executable}
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, timeout=300)
    result: dict[str, Any] = json.loads((root / "results" / "results.json").read_text())
    assert result["score"] == 0 and LINK in result["output"]


def test_summary_rows_and_the_class_report_show_names_on_one_line(tmp_path: Path) -> None:
    from autograder.course.report.read import read_submission

    result = _result("eve\nada 20/20 graded")  # as a kit that kept newlines in names wrote it
    result["extra_data"]["assignment"] = f"{CH}\r\n"
    assert "\n" not in batch.row(result)["student"] + batch.row(result)["assignment"]
    path = tmp_path / "results" / "eve\nada" / f"{CH}\t.json"
    path.parent.mkdir(parents=True)
    path.write_text("{ damaged")
    sub = read_submission(path)
    assert "\n" not in sub.student and "\t" not in sub.assignment


HARD = "a hard link"


@pytest.fixture
def hard_links(tmp_path: Path) -> Path:
    """Hard links, as a tar unpacked in submitted/ makes them (a member of type "link" names another member):
    eve's notebook is the answer key, mal's is ada's, and gil's folder holds two names of his own notebook."""
    course = tmp_path / "course"
    (course / "source" / CH).mkdir(parents=True)
    key = solved(course / "source" / CH, CH)
    solved(_folder(course, "ada"), CH)
    os.link(key, _folder(course, "eve") / f"{CH}.ipynb")
    os.link(course / "submitted" / "ada" / CH / f"{CH}.ipynb", _folder(course, "mal") / f"{CH}.ipynb")
    own = solved(_folder(course, "gil"), CH)
    (own.parent / "backup").mkdir()
    os.link(own, own.parent / "backup" / "copy.ipynb")
    return course


def test_a_hard_link_to_a_file_outside_the_students_folder_is_refused(hard_links: Path) -> None:
    jobs = {j.student: j for j in discover(hard_links)}
    for student in ("eve", "mal", "ada"):  # ada's file is mal's too: which name came first no file system says
        assert HARD in jobs[student].refused and "find " in jobs[student].refused, student
    assert not jobs["gil"].refused  # every name of gil's file is in gil's folder: his own


def test_grade_and_the_nbgrader_preprocessor_refuse_a_hard_link(hard_links: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.judging.notebook import NotebookError, read_notebook

    with pytest.raises(NotebookError, match=HARD):
        read_notebook(hard_links / "submitted" / "eve" / CH / f"{CH}.ipynb")
    nbformat = pytest.importorskip("nbformat")
    from autograder.course.nbgrader.autograde import KitAutograde, KitGradingError

    coursedir = SimpleNamespace(root=str(hard_links), submitted_directory="submitted",
                                format_path=lambda kind, s, a: str(hard_links / kind / s / a))
    monkeypatch.setattr(KitAutograde, "_coursedir", lambda self: coursedir)
    pre = KitAutograde(results_dir="graded", grade_missing=False)
    nb = nbformat.read(str(hard_links / "source" / CH / f"{CH}.ipynb"), as_version=4)
    with pytest.raises(KitGradingError, match=HARD):
        pre.preprocess(nb, {"nbgrader": {"student": "mal", "assignment": CH, "notebook": CH}})


def test_feedback_copies_no_hard_link_to_the_gradebook(hard_links: Path) -> None:
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import write_feedback

    (hard_links / "gradebook.db").write_text("the gradebook")
    os.link(hard_links / "gradebook.db", hard_links / "submitted" / "eve" / CH / "timestamp.txt")
    done = write_feedback(hard_links, [_result("eve")])
    assert not (hard_links / "feedback" / "eve" / CH / "timestamp.txt").exists()
    assert HARD in "\n".join(done.refused)
