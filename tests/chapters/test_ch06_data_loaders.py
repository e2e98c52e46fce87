"""Chapter 06 alone: the harness's DataLoader stops its workers at once when the dataset raises.

Its cases (named wrong implementations, other correct forms, the whole-file sharding policy) are graded in
tests/chapters/test_every_chapter.py, its reference solution and release in tests/chapters/test_chapters.py."""

from __future__ import annotations

from collections.abc import Iterator

CH = "06_data_loaders"


def test_a_worker_error_stops_the_workers_at_once() -> None:
    """A dataset that raises in its workers leaves no worker behind: the error's reference cycle used to keep
    the DataLoader iterator alive until a later garbage collection, whose __del__ then stalled a later check
    for 5 s a worker (and could push a correct submission past its call limit)."""
    import multiprocessing

    from torch.utils.data import IterableDataset

    from autograder.judging.registry import CHAPTERS

    harness: dict[str, object] = {"__name__": "kit_harness_under_test"}
    exec(compile(CHAPTERS[CH].harness_source(), "<harness>", "exec"), harness)

    class Broken(IterableDataset[int]):
        def __iter__(self) -> Iterator[int]:
            raise ValueError("member 'x.png' is broken")

    result = harness["stream_error"](Broken(), 2, 20.0, 10)  # type: ignore[operator]
    assert result["type"] == "ValueError", result
    assert multiprocessing.active_children() == []
