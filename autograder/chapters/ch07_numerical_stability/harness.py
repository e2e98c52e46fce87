"""Kit code for 07_numerical_stability, run in the student's process beside the answer cells.

softmax_cross_entropy is graded with the kit's softmax in place of the student's
while it runs, so that code calling `softmax` loses points for a softmax bug in
the softmax task only.
"""

from typing import Any

import torch


def _reference_softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(logits, dim)


def xent(*args: Any, **kwargs: Any) -> Any:
    """The student's softmax_cross_entropy(*args, **kwargs), with `softmax` the kit's during the call."""
    namespace = globals()["student"]  # the child puts the student's namespace here
    if not callable(namespace.get("softmax_cross_entropy")):
        raise NameError("`softmax_cross_entropy` is not defined: its answer cell must define it (see the notes "
                        "above the checks)")
    had, saved = "softmax" in namespace, namespace.get("softmax")
    namespace["softmax"] = _reference_softmax
    try:
        return namespace["softmax_cross_entropy"](*args, **kwargs)
    finally:
        if had:
            namespace["softmax"] = saved
        else:
            del namespace["softmax"]
