"""Float32 against automatic mixed precision, on the AMP recipe's MLP.

    .venv/bin/python benchmarks/amp_speed.py [--steps 20] [--rounds 5]

On CUDA: the recipe's network (3 Linear layers 4096 wide, ReLU between them),
batch 4096, SGD, MSE; float32 steps against float16 autocast with a GradScaler.
It prints the float32/AMP time ratio (the recipe measured 7.7 s / 3.3 s = 2.3x)
and the peak-memory ratio. Without CUDA it says it skipped that, and measures a
small bfloat16 version on the CPU instead (bfloat16 gains only on CPUs with
AVX-512 BF16 or AMX instructions).

The two kinds of step alternate within each round, swapping order every round,
and the result is the median over rounds; warm-up steps are not timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class Setup:
    """The recipe's MLP, its optimizer and scaler, and one batch, built from a fixed seed."""

    def __init__(self, width: int, batch: int, device: str) -> None:
        torch.manual_seed(0)
        layers = [nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)]
        self.model = nn.Sequential(*layers).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.scaler = torch.amp.GradScaler(device)
        self.inputs = torch.randn(batch, width, device=device)
        self.targets = torch.randn(batch, width, device=device)


def float32_step(s: Setup) -> float:
    loss = F.mse_loss(s.model(s.inputs), s.targets)
    loss.backward()
    s.optimizer.step()
    s.optimizer.zero_grad(set_to_none=True)
    return loss.item()


def amp_step(s: Setup, device: str, dtype: torch.dtype) -> float:
    """The chapter's reference amp_train_step."""
    with torch.autocast(device_type=device, dtype=dtype):
        loss = F.mse_loss(s.model(s.inputs), s.targets)
    s.scaler.scale(loss).backward()
    s.scaler.step(s.optimizer)
    s.scaler.update()
    s.optimizer.zero_grad(set_to_none=True)
    return loss.item()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(width: int, batch: int, device: str, dtype: torch.dtype, steps: int, rounds: int
            ) -> tuple[float, float, int, int]:
    """Median seconds per step (float32, AMP) and peak bytes (float32, AMP; 0 on CPU)."""
    fp32, amp = Setup(width, batch, device), Setup(width, batch, device)
    runs: list[tuple[str, Callable[[], float]]] = [("float32", lambda: float32_step(fp32)),
                                                   ("amp", lambda: amp_step(amp, device, dtype))]
    times: dict[str, list[float]] = {"float32": [], "amp": []}
    peaks = {"float32": 0, "amp": 0}
    for r in range(rounds + 1):  # round 0 warms up
        for name, step in runs if r % 2 == 0 else runs[::-1]:
            sync(device)
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            started = time.perf_counter()
            for _ in range(steps):
                step()
            sync(device)
            if r > 0:
                times[name].append((time.perf_counter() - started) / steps)
            if device == "cuda":
                peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated())
    return statistics.median(times["float32"]), statistics.median(times["amp"]), peaks["float32"], peaks["amp"]


def report(label: str, width: int, batch: int, device: str, dtype: torch.dtype, steps: int, rounds: int) -> None:
    t32, tamp, m32, mamp = measure(width, batch, device, dtype, steps, rounds)
    name = str(dtype).removeprefix("torch.")
    print(f"{label}: MLP 3 x {width} wide, batch {batch}, {steps} steps x {rounds} rounds")
    print(f"  float32 {t32 * 1e3:.2f} ms/step, AMP ({name}) {tamp * 1e3:.2f} ms/step: "
          f"float32/AMP time ratio {t32 / tamp:.2f}x")
    if device == "cuda":
        print(f"  peak memory: float32 {m32 / 2**30:.2f} GiB, AMP {mamp / 2**30:.2f} GiB, "
              f"AMP/float32 ratio {mamp / m32:.2f}")


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
