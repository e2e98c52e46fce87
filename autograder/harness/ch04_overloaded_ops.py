"""Kit code for 04_overloaded_ops, run in the student's process beside the answer cells.

Tensors cross the wire as contiguous copies, so a check that needs a
non-contiguous input sends the base tensor and names the view to take here.
"""

from collections.abc import Callable
from typing import Any

import torch

VIEWS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "transpose": lambda x: x.T,
    "every_other_row": lambda x: x[::2, 1:],
}


def row_sum_of_view(view: str, base: torch.Tensor) -> Any:
    """The student's row_sum(VIEWS[view](base)); the view shares base's memory."""
    return globals()["student"]["row_sum"](VIEWS[view](base))  # the child puts the student's namespace here
