"""Seeds: students cannot reroll their hidden inputs by editing a comment, and regrading is identical.

With the student known (grade-all's folder name, --student, Gradescope's metadata) the seed is
HMAC(course secret, student and assignment); otherwise HMAC(course secret, the answer cells' code
without comments, blank lines or spacing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NoReturn

import pytest

from autograder.course import batch
from autograder.judging import judge
from autograder.judging.notebook import Submission, load_submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.seeds import normalized_code, secret_seed, student_from_gradescope
from tests import forked
from tests.kit import ROOT, grade_fast, solution_cells, write_submission

CH = "07_numerical_stability"
# Wrong in the same way (it ignores `dim`), written differently: the failure shows the same inputs
# exactly when both get the same seed.
WRONG_DIM = "def softmax(logits, dim=-1):\n    return torch.softmax(logits, -1)\n"
WRONG_DIM_AGAIN = "def softmax(logits, dim=-1):\n    last = -1\n    return torch.softmax(logits, last)\n"


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOGRADER_SECRET", "a course secret")


def _with_softmax(directory: Path, code: str, name: str) -> Path:
    return write_submission(directory, CH, {**solution_cells(CH), "softmax": code}, name=name)


def _seed(path: Path, assignment: str | None = None, student: str | None = None) -> int:
    return secret_seed(load_submission(path, assignment), student)


def test_comments_blank_lines_and_spacing_do_not_reroll_the_inputs(tmp_path: Path) -> None:
    plain = _with_softmax(tmp_path, WRONG_DIM, "a.ipynb")
    edited = WRONG_DIM.replace("\n    return", "  # my softmax   \n\n    # one more try\n    return") + "\n# end\n"
    assert _seed(plain) == _seed(_with_softmax(tmp_path, edited, "b.ipynb"))
    assert _seed(plain) != _seed(_with_softmax(tmp_path, WRONG_DIM_AGAIN, "c.ipynb"))


def test_the_seeds_are_the_ones_every_earlier_grading_had(tmp_path: Path) -> None:
    """Regrading a class gives each student the inputs they had: these values were computed before the seed
    took a loaded submission instead of a notebook path, and must never change."""
    chapter = CHAPTERS[CH]
    cells = [{"id": "softmax", "source": WRONG_DIM},
             {"id": "softmax_cross_entropy", "source": "def softmax_cross_entropy(logits, target):\n"
                                                       "    raise NotImplementedError\n"}]
    assert secret_seed(Submission(tmp_path / "a.ipynb", chapter, cells)) == 1176438628785443862
    assert secret_seed(Submission(tmp_path / "a.ipynb", chapter, cells), "alice") == 2084944417450910251
    damaged = tmp_path / f"{CH}.ipynb"
    damaged.write_text("{not json")
    assert secret_seed(load_submission(damaged)) == 2968415580744245271  # its bytes


def test_normalized_code_keeps_the_code_and_drops_the_rest() -> None:
    assert normalized_code("x = 1  # one\n\n\ny = 2   \n") == normalized_code("x=1\ny = 2")
    assert normalized_code("x = 1\n") != normalized_code("x = 2\n")
    assert normalized_code("s = '''unterminated\n# note\n") == normalized_code("s = '''unterminated   \n")


def test_a_known_student_keeps_the_same_inputs_whatever_the_notebook_holds(tmp_path: Path) -> None:
    first = _with_softmax(tmp_path, WRONG_DIM, "a.ipynb")
    second = _with_softmax(tmp_path, WRONG_DIM_AGAIN, "b.ipynb")
    assert _seed(first, CH, "alice") == _seed(second, CH, "alice")
    assert _seed(first, CH, "alice") != _seed(first, CH, "bob")
    other = write_submission(tmp_path, "04_overloaded_ops", solution_cells("04_overloaded_ops"))
    assert _seed(other, "04_overloaded_ops", "alice") != _seed(first, CH, "alice")


def test_grade_takes_the_student_and_regrading_is_identical(tmp_path: Path) -> None:
    first = _with_softmax(tmp_path, WRONG_DIM, "a.ipynb")
    second = _with_softmax(tmp_path, WRONG_DIM_AGAIN, "b.ipynb")
    check = "check_softmax_other_dims"

    def output(path: Path, student: str | None) -> str:
        return grade_fast(path, seed=None, student=student, only=check).results[0].output

    alice = output(first, "alice")
    assert "Call: softmax(logits, dim=0)" in alice
    assert output(first, "alice") == alice == output(second, "alice")
    assert output(first, None) != output(second, None)


def test_grade_all_passes_the_students_folder_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_grade(notebook: Path, assignment: str, options: judge.GradeOptions, *, zygote: object) -> NoReturn:
        seen.update(student=options.student, zygote=zygote)
        raise judge.GraderError("recorded; nothing graded")

    monkeypatch.setattr(judge, "grade", fake_grade)
    path = _with_softmax(tmp_path, WRONG_DIM, f"{CH}.ipynb")
    zygote = object()  # handed through as it is
    batch.grade_submission(batch.Job("alice", CH, str(path), "0" * 64), str(tmp_path / "out"), "cpu", False,
                           zygote)  # type: ignore[arg-type]
    assert seen["student"] == "alice" and seen["zygote"] is zygote


def test_gradescope_metadata_names_the_student(tmp_path: Path) -> None:
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"email": "a@uni.edu", "sid": "s123", "name": "A"}],
                                "assignment": {"id": 1, "title": "07"}}))
    assert student_from_gradescope(meta) == "s123"
    meta.write_text(json.dumps({"users": [{"email": "a@uni.edu", "sid": ""}]}))
    assert student_from_gradescope(meta) == "a@uni.edu"
    meta.write_text("not json")
    assert student_from_gradescope(meta) is None


def test_cli_reads_the_student_from_gradescope_metadata(tmp_path: Path) -> None:
    first = _with_softmax(tmp_path, WRONG_DIM, "a.ipynb")
    second = _with_softmax(tmp_path, WRONG_DIM_AGAIN, "b.ipynb")
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"email": "a@uni.edu", "sid": "s123"}]}))
    outputs = []
    for path, who in ((first, ["--gradescope-metadata", str(meta)]), (second, ["--student", "s123"])):
        out = tmp_path / f"{path.stem}.json"
        forked.run("autograder", "grade", str(path), "--out", str(out), "--only", "check_softmax_other_dims", *who,
                   cwd=ROOT, env={**os.environ, "AUTOGRADER_SECRET": "a course secret"}).check_returncode()
        outputs.append(json.loads(out.read_text())["tests"][0]["output"])
    assert outputs[0] == outputs[1] and "Call: softmax(logits, dim=0)" in outputs[0]
