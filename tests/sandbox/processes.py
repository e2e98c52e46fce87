"""What the sandbox's tests look for outside the box: processes by the name a submission gave them, and waits."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def named(name: str) -> list[int]:
    """The pids of the processes named `name` (PR_SET_NAME, as the tests' strays name themselves)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(entry.path, "comm").read_text().strip() == name:
                    found.append(int(entry.name))
    return found


def until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether `condition` came true within `seconds`, polled."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill_named(name: str) -> None:
    """What a failed test left running, ended."""
    for pid in named(name):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
