"""`python -m autograder selftest`: on one chapter, the CPU self-test meets every expectation and says so in one
table and in JSON; failures are named and exit 1; without CUDA `--device cuda` exits 4. The rows of every chapter
are graded one test each in tests/chapters/test_chapters.py and tests/chapters/test_every_chapter.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from autograder.course import selftest
from autograder.course.cases import Mutant, all_mutants
from autograder.judging.figures import Figure, Solution, peak_bandwidth
from autograder.judging.judge import Grade
from tests import forked
from tests.chapters.test_chapters import grader
from tests.kit import ROOT


def test_cpu_selftest_meets_every_expectation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The self-test's own run on one chapter: table, JSON and exit code. Every chapter's solution, release and
    cases are graded the same way (selftest's rows, one test each) in tests/chapters/test_chapters.py and
    tests/chapters/test_every_chapter.py; grading them all again here cost the suite three minutes."""
    out = tmp_path / "selftest.json"
    chapter = "07_numerical_stability"
    code = selftest.main("cpu", out, grader, chapters=[chapter])
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert code == 0 and report["ok"] and report["failed"] == [], table
    rows = {(r["kind"], r["chapter"], r["case"]): r for r in report["rows"]}
    assert rows["solution", chapter, "reference solution"]["verdict"] == "ok"
    assert rows["release", chapter, "untouched release"]["verdict"] == "ok"
    mutants = [m for m in all_mutants() if m.chapter == chapter]
    assert [m.name for m in mutants] == [n for k, c, n in rows if k == "wrong"]
    assert [k for k, c, n in rows if k not in ("solution", "release", "wrong")] == ["machine", "machine"]
    assert not any(kind == "cuda" for kind, _, _ in rows)
    assert "0 failed" in table and all(m.name in table for m in mutants)


def test_failed_expectations_are_named_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def nothing_graded(notebook: Path, device: str, only: str | None) -> Grade:
        return Grade(notebook, notebook.stem, device)

    code = selftest.main("cpu", tmp_path / "selftest.json", nothing_graded, chapters=["07_numerical_stability"])
    table = capsys.readouterr().out
    failed = json.loads((tmp_path / "selftest.json").read_text())["failed"]
    assert code == 1
    assert failed[:3] == ["07_numerical_stability/reference solution", "07_numerical_stability/untouched release",
                          "07_numerical_stability/no max subtraction"]
    assert "out of 0 points, expected 22" in table
    assert "check_softmax_huge_and_infinite_logits did not run" in table


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_asked_for_without_cuda_exits_4(tmp_path: Path) -> None:
    out = tmp_path / "selftest-cuda.json"
    done = forked.run("autograder", "selftest", "--device", "cuda", "--out", str(out), cwd=ROOT, timeout=120)
    assert done.returncode == selftest.NO_CUDA == 4, done.stderr
    assert "no CUDA GPU" in done.stderr and "Nothing was graded" in done.stderr
    assert json.loads(out.read_text())["ok"] is False


def test_peak_bandwidth_from_device_properties() -> None:
    h100_sxm = SimpleNamespace(memory_clock_rate=2_619_000, memory_bus_width=5120)  # kHz, bits
    assert peak_bandwidth(h100_sxm) == pytest.approx(3.35e12, rel=0.01)
    assert peak_bandwidth(SimpleNamespace()) is None  # older torch: reported as unknown


def test_amp_figures_measure_the_chapter_08_reference_step() -> None:
    from autograder.chapters.ch08_mixed_precision.selftest import measure_amp

    step = selftest.load_solution("08_mixed_precision", "amp_train_step")
    figures = measure_amp(step, 32, 16, "cpu", torch.bfloat16, steps=2, rounds=1)
    assert figures.float32 > 0 and figures.amp > 0 and figures.speedup > 0
    assert figures.float32_bytes == figures.amp_bytes == 0  # memory is measured on CUDA only


def test_a_mistake_only_the_cpu_can_show_is_not_expected_of_a_cuda_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    """08's "float16 on the CPU" ignores dtype=: on CUDA the asked-for dtype is float16 anyway."""
    asked: dict[str, list[str]] = {"cpu": [], "cuda": []}
    row = selftest.Row("info", "-", "-", None, "", "")
    monkeypatch.setattr(selftest, "machine_row", lambda device: row)
    monkeypatch.setattr(selftest, "solution_rows", lambda chapter, device, grader: [row])
    monkeypatch.setattr(selftest, "release_row", lambda chapter, device, grader: row)
    monkeypatch.setattr(selftest, "_sandbox_row", lambda solutions: row)
    monkeypatch.setattr(selftest, "_measured", lambda *args: row)

    def mutant_row(m: Mutant, device: str, grader: object) -> selftest.Row:
        asked[device].append(m.name)
        return row

    monkeypatch.setattr(selftest, "mutant_row", mutant_row)
    for device in asked:
        list(selftest.rows(device, grader, ["08_mixed_precision"]))
    assert "float16 on the CPU" in asked["cpu"] and "float16 on the CPU" not in asked["cuda"]
    assert set(asked["cuda"]) == set(asked["cpu"]) - {"float16 on the CPU"}


def test_cuda_figures_come_from_each_chapters_own_selftest_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA, the rows after the gradings are the CUDA_FIGURES of the chosen chapters' selftest.py, each measured
    on its reference solution (faked here: no GPU needed), and one that raises is a failed row, not a crash."""
    assert list(selftest.cuda_figures("05_batch_gather")) == ["batch_gather bandwidth"]
    assert list(selftest.cuda_figures("08_mixed_precision")) == ["AMP float16 step"]
    assert selftest.cuda_figures("07_numerical_stability") == {}  # no selftest.py in its folder
    row = selftest.Row("info", "-", "-", None, "", "")
    monkeypatch.setattr(selftest, "machine_row", lambda device: row)
    monkeypatch.setattr(selftest, "solution_rows", lambda chapter, device, grader: [row])
    monkeypatch.setattr(selftest, "release_row", lambda chapter, device, grader: row)
    monkeypatch.setattr(selftest, "mutants", lambda chapter: [])
    monkeypatch.setattr(selftest, "_sandbox_row", lambda solutions: row)

    def amp(solution: Solution) -> Figure:
        raise RuntimeError("no GPU here")

    def bandwidth(solution: Solution) -> Figure:
        assert callable(solution("batch_gather"))  # the reference's, loaded here
        return Figure(True, "900 GB/s", values={"bytes_per_second": 9e11})

    figures = {"05_batch_gather": {"batch_gather bandwidth": bandwidth}, "08_mixed_precision": {"AMP step": amp}}
    monkeypatch.setattr(selftest, "cuda_figures", lambda chapter: figures.get(chapter, {}))
    found = [r for r in selftest.rows("cuda", grader, ["05_batch_gather", "07_numerical_stability",
                                                        "08_mixed_precision"]) if r.kind == "cuda"]
    assert [(r.chapter, r.case, r.ok, r.result) for r in found] == [
        ("05_batch_gather", "batch_gather bandwidth", True, "900 GB/s"),
        ("08_mixed_precision", "AMP step", False, "not measured")]
    assert found[0].values == {"bytes_per_second": 9e11} and found[1].detail == "RuntimeError: no GPU here"
