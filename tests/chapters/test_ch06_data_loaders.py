"""Chapter 06: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, shuffle_buffer, tar_dataset
from tests.chapters.test_chapters import grader
from tests.kit import grade_fast, solved

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

    from autograder.judging.registry import CHAPTERS

    harness: dict[str, object] = {"__name__": "kit_harness_under_test"}
    exec(compile(CHAPTERS[CH].harness_source(), "<harness>", "exec"), harness)

    class Broken(IterableDataset):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise ValueError("member 'x.png' is broken")

    result = harness["stream_error"](Broken(), 2, 20.0, 10)  # type: ignore[operator]
    assert result["type"] == "ValueError", result
    assert multiprocessing.active_children() == []


# The stretch task: other correct forms of ShuffleBuffer than the reference's (torch.Generator, swap into a slot).
NUMPY = '''
class ShuffleBuffer(IterableDataset):
    def __init__(self, source, buffer_size, seed=0):
        super().__init__()
        self.source, self.size, self.seed = source, buffer_size, seed
        self.next_epoch, self.loaded, self.now = 0, None, None

    def __iter__(self):
        st, self.loaded = self.loaded, None
        epoch = self.next_epoch if st is None else st["epoch"]
        self.next_epoch = epoch + 1
        gen = np.random.default_rng([self.seed, epoch])
        if st is not None and st["rng"] is not None:
            gen.bit_generator.state = st["rng"]
        now = self.now = {"epoch": epoch, "read": st["read"] if st else 0, "buffer": list(st["buffer"]) if st else [],
                          "gen": gen}
        source = iter(self.source)
        for _ in range(now["read"]):
            next(source)
        buf = now["buffer"]
        for item in source:
            now["read"] += 1
            if len(buf) < self.size:
                buf.append(item)
                continue
            j = int(gen.integers(self.size))
            buf[j], item = item, buf[j]
            yield item
        gen.shuffle(buf)
        while buf:
            yield buf.pop()

    def state_dict(self):
        if self.loaded is not None:
            return self.loaded
        if self.now is None:
            return {"epoch": self.next_epoch, "read": 0, "buffer": [], "rng": None}
        return {"epoch": self.now["epoch"], "read": self.now["read"], "buffer": list(self.now["buffer"]),
                "rng": self.now["gen"].bit_generator.state}

    def load_state_dict(self, state):
        self.loaded, self.next_epoch, self.now = dict(state), state["epoch"], None
'''
# Resumes by replaying the epoch from its seed and dropping the items already yielded: slower, but correct.
REPLAY = '''
class ShuffleBuffer(IterableDataset):
    def __init__(self, source, buffer_size, seed=0):
        super().__init__()
        self.source, self.size, self.seed = source, buffer_size, seed
        self.epoch, self.skip, self.yielded = 0, 0, 0

    def _epoch(self, epoch):
        gen = torch.Generator().manual_seed(self.seed * 10_007 + epoch)
        buf = []
        for item in iter(self.source):
            if len(buf) < self.size:
                buf.append(item)
                continue
            j = int(torch.randint(self.size, (), generator=gen))
            buf[j], item = item, buf[j]
            yield item
        for j in torch.randperm(len(buf), generator=gen).tolist():
            yield buf[j]

    def __iter__(self):
        epoch, skip = self.epoch, self.skip
        self.epoch, self.skip, self.current, self.yielded = epoch + 1, 0, epoch, skip
        for k, item in enumerate(self._epoch(epoch)):
            if k >= skip:
                self.yielded = k + 1
                yield item

    def state_dict(self):
        if self.skip or not hasattr(self, "current"):
            return {"epoch": self.epoch, "yielded": self.skip}
        return {"epoch": self.current, "yielded": self.yielded}

    def load_state_dict(self, state):
        self.epoch, self.skip = state["epoch"], state["yielded"]
        if hasattr(self, "current"):
            del self.current
'''
SHUFFLE_FORMS = {"random.Random, append then pop": shuffle_buffer(), "numpy Generator": NUMPY,
                 "replay from the seed": REPLAY}


@pytest.mark.parametrize("form", SHUFFLE_FORMS, ids=str)
def test_other_correct_shuffle_buffers_earn_the_whole_bonus(form: str, tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, ShuffleBuffer=SHUFFLE_FORMS[form]), only="shuffle")
    assert (g.bonus, g.bonus_max) == (5, 5), [(r.name, r.output) for r in g.results if r.status != "passed"]
