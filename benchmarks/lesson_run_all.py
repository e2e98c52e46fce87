"""Run All of each release notebook, as a student's first run: the lessons' cost, answers unimplemented.

    .venv/bin/python benchmarks/lesson_run_all.py [--chapters 06_data_loaders ...] [--repeats 2] [--folder release]

Each notebook runs in a fresh kernel with nbclient, errors allowed (the checks fail on the
stubs, as they do for a student who has not started). It prints, per notebook, the seconds its
cells took (the kernel's start not included) and the slowest cells; with --repeats, the quietest
run. The goal is under 30 s per notebook on a CPU laptop.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.course.build import ipc_kernel
from autograder.judging.registry import CHAPTERS

ROOT = Path(__file__).resolve().parent.parent


def run_all(path: Path) -> tuple[float, list[tuple[float, str]]]:
    """Seconds for all cells, and (seconds, cell id) of each code cell, slowest first."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp, ipc_kernel() as kernel:
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True, config=kernel,
                                resources={"metadata": {"path": tmp}})
        cells: list[tuple[float, str]] = []
        with client.setup_kernel():
            started = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                cell_started = time.perf_counter()
                client.execute_cell(cell, index)
                if cell.cell_type == "code":
                    cells.append((time.perf_counter() - cell_started, cell.get("id", str(index))))
            total = time.perf_counter() - started
    return total, sorted(cells, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="*", default=list(CHAPTERS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--folder", default="release", choices=["release", "solutions"])
    args = parser.parse_args()
    print(f"{'notebook':24} {'cells (s)':>10}   slowest cells")
    for chapter in args.chapters:
        runs = [run_all(ROOT / args.folder / chapter / f"{chapter}.ipynb") for _ in range(args.repeats)]
        total, cells = min(runs)
        slowest = ", ".join(f"{cid} {seconds:.1f}" for seconds, cid in cells[:3])
        print(f"{chapter:24} {total:10.1f}   {slowest}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
