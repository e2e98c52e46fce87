"""Resource and time limits for one child (no torch import: the CLI reads the defaults)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _scratch_bytes() -> int:
    text = os.environ.get("AUTOGRADER_SCRATCH_MB", "256")
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"AUTOGRADER_SCRATCH_MB must be a whole number of MiB (at least 1), not {text!r}")
    return int(text) << 20


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 20.0  # one call into student code, wall clock
    load_seconds: float = 60.0  # running the answer cells
    cpu_seconds: int = 900  # RLIMIT_CPU for the whole child
    memory_bytes: int = 8 << 30  # RLIMIT_AS (CPU only: CUDA maps far more address space)
    # All the box's processes together, tmpfs files and kernel memory included (a memory cgroup, root only).
    box_memory_bytes: int = 8 << 30
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE
    # Each writable tmpfs of the box (its scratch folder, /tmp, /var/tmp, /dev/shm); AUTOGRADER_SCRATCH_MB sets it.
    scratch_bytes: int = field(default_factory=_scratch_bytes)
