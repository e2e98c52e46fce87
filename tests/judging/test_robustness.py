"""The grader survives hostile or broken submissions and always returns a result.

Each case uses chapter 07. Time bounds use the FAST limits from tests/kit.py
(5 s per call, 20 s to load); real grading uses 20 s and 60 s.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from autograder.course.cases import mutant
from autograder.judging.notebook import load_submission
from autograder.judging.report import gradescope
from autograder.judging.results import Outcome
from autograder.judging.seeds import secret_seed
from tests import forked
from tests.kit import (
    FAST,
    ROOT,
    by_name,
    check_count,
    grade_fast,
    scores_on_their_own,
    solution_cells,
    solved,
    task_scores,
    write_submission,
)

CH = "07_numerical_stability"


def test_stderr_and_warnings_do_not_cost_points(tmp_path: Path) -> None:
    noisy = solution_cells(CH)["softmax"] + '''
import sys, warnings
print("debug output on stderr", file=sys.stderr)
warnings.warn("a user warning at import")
_old_style = torch.tensor(torch.randn(2), requires_grad=True)  # torch warns about this
'''
    g = grade_fast(solved(tmp_path, CH, softmax=noisy))
    assert g.score == g.max_score == 22


def test_os_exit_at_import_gives_a_complete_zero_result(tmp_path: Path) -> None:
    started = time.monotonic()
    g = grade_fast(solved(tmp_path, CH, softmax="import os\nos._exit(0)\n"))
    assert time.monotonic() - started < 30
    assert g.score == 0 and g.max_score == 22 and len(g.results) == check_count(CH)
    assert all("exit" in r.output for r in g.results)


def test_segfault_zeroes_only_the_function_that_crashed(tmp_path: Path) -> None:
    crash = "def softmax(logits, dim=-1):\n    import ctypes\n    ctypes.string_at(0)\n"  # in the body: no load-time
    # ctypes in reach of softmax_cross_entropy's rule (07 reads each task's code, load-time code of every cell)
    g = grade_fast(solved(tmp_path, CH, softmax=crash))
    scores = task_scores(g)
    assert scores["softmax"] == 0 and scores["softmax_cross_entropy"] == 6
    assert "SIGSEGV" in by_name(g)["check_softmax_guide_example"].output


def test_infinite_loop_in_a_call_is_bounded(tmp_path: Path) -> None:
    loop = "def softmax(logits, dim=-1):\n    while True:\n        pass\n"
    started = time.monotonic()
    g = grade_fast(solved(tmp_path, CH, softmax=loop), limits=replace(FAST, call_seconds=2.0))
    assert time.monotonic() - started < 45  # one 2 s timeout, then fail fast
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}
    assert "did not finish within 2 s" in by_name(g)["check_softmax_guide_example"].output


def test_infinite_loop_at_import_is_bounded(tmp_path: Path) -> None:
    started = time.monotonic()
    # a 2 s load limit: the loop spins for the whole limit, on a core the other tests need
    g = grade_fast(solved(tmp_path, CH, softmax="while True:\n    pass\n"), limits=replace(FAST, load_seconds=2.0))
    assert time.monotonic() - started < 30
    assert g.score == 0 and len(g.results) == check_count(CH)
    assert "took longer than 2 s" in g.results[0].output


def test_huge_allocation_fails_the_check_not_the_grader(tmp_path: Path) -> None:
    hog = "def softmax(logits, dim=-1):\n    return torch.empty(50 * 2**30, dtype=torch.uint8)\n"
    g = grade_fast(solved(tmp_path, CH, softmax=hog))
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}


def test_corrupt_notebook_gets_a_clear_message(tmp_path: Path) -> None:
    path = solved(tmp_path, CH)
    path.write_text(path.read_text()[:500])
    g = grade_fast(path)
    assert g.score == 0 and g.max_score == 22
    assert "not valid notebook JSON" in g.results[0].output


def test_deleted_answer_cell_is_named(tmp_path: Path) -> None:
    path = solved(tmp_path, CH)
    nb = json.loads(path.read_text())
    nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "softmax"]
    path.write_text(json.dumps(nb))
    g = grade_fast(path)
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}
    assert "answer cell 'softmax' is missing" in by_name(g)["check_softmax_random_batches"].output
    assert g.missing == ["softmax"] and gradescope(g)["extra_data"]["missing"] == ["softmax"]


def test_renamed_function_is_reported_with_what_was_found(tmp_path: Path) -> None:
    renamed = solution_cells(CH)["softmax"].replace("def softmax(", "def my_softmax(")
    g = grade_fast(solved(tmp_path, CH, softmax=renamed))
    out = by_name(g)["check_softmax_random_batches"].output
    assert "`softmax` is not defined" in out and "my_softmax" in out


def test_grading_the_same_notebook_twice_gives_the_same_scores(tmp_path: Path) -> None:
    # A wrong answer that only some random inputs expose: the seed comes from the notebook, so it repeats.
    wrong_dim = "def softmax(logits, dim=-1):\n    return torch.softmax(logits, -1)\n"
    path = write_submission(tmp_path, CH, {"softmax": wrong_dim, **mutant(CH, "log of softmax").cells})
    first, second = grade_fast(path, seed=None), grade_fast(path, seed=None)
    assert [(r.nodeid, r.score, r.output) for r in first.results] == [
        (r.nodeid, r.score, r.output) for r in second.results]


def test_the_seed_depends_on_the_course_secret_and_the_notebook(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = solved(tmp_path, CH)
    monkeypatch.setenv("AUTOGRADER_SECRET", "one")
    a = secret_seed(load_submission(path))
    monkeypatch.setenv("AUTOGRADER_SECRET", "two")
    assert secret_seed(load_submission(path)) != a
    path.write_text(path.read_text() + " ")
    assert secret_seed(load_submission(path)) != a


def test_cli_exits_zero_and_writes_gradescope_json_and_junit(tmp_path: Path) -> None:
    path = write_submission(tmp_path, CH, {})  # the untouched release: score 0
    out, junit = tmp_path / "results.json", tmp_path / "report.xml"
    done = forked.run("autograder", "grade", str(path), "--out", str(out), "--junit", str(junit), cwd=ROOT,
                      timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["score"] == 0 and result["max_score"] == 22
    assert isinstance(result["execution_time"], float)
    for test in result["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] == "failed" and test["visibility"] in {"visible", "after_published"}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests", 0)) == int(suite.get("failures", 0)) == check_count(CH)


def test_cuda_without_a_gpu_skips_and_says_so(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH), device="cuda")
    assert {r.status for r in g.results} == {"skipped"}
    assert g.max_score == 0 and any("no CUDA GPU" in note for note in g.notes)


def test_a_broken_grading_environment_is_the_graders_error_not_a_zero(tmp_path: Path) -> None:
    import dataclasses

    from autograder.judging.judge import GraderError
    from autograder.judging.registry import CHAPTERS

    broken = dataclasses.replace(CHAPTERS[CH], preamble="import module_missing_on_this_machine\n")
    with pytest.raises(GraderError, match="module_missing_on_this_machine"):
        grade_fast(solved(tmp_path, CH), registry={**CHAPTERS, CH: broken})


FORGE_LOAD_REPORT = """
import json
_dumps = json.dumps
def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and "load" in obj:
        obj = {**obj, "load": LOAD}
    return _dumps(obj, *args, **kwargs)
json.dumps = _forged
"""


def test_a_forged_load_report_is_a_corrupted_channel_not_a_crash(tmp_path: Path) -> None:
    load = '{"errors": {"softmax": "boom"}, "names": 5}'
    g = grade_fast(solved(tmp_path, CH, softmax=f"LOAD = {load}\n" + FORGE_LOAD_REPORT + solution_cells(CH)["softmax"]))
    assert g.score == 0 and g.max_score == 22
    assert any("corrupted the grader's channel" in n for n in g.notes), g.notes


def test_a_forged_setup_error_or_cuda_flag_is_ignored(tmp_path: Path) -> None:
    """Only what the child says before student code runs can make a grader error or skip the CUDA checks."""
    load = ('{"errors": {}, "names": {"softmax": "function", "softmax_cross_entropy": "function", '
            '"log_softmax": "function", "robust_loss": "function"}, "setup_error": "forged", "cuda": True}')
    cells = f"LOAD = {load}\n" + FORGE_LOAD_REPORT + solution_cells(CH)["softmax"]
    g = grade_fast(solved(tmp_path, CH, softmax=cells))
    # Every check ran on the CPU and passed on its own; the patch of json.dumps at load breaks each task's rule
    # read from the code (07), which voids the scores, and says why.
    assert len(g.results) == check_count(CH) and not [r for r in g.results if r.outcome is Outcome.SKIPPED]
    graded = [r for r in g.results if not r.rule and not r.bonus]
    assert {r.task: scores_on_their_own(g)[r.task] for r in graded} == {
        t: sum(r.points for r in graded if r.task == t) for t in {r.task for r in graded}}
    assert all("json.dumps" in r.output for r in g.results if r.rule), [r.output for r in g.results if r.rule]


# A correct softmax that prints as a student debugging would: far more than the box lets a file grow.
CHATTY = '''
def softmax(logits, dim=-1):
    for i in range(2000):
        print(f"debug {i}: logits have shape {tuple(logits.shape)} and this line is padded to be long " + "." * 400)
    shifted = logits - logits.amax(dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)
'''


def test_prints_never_change_the_score(tmp_path: Path) -> None:
    """Output beyond what the box keeps is dropped, never an error in the student's code (a print that raised
    'File too large' once the log reached the box's file-size limit cost a correct softmax its points)."""
    small = replace(FAST, file_bytes=1 << 20)  # the box's file-size limit, low: about a megabyte a call
    g = grade_fast(solved(tmp_path, "07_numerical_stability", softmax=CHATTY), only="softmax and not speed",
                   limits=small)
    lost = [(r.name, r.output[:300]) for r in g.results if r.status != "passed" and r.outcome.value != "skipped"]
    assert not lost and g.results, lost
    notes = gradescope(g)["output"]
    assert "your prints beyond 1 MiB were dropped" in notes and "costs no point" in notes, notes


def test_a_quiet_notebook_has_no_note_on_dropped_prints(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH), only="softmax and not speed")
    assert "dropped" not in gradescope(g)["output"]


CONSOLE = '''
import sys
def softmax(logits, dim=-1):
    sys.stdout.buffer.write(b"raw bytes\\n")
    sys.stdout.buffer.flush()
    sys.stdout.writelines(["a\\n", "b\\n"])
    assert sys.stdout.encoding.lower().replace("-", "") == "utf8" and not sys.stdout.isatty()
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.buffer.write("caf\\u00e9".encode())
    print(sys.stdout.fileno(), sys.stdout.errors, file=sys.stderr)
    shifted = logits - logits.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)
'''


def test_code_that_writes_to_the_console_as_a_file_keeps_its_points(tmp_path: Path) -> None:
    """sys.stdout.buffer (bytes), encoding, isatty, writelines, reconfigure: what code written for a terminal asks
    of sys.stdout. The box's own stdout lacked `buffer`, so a correct softmax raised AttributeError in every check."""
    g = grade_fast(solved(tmp_path, CH, softmax=CONSOLE), only="softmax and not speed")
    lost = [(r.name, r.output[:300]) for r in g.results if r.status != "passed" and r.outcome.value != "skipped"]
    assert not lost and g.results, lost
