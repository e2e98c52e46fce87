"""The pytest plugin that runs a chapter's checks against one submission.

pytest is the runner: a check is a function `check_*` in the chapter's
module, with one `task` marker (the exercise it grades) and its points. The
plugin gives checks their fixtures (`student`, `rng`, `device`) and records
each outcome with the message the student will see.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from autograder.expect import CheckFailure
from autograder.remote import Student, StudentError
from autograder.scan import check_message, scan_submission


@dataclass
class CheckResult:
    nodeid: str
    name: str
    task: str
    points: float
    visible: bool
    status: str  # passed | failed | skipped
    output: str

    @property
    def score(self) -> float:
        return self.points if self.status == "passed" else 0.0


def _message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    exc = excinfo.value
    if isinstance(exc, (CheckFailure, StudentError)):
        return str(exc)
    if isinstance(exc, AssertionError):
        return str(exc) or "a check failed"
    return (f"The grader itself failed in this check ({type(exc).__name__}: {exc}). This is an error "
            "in the course kit, not necessarily in your code: please tell your instructor.")


class KitPlugin:
    def __init__(self, student: Student, seed: int, device: str) -> None:
        self._student = student
        self._seed = seed
        self._device = device
        self.results: list[CheckResult] = []

    @pytest.fixture(scope="session")
    def student(self) -> Student:
        return self._student

    @pytest.fixture(scope="session")
    def device(self) -> str:
        return self._device

    @pytest.fixture
    def rng(self, request: pytest.FixtureRequest) -> torch.Generator:
        """A generator seeded from the grading's secret seed and the check's name."""
        digest = hashlib.sha256(f"{self._seed}:{request.node.nodeid}".encode()).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self._device == "cuda" and not self._student.cuda_available:
            skip = pytest.mark.skip(reason="skipped: --device cuda was asked for, but this machine has no CUDA GPU")
            for item in items:
                item.add_marker(skip)

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
    def pytest_runtest_makereport_plain(self, item: pytest.Item,
                                        call: pytest.CallInfo[Any]) -> pytest.TestReport | None:
        """A check's own failure is reported with its message, not a formatted traceback.

        pytest's default report parses the check module's source for every traceback entry (0.1 s a
        failure, most of the grading of an empty notebook); the kit's message is what every report shows.
        Anything else (a bug in the kit) keeps pytest's traceback.
        """
        if call.excinfo is None or not call.excinfo.errisinstance((CheckFailure, StudentError, AssertionError)):
            return None
        return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                                 _message(call.excinfo), call.when, duration=call.duration, start=call.start,
                                 stop=call.stop, user_properties=item.user_properties)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                status, output = "skipped", str(call.excinfo.value.msg) if call.excinfo else "skipped"
                if isinstance(report.longrepr, tuple):
                    output = str(report.longrepr[2]).removeprefix("Skipped: ")
            elif report.failed:
                status, output = "failed", _message(call.excinfo) if call.excinfo else "failed"
            else:
                # A passing check may leave a note (e.g. its measured speed-up) with record_property("note", ...).
                status, output = "passed", "\n".join(str(v) for k, v in report.user_properties if k == "note")
            flags = scan_submission(self._student.submission) if item.get_closest_marker("forgeable") else []
            if flags and status != "skipped":
                # Its evidence came from inside a process that the code reaches into: not scored, reviewed.
                status, output = "failed", check_message(flags) + (f"\n\n{output}" if status == "failed" else "")
                report.outcome, report.longrepr = "failed", output
            self.results.append(self._result(item, status, output))

    def _result(self, item: pytest.Item, status: str, output: str) -> CheckResult:
        task = item.get_closest_marker("task")
        points = item.get_closest_marker("points")
        doc = (getattr(item, "function", None).__doc__ or item.name).strip().splitlines()[0]  # type: ignore[union-attr]
        return CheckResult(
            nodeid=item.nodeid,
            name=doc,
            task=task.args[0] if task else "",
            points=float(points.args[0]) if points else 0.0,
            visible=item.get_closest_marker("visible") is not None,
            status=status,
            output=output,
        )
