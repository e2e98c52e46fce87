"""Similar answers (autograder/course/similarity.py): a disguised copy is flagged, honest classmates are not.

The class is made of the kit's own correct forms (autograder/chapters/*/cases.py): different correct answers
to the same task, as honest students write them, and one-line puzzles that every honest student writes alike.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli
from autograder.course import similarity
from autograder.course.cases import correct_forms, mutant
from autograder.course.reference import solution_cells
from tests.course.test_class_report import HOSTILE, Page
from tests.kit import ROOT, write_submission

pytest.importorskip("copydetect")

AMP, GATHER = "08_mixed_precision", "05_batch_gather"
PUZZLES = ["pick_per_row", "last_valid", "batch_diagonal", "roll_rows", "pick_pair_sum", "permute_rows"]

# eve hands in cleo's LossScaler ("modular count" in chapter 08's cases.py) with every name of her own, the
# methods in another order, cleo's comment gone and her own comments and docstrings added.
DISGUISED = '''
class LossScaler:
    """My loss scaler: multiply the loss, divide the gradients back."""

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.s = init_scale  # the current scale
        self.up, self.down, self.period = growth_factor, backoff_factor, growth_interval
        self.ok_steps = 0
        self.phase = "fresh"

    def update(self):
        # shrink after an overflow, grow after `period` clean steps
        if self.phase == "overflow":
            self.s, self.ok_steps = self.s * self.down, 0
        else:
            self.ok_steps = (self.ok_steps + 1) % self.period
            if self.ok_steps == 0:
                self.s *= self.up
        self.phase = "fresh"

    def step(self, opt):
        """Unscale, then step unless something overflowed."""
        self.unscale_(opt)
        if self.phase == "unscaled":
            opt.step()

    def unscale_(self, opt):
        if self.phase != "fresh":
            return
        all_finite = True
        for grp in opt.param_groups:
            for param in grp["params"]:
                if param.grad is None:
                    continue
                param.grad /= self.s
                all_finite = all_finite and bool(param.grad.isfinite().all())
        self.phase = "unscaled" if all_finite else "overflow"

    def scale(self, l):
        return self.s * l

    def get_scale(self):
        return float(self.s)
'''


def _form(chapter: str, task: str, name: str) -> str:
    if name == "reference":
        return solution_cells(chapter)[task]
    return next(f.cells[task] for f in correct_forms(chapter) if f.name == name and task in f.cells)


def _class(root: Path, graded: Path, answers: dict[str, dict[str, dict[str, str]]]) -> None:
    """Submissions in nbgrader's layout, each with a result, as grade-all leaves them."""
    for student, assignments in answers.items():
        for assignment, cells in assignments.items():
            folder = root / "submitted" / student / assignment
            folder.mkdir(parents=True)
            write_submission(folder, assignment, cells)
            result = graded / "results" / student / f"{assignment}.json"
            result.parent.mkdir(parents=True, exist_ok=True)
            result.write_text(json.dumps({"score": 1.0, "max_score": 1.0, "execution_time": 0.1, "output": "",
                                          "tests": [], "extra_data": {"assignment": assignment, "student": student}}))


def honest_class() -> dict[str, dict[str, dict[str, str]]]:
    """ada, ben, cleo and dev: different correct LossScalers and batch_scatter_adds, the same one-line puzzles."""
    puzzles = {task: solution_cells(GATHER)[task] for task in PUZZLES}
    scalers = ["reference", "tensor scale, per optimizer", "modular count", "max-abs check"]
    scatters = ["reference", "index_put accumulate", "scatter_add expanded", "one-hot einsum"]
    return {
        student: {AMP: {"LossScaler": _form(AMP, "LossScaler", scaler)},
                  GATHER: {**puzzles, "batch_scatter_add": _form(GATHER, "batch_scatter_add", scatter)}}
        for student, scaler, scatter in zip(["ada", "ben", "cleo", "dev"], scalers, scatters, strict=True)
    }


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    answers = honest_class()
    answers["eve"] = {AMP: {"LossScaler": DISGUISED}}
    _class(tmp_path / "course", tmp_path / "graded", answers)
    assert similarity.save_answers(tmp_path / "course", tmp_path / "graded") == 9
    return tmp_path / "graded"


def test_a_disguised_copy_is_flagged_and_its_honest_classmates_are_not(graded: Path) -> None:
    found = similarity.find(graded)
    assert [(p.assignment, p.task, p.students) for p in found.pairs] == [(AMP, "LossScaler", ("cleo", "eve"))]
    pair = found.pairs[0]
    assert pair.score >= 0.9 and pair.matched >= 300
    covered = sum(end - start for start, end in pair.spans[1])
    assert covered > 0.6 * len(DISGUISED.strip())  # most of eve's code is shown as shared
    assert found.compared == {AMP: {"LossScaler": 5, "amp_train_step": 5, "train_checkerboard": 5},
                              GATHER: {**{t: 4 for t in ["batch_gather", *PUZZLES]}, "batch_scatter_add": 4}}


def test_a_submission_set_aside_is_compared_no_more(graded: Path) -> None:
    """grade-all moves the result of a submission whose folder is gone to stale/: its answers count no more."""
    (graded / "results" / "eve" / f"{AMP}.json").unlink()
    assert similarity.find(graded).pairs == []


def test_a_notebook_replaced_by_a_broken_one_has_no_answers_any_more(graded: Path) -> None:
    notebook = graded.parent / "course" / "submitted" / "eve" / AMP / f"{AMP}.ipynb"
    notebook.write_text("{not json")
    assert similarity.save_answers(graded.parent / "course", graded) == 0
    assert not (graded / "answers" / "eve" / f"{AMP}.json").exists() and similarity.find(graded).pairs == []


def test_identical_one_line_puzzles_are_too_short_to_flag(graded: Path) -> None:
    """Every honest student wrote the same six puzzles: each is below the size a copy can be told at."""
    scores = {p.students: p for p in similarity.task_pairs(GATHER, "roll_rows", {
        "ada": solution_cells(GATHER)["roll_rows"], "ben": solution_cells(GATHER)["roll_rows"]})}
    assert scores == {}
    assert not [p for p in similarity.find(graded).pairs if p.task in PUZZLES]


def test_the_starter_code_is_left_out() -> None:
    """Two students who left the stub as released share nothing; with the starter code counted, they would."""
    stub = similarity.starter_cells(GATHER)["batch_scatter_add"]
    longer = stub + "\n# " + "padding " * 40
    assert list(similarity.task_pairs(GATHER, "batch_scatter_add", {"a": stub, "b": stub}, stub)) == []
    saved = similarity.MIN_MATCH
    try:
        similarity.MIN_MATCH = 1
        assert list(similarity.task_pairs(GATHER, "batch_scatter_add", {"a": stub, "b": longer}, stub)) == []
        assert list(similarity.task_pairs(GATHER, "batch_scatter_add", {"a": stub, "b": longer}, ""))
    finally:
        similarity.MIN_MATCH = saved


def test_the_command_makes_the_section_and_changes_no_score(graded: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    results = {p: p.read_bytes() for p in (graded / "results").glob("*/*.json")}
    assert cli.main(["similarity", str(graded)]) == 0
    assert "1 pair(s) of answers and 1 pair(s) of whole submissions flagged" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in (graded / "results").glob("*/*.json")} == results
    rows = (graded / "similarity" / "pairs.csv").read_text().splitlines()
    assert rows[1].startswith(f"{AMP},LossScaler,cleo,eve,")
    page = (graded / "report" / "report.html").read_text()
    assert "<h2>Similar answers</h2>" in page and "<mark>" in page
    assert page.index("Flagged for review") < page.index("Similar answers")
    review = {r["student"]: r["reasons"] for r in csv.DictReader((graded / "report" / "flagged.csv").open())}
    assert set(review) == {"cleo", "eve"} and "LossScaler with cleo" in review["eve"]


def test_student_code_is_text_on_the_page(tmp_path: Path) -> None:
    """Code, names and strings a student wrote are escaped: the page runs nothing of theirs."""
    code = _form(AMP, "LossScaler", "modular count").replace('"fresh"', repr(HOSTILE + "</pre></details>"))
    name = '"><img src=x onerror=alert(2)>\x1b[2J\udcff'  # a folder name with a byte that is not UTF-8
    _class(tmp_path / "course", tmp_path / "graded", {"ann": {AMP: {"LossScaler": code}},
                                                      name: {AMP: {"LossScaler": code + "\n# " + HOSTILE}}})
    similarity.save_answers(tmp_path / "course", tmp_path / "graded")
    similarity.write(tmp_path / "graded")
    page = Page()
    page.feed("<!DOCTYPE html><html><body>" + similarity.section(tmp_path / "graded") + "</body></html>")
    page.close()
    assert not page.open
    assert {tag for tag, _ in page.tags} <= {"html", "body", "style", "h2", "h3", "h4", "p", "table", "tr", "th", "td",
                                              "details", "summary", "pre", "mark"}
    text = "".join(page.text)
    assert HOSTILE in text and '"><img src=x onerror=alert(2)>\\x1b[2J\\udcff' in text
    (tmp_path / "page.html").write_text(similarity.section(tmp_path / "graded"), encoding="utf-8")  # strict UTF-8


def test_merge_keeps_the_answers_and_a_folder_without_them_is_refused(graded: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["merge", str(graded), "--out", str(tmp_path / "merged")]) == 0
    assert [p.students for p in similarity.find(tmp_path / "merged").pairs] == [("cleo", "eve")]
    (tmp_path / "empty").mkdir()
    capsys.readouterr()
    assert cli.main(["similarity", str(tmp_path / "empty")]) == 2
    assert "holds no answers/ folder" in capsys.readouterr().err


def test_grading_never_imports_copydetect() -> None:
    """GPU runners have torch, numpy and pytest only: the grading path must not need the similarity tool."""
    code = ("import sys, autograder.cli, autograder.course.batch, autograder.judging.judge; "
            "assert 'copydetect' not in sys.modules and 'autograder.course.similarity' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_grade_all_keeps_the_answers_and_reports_on_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    course, out, ch = tmp_path / "course", tmp_path / "graded", "07_numerical_stability"
    for student in ("ada", "bea"):  # the same code: softmax too short to judge, the bonus log_softmax long enough
        (course / "submitted" / student / ch).mkdir(parents=True)
        write_submission(course / "submitted" / student / ch, ch, solution_cells(ch))
    assert cli.main(["grade-all", str(course), "--out", str(out), "--workers", "1"]) == 0
    assert "similarity: 1 pair(s) of answers and 0 pair(s) of whole submissions flagged" in capsys.readouterr().out
    kept = json.loads((out / "answers" / "ada" / f"{ch}.json").read_text())
    assert kept["cells"]["softmax"] == solution_cells(ch)["softmax"]
    found = similarity.load(out)
    assert found is not None and [(p.task, p.students) for p in found.pairs] == [("log_softmax", ("ada", "bea"))]
    results = [json.loads(p.read_text()) for p in (out / "results").glob("*/*.json")]
    assert len(results) == 2 and all(r["score"] >= r["max_score"] > 0 for r in results)  # full marks, both


# -- whole submissions --------------------------------------------------------------------------------------------

STABLE = "07_numerical_stability"
# cleo's own softmax and cross entropy, each with a helper: 82 and 104 characters of tokens, under MIN_MATCH
CLEO = {
    "softmax": '''def _peak(v, d):
    return v.amax(dim=d, keepdim=True)


def softmax(logits, dim=-1):
    shifted = torch.exp(logits - _peak(logits, dim))
    return shifted / shifted.sum(dim=dim, keepdim=True)
''',
    "softmax_cross_entropy": '''def _log_norm(v, d):
    m = v.amax(dim=d, keepdim=True)
    return m + torch.log(torch.exp(v - m).sum(dim=d, keepdim=True))


def softmax_cross_entropy(labels, logits, dim=-1):
    return (labels * (_log_norm(logits, dim) - logits)).sum(dim=dim)
''',
}
# eve's copy of both: her own names, the helpers after the functions, comments and a docstring of her own
EVE = {
    "softmax": '''def softmax(logits, dim=-1):
    # exponentiate after taking off the row maximum
    ex = torch.exp(logits - top(logits, dim))
    return ex / ex.sum(dim=dim, keepdim=True)


def top(t, axis):  # the largest entry along axis, kept as a dimension
    return t.amax(dim=axis, keepdim=True)
''',
    "softmax_cross_entropy": '''def softmax_cross_entropy(labels, logits, dim=-1):
    # labels times the negative log-probabilities
    return (labels * (lse(logits, dim) - logits)).sum(dim=dim)


def lse(z, ax):
    """log of the sum of exponentials, stabilised"""
    big = z.amax(dim=ax, keepdim=True)
    return big + torch.log(torch.exp(z - big).sum(dim=ax, keepdim=True))
''',
}


def _stable_class(tmp_path: Path, eve: dict[str, str]) -> Path:
    """ada and dev hand in the reference, ben two named mistakes, cleo her own code, eve `eve`."""
    ref = {k: v for k, v in solution_cells(STABLE).items() if k != "log_softmax"}
    ben = {**ref, "softmax": _form_wrong(STABLE, "no max subtraction", "softmax"),
           "softmax_cross_entropy": _form_wrong(STABLE, "log of softmax", "softmax_cross_entropy")}
    students = {"ada": ref, "ben": ben, "cleo": CLEO, "dev": ref, "eve": eve}
    _class(tmp_path / "course", tmp_path / "graded", {s: {STABLE: cells} for s, cells in students.items()})
    similarity.save_answers(tmp_path / "course", tmp_path / "graded")
    return tmp_path / "graded"


def _form_wrong(chapter: str, name: str, task: str) -> str:
    return mutant(chapter, name).cells[task]


def test_a_copy_of_every_short_answer_is_flagged_as_a_whole_notebook(tmp_path: Path) -> None:
    """Each copied answer shares under MIN_MATCH characters: no task tells, the notebook does (issue 38)."""
    found = similarity.find(_stable_class(tmp_path, EVE))
    assert found.pairs == []  # no task alone is long enough
    assert [(w.scope, w.students) for w in found.wholes] == [(STABLE, ("cleo", "eve"))]
    whole = found.wholes[0]
    assert whole.matched >= similarity.MIN_MATCH and whole.score >= 0.9
    assert sorted((p.task, p.matched < similarity.MIN_MATCH) for p in whole.parts) == [
        ("softmax", True), ("softmax_cross_entropy", True)]


def test_students_who_write_the_chapters_own_solution_are_not_a_pair(tmp_path: Path) -> None:
    """ada and dev both hand in the form the chapter teaches, word for word: 157 characters of tokens in all,
    which the whole-notebook comparison leaves out, as it leaves out the starter code."""
    found = similarity.find(_stable_class(tmp_path, EVE))
    assert ("ada", "dev") not in [w.students for w in found.wholes]


def test_copies_spread_over_the_course_are_flagged_over_the_course(tmp_path: Path) -> None:
    """eve copies cleo's softmax (07) and batch_diagonal (05), each notebook's copy under MIN_MATCH."""
    diagonal = ('def batch_diagonal(x):\n    n = min(x.shape[1], x.shape[2])\n'
                '    idx = torch.arange(n, device=x.device)\n    return x[:, idx, idx]\n')
    copy = ('def batch_diagonal(t):\n    # the diagonal of each matrix\n    k = min(t.shape[1], t.shape[2])\n'
            '    at = torch.arange(k, device=t.device)\n    return t[:, at, at]\n')
    ref7, ref5 = solution_cells(STABLE), solution_cells(GATHER)
    answers = {s: {STABLE: {**ref7, "softmax": soft}, GATHER: {**ref5, "batch_diagonal": diag}}
               for s, soft, diag in [("cleo", CLEO["softmax"], diagonal), ("eve", EVE["softmax"], copy),
                                     ("ada", ref7["softmax"], ref5["batch_diagonal"])]}
    _class(tmp_path / "course", tmp_path / "graded", answers)
    similarity.save_answers(tmp_path / "course", tmp_path / "graded")
    found = similarity.find(tmp_path / "graded")
    assert [(w.scope, w.students) for w in found.wholes] == [(similarity.COURSE, ("cleo", "eve"))]
    assert {p.assignment for p in found.wholes[0].parts} == {STABLE, GATHER}


def test_the_page_shows_a_whole_pair_task_by_task_side_by_side(tmp_path: Path) -> None:
    eve = {**EVE, "softmax": EVE["softmax"] + "# " + HOSTILE + "\n"}
    graded = _stable_class(tmp_path, eve)
    similarity.write(graded)
    html = similarity.section(graded)
    page = Page()
    page.feed("<!DOCTYPE html><html><body>" + html + "</body></html>")
    page.close()
    assert not page.open and HOSTILE in "".join(page.text) and "<script>" not in html
    whole = html[html.index("Whole notebooks"):]
    for task in ("softmax", "softmax_cross_entropy"):  # each task: a header, cleo's code beside eve's, marked
        assert f"{STABLE} · {task}:" in whole
    assert whole.count("<mark>") >= 4 and whole.count("<th>cleo</th><th>eve</th>") == 2
    rows = (graded / "similarity" / "pairs.csv").read_text().splitlines()
    assert rows[1:] == [f"{STABLE},{similarity.WHOLE},cleo,eve," + rows[1].split(",eve,")[1]]


def test_a_task_too_short_to_compare_says_so(tmp_path: Path) -> None:
    """Issue 36, item 9: not "no pair flagged" where no answer was long enough to be compared alone."""
    graded = _stable_class(tmp_path, {k: v for k, v in solution_cells(STABLE).items() if k != "log_softmax"})
    similarity.write(graded)
    html = similarity.section(graded)
    too_short = similarity.TOO_SHORT.format(similarity.MIN_MATCH, similarity.MIN_MATCH // 2)
    assert "too short to compare on its own: answers under 120 characters of tokenized code" in too_short
    for task in ("softmax", "softmax_cross_entropy"):
        assert f"<tr><td>{task}</td><td class=n>5</td><td>{too_short}</td></tr>" in html
    assert f"<tr><td>log_softmax</td><td class=n>5</td><td>{similarity.NOTHING}</td></tr>" in html  # stubs


def test_a_small_calibration_class_finds_its_copy_and_flags_no_honest_pair() -> None:
    """benchmarks/similarity_calibration.py at a class of 6 on chapter 07: one hidden copy of a whole notebook
    (renames, reordering, comments, a variable inlined, a helper pulled out) among the kit's own forms. The
    seeds are classes where no task alone tells the copy (the benchmark prints how often that is)."""
    from benchmarks.similarity_calibration import Rates, families, judge, make_class, pool

    ways = {STABLE: {task: families(STABLE, task, forms) for task, forms in pool(STABLE).items()}}
    rates = Rates()
    for seed in (0, 4, 6):  # on 07's four tasks, 7 of seeds 0-24 hide the copy from every comparison
        cls = make_class(6, seed, ways)
        assert not cls.forced and len(cls.copies) == 1
        judge(cls, rates)
    assert rates.copies == rates.found == 3 and rates.found_by_task == 0
    assert rates.honest == 3 * 14 and rates.flagged == 0
