"""Images per second from chapter 06's ImageDirectoryDataset and TarImageDataset, with 0 and 2 workers.

Writes `--images` PNGs once as files in a directory and once as `--shards` tar
archives, then times full passes of DataLoader(dataset, batch_size=32) over
each: the directory in shuffled order (random access, as in training), the
archives from start to end. Two more rows read the same bytes in the same
orders without decoding, to separate the storage from the CPU. Every setting
runs "warm", with the files in the page cache, and "cold", after evicting
their pages (posix_fadvise DONTNEED on each file), so that reads come from
the disk as in a first epoch or from storage the machine does not cache. The
classes come from a notebook's answer cells: the reference solution by
default, or any submission.

    .venv/bin/python benchmarks/data_loader_throughput.py [--images 2000] [--size 128] [--shards 8]

Write the data on a disk (the default is a folder under the working directory):
on tmpfs the cold pass is the warm pass.
"""

from __future__ import annotations

import argparse
import functools
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader

from autograder.judging.notebook import load_submission

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "source" / "06_data_loaders" / "06_data_loaders.ipynb"


def load_classes(notebook: Path) -> dict[str, Any]:
    """Run the chapter's imports and the notebook's answer cells; returns their namespace."""
    sub = load_submission(notebook, "06_data_loaders")
    if sub.error:
        raise SystemExit(sub.error)
    namespace: dict[str, Any] = {"__name__": "__student__"}
    exec(compile(sub.chapter.preamble, "<preamble>", "exec"), namespace)
    for cell in sub.cells:
        exec(compile(cell["source"], f"<cell {cell['id']}>", "exec"), namespace)
    return namespace


def write_data(folder: Path, count: int, size: int, shards: int, seed: int = 0) -> tuple[Path, list[str]]:
    """`count` PNGs of size x size pixels (smooth colours plus noise), as a directory and as tar shards."""
    gen = np.random.default_rng(seed)
    ramp = np.linspace(0, 160, size, dtype=np.float32)
    directory = folder / "images"
    directory.mkdir()
    tars = [tarfile.open(folder / f"shard-{k:02d}.tar", "w") for k in range(shards)]  # noqa: SIM115
    for i in range(count):
        base = ramp[:, None, None] + ramp[None, :, None] * gen.uniform(0, 1, 3)
        pixels = np.clip(base + gen.normal(0, 12, (size, size, 3)), 0, 255).astype(np.uint8)
        png = cv2.imencode(".png", pixels)[1].tobytes()
        (directory / f"img_{i:06d}.png").write_bytes(png)
        info = tarfile.TarInfo(f"img_{i:06d}.png")
        info.size = len(png)
        tars[i % shards].addfile(info, io.BytesIO(png))
    for tar in tars:
        tar.close()
    os.sync()  # only clean pages can be evicted
    return directory, [str(tar.name) for tar in tars]


def evict(paths: list[Path]) -> None:
    """Drop the files' pages from the page cache: the next read goes to the disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def directory_bytes(files: list[Path], order: list[int]) -> int:
    """Random access without decoding: open and read each file, in the given order."""
    for i in order:
        files[i].read_bytes()
    return len(order)


def tar_bytes(paths: list[Path]) -> int:
    """The stream without decoding: every member of every archive, from start to end."""
    n = 0
    for path in paths:
        with tarfile.open(path) as tar:
            for member in tar:
                data = tar.extractfile(member) if member.isfile() else None
                if data is not None:
                    data.read()
                    n += 1
    return n


def loader_pass(dataset: Any, workers: int, shuffle: bool, batch: int) -> int:
    """One epoch in batches (the images have one size, so the default collate stacks them in the workers)."""
    loader = DataLoader(dataset, batch_size=batch, num_workers=workers, shuffle=shuffle,
                        multiprocessing_context="fork" if workers else None)
    return sum(len(images) for images in loader)


def best_rate(run: Callable[[], int], files: list[Path], cold: bool, count: int, repeat: int) -> float:
    """Items per second of the fastest of `repeat` runs; with `cold`, the files leave the page cache first."""
    best = 0.0
    for _ in range(repeat):
        if cold:
            evict(files)
        start = time.perf_counter()
        n = run()
        elapsed = time.perf_counter() - start
        assert n == count, f"{n} items instead of {count}"
        best = max(best, n / elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--size", type=int, default=128, help="image side in pixels")
    parser.add_argument("--shards", type=int, default=8, help="number of tar files")
    parser.add_argument("--batch", type=int, default=32, help="DataLoader batch_size")
    parser.add_argument("--repeat", type=int, default=3, help="passes per setting; the best one counts")
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK, help="where the two classes come from")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where to write the data (a disk, not tmpfs)")
    args = parser.parse_args()

    # One intra-op thread, as in each worker: on a busy machine more threads spin-wait on tiny copies.
    torch.set_num_threads(1)
    ns = load_classes(args.notebook)
    with tempfile.TemporaryDirectory(prefix="loader-bench-", dir=args.dir) as tmp:
        directory, tar_names = write_data(Path(tmp), args.images, args.size, args.shards)
        pngs, tars = sorted(directory.glob("*.png")), [Path(p) for p in tar_names]
        order = np.random.default_rng(1).permutation(len(pngs)).tolist()
        folder = ns["ImageDirectoryDataset"](str(directory))
        stream = ns["TarImageDataset"](tar_names)
        settings: list[tuple[str, Callable[[], int], list[Path]]] = [
            ("directory, shuffled, read only", lambda: directory_bytes(pngs, order), pngs),
            ("tar shards, read only", lambda: tar_bytes(tars), tars),
        ]
        for workers in (0, 2):
            settings += [
                (f"ImageDirectoryDataset, shuffled, {workers} workers",
                 functools.partial(loader_pass, folder, workers, True, args.batch), pngs),
                (f"TarImageDataset, {workers} workers",
                 functools.partial(loader_pass, stream, workers, False, args.batch), tars),
            ]
        mb = sum(p.stat().st_size for p in pngs) / 1e6
        print(f"{args.images} PNGs of {args.size}x{args.size} ({mb:.0f} MB), {args.shards} tar shards, "
              f"batches of {args.batch}, {os.cpu_count()} CPUs; images per second, best of {args.repeat} passes")
        print(f"{'':<42}{'warm':>10}{'cold':>10}")
        for name, run, files in settings:
            warm, cold = (best_rate(run, files, c, args.images, args.repeat) for c in (False, True))
            print(f"{name:<42}{warm:>10,.0f}{cold:>10,.0f}", flush=True)


if __name__ == "__main__":
    main()
