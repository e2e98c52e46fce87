"""Chapter 08's CUDA self-test (autograder/judging/figures.py): the reference amp_train_step against the kit's
float32 step on the AMP recipe's MLP, the rig and float32 step the speed check uses (harness.py), timed in the
self-test's process. The recipe measured 2.3x; grading needs checks.MIN_SPEEDUP."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F

from autograder.chapters.ch08_mixed_precision.checks import MIN_SPEEDUP, SPEED_BATCH, SPEED_LAYERS, SPEED_WIDTH
from autograder.judging.authoring import CudaFigures, Figure, Solution

RECIPE_AMP_SPEEDUP = 2.3  # the PyTorch AMP recipe's MLP: 7.7 s in float32, 3.3 s with AMP


@dataclass
class AmpFigures:
    float32: float  # median seconds per step
    amp: float
    float32_bytes: int  # peak bytes allocated during the steps above those allocated before (CUDA; 0 on CPU)
    amp_bytes: int

    @property
    def speedup(self) -> float:
        return self.float32 / self.amp


def measure_amp(amp_train_step: Callable[..., Any], width: int, batch: int, device: str, dtype: torch.dtype,
                steps: int, rounds: int, layers: int = SPEED_LAYERS) -> AmpFigures:
    """Float32 steps against `amp_train_step` (the reference's), each on the harness's rig from seed 0 and one
    fixed batch, alternating each round (order swapped every round, round 0 a warm-up); medians over rounds."""
    # the harness imports torch._dynamo (seconds): only a measurement pays for it
    from autograder.chapters.ch08_mixed_precision.harness import SpeedRig, float32_step

    def rig() -> SpeedRig:
        made = SpeedRig(0, width, layers, batch, device)
        torch.randn(made.inputs.shape, device=device, out=made.inputs)
        torch.randn(made.targets.shape, device=device, out=made.targets)
        return made

    fp32, amp = rig(), rig()
    runs: list[tuple[str, Callable[[], float]]] = [
        ("float32", lambda: float32_step(fp32)),
        ("amp", lambda: amp_train_step(amp.model, amp.optimizer, amp.scaler, amp.inputs, amp.targets, F.mse_loss,
                                       device_type=device, dtype=dtype))]
    times: dict[str, list[float]] = {"float32": [], "amp": []}
    peaks = {"float32": 0, "amp": 0}
    cuda, resident = device == "cuda", 0
    for r in range(rounds + 1):
        for name, step in runs if r % 2 == 0 else runs[::-1]:
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                resident = torch.cuda.memory_allocated()
            started = time.perf_counter()
            for _ in range(steps):
                step()
            if cuda:
                torch.cuda.synchronize()
                peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated() - resident)
            if r > 0:
                times[name].append((time.perf_counter() - started) / steps)
    return AmpFigures(statistics.median(times["float32"]), statistics.median(times["amp"]), peaks["float32"],
                      peaks["amp"])


def amp_float16_step(solution: Solution) -> Figure:
    f = measure_amp(solution("amp_train_step"), SPEED_WIDTH, SPEED_BATCH, "cuda", torch.float16, steps=10,
                    rounds=5)
    gib = 2**30
    result = (f"float32 {f.float32 * 1e3:.1f} ms, AMP {f.amp * 1e3:.1f} ms per step: {f.speedup:.2f}x "
              f"(recipe {RECIPE_AMP_SPEEDUP:g}x, grading needs {MIN_SPEEDUP:g}x); step memory "
              f"{f.float32_bytes / gib:.2f} GiB -> {f.amp_bytes / gib:.2f} GiB")
    return Figure(f.speedup >= MIN_SPEEDUP, result,
                  "" if f.speedup >= MIN_SPEEDUP else f"AMP is not {MIN_SPEEDUP:g}x faster than float32 on this GPU",
                  {**asdict(f), "speedup": f.speedup, "recipe_speedup": RECIPE_AMP_SPEEDUP, "needs": MIN_SPEEDUP})


CUDA_FIGURES: CudaFigures = {"AMP float16 step": amp_float16_step}
