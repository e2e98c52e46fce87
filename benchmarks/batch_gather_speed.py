"""Figures behind chapter 05's speed checks: the guide's loop, the loop scripted or compiled or moved to numpy,
and the vectorized batch_gather (the solution in the source notebook).

    .venv/bin/python benchmarks/batch_gather_speed.py                 # under a minute
    .venv/bin/python benchmarks/batch_gather_speed.py --compile       # also torch.compile the loop (B = 64: ~45 s)

1. In-process timings on one thread, as the grader's child runs: torch.utils.benchmark
   (CUDA events too where there is a GPU, and the solution's achieved memory bandwidth against the
   GPU's, as `python -m autograder selftest --device cuda` reports it).
2. The ratio the grader itself measures (autograder.judging.timing.compare_speed against the vectorized
   reference, as check_batch_gather_speed calls it), three times for the solution and for the guide's loop.

Stability under load: benchmarks/timing_stability.py --chapter 05_batch_gather.
"""

from __future__ import annotations

import argparse
import linecache
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils import benchmark

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.chapters.ch05_batch_gather.checks import (  # noqa: E402
    AT_MOST,
    GATHER_TIMED,
    REFERENCE,
    Api,
    gather_oracle,
)
from autograder.chapters.ch05_batch_gather.selftest import gather_bandwidth  # noqa: E402
from autograder.course.reference import solution_cells, source_path  # noqa: E402
from autograder.judging.api import StudentApi, answer  # noqa: E402
from autograder.judging.figures import cuda_ms, peak_bandwidth  # noqa: E402
from autograder.judging.notebook import load_submission  # noqa: E402
from autograder.judging.student import Student  # noqa: E402
from autograder.judging.timing import compare_speed, reference_process  # noqa: E402
from autograder.sandbox import launcher  # noqa: E402
from autograder.sandbox.limits import Limits  # noqa: E402

CH = "05_batch_gather"
Gather = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
LOOP_SRC = """
def batch_gather_loop(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
"""
NUMPY_LOOP_SRC = """
import numpy as np


def batch_gather_numpy(tensor, indices):
    t, i = tensor.cpu().numpy(), indices.cpu().numpy()  # on CUDA: there and back, as such code must
    return torch.from_numpy(np.stack([t[b].take(i[b], axis=0) for b in range(t.shape[0])])).to(tensor.device)
"""
B, N, D = GATHER_TIMED[0]["shape"]
K = GATHER_TIMED[1]["shape"][1]


def load(code: str, name: str) -> Gather:
    """Define `name` from source text; linecache holds the text so torch.jit.script can read it."""
    filename = f"<{name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace: dict = {"torch": torch, "__name__": "batch_gather_bench"}
    exec(compile(code, filename, "exec"), namespace)
    return namespace[name]


def inputs(batch: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, N, D, device=device), torch.randint(0, N, (batch, K), device=device)


def cpu_ms(fn: Gather, batch: int) -> float:
    tensor, indices = inputs(batch, "cpu")
    timer = benchmark.Timer("fn(tensor, indices)", globals={"fn": fn, "tensor": tensor, "indices": indices},
                            num_threads=1)
    return timer.blocked_autorange(min_run_time=0.5).median * 1e3


def gpu_ms(fn: Gather, batch: int) -> float:
    tensor, indices = inputs(batch, "cuda")
    return cuda_ms(lambda: fn(tensor, indices))


def in_process(try_compile: bool) -> None:
    torch.set_num_threads(1)
    loop = load(LOOP_SRC, "batch_gather_loop")
    fns: dict[str, Gather] = {"loop": loop, "jit.script loop": torch.jit.script(loop),
                              "numpy loop": load(NUMPY_LOOP_SRC, "batch_gather_numpy"),
                              "vectorized": load(solution_cells(CH)["batch_gather"], "batch_gather")}
    print(f"In-process, one thread: tensor [B, {N}, {D}], indices [B, {K}], median ms per call")
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    for device in devices:
        timer = cpu_ms if device == "cpu" else gpu_ms
        for batch in (64, B):
            times = {name: timer(fn, batch) for name, fn in fns.items()}
            line = ", ".join(f"{name} {ms:.3f}" for name, ms in times.items())
            print(f"  {device} B = {batch:4}: {line}; loop / vectorized = {times['loop'] / times['vectorized']:.1f}x, "
                  f"numpy loop / vectorized = {times['numpy loop'] / times['vectorized']:.1f}x")
    if torch.cuda.is_available():
        achieved, ms = gather_bandwidth(fns["vectorized"])
        peak = peak_bandwidth(torch.cuda.get_device_properties(0))
        print(f"  cuda bandwidth: {ms:.3f} ms per call, {achieved / 1e9:.0f} GB/s of "
              + (f"{peak / 1e9:.0f} GB/s peak ({achieved / peak:.0%})" if peak else "an unknown peak"))
    if not try_compile:
        print("  torch.compile loop: skipped (--compile; it unrolls the loop: ~45 s to compile at B = 64 here)")
        return
    compiled = torch.compile(loop)
    tensor, indices = inputs(64, "cpu")
    started = time.perf_counter()
    compiled(tensor, indices)
    print(f"  torch.compile loop, B = 64: compiled in {time.perf_counter() - started:.0f} s, "
          f"then {cpu_ms(compiled, 64):.3f} ms per call; B = 1024 not attempted (1024 unrolled iterations)")


class Loop(StudentApi):
    @answer
    def batch_gather_loop(self, tensor: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:  # type: ignore[empty-body]
        """The guide's loop (LOOP_SRC)."""


def grader_ratio(repeats: int = 3) -> None:
    print(f"The grader's own measurement (compare_speed as in check_batch_gather_speed, against the reference in "
          f"a clean process; the bar: at most {AT_MOST:g}x its time):")
    student = Student(load_submission(source_path(CH)), "cpu", Limits(), time.monotonic() + 600, launcher.zygote())
    try:
        with reference_process(student, REFERENCE) as ref, reference_process(student, LOOP_SRC) as loop:
            reference = Api(student).batch_gather.run_by(ref, "gather_reference")
            for name, fn in (("solution", Api(student).batch_gather), ("guide's loop", Loop(loop).batch_gather_loop)):
                for r in range(repeats):
                    speed = compare_speed(fn, reference, GATHER_TIMED, gather_oracle,
                                          torch.Generator().manual_seed(r), count=10, rounds=15, warmup=2,
                                          subtract_making=False)
                    print(f"  {name}: {speed.describe('batch_gather', 'the reference')}")
    finally:
        student.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compile", action="store_true", help="also time torch.compile on the loop at B = 64")
    args = parser.parse_args()
    in_process(args.compile)
    grader_ratio()


if __name__ == "__main__":
    main()
