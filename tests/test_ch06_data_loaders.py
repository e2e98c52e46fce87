"""Chapter 06: each named wrong implementation (declared in autograder/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/test_chapters.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder import selftest
from autograder.selftest_cases import Mutant, mutants, tar_dataset
from tests.kit import grade_fast, solved
from tests.test_chapters import grader

CH = "06_data_loaders"

FILES_ONLY = tar_dataset('''\
        workers, me = (1, 0) if info is None else (info.num_workers, info.id)
        for path in self.paths[me::workers]:
            yield from tar_image_iterator(path)''')


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


def test_sharding_by_whole_files_is_accepted(tmp_path: Path) -> None:
    """Policy: with fewer files than workers, whole-file sharding leaves workers idle but loses nothing."""
    g = grade_fast(solved(tmp_path, CH, TarImageDataset=FILES_ONLY), only="check_tar_fewer_files_than_workers")
    assert g.score == g.max_score == 2, [r.output for r in g.results]
