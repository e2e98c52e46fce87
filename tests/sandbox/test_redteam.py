"""Attacks found by red-teaming the sandbox, each kept as a test of the mechanism that now stops it."""

from __future__ import annotations

import os
from typing import Any

import pytest

from autograder.sandbox.limits import Limits
from autograder.sandbox.process import ChildDied, Program, Sandbox
from autograder.sandbox.runtime import isolation, wire
from tests.kit import zygote

full_sandbox = pytest.mark.skipif(os.geteuid() != 0 or isolation.machine()[0] != "root",
                                  reason="the full sandbox needs root and namespaces")


def _sandbox(cells: str, limits: Limits) -> Sandbox:
    return Sandbox(zygote(), Program("import torch", "", [{"id": "cell", "source": cells}]), "cpu", limits)


def _call(box: Sandbox, name: str, *args: object, timeout: float) -> Any:
    """What `name(*args)` returned in the box, or the reply of a call that failed."""
    header, buffers = wire.encode([list(args), {}, None])
    header.update(op="call", name=name, wrt=[])
    reply, out = box.request(header, buffers, timeout, f"{name}()")
    return wire.decode(reply, out)["value"] if reply.get("ok") is True else reply


# Forks `n` processes that each hold `mb` MiB (each well under the address-space rlimit) and counts those
# that got it: without a bound on the box as a whole, 512 processes times 8 GiB could take all of the host.
# It stops once every process has either said it holds its block or died (killed for the box's memory), so a
# bound that works costs no wait; 15 s is for a bound that stalls allocations instead of killing.
HOG = """
import os, select, time
def hog(n, mb):
    r, w = os.pipe()
    for _ in range(n):
        if os.fork() == 0:
            os.close(r)
            block = b"x" * (mb << 20)
            os.write(w, b"1")
            time.sleep(60)
            os._exit(0)
    os.close(w)
    got, died, deadline = 0, 0, time.monotonic() + 15
    while got + died < n and time.monotonic() < deadline:
        if select.select([r], [], [], 0.1)[0]:
            data = os.read(r, n)
            if not data:
                break
            got += len(data)
        while died < n and os.waitpid(-1, os.WNOHANG)[0] > 0:
            died += 1
    return got
"""


@full_sandbox
def test_the_box_memory_is_bounded_as_a_whole_not_only_per_process() -> None:
    limits = Limits(call_seconds=30, load_seconds=20, box_memory_bytes=512 << 20)
    box = _sandbox(HOG, limits)
    try:
        started = box.start()
        assert started["load"]["errors"] == {}
        assert box.plan is not None
        assert any("memory cgroup" in p for p in box.plan.active), box.plan.off
        try:
            got = _call(box, "hog", 4, 256, timeout=30)  # 1 GiB in all, twice the box's bound
        except ChildDied as e:  # the kernel killed the box's first process for the box's memory: the bound too
            got = e.returncode
        assert got != 4, "four processes held 256 MiB each in a box of 512 MiB"
    finally:
        box.close()


# A plain reply of 64 MiB (a wire frame may carry 1 GiB of tensors). The judge used to grow its read buffer by
# concatenating bytes, copying all it had for every 64 KiB the pipe gave: 3 s for 16 MiB, 47 s for 64 MiB, so
# an honest function with a large result timed out and a hostile one kept the judge's core busy to the deadline.
BIG = """
import torch
def big(mb):
    return torch.ones(mb << 18)
"""


def test_a_large_reply_is_read_in_linear_time_not_quadratic() -> None:
    box = _sandbox(BIG, Limits(call_seconds=30, load_seconds=20))
    try:
        box.start()
        value = _call(box, "big", 64, timeout=15)
        assert value.shape == (64 << 18,) and bool((value == 1).all())
    finally:
        box.close()
