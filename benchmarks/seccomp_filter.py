"""What the seccomp filter costs: built once in the zygote, against built or compiled in every child.

    .venv/bin/python benchmarks/seccomp_filter.py [--rounds 30]

Prints medians over rounds: in this process, building the filter (libseccomp adds its rules), and building and
compiling it to BPF (autograder.sandbox.runtime.syscalls.program(), what the zygote keeps); in forked children
with no_new_privs, the two ways a child can install it: libseccomp's load() of the built filter (compiles again,
then loads) and what syscalls.load() does (hands the compiled program to the kernel); last, what the filter adds
to an allowed syscall (getppid). Needs libseccomp's Python binding.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.sandbox.runtime import syscalls

PR_SET_NO_NEW_PRIVS = 38
CALLS = 100_000
LIBC = ctypes.CDLL(None, use_errno=True)


def in_child(step: Callable[[], object], setup: Callable[[], object] = lambda: None) -> float:
    """Seconds `step` takes in a forked child, after no_new_privs and `setup` (a filter is for good: one child
    each)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child
        try:
            LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            setup()
            started = time.perf_counter()
            step()
            os.write(write, repr(time.perf_counter() - started).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return float(f.read())


def load() -> None:
    syscalls.load(LIBC)


def calls() -> None:
    for _ in range(CALLS):
        os.getppid()


def timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    sc = syscalls.binding()
    if sc is None:
        sys.exit("libseccomp's Python binding is not installed")
    built = syscalls.build(sc)
    compiled = syscalls.program()
    assert compiled is not None
    rows = {
        "build (add the rules)": [timed(lambda: syscalls.build(sc)) for _ in range(rounds)],
        "build and compile to BPF: program(), once in the zygote": [timed(syscalls.program.__wrapped__)
                                                                    for _ in range(rounds)],
        "per child, libseccomp's load() of the built filter": [in_child(built.load) for _ in range(rounds)],
        "per child, syscalls.load() of the compiled program": [in_child(load) for _ in range(rounds)],
        f"{CALLS} getppid() calls, without the filter": [in_child(calls) for _ in range(rounds)],
        f"{CALLS} getppid() calls, with the filter": [in_child(calls, load) for _ in range(rounds)],
    }
    print(f"{len(compiled.code) // syscalls.BPF_INSTRUCTION} BPF instructions; medians of {rounds} rounds")
    for name, seconds in rows.items():
        print(f"  {name:56s} {statistics.median(seconds) * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
