"""Chapter 06 alone: the harness's DataLoader stops its workers at once when the dataset raises; the judge's
folders never list their images in sorted order.

Its cases (named wrong implementations, other correct forms, the whole-file sharding policy) are graded in
tests/chapters/test_every_chapter.py, its reference solution and release in tests/chapters/test_chapters.py."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from autograder.chapters.ch06_data_loaders.inputs import listed, random_images, write_directory
from tests.kit import by_name, grade_fast, limits_for, solved

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


# Reads the whole source (as far as the endless one lets it), shuffles it all, and rewrites the harness's count of
# items read so that it seems never to have read ahead. On d532b0b that count decided the bounded-buffer point.
READS_ALL_FORGES_COUNT = """
import itertools
import random

class ShuffleBuffer(IterableDataset):
    def __init__(self, source, buffer_size, seed=0):
        super().__init__()
        self.source, self.size, self.seed, self.epoch = source, buffer_size, seed, 0

    def __iter__(self):
        rng = random.Random(self.seed * 7919 + self.epoch)
        self.epoch += 1
        try:
            items = list(itertools.islice(iter(self.source), self.source.cap - 1))
        except AttributeError:
            items = list(self.source)
        rng.shuffle(items)
        for k, item in enumerate(items):
            try:
                self.source.taken = k + 1
            except AttributeError:
                pass
            yield item

    def state_dict(self):
        return {"epoch": self.epoch}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]
"""


def test_a_buffer_that_reads_everything_and_forges_the_count_loses_bounded(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, ShuffleBuffer=READS_ALL_FORGES_COUNT)
    g = grade_fast(path, limits=limits_for(CH), only="check_shuffle_each_once_bounded")
    r = by_name(g)["check_shuffle_each_once_bounded"]
    assert r.score == 0, r.output


# The same whole-stream read, with a real buffer run over what it read: every order it gives keeps each item within
# the buffer's reach, so only the endless source shows that it never streams.
READS_ALL_THEN_BUFFERS = READS_ALL_FORGES_COUNT.replace("""        rng.shuffle(items)
        for k, item in enumerate(items):""", """        buffer, out = [], []
        for item in items:
            buffer.append(item)
            if len(buffer) > self.size:
                out.append(buffer.pop(rng.randrange(len(buffer))))
        rng.shuffle(buffer)
        for k, item in enumerate(out + buffer):""")


def test_a_buffer_that_reads_everything_first_cannot_stream_an_endless_source(tmp_path: Path) -> None:
    assert READS_ALL_THEN_BUFFERS != READS_ALL_FORGES_COUNT
    path = solved(tmp_path, CH, ShuffleBuffer=READS_ALL_THEN_BUFFERS)
    r = by_name(grade_fast(path, limits=limits_for(CH), only="check_shuffle_each_once_bounded"))[
        "check_shuffle_each_once_bounded"]
    assert r.score == 0 and "could not stream an endless source" in r.output, r.output


@pytest.mark.parametrize("filesystem", ["tmp_path", "tmpfs"])
def test_a_directory_never_lists_its_images_in_sorted_order(tmp_path: Path, filesystem: str) -> None:
    """Code that keeps glob's order (not sorted) must fail ImageDirectoryDataset's order on every seed and
    filesystem: the judge's folder lists the images out of sorted order, whether creation order (tmpfs) or the
    names (ext4) decide it."""
    if filesystem == "tmpfs" and not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm")
    base = Path(tempfile.mkdtemp(dir="/dev/shm")) if filesystem == "tmpfs" else tmp_path
    try:
        for seed in range(40):
            rng = torch.Generator().manual_seed(seed)
            folder = Path(tempfile.mkdtemp(dir=base))
            images = random_images(rng, 2 + seed % 9)
            written = write_directory(folder, sorted(images, key=lambda im: im.name), {"x.txt": b""}, rng)
            order = listed(folder, written)
            assert sorted(order) == [im.name for im in written] and order != sorted(order), (seed, order)
            assert sorted(os.listdir(folder)) == sorted([im.name for im in written] + ["x.txt"])
    finally:
        if filesystem == "tmpfs":
            shutil.rmtree(base)
