"""Kit code for 05_batch_gather, run in the student's process beside the answer cells.

The child moves every input to the grading's device. This calls batch_gather
with its inputs on a device the check names instead, and records the device of
every tensor the operators it issues produce, so that a check's message can name
a CUDA call made for CPU inputs on a machine with a GPU (a record made here
decides no point).
"""

from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from autograder.sandbox.runtime.child import Trace


class DeviceTrace(Trace):
    """The device types of all tensors made by the aten operators a call issues."""

    def __init__(self) -> None:
        super().__init__()
        self.devices: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.devices.update(t.device.type for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


def gather_on(device: str, tensor: torch.Tensor, indices: torch.Tensor) -> dict[str, Any]:
    """batch_gather(tensor, indices) with both inputs on `device`; also the devices its operators used."""
    batch_gather = globals()["student"]["batch_gather"]  # the child puts the student's namespace here
    tensor, indices = tensor.to(device), indices.to(device)
    trace = DeviceTrace()
    with trace:
        value = batch_gather(tensor, indices)
    return {"value": value, "devices": sorted(trace.devices)}


def gather_error(tensor: torch.Tensor, indices: torch.Tensor) -> dict[str, Any]:
    """The exception batch_gather(tensor, indices) raises, as its type, whether it is an IndexError and its
    own message (nothing of the grader's), or {"type": None, "value": ...} when it returns."""
    batch_gather = globals()["student"]["batch_gather"]
    try:
        value = batch_gather(tensor, indices)
    except Exception as e:
        return {"type": type(e).__name__, "index_error": isinstance(e, IndexError), "message": str(e)[:2000]}
    return {"type": None, "value": value}
