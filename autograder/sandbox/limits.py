"""Resource and time limits for one child (no torch import: the CLI reads the defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 20.0  # one call into student code, wall clock
    load_seconds: float = 60.0  # running the answer cells
    cpu_seconds: int = 900  # RLIMIT_CPU for the whole child
    memory_bytes: int = 8 << 30  # RLIMIT_AS (CPU only: CUDA maps far more address space)
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE
