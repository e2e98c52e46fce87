"""The seams of grading: the notebook is read once and handed on, the zygote is handed to what forks from it,
and settings of the whole process belong to the entry points alone (grading leaves the process as it was)."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from autograder import cli
from autograder.course import run
from autograder.judging import notebook
from tests.kit import ROOT, grade_fast, solved

CH = "07_numerical_stability"
ONE_CHECK = "check_softmax_guide_example"
# The only modules that may use the process's shared zygote (autograder.sandbox.launcher.zygote): the entry
# points. Everything below them (sandbox.process.Sandbox, judging.student.Student, judging.judge) is handed one.
ENTRY_POINTS = {"cli.py", "course/batch.py", "course/nbgrader/autograde.py", "course/nbgrader/warm.py",
                "course/selftest.py", "course/demo.py"}


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path the grader reads as a notebook from now on."""
    reads: list[Path] = []
    read = notebook.read_notebook

    def counted(path: Path) -> dict[str, Any]:
        reads.append(path)
        return read(path)

    monkeypatch.setattr(notebook, "read_notebook", counted)
    return reads


def test_grading_reads_the_notebook_once_and_leaves_the_process_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = solved(tmp_path, CH)
    monkeypatch.setenv("AUTOGRADER_SECRET", "a course secret")  # seed=None: the secret seed, from the loaded cells
    reads = _reads(monkeypatch)
    threads, environ, stdout = 3, dict(os.environ), sys.stdout
    torch.set_num_threads(threads)  # not the 1 the entry points set: grading must neither need nor set it
    try:
        g = grade_fast(path, seed=None, only=ONE_CHECK)
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(1)  # tests/kit.py's
    assert dict(os.environ) == environ and sys.stdout is stdout
    assert [r.status for r in g.results] == ["passed"]
    assert reads == [path]


def test_the_grade_command_reads_the_notebook_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = solved(tmp_path, CH)
    monkeypatch.setenv("AUTOGRADER_SECRET", "a course secret")
    reads = _reads(monkeypatch)
    assert cli.main(["grade", str(path), "--timeout", "5", "--only", ONE_CHECK]) == 0
    assert reads == [path]
    assert "1 / 1" in capsys.readouterr().out


def test_the_grade_command_reports_a_notebook_of_no_known_assignment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.ipynb"
    path.write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}')
    assert cli.main(["grade", str(path)]) == 0
    assert "Cannot tell which assignment mine.ipynb is for" in capsys.readouterr().out


def test_every_command_parses_where_the_os_has_no_sched_getaffinity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """macOS has no os.sched_getaffinity: grade-all's default --workers is every core there, asked only when
    grade-all runs."""
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    for command in ("grade", "grade-all", "merge", "class-report", "similarity", "bundle", "build", "selftest", "demo"):
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        assert done.value.code == 0, command
    assert "--workers" in capsys.readouterr().out
    asked: list[int] = []

    def grade_all(root: Path, out: Path, workers: int, *args: object, **options: object) -> int:
        asked.append(workers)
        return 2  # as if it failed: nothing more is done

    monkeypatch.setattr(run, "grade_all", grade_all)
    assert cli.main(["grade-all", str(tmp_path)]) == 2
    assert cli.main(["grade-all", str(tmp_path), "--workers", "5"]) == 2
    assert asked == [3, 5]


def test_default_workers_is_the_cores_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2}, raising=False)
    assert cli.default_workers() == 2
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # "undetermined"
    assert cli.default_workers() == 1


def _uses_the_shared_zygote(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "autograder.sandbox.launcher" and any(
                alias.name == "zygote" for alias in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "zygote" and isinstance(node.value, ast.Name) \
                and node.value.id == "launcher":
            return True
    return False


def test_only_the_entry_points_use_the_shared_zygote() -> None:
    package = ROOT / "autograder"
    users = {str(p.relative_to(package)) for p in package.rglob("*.py")
             if "runtime" not in p.parts and _uses_the_shared_zygote(ast.parse(p.read_text()))}
    assert users <= ENTRY_POINTS, users - ENTRY_POINTS
    assert {"course/batch.py", "course/nbgrader/autograde.py", "course/selftest.py"} <= users  # the check sees them
