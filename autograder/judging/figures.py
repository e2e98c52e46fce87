"""Figures a chapter's CUDA self-test measures in the self-test's own process (`python -m autograder selftest
--device cuda`), beside the gradings: what the CUDA machine gives the chapter's reference solution.

A chapter declares them in the optional module selftest.py of its folder, as CUDA_FIGURES: the row's name -> a
function of the reference solution (Solution: a name it defines, loaded in this process) that measures and returns
a Figure. The self-test finds the module through the registry and reports a figure that cannot be measured as a
failure. Chapters 05 (batch_gather's memory bandwidth) and 08 (the AMP recipe's float32 and AMP steps) show it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

# a name the chapter's reference solution defines, loaded in the self-test's process after the chapter's imports
Solution = Callable[[str], Callable[..., Any]]


@dataclass(frozen=True)
class Figure:
    """One measured figure, and whether it is what the chapter needs of the machine."""

    ok: bool | None  # None: a figure reported, with no expectation on it
    result: str  # the short figure shown in the table
    detail: str = ""  # what failed, or the full measurement
    values: dict[str, Any] = field(default_factory=dict)  # the numbers, for the JSON


# the module CUDA_FIGURES maps each row's name to its measurement
CudaFigures = dict[str, Callable[[Solution], Figure]]


def cuda_ms(fn: Callable[[], object], calls: int = 50) -> float:
    """Median milliseconds per call from CUDA events, after a warm-up call and a synchronize."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def peak_bandwidth(props: Any) -> float | None:
    """Bytes per second the GPU's memory can move, from its properties; None where torch does not report them."""
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if not (clock_khz and bus_bits):
        return None
    return 2.0 * clock_khz * 1e3 * bus_bits / 8  # DDR and HBM transfer twice per clock
