"""Kit code for 06_data_loaders, run in the student's process beside the answer cells.

A DataLoader has to run where the student's Dataset lives. These functions
iterate one through a real torch DataLoader, worker processes included, and
return the items exactly as the dataset produced them; the judge hashes and
compares them. There is one function per task, so that a dataset that hangs
stops only the later checks of its own task.
"""

import re
from typing import Any

from torch.utils.data import DataLoader


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


def _collect(dataset: Any, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """Everything `DataLoader(dataset, batch_size=None, num_workers=...)` yields, up to `limit` items.

    `timeout` bounds the wait for each item from a worker; workers are forked
    (the student's classes live in no importable module).
    """
    loader = DataLoader(dataset, batch_size=None, num_workers=num_workers, collate_fn=_as_is,
                        timeout=timeout if num_workers else 0,
                        multiprocessing_context="fork" if num_workers else None)
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
