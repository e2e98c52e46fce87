"""Checks are declared with @check, and a declaration the grader does not understand fails closed: an
error before anything is scored, never a check silently worth 0 points or filed under no task.

(Before @check, each of these graded: a misspelled or missing points marker gave a 0-point check, a
misspelled task a task of its own, a check without a task marker an empty task.)"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch import Tensor

from autograder.chapters.ch07_numerical_stability.checks import Api
from autograder.judging.api import StudentApi, answer, harness
from autograder.judging.judge import GraderError
from autograder.judging.plugin import CheckSpec, check, declaration_problems
from autograder.judging.registry import CHAPTERS
from tests.kit import grade_fast, solved

CH = "07_numerical_stability"
# 07 with two graded tasks, softmax (10 points) and softmax_cross_entropy (10 points), as it had before this round,
# and its other answers left out of these declarations: the shape the tests below are written for
WITHOUT_STRETCH = dataclasses.replace(CHAPTERS[CH], points={"softmax": 10, "softmax_cross_entropy": 10}, bonus={})


@pytest.mark.parametrize(("declare", "why"), [
    (lambda: check(task="softmax", points=2, hiden=True), "unexpected keyword argument 'hiden'"),  # type: ignore[call-arg]
    (lambda: check(task="softmax", pionts=2), "unexpected keyword argument 'pionts'"),  # type: ignore[call-arg]
    (lambda: check(task="softmax"), "missing 1 required keyword-only argument: 'points'"),  # type: ignore[call-arg]
    (lambda: check(points=2), "missing 1 required keyword-only argument: 'task'"),  # type: ignore[call-arg]
    (lambda: check(task="softmax", points=0), "points must be a positive number"),
    (lambda: check(task="softmax", points=True), "points must be a positive number"),
    (lambda: check(task="softmax", points="2"), "points must be a positive number"),  # type: ignore[arg-type]
    (lambda: check(task="", points=2), "task must name an answer cell"),
    (lambda: check(task="softmax", points=2, visible="yes"), "True or False"),  # type: ignore[arg-type]
])
def test_check_refuses_what_it_does_not_know(declare: Callable[[], object], why: str) -> None:
    with pytest.raises(TypeError, match=why):
        declare()


def test_check_decorates_check_functions_once() -> None:
    def helper() -> None: ...

    def check_softmax() -> None: ...

    with pytest.raises(TypeError, match="a check is a function check_"):
        check(task="softmax", points=2)(helper)
    once = check(task="softmax", points=2)(check_softmax)
    with pytest.raises(TypeError, match="declared once"):
        check(task="softmax", points=3)(once)


def test_tasks_and_points_must_be_the_notebooks() -> None:
    chapter, module = WITHOUT_STRETCH, SimpleNamespace(Api=Api)
    full = {"check_a": CheckSpec("softmax", 10), "check_b": CheckSpec("softmax_cross_entropy", 10)}
    assert declaration_problems(chapter, module, full) == []
    assert declaration_problems(chapter, module, {**full, "check_c": CheckSpec("softmax", 2, cuda_only=True)}) == []
    assert declaration_problems(chapter, module, {**full, "check_c": None}) == [
        "check_c is not declared with @check(task=..., points=...)"]
    assert declaration_problems(chapter, module, {**full, "check_c": CheckSpec("sofmax", 2)}) == [
        "check_c grades task 'sofmax', which the notebook does not have (its tasks: softmax, softmax_cross_entropy)"]
    assert declaration_problems(chapter, module, {"check_a": CheckSpec("softmax", 10)}) == [
        "task 'softmax_cross_entropy': its checks carry 0 points, its check cell in the notebook 10"]
    assert declaration_problems(chapter, module, {**full, "check_c": CheckSpec("softmax", 1)}) == [
        "task 'softmax': its checks carry 11 points, its check cell in the notebook 10"]


def test_the_api_must_be_declared_and_name_the_notebooks_answers() -> None:
    class Misspelled(StudentApi):
        @answer
        def sofmax(self, logits: Tensor, dim: int = -1) -> Tensor: ...

        @harness("xent")
        def cross_entropy(self, labels: Tensor, logits: Tensor) -> Tensor: ...  # the harness's: any name

    chapter = WITHOUT_STRETCH
    full = {"check_a": CheckSpec("softmax", 10), "check_b": CheckSpec("softmax_cross_entropy", 10)}
    assert declaration_problems(chapter, SimpleNamespace(), full) == [
        "ch07_numerical_stability/checks.py declares no API: class Api(StudentApi)"]
    assert declaration_problems(chapter, SimpleNamespace(Api=Misspelled), full) == [
        "Api.sofmax: the notebook has no answer cell 'sofmax' "
        "(its answers: softmax, softmax_cross_entropy, log_softmax, robust_loss)"]


def _grade_with_checks(tmp_path: Path, code: str) -> None:
    """Grade the reference solution of 07 with `code` as its checks module."""
    checks = tmp_path / f"checks_{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]}.py"  # a fresh module
    checks.write_text(code)
    grade_fast(solved(tmp_path, CH), registry={**CHAPTERS, CH: dataclasses.replace(CHAPTERS[CH], checks=checks)})


GOOD = '''
from autograder.judging.api import StudentApi
from autograder.judging.plugin import check


class Api(StudentApi):
    pass


@check(task="softmax_cross_entropy", points=10)
def check_b(student) -> None:
    """b"""
'''


@pytest.mark.parametrize(("code", "why"), [
    ('@check(task="softmax", points=10, hidden=True)\ndef check_a(student) -> None:\n    """a"""\n',
     "unexpected keyword argument 'hidden'"),
    ('import pytest\n\n\n@pytest.mark.task("softmax")\n@pytest.mark.points(10)\ndef check_a(student) -> None:\n'
     '    """a, declared with the markers of old"""\n', "check_a is not declared with @check"),
])
def test_a_wrong_declaration_is_a_grader_error_not_a_score(tmp_path: Path, code: str, why: str) -> None:
    with pytest.raises(GraderError, match=why):
        _grade_with_checks(tmp_path, GOOD + code)
