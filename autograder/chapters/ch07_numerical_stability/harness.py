"""Kit code for 07_numerical_stability, run in the student's process beside the answer cells.

softmax_cross_entropy is graded with the kit's softmax in place of the student's
while it runs, so that code calling `softmax` loses points for a softmax bug in
the softmax task only. The kit's softmax works only while softmax_cross_entropy
is called from here: kept aside by the student's code, it would score the softmax
task without a line of softmax.
"""

from typing import Any

import torch

_lent: list[bool] = []  # not empty while the student's softmax_cross_entropy runs from xent


def _reference_softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if not _lent:
        raise RuntimeError("the grader's softmax stands in for yours only while softmax_cross_entropy is graded")
    return torch.softmax(logits, dim)


def xent(*args: Any, **kwargs: Any) -> Any:
    """The student's softmax_cross_entropy(*args, **kwargs), with `softmax` the kit's during the call."""
    namespace = globals()["student"]  # the child puts the student's namespace here
    if not callable(namespace.get("softmax_cross_entropy")):
        raise NameError("`softmax_cross_entropy` is not defined: its answer cell must define it (see the notes "
                        "above the checks)")
    had, saved = "softmax" in namespace, namespace.get("softmax")
    namespace["softmax"] = _reference_softmax
    _lent.append(True)
    try:
        return namespace["softmax_cross_entropy"](*args, **kwargs)
    finally:
        _lent.pop()
        if had:
            namespace["softmax"] = saved
        else:
            del namespace["softmax"]
