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


def test_a_worker_error_stops_the_workers_at_once() -> None:
    """A dataset that raises in its workers leaves no worker behind: the error's reference cycle used to keep
    the DataLoader iterator alive until a later garbage collection, whose __del__ then stalled a later check
    for 5 s a worker (and could push a correct submission past its call limit)."""
    import multiprocessing

    from torch.utils.data import IterableDataset

    from autograder.chapters import CHAPTERS

    harness: dict[str, object] = {"__name__": "kit_harness_under_test"}
    exec(compile(CHAPTERS[CH].harness_source(), "<harness>", "exec"), harness)

    class Broken(IterableDataset):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise ValueError("member 'x.png' is broken")

    result = harness["stream_error"](Broken(), 2, 20.0, 10)  # type: ignore[operator]
    assert result["type"] == "ValueError", result
    assert multiprocessing.active_children() == []
