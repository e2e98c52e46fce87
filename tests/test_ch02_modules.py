"""Chapter 02: each named wrong implementation (declared in autograder/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder import selftest
from autograder.selftest_cases import Mutant, mutants
from tests.test_chapters import grader

CH = "02_modules"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail
