"""Kit code for 06_data_loaders, run in the student's process beside the answer cells.

A DataLoader has to run where the student's Dataset lives. These functions
iterate one through a real torch DataLoader, worker processes included, and
return the items exactly as the dataset produced them; the judge hashes and
compares them. There is one function per task, so that a dataset that hangs
stops only the later checks of its own task.
"""

import itertools
import re
import time
from typing import Any

from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info


def _as_is(item: Any) -> Any:
    """A collate_fn that keeps each item as the dataset gave it (no numpy -> tensor conversion)."""
    return item


def _split_worker_error(text: str) -> tuple[str, list[str], list[int], int] | None:
    """A worker's error as torch re-raises it: (torch's first line, the traceback's lines, the indices of its
    frame lines, where the exception itself starts); None if `text` is not one."""
    head, _, trace = text.partition("\nOriginal Traceback (most recent call last):\n")
    if not trace:
        return None
    lines = trace.splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    end = frames[-1] + 1 if frames else 0
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return head, lines, frames, end


def _cell_frames_only(text: str) -> str:
    """A worker's re-raised error without torch's own frames: its first line, the student's frames, the error."""
    split = _split_worker_error(text)
    if split is None:
        return text
    head, lines, frames, end = split
    kept: list[str] = []
    for i in frames:
        if lines[i].startswith('  File "<cell '):
            kept += [lines[i], *[x for x in lines[i + 1:i + 2] if x.startswith("    ")]]
    return "\n".join([head, *kept, *lines[end:]])


def _collect(dataset: Any, num_workers: int, timeout: float, limit: int, **options: Any) -> list[Any]:
    """Everything `DataLoader(dataset, batch_size=None, num_workers=...)` yields, up to `limit` items.

    `timeout` bounds the wait for each item from a worker; workers are forked
    (the student's classes live in no importable module). `options` replace the
    DataLoader's other arguments (batch_size, collate_fn, worker_init_fn, generator).
    """
    settings: dict[str, Any] = {"batch_size": None, "collate_fn": _as_is, **options}
    loader = DataLoader(dataset, num_workers=num_workers, timeout=timeout if num_workers else 0,
                        multiprocessing_context="fork" if num_workers else None, **settings)
    items: list[Any] = []
    iterator = iter(loader)
    try:
        for item in iterator:
            items.append(item)
            if len(items) >= limit:  # an endless stream must not fill the memory
                break
    except Exception as e:
        short = _cell_frames_only(str(e))
        if short == str(e):
            raise
        try:
            error = type(e)(short)
        except Exception:
            error = RuntimeError(short)
        raise error from None
    finally:
        # Stop the workers now. A worker's error keeps this iterator alive in a reference cycle until some
        # later garbage collection, and torch's __del__ may then wait 5 s per worker for them to exit.
        stop = getattr(iterator, "_shutdown_workers", None)
        if stop is not None:
            stop()
    return items


def size(dataset: Any) -> int:
    """len(dataset), as DataLoader's sampler takes it (any __index__ type becomes an int)."""
    return len(dataset)


def read_directory(dataset: Any, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """The items of an ImageDirectoryDataset read through a DataLoader, in the loader's order."""
    return _collect(dataset, num_workers, timeout, limit)


def stream_tar(dataset: Any, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """The items of a TarImageDataset streamed through a DataLoader."""
    return _collect(dataset, num_workers, timeout, limit)


class _Tagged(IterableDataset):
    """The student's stream, each item paired with the id of the DataLoader worker that yielded it."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def __iter__(self) -> Any:
        info = get_worker_info()
        worker = -1 if info is None else info.id
        for item in iter(self.inner):
            yield worker, item


def stream_tar_by_worker(dataset: Any, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """Like stream_tar, each item as [the id of the worker that yielded it, the item]."""
    return [list(pair) for pair in _collect(_Tagged(dataset), num_workers, timeout, limit)]


def _own_message(text: str) -> str:
    """The message of the dataset's own exception: a worker's error without torch's wrapping and traceback."""
    split = _split_worker_error(text)
    if split is None:
        return text
    _, lines, _, end = split
    return re.sub(r"^[\w.]+: ", "", "\n".join(lines[end:]), count=1)


def stream_error(dataset: Any, num_workers: int, timeout: float, limit: int) -> dict[str, Any]:
    """Stream a TarImageDataset like stream_tar; the exception it raises as its type, whether it is a
    ValueError and its own message (nothing of the grader's), or {"type": None, "count": items} when none."""
    try:
        items = _collect(dataset, num_workers, timeout, limit)
    except Exception as e:
        return {"type": type(e).__name__, "value_error": isinstance(e, ValueError),
                "message": _own_message(str(e))[:2000]}
    return {"type": None, "count": len(items)}


# -- pad_collate -------------------------------------------------------------------------


def _as_loaded(image: Any) -> Any:
    """`image` ([3, H, W]) as the datasets give it: a channels-first view of an [H, W, 3] array, on the CPU (a
    grading on a GPU has moved its inputs there; a dataset decodes to host memory, and DataLoader's workers
    cannot share GPU tensors)."""
    return image.cpu().permute(1, 2, 0).contiguous().permute(2, 0, 1)


def collate(images: list[Any]) -> dict[str, Any]:
    """The student's pad_collate on the images as the datasets give them (views): what it returned, the tensors it
    was given as they are after the call, and whether the list itself still holds them, in order."""
    batch = [_as_loaded(image) for image in images]
    given = list(batch)
    out = globals()["student"]["pad_collate"](batch)
    same_list = len(batch) == len(given) and all(a is b for a, b in zip(batch, given, strict=True))
    return {"out": out, "same_list": same_list, "after": [image.clone() for image in given]}


class _Images(Dataset):
    """A map-style dataset of the judge's images, each as the datasets give it."""

    def __init__(self, images: list[Any]) -> None:
        super().__init__()
        self.images = [image.cpu() for image in images]  # forked workers read them: host memory

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> Any:
        return _as_loaded(self.images[index])


def collate_loader(images: list[Any], batch_size: int, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """The batches of DataLoader(the images, batch_size=..., collate_fn=pad_collate, num_workers=...)."""
    return _collect(_Images(images), num_workers, timeout, limit, batch_size=batch_size,
                    collate_fn=globals()["student"]["pad_collate"])


# -- seed_worker ---------------------------------------------------------------------------


class _RandomDraws(Dataset):
    """Item i is [i, two numbers drawn from self.rng]: an augmentation's random numbers. The generator is made in
    __init__, in the main process, so every worker starts with a copy of the same one unless seed_worker
    replaces it."""

    def __init__(self, count: int) -> None:
        super().__init__()
        import numpy as np

        self.count, self.rng = count, np.random.default_rng(0)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Any:
        return [index, *(int(x) for x in self.rng.integers(0, 2**62, size=2))]


def seeded_epochs(count: int, num_workers: int, seed: int, epochs: int, timeout: float) -> list[Any]:
    """`epochs` epochs of one DataLoader(count items of random draws, batch_size=None, num_workers=...,
    worker_init_fn=seed_worker, generator=torch.Generator().manual_seed(seed)), each epoch's items in order."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    dataset = _RandomDraws(count)
    init = globals()["student"]["seed_worker"]
    return [_collect(dataset, num_workers, timeout, count + 4, worker_init_fn=init, generator=generator)
            for _ in range(epochs)]


# -- ShuffleBuffer (the stretch task) ---------------------------------------------------


def _endless() -> Any:
    """The count 0, 1, 2, ..., at most about 300 000 items a second: a buffer that tries to read it all runs out of
    the call's time long before it fills the box's memory (and the machine's)."""
    for i in itertools.count():
        done = time.perf_counter() + 3e-6
        while time.perf_counter() < done:
            pass
        yield i


class _Stream:
    """A re-iterable source of `items` (None: the endless count), with no length to read: a buffer learns its size
    only by reading it. It records nothing: a check judges the order the buffer gives back."""

    def __init__(self, items: Any = None) -> None:
        self.items = items

    def __iter__(self) -> Any:
        return _endless() if self.items is None else iter(list(self.items))


def _shuffle_buffer(source: Any, buffer_size: int, seed: int) -> Any:
    return globals()["student"]["ShuffleBuffer"](source, buffer_size, seed)


def _epoch(ds: Any, limit: int) -> list[Any]:
    """One epoch of `ds`, at most `limit` items."""
    return list(itertools.islice(iter(ds), limit))


def shuffle_orders(items: list[Any], buffer_size: int, seeds: list[int], epochs: int) -> dict[str, Any]:
    """For each seed, `epochs` epochs of a fresh ShuffleBuffer(items, buffer_size, seed)."""
    orders: list[list[list[Any]]] = []
    for seed in seeds:
        ds = _shuffle_buffer(_Stream(items), buffer_size, seed)
        orders.append([_epoch(ds, 2 * len(items) + 4) for _ in range(epochs)])
    return {"orders": orders}


def shuffle_endless(buffer_size: int, seed: int, take: int) -> dict[str, Any]:
    """The first `take` items of a ShuffleBuffer over the endless count 0, 1, 2, ...: a buffer that reads its whole
    source never answers (the judge's deadline, or the box's memory limit, ends it)."""
    return {"order": _epoch(_shuffle_buffer(_Stream(), buffer_size, seed), take)}


def _round_trip(state: Any) -> Any:
    """`state` through a checkpoint file, read back as torch.load(weights_only=True) reads plain data."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def shuffle_resume(items: list[Any], buffer_size: int, seed: int, cut: int | None) -> dict[str, Any]:
    """Epoch 0 of ShuffleBuffer(items, ...) checkpointed after `cut` items (None: before any epoch) and continued;
    epoch 1; and a new ShuffleBuffer resumed from the checkpoint: the rest of epoch 0, then epoch 1."""
    limit = 2 * len(items) + 4
    ds = _shuffle_buffer(_Stream(items), buffer_size, seed)
    if cut is None:
        state, head, it = ds.state_dict(), [], iter(ds)
    else:
        it = iter(ds)
        head = [next(it) for _ in range(cut)]
        state = ds.state_dict()
    rest = []
    for item in it:
        rest.append(item)
        if len(rest) >= limit:
            break
    original = {"epoch0": head + rest, "epoch1": _epoch(ds, limit)}
    try:
        state = _round_trip(state)
    except Exception as e:
        return {**original, "state_error": f"{type(e).__name__}: {str(e)[:600]}", "state_type": type(state).__name__}
    resumed = _shuffle_buffer(_Stream(items), buffer_size, seed)
    resumed.load_state_dict(state)
    return {**original, "resumed0": _epoch(resumed, limit), "resumed1": _epoch(resumed, limit)}


class _Sharded:
    """range(n) as an IterableDataset source: each DataLoader worker gets every num_workers-th number."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        workers, me = (1, 0) if info is None else (info.num_workers, info.id)
        return iter(range(me, self.n, workers))


def shuffle_loader(n: int, buffer_size: int, seed: int, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """The items of DataLoader(ShuffleBuffer(a sharded range(n), ...), batch_size=None, num_workers=...)."""
    return _collect(_shuffle_buffer(_Sharded(n), buffer_size, seed), num_workers, timeout, limit)
