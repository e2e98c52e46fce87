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


# The stretch's kit functions, written with operators only: (argument names, expression). The first
# `duals` arguments of a call are the student's Dual; the rest are plain tensors (constants).
EXPRESSIONS: dict[str, tuple[str, str]] = {
    "polynomial": ("d", "3 * d * d - 2 * d + 1"),
    "negation": ("d", "-d + d * 0.5"),
    "numbers_on_the_left": ("d", "1 - d + 2 / d"),
    "tensors_on_the_left": ("d, c", "c - d * c + c / d"),
    "quotient": ("d, e", "d / e - e / (d * e + 3)"),
    "powers": ("d", "d ** 3 - d ** 0.5 + d ** -2"),
    "broadcast_constant": ("d, c", "(d - c) ** 2"),
    "broadcast_duals": ("d, e", "d * e + e"),
    "broadcast_tensor_left": ("d, c", "c + 2 * d"),
    "matmul_right": ("d, w", "d @ w"),
    "matmul_left": ("d, w", "w @ d"),
    "matmul_duals": ("d, e", "d @ e"),
    "quadratic_form": ("d, w", "d @ (w @ d)"),
    "layer": ("d, w, b", "((d @ w + b) ** 2 + 1) ** -1"),
}


def expression(case: str) -> Callable[..., Any]:
    args, body = EXPRESSIONS[case]
    return eval(f"lambda {args}: {body}")  # kit text only, never student input


def dual_eval(case: str, values: list[torch.Tensor], tangents: list[torch.Tensor],
              constants: list[torch.Tensor]) -> Any:
    """EXPRESSIONS[case] on the student's Dual(value, tangent) for each pair and the constants as they are."""
    dual = globals()["student"]["Dual"]  # the child puts the student's namespace here
    out = expression(case)(*(dual(v, t) for v, t in zip(values, tangents, strict=True)), *constants)
    if not isinstance(out, dual):
        return {"type": type(out).__name__}
    return {"type": "Dual", "value": out.value, "tangent": out.tangent}
