"""The class report: exact counts, grouped failure messages, hostile text escaped, and a page that renders.

Most tests build a graded/ folder of synthetic result files (Gradescope's schema, as grade-all
writes them) instead of grading notebooks; one grades a tiny class for real.
"""

from __future__ import annotations

import base64
import csv
import importlib.util
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from autograder import cli
from autograder.course import report as class_report
from autograder.course import run
from autograder.course.batch import Job, error_result
from autograder.course.report import analyse, normalize, write_report
from tests.judging.test_minimal_env import CLI as MINIMAL_CLI
from tests.kit import ROOT, check_count, solved, write_submission

CH = "07_numerical_stability"
NOT_IMPL = ("not implemented: `{}` still raises NotImplementedError. Replace the stub in its answer cell with "
            "your code.")


def nan_at(index: str, value: str) -> str:
    return (f"Call: softmax(logits)\n  logits = [{value},    0.]  (float32, shape [2])\nExpected: [1., 0.]  "
            f"(float32, shape [2])\nGot:      [nan, 0.]  (float32, shape [2])\nProblem:  found nan (not a number) at "
            f"index [{index}], where a number was expected\nHint:     exp() of a logit above about 88.7 overflows "
            "float32 to inf, and inf / inf is nan. Subtract the maximum along `dim` before exp.")


def off_by(have: str, want: str, differ: str) -> str:
    return (f"Call: softmax(logits, dim=1)\n  logits = [[{have}, 2.]]  (float32, shape [1, 2])\nExpected: [[{want}]]\n"
            f"Got:      [[{have}]]\nProblem:  at index [0, 1] got {have}, expected {want} (tolerance: rtol=1e-05, "
            f"atol=1e-06); {differ} of 12 values differ\nHint:     Normalise along `dim`, not over the whole tensor.")


def check(task: str, name: str, points: float, status: str, output: str = "", visible: bool = False) -> dict[str, Any]:
    test: dict[str, Any] = {"name": f"[{task}] {name}", "score": points if status == "passed" else 0.0,
                            "max_score": 0.0 if status == "skipped" else points, "output": output, "tags": [task],
                            "visibility": "visible" if visible else "after_published"}
    if status != "skipped":
        test["status"] = status
    return test


def result(student: str, assignment: str, tests: list[dict[str, Any]], output: str = "",
           integrity: list[str] | None = None) -> dict[str, Any]:
    return {"score": sum(t["score"] for t in tests), "max_score": sum(t["max_score"] for t in tests),
            "execution_time": 1.0, "output": output, "visibility": "visible", "tests": tests,
            "extra_data": {"assignment": assignment, "notebook": f"{assignment}.ipynb", "device": "cpu",
                           "sandbox": {}, "integrity": integrity or [], "student": student, "sha256": "0" * 64}}


def write(graded: Path, r: Mapping[str, Any], folder: str | None = None) -> None:
    path = graded / "results" / (folder or r["extra_data"]["student"]) / f"{r['extra_data']['assignment']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r))


SOFTMAX = [("softmax", "softmax([1000., 0.]) is [1., 0.]", 4.0, True),
           ("softmax", "softmax normalises along dim", 6.0, False),
           ("softmax_cross_entropy", "matches -sum(labels * log_softmax)", 10.0, False)]


def softmax_result(student: str, outcomes: list[tuple[str, str]], output: str = "") -> dict[str, Any]:
    return result(student, CH, [check(task, name, pts, status, out, vis)
                                for (task, name, pts, vis), (status, out) in zip(SOFTMAX, outcomes, strict=True)],
                  output)


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    """Five softmax submissions and one grader error: every count below is worked out by hand."""
    out = tmp_path / "graded"
    write(out, softmax_result("ada", [("passed", ""), ("passed", ""), ("passed", "")]))
    write(out, softmax_result("bea", [("failed", nan_at("0", "1000.")), ("passed", ""),
                                      ("failed", NOT_IMPL.format("softmax_cross_entropy"))]))
    write(out, softmax_result("cal", [("failed", nan_at("0", "2417.5")), ("failed", off_by("0.25", "0.5", "3")),
                                      ("passed", "")]))
    write(out, softmax_result("dan", [("failed", NOT_IMPL.format("softmax")), ("failed", NOT_IMPL.format("softmax")),
                                      ("failed", NOT_IMPL.format("softmax_cross_entropy"))]))
    broken = "07_numerical_stability.ipynb is not valid notebook JSON (line 15 column 4 (char 300)). Re-download it."
    write(out, softmax_result("eve", [("failed", broken)] * 3, output=broken))
    write(out, error_result(Job("fay", CH, "x.ipynb", "0" * 64), "cpu", "the sandbox could not start"))
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_pass_rates_points_and_scores_are_exact(graded: Path) -> None:
    write_report(graded)
    checks = {r["check"]: r for r in _csv(graded / "report" / "checks.csv")}
    first = checks["softmax([1000., 0.]) is [1., 0.]"]
    assert (first["ran"], first["passed"], first["wrong"], first["not_run"]) == ("5", "1", "2", "2")
    assert float(first["pass_rate"]) == pytest.approx(0.2) and first["visible"] == "True"
    last = checks["matches -sum(labels * log_softmax)"]
    assert (last["passed"], last["wrong"], last["not_run"], float(last["pass_rate"])) == ("2", "0", "3", 0.4)
    tasks = {r["task"]: r for r in _csv(graded / "report" / "tasks.csv")}
    soft = tasks["softmax"]  # 10 points x 5 submissions: earned 10 + 6 + 0, wrong 4 + 4 + 6, not run 10 + 10
    assert soft["points"] == "10.0" and soft["submissions"] == "5"
    assert [float(soft[k]) for k in ("earned_fraction", "lost_wrong_fraction", "not_run_fraction")] == [
        0.32, 0.28, 0.4]
    assert (soft["full_marks_count"], soft["zero_count"]) == ("1", "3")
    (lesson,) = _csv(graded / "report" / "lessons.csv")
    assert (lesson["submissions"], lesson["scored"], lesson["grader_errors"], lesson["full_marks"]) == (
        "6", "5", "1", "20.0")
    assert float(lesson["mean"]) == pytest.approx((20 + 6 + 10 + 0 + 0) / 5) and lesson["median"] == "6.0"
    assert (lesson["full_marks_count"], lesson["zero_count"], lesson["flagged"]) == ("1", "2", "3")
    scores = {float(r["score"]): int(r["students"]) for r in _csv(graded / "report" / "scores.csv")}
    assert scores == {0.0: 2, 6.0: 1, 10.0: 1, 20.0: 1}


def test_checks_are_grouped_by_task_in_the_order_they_ran(tmp_path: Path) -> None:
    tests = [check("row_sum", "values", 2, "passed"), check("pairwise", "distances", 2, "failed", "Problem:  off."),
             check("row_sum", "speed", 2, "skipped", "no CUDA")]
    write(tmp_path, result("ada", "04_overloaded_ops", tests))
    report = analyse(tmp_path)
    assert [(c.task, c.name, c.ran, c.skipped) for c in report.checks] == [
        ("row_sum", "values", 1, 0), ("row_sum", "speed", 0, 1), ("pairwise", "distances", 1, 0)]
    assert [(t.task, t.points, t.earned, t.wrong) for t in report.tasks] == [("row_sum", 2, 2, 0),
                                                                             ("pairwise", 2, 0, 2)]
    assert report.flagged == []  # a skipped check (CUDA-only on CPU) is not a reason to review


def test_the_same_mistake_groups_across_students_and_different_ones_do_not(graded: Path) -> None:
    report = analyse(graded)
    by_message = {f.message: f for f in report.failures}
    nan = next(f for m, f in by_message.items() if m.startswith("found nan"))
    assert nan.students == {"bea", "cal"} and nan.kind == "wrong" and nan.checks == [SOFTMAX[0][1]]
    stub = by_message["not implemented: `softmax_cross_entropy` still raises NotImplementedError."]
    assert stub.students == {"bea", "dan"} and stub.kind == "not run"
    assert by_message["not implemented: `softmax` still raises NotImplementedError."].students == {"dan"}
    broken = next(f for m, f in by_message.items() if "not valid notebook JSON" in m)
    assert broken.students == {"eve"} and broken.kind == "not run" and len(broken.checks) == 3
    assert len(report.failures) == 5  # nan, off-by, two stubs, the broken notebook
    rows = _csv(write_report(graded).parent / "failures.csv")
    assert [(int(r["students_count"]), r["message"][:20]) for r in rows] == [  # most common first
        (2, "found nan (not a num"), (2, "not implemented: `so"), (1, "<file> is not valid "),
        (1, "at index [#, #] got "), (1, "not implemented: `so")]


SAME = [  # one mistake each, on different inputs: one key
    [nan_at("0", "1000."), nan_at("7", "-1e30")],
    [off_by("0.25", "0.5", "3"), off_by("-1.5e-05", "0.125", "11")],
    ["Call: f(x)\nExpected: b.png in RGB order\nGot: [0, 0, ...]\nProblem:  the channels are in BGR order (red and "
     "blue swapped)\nHint:     cv2.imread gives BGR. Convert with cvtColor.",
     "Call: f(x)\nExpected: 15e1.png in RGB order\nGot: [12, 43, ...]\nProblem:  the channels are in BGR order (red "
     "and blue swapped)\nHint:     cv2.imread gives BGR. Convert with cvtColor."],
    ["02_modules.ipynb is not valid notebook JSON (Expecting ',' delimiter: line 15 column 4 (char 300)). It was "
     "probably damaged.", "02_modules.ipynb is not valid notebook JSON (Expecting ',' delimiter: line 2 column 81 "
     "(char 9120)). It was probably damaged while uploading."],
    ["Timing:   yours: 3.67 ms per call; the loop: 3.09 ms; 0.8x\nProblem:  needs to be at least 4x faster than the "
     "slicing loop.\nHint:     Use one reduction.", "Timing:   yours: 12.1 ms per call; the loop: 3.2 ms; 0.26x\n"
     "Problem:  needs to be at least 4x faster than the slicing loop.\nHint:     Use one reduction."],
    ["Problem:  shape [3] instead of [3, 4]\nHint: Keep dim.",
     "Problem:  shape [17] instead of [17, 9]\nHint: Keep dim."],
    ["Problem:  2 images came out more than once: 6b2873.png x2, a.png x2\nHint:     Shard the files.",
     "Problem:  3 images came out more than once: images/0474eea52.png x2, 16a.png x2, 9.png x2\nHint:     Shard the "
     "files."],
    ["`f(tensor(shape=[3, 4], dtype=float32), 2)` crashed: the process exited with status 0 (sys.exit?). Remove it.",
     "`f(tensor(shape=[7], dtype=float32), 5)` crashed: the process exited with status 0 (sys.exit?). Remove it."],
    ["Reading 12 images in 1 tar file:\n`kit.stream_tar(TarImageDataset, 2, 20.0, 28)` raised an error:\nValueError: "
     "Caught ValueError in DataLoader worker process 0.\n  File \"<cell>\", line 41\nValueError: workers != files",
     "Reading 6 images in 1 tar file:\n`kit.stream_tar(TarImageDataset, 3, 20.0, 16)` raised an error:\nValueError: "
     "Caught ValueError in DataLoader worker process 2.\n  File \"<cell>\", line 40\nValueError: workers != files"],
    ["`row_sum(x)` raised an error:\nIndexError: index 5 is out of bounds for dimension 0 with size 5\n  line 3",
     "`row_sum(x)` raised an error:\nIndexError: index 12 is out of bounds for dimension 0 with size 12\n  line 4"],
]
DIFFERENT = [  # different mistakes: different keys
    (NOT_IMPL.format("softmax"), NOT_IMPL.format("softmax_cross_entropy")),
    ("Problem:  dtype torch.float32 instead of torch.float64",
     "Problem:  dtype torch.float64 instead of torch.float32"),
    ("Problem:  shape [3] instead of [3, 4]", "Problem:  shape [3, 4] instead of [3]"),
    (nan_at("0", "1000."), off_by("0.25", "0.5", "3")),
    ("Problem:  wrong values.\nHint:     Normalise along `dim`.",
     "Problem:  wrong values.\nHint:     Subtract the max."),
    ("`f(x)` raised an error:\nIndexError: index 5 is out of bounds",
     "`f(x)` raised an error:\nTypeError: bad operand"),
    ("Problem:  no gradient (grad is None)", "Problem:  found nan (not a number) at index [0]"),
    ("Reading 6 images:\n`kit.stream_tar(T, 2)` raised an error:\nRuntimeError: DataLoader timed out after 20.0 s",
     "Reading 6 images:\n`kit.stream_tar(T, 2)` raised an error:\nValueError: Caught ValueError in worker 0."),
    ("Problem:  2 images came out more than once: a.png x2, b.png x2",
     "Problem:  2 images never came out: a.png, b.png"),
]


@pytest.mark.parametrize("messages", SAME, ids=range(len(SAME)))
def test_normalize_groups_one_mistake_on_different_inputs(messages: list[str]) -> None:
    assert len({normalize(m) for m in messages}) == 1, [normalize(m) for m in messages]


@pytest.mark.parametrize("pair", DIFFERENT, ids=range(len(DIFFERENT)))
def test_normalize_separates_different_mistakes(pair: tuple[str, str]) -> None:
    assert normalize(pair[0]) != normalize(pair[1])


@pytest.mark.parametrize("message", [m for same in SAME + DIFFERENT for m in same if "Problem:" in m])
def test_a_failure_recorded_as_fields_gets_the_key_its_message_gives(message: str) -> None:
    """Result files written before failures kept their problem and hint as fields are grouped from the message;
    newer ones from the fields: the same failure gets the same key either way."""
    fields = {tag: line.removeprefix(tag).strip() for line in message.splitlines()
              for tag in ("Problem:", "Hint:") if line.startswith(tag)}
    test: Any = {"output": "", "extra_data": {"problem": fields["Problem:"], "hint": fields.get("Hint:", "")}}
    assert class_report.failure_key(test) == normalize(message)


def test_a_named_mistake_groups_its_failures_whatever_their_wording(tmp_path: Path) -> None:
    for student, problem in (("ada", "the sum is 3"), ("bob", "nothing like it")):
        result = softmax_result(student, [("failed", f"Problem:  {problem}"), ("passed", ""), ("passed", "")])
        result["tests"][0]["extra_data"] = {"outcome": "wrong", "problem": problem, "mistake": "no-max"}
        write(tmp_path, result)
    (failure,) = analyse(tmp_path).failures
    assert failure.students == {"ada", "bob"} and failure.message == "the sum is #"  # the first one's words


def test_the_flagged_list_says_why(graded: Path) -> None:
    write(graded, softmax_result("gus", [("passed", ""), ("passed", ""), ("passed", "")]))
    r = json.loads((graded / "results" / "gus" / f"{CH}.json").read_text())
    r["extra_data"]["integrity"] = ["cell 'softmax', line 2: sys._getframe (reads the grader's frames)"]
    (graded / "results" / "gus" / f"{CH}.json").write_text(json.dumps(r))
    write(graded, softmax_result("ivy", [("failed", "Problem:  the rule"), ("failed", "Not scored: this exercise "
                                          "breaks its stated rule"), ("passed", "")]))
    r = json.loads((graded / "results" / "ivy" / f"{CH}.json").read_text())
    r["tests"][1]["extra_data"] = {"outcome": "not_scored", "measured": {}}
    (graded / "results" / "ivy" / f"{CH}.json").write_text(json.dumps(r))
    (graded / "results" / "hal").mkdir()
    (graded / "results" / "hal" / f"{CH}.json").write_text("{ damaged")
    flagged = {f.student: f for f in analyse(graded).flagged}
    assert list(flagged) == ["fay", "hal", "gus", "eve", "dan", "ivy"]  # most urgent first
    assert flagged["fay"].reasons == ["grader error: no score; run grade-all again"]
    assert "sandbox could not start" in flagged["fay"].detail
    assert flagged["hal"].reasons == ["result file unreadable"]
    assert flagged["gus"].reasons[0].startswith("review flags: 1 construct") and "_getframe" in flagged["gus"].detail
    assert flagged["gus"].score == flagged["gus"].max_score  # a flag for review costs nothing
    assert flagged["ivy"].reasons == ["broke the stated rule of softmax: those tasks scored 0"]
    assert flagged["eve"].reasons[0].startswith("could not be graded: 07_numerical_stability.ipynb is not valid")
    assert flagged["dan"].reasons == ["nothing implemented (the release unchanged?)"]
    lesson = analyse(graded).lessons[CH]
    assert (lesson.submissions, len(lesson.scores), lesson.grader_errors) == (9, 7, 2)


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "code", "a", "img",
                "table", "colgroup", "col", "tr", "th", "td", "div", "span", "br", "details", "summary", "ul", "li"}
VOID = {"meta", "img", "br", "col"}


class Page(HTMLParser):
    """Tags, attributes and nesting of a page; raises on a closing tag that closes nothing open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.doctype = ""
        self.text: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert page.doctype.lower() == "doctype html" and not page.open, page.open
    return page


def test_hostile_names_and_messages_are_text_never_markup(tmp_path: Path) -> None:
    graded = tmp_path / "graded"
    evil = HOSTILE + "\x1b[2J\u202e"
    r = softmax_result(evil, [("failed", f"`softmax(x)` raised an error:\nValueError: {HOSTILE}"), ("passed", ""),
                              ("failed", "=HYPERLINK(\"http://x\")")], output=f"note {HOSTILE}")
    r["extra_data"]["integrity"] = [f"cell 'softmax', line 1: {HOSTILE}"]
    write(graded, r, folder="evil")
    r["extra_data"]["assignment"] = "<b>$\\alpha^{$"  # an assignment folder named as broken TeX, in the plots
    write(graded, r, folder="evil")
    page = parse(write_report(graded))
    assert {tag for tag, _ in page.tags} <= ALLOWED_TAGS
    assert not [a for _, attrs in page.tags for a in attrs if a.startswith("on")]
    images = [attrs["src"] for tag, attrs in page.tags if tag == "img"]
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert len(images) == (2 if importlib.util.find_spec("matplotlib") else 0)
    text = "".join(page.text)
    assert "<b>$\\alpha^{$" in text and len(analyse(graded).lessons) == 2
    assert "<script>alert(1)</script>" in text and "\x1b" not in text and "\u202e" not in text  # shown, as text
    flagged = _csv(graded / "report" / "flagged.csv")[0]
    assert (flagged["student"] or "").startswith("<script>") and "\\x1b" in (flagged["student"] or "")
    failures = _csv(graded / "report" / "failures.csv")
    assert any(f["message"].startswith("'=HYPERLINK") for f in failures)  # a spreadsheet shows it, never runs it


def test_the_page_is_valid_and_has_its_plots(graded: Path) -> None:
    pytest.importorskip("matplotlib")
    page = parse(write_report(graded))
    images = [attrs["src"] for tag, attrs in page.tags if tag == "img"]
    assert len(images) == 2
    for src in images:
        assert base64.b64decode(src.removeprefix("data:image/png;base64,"))[:8] == b"\x89PNG\r\n\x1a\n"
    csp = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]
    text = " ".join(page.text)
    assert "Weakest task: 07_numerical_stability · softmax (32% of its points earned)" in " ".join(text.split())
    links = {a["href"] for t, a in page.tags if t == "a"}
    assert links == {"lessons.csv", "tasks.csv", "checks.csv", "students.csv", "scores.csv", "failures.csv",
                     "flagged.csv"}
    assert all((graded / "report" / name).is_file() for name in links)


def test_an_empty_class_gets_a_page_and_empty_tables(tmp_path: Path) -> None:
    graded = tmp_path / "graded"
    graded.mkdir()
    (graded / "summary.json").write_text("[]")  # what grade-all writes for a course without submissions
    assert cli.main(["class-report", str(graded)]) == 0
    page = parse(graded / "report" / "report.html")
    assert "No graded submissions yet" in "".join(page.text)
    assert not [t for t, _ in page.tags if t == "img"]
    for name in ("lessons.csv", "tasks.csv", "checks.csv", "students.csv", "scores.csv", "failures.csv",
                 "flagged.csv"):
        assert len((graded / "report" / name).read_text().splitlines()) == 1  # the header only


def test_the_command_remakes_the_report_of_an_existing_folder(graded: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "elsewhere"
    assert cli.main(["class-report", str(graded), "--out", str(out)]) == 0
    assert f"class report: {out / 'report.html'}" in capsys.readouterr().out
    assert len(_csv(out / "checks.csv")) == 3 and not (graded / "report").exists()
    assert cli.main(["class-report", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_without_matplotlib_the_page_says_why_and_the_csv_files_are_whole(graded: Path) -> None:
    """As on a GPU runner: torch, numpy and pytest only (no matplotlib, no notebook stack)."""
    done = subprocess.run([sys.executable, "-c", MINIMAL_CLI, "class-report", str(graded)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = parse(graded / "report" / "report.html")
    assert "matplotlib is not installed here" in "".join(page.text)
    assert not [t for t, _ in page.tags if t == "img"]
    assert len(_csv(graded / "report" / "checks.csv")) == 3


def test_a_broken_report_is_a_warning_never_a_failed_grading(graded: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: Any) -> Path:
        raise RuntimeError("boom")

    monkeypatch.setattr(class_report, "write_report", broken)
    monkeypatch.setattr(run, "grade_all", lambda *args, **options: 3)  # graded, with a grader error
    assert cli.main(["grade-all", str(graded), "--out", str(graded)]) == 3
    assert "warning: the class report could not be written: RuntimeError: boom" in capsys.readouterr().err


@pytest.mark.slow
def test_grade_all_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    course, out = tmp_path / "course", tmp_path / "graded"
    for student in ("ada", "bea"):
        (course / "submitted" / student / CH).mkdir(parents=True)
    solved(course / "submitted" / "ada" / CH, CH)
    write_submission(course / "submitted" / "bea" / CH, CH, {})
    assert cli.main(["grade-all", str(course), "--out", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"class report: {out / 'report' / 'report.html'}" in printed
    table = printed.split("\n")  # the score table, as the demo prints one
    assert table[0].split() == ["student", "assignment", "score", "status", "notes"], printed
    assert table[2].split()[:5] == ["ada", CH, "22", "/", "22"] and table[3].split()[:5] == ["bea", CH, "0", "/", "22"]
    checks = _csv(out / "report" / "checks.csv")
    assert len(checks) == check_count(CH) and {(c["passed"], c["not_run"]) for c in checks} == {("1", "1")}
    flagged = _csv(out / "report" / "flagged.csv")
    assert [(f["student"], f["reasons"]) for f in flagged] == [("bea", "nothing implemented (the release unchanged?)")]
    parse(out / "report" / "report.html")


def _with_outcomes(r: dict[str, Any], *outcomes: str) -> dict[str, Any]:
    for test, found in zip(r["tests"], outcomes, strict=True):
        test["extra_data"] = {"outcome": found, "measured": {}}
    return r


def _bonus(r: dict[str, Any], done: bool) -> dict[str, Any]:
    """07's stretch task log_softmax added to a result: passed, or untouched (a stub)."""
    stretch = check("log_softmax", "matches torch.log_softmax", 4.0, "passed" if done else "failed",
                    "" if done else NOT_IMPL.format("log_softmax"))
    r["tests"].append({**stretch, "tags": ["log_softmax", "bonus"], "name": "[bonus: log_softmax] matches",
                       "extra_data": {"outcome": "passed" if done else "not_implemented", "measured": {}}})
    r["score"] += stretch["score"]
    return r


def test_an_untouched_bonus_task_is_labelled_and_never_the_weakest(tmp_path: Path) -> None:
    for student, softmax in (("ada", "passed"), ("bea", "passed"), ("cal", "failed")):
        r = softmax_result(student, [(softmax, "Problem:  off."), ("passed", ""), ("passed", "")])
        write(tmp_path, _bonus(_with_outcomes(r, "passed" if softmax == "passed" else "wrong", "passed", "passed"),
                               done=student == "ada"))
    report = analyse(tmp_path)
    assert [(t.task, t.bonus) for t in report.tasks] == [("softmax", False), ("softmax_cross_entropy", False),
                                                         ("log_softmax", True)]
    assert [t.task for t in report.required] == ["softmax", "softmax_cross_entropy"]
    page = " ".join(" ".join(parse(write_report(tmp_path)).text).split())
    assert "Weakest task: 07_numerical_stability · softmax (87% of its points earned)" in page
    assert "log_softmax (bonus)" in page and "Stretch (bonus) tasks: optional extra credit" in page
    overview = page.split("weakest required task (points earned)")[1].split("Students")[0]
    assert "softmax (87%)" in overview and "log_softmax" not in overview
    tasks = {r["task"]: r for r in _csv(tmp_path / "report" / "tasks.csv")}
    assert tasks["log_softmax"]["bonus"] == "True" and tasks["softmax"]["bonus"] == "False"


def test_a_deleted_answer_cell_is_its_own_category_never_a_wrong_answer(tmp_path: Path) -> None:
    gone = ("The answer cell 'softmax' is missing from your notebook, so `softmax` could not be graded. Do not "
            "delete answer cells: copy the cell back from the released notebook.")
    r = _with_outcomes(softmax_result("ada", [("failed", gone), ("failed", gone), ("passed", "")],
                                      output="Answer cell 'softmax' is missing from the notebook."),
                       "student_error", "student_error", "passed")
    r["extra_data"]["missing"] = ["softmax"]
    write(tmp_path, r)
    write(tmp_path, _with_outcomes(softmax_result("bea", [("failed", "Problem:  off."), ("passed", ""),
                                                          ("passed", "")]), "wrong", "passed", "passed"))
    report = analyse(tmp_path)
    soft = next(t for t in report.tasks if t.task == "softmax")
    assert (soft.earned, soft.wrong, soft.missing, soft.not_run) == (6, 4, 10, 0)
    first = next(c for c in report.checks if c.name == SOFTMAX[0][1])
    assert (first.passed, first.wrong, first.missing, first.ran) == (0, 1, 1, 2)
    assert {f.kind for f in report.failures if "ada" in f.students} == {"answer cell missing"}
    (flag,) = report.flagged
    assert flag.student == "ada" and flag.reasons[0].startswith("answer cell(s) deleted: softmax")
    write_report(tmp_path)
    tasks = {r["task"]: r for r in _csv(tmp_path / "report" / "tasks.csv")}
    assert [float(tasks["softmax"][k]) for k in ("lost_wrong_fraction", "answer_cell_missing_fraction")] == [0.2, 0.5]


def _two_lessons(graded: Path) -> None:
    """ada strong on both; bea strong on 07, weak on 02 (a drop); cal submitted 07 only; dan 07 only, low."""
    for student, fractions in (("ada", (1.0, 1.0)), ("bea", (1.0, 0.3)), ("cal", (0.8, None)), ("dan", (0.2, None)),
                               ("eve", (0.9, 0.9))):
        for assignment, f in zip((CH, "02_modules"), fractions, strict=True):
            if f is not None:
                tests = [check("t", "x", 10.0, "passed")]
                tests[0]["score"] = 10.0 * f
                write(graded, result(student, assignment, tests))


def test_every_student_has_a_row_and_the_review_list_has_more_than_zeros(tmp_path: Path) -> None:
    _two_lessons(tmp_path)
    write_report(tmp_path)
    rows = {r["student"]: r for r in _csv(tmp_path / "report" / "students.csv")}
    assert list(rows) == ["ada", "bea", "cal", "dan", "eve"]
    assert (rows["bea"]["02_modules"], rows["bea"][CH], rows["bea"]["total"], rows["bea"]["total_max"]) == (
        "3.0", "10.0", "13.0", "20.0")
    assert rows["cal"]["02_modules"] == "" and rows["cal"]["total"] == "8.0"
    why = {(f["student"], f["assignment"]): f["reasons"] for f in _csv(tmp_path / "report" / "flagged.csv")}
    assert why[("bea", "02_modules")].startswith("a drop: 30% here, 100% on average")
    assert why[("dan", CH)] == "far below the class: 20%, the median is 90%"
    assert why[("cal", "02_modules")] == "no notebook: nothing was graded for 02_modules (1 other assignment(s) graded)"
    assert ("ada", CH) not in why and ("eve", "02_modules") not in why
    page = parse(tmp_path / "report" / "report.html")
    text = " ".join(page.text)
    assert "not submitted" in text and "3 / 10" in text


def _gradebook(db: Path) -> None:
    """nbgrader's gradebook as Formgrader leaves it: ada's check_softmax given 1 point of extra credit and
    check_softmax_cross_entropy a manual score; bea autograded only; cal enrolled, nothing submitted."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", "effective-pytorch") as gb:
        gb.add_assignment(CH)
        gb.add_notebook(CH, CH)
        for cell, points in (("check_softmax", 10), ("check_softmax_cross_entropy", 10), ("check_log_softmax", 0)):
            gb.add_grade_cell(cell, CH, CH, max_score=points, cell_type="code")
        for student in ("ada", "bea", "cal"):
            gb.add_student(student)
        for student, scores in (("ada", (10, 0, 0)), ("bea", (6, 10, 0))):
            gb.add_submission(CH, student)
            for cell, score in zip(("check_softmax", "check_softmax_cross_entropy", "check_log_softmax"), scores,
                                   strict=True):
                grade = gb.find_grade(cell, CH, CH, student)
                grade.auto_score, grade.needs_manual_grade = score, False
        gb.find_grade("check_softmax", CH, CH, "ada").extra_credit = 1
        gb.find_grade("check_softmax_cross_entropy", CH, CH, "ada").manual_score = 4
        gb.find_grade("check_log_softmax", CH, CH, "bea").extra_credit = 3  # the kit's stretch points
        gb.db.commit()


def test_formgraders_manual_grades_are_shown_and_the_gradebook_is_left_alone(tmp_path: Path) -> None:
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import interpreter_bin_first

    interpreter_bin_first()  # nbgrader makes gradebook.db with alembic from PATH
    graded = tmp_path / "graded"
    write(graded, softmax_result("ada", [("passed", ""), ("passed", ""), ("failed", "Problem:  off.")]))
    write(graded, softmax_result("bea", [("failed", "Problem:  off."), ("passed", ""), ("passed", "")]))
    db = tmp_path / "gradebook.db"  # the course folder, above graded/
    _gradebook(db)
    before = db.read_bytes()
    write_report(graded)
    assert db.read_bytes() == before
    (ada,) = _csv(graded / "report" / "adjustments.csv")
    assert (ada["student"], float(ada["kit_score"]), float(ada["nbgrader_score"]), float(ada["difference"])) == (
        "ada", 10.0, 15.0, 5.0)
    assert ada["changes"] == "check_softmax: +1 extra credit; check_softmax_cross_entropy: 0 -> 4"
    rows = {r["student"]: r for r in _csv(graded / "report" / "students.csv")}
    assert (rows["ada"][CH], rows["bea"][CH], rows["cal"][CH]) == ("15.0", "19.0", "")
    assert ("cal", CH) in {(f.student, f.assignment) for f in analyse(graded, db).flagged}
    text = " ".join(" ".join(parse(graded / "report" / "report.html").text).split())
    assert "15 / 20 (kit 10)" in text and "check_softmax: +1 extra credit" in text


def test_a_damaged_gradebook_is_a_note_never_a_failed_report(tmp_path: Path) -> None:
    pytest.importorskip("nbgrader")
    graded = tmp_path / "graded"
    write(graded, softmax_result("ada", [("passed", ""), ("passed", ""), ("passed", "")]))
    db = tmp_path / "elsewhere.db"
    db.write_bytes(b"not a database")
    assert cli.main(["class-report", str(graded), "--gradebook", str(db)]) == 0
    text = " ".join(parse(graded / "report" / "report.html").text)
    assert "could not be read as nbgrader's gradebook" in text
    assert db.read_bytes() == b"not a database"


LOOPS = "def softmax(logits, dim=-1):\n    while True:\n        pass\n"
RENAMED = "def cross_entropy_of_softmax(labels, logits, dim=-1):\n    return -(labels * logits).sum()\n"
LOOPS_WITHOUT_ITS_FUNCTION = "def log_softmax(logits, dim=-1):\n    while True:\n        pass\n"
CHATTY = ("def softmax(logits, dim=-1):\n    print('.' * (1 << 21))\n    shifted = logits - logits.amax(dim=dim, "
          "keepdim=True)\n    return shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)\n")


def test_the_review_list_names_a_renamed_function_a_time_out_and_prints_cut_off(tmp_path: Path) -> None:
    """cy's notebook of the course week: a softmax that loops, softmax_cross_entropy renamed (NameError in every
    check), a log_softmax that loops and has no autograd.Function: the list said only "broke the stated rule of
    log_softmax". dee's correct softmax prints 2 MiB a call."""
    from autograder.judging.report import gradescope
    from tests.kit import FAST, grade_fast

    graded = tmp_path / "graded"
    (tmp_path / "cy").mkdir()
    (tmp_path / "dee").mkdir()
    notebooks = {"cy": solved(tmp_path / "cy", CH, softmax=LOOPS, softmax_cross_entropy=RENAMED,
                              log_softmax=LOOPS_WITHOUT_ITS_FUNCTION),
                 "dee": solved(tmp_path / "dee", CH, softmax=CHATTY)}
    for student, path in notebooks.items():
        # cy's two loops each wait out one call's limit: 2 s, not the tests' usual 5 s
        limits = replace(FAST, call_seconds=2.0) if student == "cy" else FAST
        r = gradescope(grade_fast(path, only=None if student == "cy" else "softmax and not speed", limits=limits))
        r["extra_data"]["student"] = student
        write(graded, r)
    report = analyse(graded)
    flagged = {f.student: f.reasons for f in report.flagged}
    cy = "\n".join(flagged["cy"])
    timed = [f.tasks for f in report.failures if "did not finish within" in f.example]
    assert sorted(timed) == [["log_softmax"], ["softmax"]], timed  # one finding per task, never merged
    assert "a function the checks call is not defined (renamed?): softmax_cross_entropy" in cy, cy
    assert "timed out in softmax, log_softmax (an infinite loop, or far too slow?)" in cy, cy
    assert "broke the stated rule" not in cy, cy  # the loop is the problem to look at, not the rule
    assert flagged["dee"] == ["printed more than 1 MiB: the prints beyond it were dropped (no point lost)"]


def test_assignment_and_task_names_never_break_mid_word(graded: Path) -> None:
    """Every cell was overflow-wrap:anywhere, so the table squeezed the assignment column and printed
    "07_numerical_stabi / lity". Names keep their width (break-word: broken only if longer than the page)."""
    import re

    html = write_report(graded).read_text()
    cells = re.findall(rf"<t([dh])([^>]*)>{CH}</t\1>", html)
    assert cells and all(attrs == " class=id" for _, attrs in cells), cells
    tasks = [a for a in re.findall(r"<td([^>]*)>softmax_cross_entropy</td>", html) if "colspan" not in a]
    assert tasks and all(attrs == " class=id" for attrs in tasks), tasks  # a full-width row has room
    style = html.split("<style>")[1].split("</style>")[0]
    assert "td.id,th.id{overflow-wrap:break-word}" in style
