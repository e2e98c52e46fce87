"""Float32 against automatic mixed precision, on the AMP recipe's MLP.

    .venv/bin/python benchmarks/amp_speed.py [--steps 20] [--rounds 5]

On CUDA: the recipe's network (3 Linear layers 4096 wide, ReLU between them),
batch 4096, SGD, MSE; float32 steps against chapter 08's reference amp_train_step
in float16. It prints the float32/AMP time ratio (the recipe measured 7.7 s / 3.3 s
= 2.3x) and the memory each kind of step needs above what was allocated before it
(peak during the steps). Without CUDA it says it skipped that, and measures a
small bfloat16 version on the CPU instead (bfloat16 gains only on CPUs with
AVX-512 BF16 or AMX instructions).

The two kinds of step alternate within each round, swapping order every round,
and the result is the median over rounds; warm-up steps are not timed. The
measurement is measure_amp of chapter 08's CUDA self-test
(autograder/chapters/ch08_mixed_precision/selftest.py), which `python -m autograder selftest --device cuda`
also reports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.chapters.ch08_mixed_precision.selftest import measure_amp
from autograder.course.selftest import load_solution


def report(label: str, width: int, batch: int, device: str, dtype: torch.dtype, steps: int, rounds: int) -> None:
    f = measure_amp(load_solution("08_mixed_precision", "amp_train_step"), width, batch, device, dtype, steps, rounds)
    name = str(dtype).removeprefix("torch.")
    print(f"{label}: MLP 3 x {width} wide, batch {batch}, {steps} steps x {rounds} rounds")
    print(f"  float32 {f.float32 * 1e3:.2f} ms/step, AMP ({name}) {f.amp * 1e3:.2f} ms/step: "
          f"float32/AMP time ratio {f.speedup:.2f}x")
    if device == "cuda":
        print(f"  step memory (peak above resident): float32 {f.float32_bytes / 2**30:.2f} GiB, "
              f"AMP {f.amp_bytes / 2**30:.2f} GiB, AMP/float32 ratio {f.amp_bytes / f.float32_bytes:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default: %(default)s)")
    args = parser.parse_args()
    if torch.cuda.is_available():
        print(f"device: {torch.cuda.get_device_name()}")
        report("CUDA, float16", 4096, 4096, "cuda", torch.float16, args.steps, args.rounds)
    else:
        print("CUDA: not available, skipped the recipe's 4096-wide float16 comparison")
    report("CPU, bfloat16", 512, 256, "cpu", torch.bfloat16, max(args.steps // 4, 1), args.rounds)


if __name__ == "__main__":
    main()
