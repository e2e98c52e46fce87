"""The pytest plugin that runs a chapter's checks against one submission.

pytest is the runner: a check is a function `check_*` in the chapter's checks
module, declared with `@check(task=..., points=...)`: the exercise (answer cell)
it grades and what it is worth. The plugin refuses, at collection, a check that
is not declared so, a task the notebook does not have, and points that do not
add up to the notebook's check cells. It gives checks their fixtures (`api`,
`student`, `rng`, `device`) and records each check's result: its outcome
(autograder/judging/results.py), the message the student will see, and the
figures it measured.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
import torch

from autograder.judging.api import StudentApi
from autograder.judging.expect import CheckFailure, RuleBroken
from autograder.judging.registry import Chapter
from autograder.judging.results import MEASURED, NOTE, Measured, Outcome, figures
from autograder.judging.student import Student, StudentError
from autograder.judging.untrusted import safe_text

F = TypeVar("F", bound=Callable[..., None])
SPEC = "__check__"  # the attribute @check sets on a check function
# Characters kept of one check's message: it may list what the child sent (operators, names), each safe already.
MAX_OUTPUT = 20_000


@dataclass(frozen=True)
class CheckSpec:
    task: str  # the answer cell (grade_id) the check grades
    points: float
    visible: bool = False  # the released notebook shows this check too
    cuda_only: bool = False  # skipped off CUDA; its points count on top of the notebook's
    rule: bool = False  # a stated rule of the task (static/rules.py): when it fails, no check of the task scores
    speed: bool = False  # a speed check: it records the ratio it measured (results.RATIO); the self-test reports it


def check(*, task: str, points: float, visible: bool = False, cuda_only: bool = False,
          rule: bool = False, speed: bool = False) -> Callable[[F], F]:
    """Declare a check: the task (answer cell) it grades and its points, whether the notebook shows it
    (`visible`), whether it runs on CUDA only, whether it checks a rule the notebook states for the task
    (`rule`: when it finds the rule broken, raising RuleBroken, the task's other checks are not scored
    either), and whether it is a speed check (`speed`: it records the ratio it measured with
    results.record_measured, which `python -m autograder selftest` reports for the reference). Anything else, or
    a value of the wrong kind, is an error when the module is imported: a check cannot silently be worth 0 points.

    A check's points rest on evidence the student cannot shape: outputs compared with the judge's oracle, the
    judge's clock, limits the kernel enforces, or the judge's own reading of the source. What the student's
    process records about itself (operator traces, hooks) may shape a message, never a point."""
    if not isinstance(task, str) or not task:
        raise TypeError(f"@check: task must name an answer cell, not {task!r}")
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
        raise TypeError(f"@check: points must be a positive number, not {points!r}")
    if not all(isinstance(flag, bool) for flag in (visible, cuda_only, rule, speed)):
        raise TypeError("@check: visible, cuda_only, rule and speed are True or False")
    spec = CheckSpec(task, float(points), visible, cuda_only, rule, speed)

    def declare(fn: F) -> F:
        if not fn.__name__.startswith("check_") or hasattr(fn, SPEC):
            raise TypeError(f"@check on {fn.__name__}: a check is a function check_*, declared once")
        setattr(fn, SPEC, spec)
        return fn
    return declare


def declared_checks(module: Any) -> dict[str, CheckSpec]:
    """The checks a module declares, by function name."""
    return {name: getattr(fn, SPEC) for name, fn in vars(module).items() if hasattr(fn, SPEC)}


def declaration_problems(chapter: Chapter, module: Any, checks: Mapping[str, CheckSpec | None]) -> list[str]:
    """What is wrong with a checks module's declarations for `chapter`: its API (a StudentApi subclass named
    Api whose answers the notebook has), each check's task, and the points of each task, which must add up
    to its check cell's (CUDA-only checks count on top)."""
    problems = []
    api = getattr(module, "Api", None)
    if not (isinstance(api, type) and issubclass(api, StudentApi)):
        problems.append(f"{chapter.checks_name} declares no API: class Api(StudentApi)")
    else:
        problems += [f"Api.{d.name}: the notebook has no answer cell {d.name!r} (its answers: "
                     f"{', '.join(chapter.answers)})" for d in api.declarations().values()
                     if not d.in_harness and d.name not in chapter.answers]
    totals = dict.fromkeys(chapter.tasks, 0.0)
    for name, spec in checks.items():
        if spec is None:
            problems.append(f"{name} is not declared with @check(task=..., points=...)")
        elif spec.task not in totals:
            problems.append(f"{name} grades task {spec.task!r}, which the notebook does not have "
                            f"(its tasks: {', '.join(chapter.tasks)})")
        elif not spec.cuda_only:
            totals[spec.task] += spec.points
    problems += [f"task {task!r}: its checks carry {totals[task]:g} points, its check cell in the notebook "
                 f"{points:g}" for task, points in chapter.tasks.items() if totals[task] != points]
    return problems


@dataclass
class CheckResult:
    nodeid: str
    name: str
    task: str
    points: float
    visible: bool
    outcome: Outcome
    output: str
    cuda_only: bool = False  # skipped off CUDA, its points on top of the notebook's
    rule: bool = False  # a stated rule of the task: failing it voids the task's other checks
    bonus: bool = False  # a stretch task's check: its points count apart, on top of the score
    alone: Outcome | None = None  # NOT_SCORED: what the check gave on its own, before the broken rule voided it
    measured: Measured = field(default_factory=lambda: Measured())  # figures the check measured
    problem: str = ""  # a failed check's mistake as data (CheckFailure's fields): what exactly differs
    hint: str = ""  # what to fix
    mistake: str | None = None  # the stable id of the named mistake the check saw

    @property
    def status(self) -> str:
        """passed | failed | skipped"""
        return self.outcome.status

    @property
    def score(self) -> float:
        return self.points if self.outcome is Outcome.PASSED else 0.0


def _outcome(excinfo: pytest.ExceptionInfo[BaseException]) -> Outcome:
    """What a check's exception says happened: its own outcome (set where it was raised), wrong for an assert
    of the check, and the kit's failure for anything else."""
    exc = excinfo.value
    if isinstance(exc, StudentError):
        return exc.outcome
    if isinstance(exc, AssertionError):  # CheckFailure included
        return Outcome.WRONG
    return Outcome.GRADER_ERROR


def _measured(properties: list[tuple[str, object]]) -> Measured:
    """The figures a check recorded with results.record_measured."""
    found = Measured()
    for name, value in properties:
        if name == MEASURED and isinstance(value, dict):
            found.update(figures(value))
    return found


def _message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    exc = excinfo.value
    if isinstance(exc, (CheckFailure, StudentError)):
        return str(exc)
    if isinstance(exc, AssertionError):
        return str(exc) or "a check failed"
    return (f"The grader itself failed in this check ({type(exc).__name__}: {exc}). This is an error "
            "in the course kit, not necessarily in your code: please tell your instructor.")


def _spec(item: pytest.Item) -> CheckSpec:
    return getattr(item.function, SPEC)  # type: ignore[attr-defined]  # collection made sure it has one


def _rules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The checks in their order, each task's rule checks moved just before its first other check: a broken rule
    voids the checks after it, and no other task's check runs in between (07's cross entropy lends the kit's
    softmax while it runs: with every rule first, it ran before the softmax task's checks)."""
    rules = [item for item in items if _spec(item).rule]
    ordered: list[pytest.Item] = []
    for item in items:
        if not _spec(item).rule:
            task = _spec(item).task
            ordered += [r for r in rules if _spec(r).task == task and r not in ordered]
            ordered.append(item)
    return ordered + [r for r in rules if r not in ordered]


class KitPlugin:
    def __init__(self, student: Student, seed: int, device: str) -> None:
        self._student = student
        self._broken: dict[str, str] = {}  # task -> the rule check it failed
        self._seed = seed
        self._device = device
        self.results: list[CheckResult] = []
        self.declaration_problems: list[str] = []  # found at collection: nothing ran

    @pytest.fixture(scope="session")
    def student(self) -> Student:
        return self._student

    @pytest.fixture
    def api(self, request: pytest.FixtureRequest) -> StudentApi:
        """The chapter's declared API (the checks module's Api), bound to the submission's process."""
        api: type[StudentApi] = request.module.Api
        return api(self._student)

    @pytest.fixture(scope="session")
    def device(self) -> str:
        return self._device

    @pytest.fixture
    def rng(self, request: pytest.FixtureRequest) -> torch.Generator:
        """A generator seeded from the grading's secret seed, the chapter and the check's name: never from a file's
        path, so moving a checks module changes no student's inputs."""
        chapter = self._student.submission.chapter.id
        digest = hashlib.sha256(f"{self._seed}:{chapter}:{request.node.name}".encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)

    @pytest.hookimpl(tryfirst=True)  # before -k deselects: the declarations are checked whole
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        if session.testsfailed:
            return  # the module did not import (a @check it refused, say): pytest reports that and stops
        functions = [item for item in items if isinstance(item, pytest.Function)]
        checks = {item.name: getattr(item.function, SPEC, None) for item in functions}
        module = functions[0].module if functions else None
        self.declaration_problems = declaration_problems(self._student.submission.chapter, module, checks)
        if self.declaration_problems:
            raise pytest.UsageError("\n".join(self.declaration_problems))
        items[:] = _rules_first(items)
        if self._device == "cuda" and not self._student.cuda:
            skip = pytest.mark.skip(reason="skipped: --device cuda was asked for, but this machine has no CUDA GPU")
            for item in items:
                item.add_marker(skip)
        elif self._device != "cuda":
            skip = pytest.mark.skip(reason=f"skipped: this check runs on CUDA only, and this grading ran on "
                                           f"{self._device.upper()}")
            for item in items:
                if _spec(item).cuda_only:
                    item.add_marker(skip)

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
    def pytest_runtest_makereport_plain(self, item: pytest.Item,
                                        call: pytest.CallInfo[Any]) -> pytest.TestReport | None:
        """A check's own failure is reported with its message, not a formatted traceback.

        pytest's default report parses the check module's source for every traceback entry (0.1 s a
        failure, most of the grading of an empty notebook); the kit's message is what every report shows.
        Anything else (a bug in the kit) keeps pytest's traceback.
        """
        when = call.when
        if when == "collect" or call.excinfo is None or not call.excinfo.errisinstance(
                (CheckFailure, StudentError, AssertionError)):
            return None
        return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                                 _message(call.excinfo), when, duration=call.duration, start=call.start,
                                 stop=call.stop, user_properties=item.user_properties)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        hook = yield
        report = hook.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                verdict = Outcome.SKIPPED
                output = str(getattr(call.excinfo.value, "msg", "skipped")) if call.excinfo else "skipped"
                if isinstance(report.longrepr, tuple):
                    output = str(report.longrepr[2]).removeprefix("Skipped: ")
            elif report.failed:
                verdict = _outcome(call.excinfo) if call.excinfo else Outcome.GRADER_ERROR
                output = _message(call.excinfo) if call.excinfo else "failed"
            else:
                # A passing check may leave notes (e.g. its measured speed-up) with results.record_note.
                verdict = Outcome.PASSED
                output = "\n".join(str(v) for k, v in report.user_properties if k == NOTE)
            rule, alone = self._broken.get(_spec(item).task), None
            if rule is not None and verdict is not Outcome.SKIPPED:
                alone = verdict
                was = "passed" if verdict is Outcome.PASSED else "failed"
                output = (f"Not scored: this exercise breaks its stated rule ('{rule}'), so none of its checks "
                          f"counts. On its own this check {was}." + (f"\n\n{output}" if output else ""))
                verdict, report.outcome, report.longrepr = Outcome.NOT_SCORED, "failed", output
            result = self._result(item, verdict, output, _measured(report.user_properties), alone)
            exc = call.excinfo.value if call.excinfo is not None else None
            if isinstance(exc, CheckFailure):
                result.problem, result.hint = safe_text(exc.problem, MAX_OUTPUT), safe_text(exc.hint, MAX_OUTPUT)
                result.mistake = exc.mistake
            elif isinstance(exc, StudentError):  # what the judge saw of the call (a name not defined, a time-out)
                result.mistake = exc.mistake
            if result.rule and call.excinfo is not None and call.excinfo.errisinstance(RuleBroken):
                self._broken.setdefault(result.task, result.name)
            self.results.append(result)

    def _result(self, item: pytest.Item, outcome: Outcome, output: str, measured: Measured,
                alone: Outcome | None = None) -> CheckResult:
        spec = _spec(item)
        doc = (item.function.__doc__ or item.name).strip().splitlines()[0]  # type: ignore[attr-defined]
        return CheckResult(nodeid=item.nodeid, name=doc, task=spec.task, points=spec.points, visible=spec.visible,
                           outcome=outcome, output=safe_text(output, MAX_OUTPUT), cuda_only=spec.cuda_only,
                           rule=spec.rule, bonus=spec.task in self._student.submission.chapter.bonus, measured=measured,
                           alone=alone)
