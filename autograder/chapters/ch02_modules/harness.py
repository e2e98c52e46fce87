"""Harness for 02_modules: reference models that checks train with the student's train().

train is graded on these models rather than on the student's AffineScalar or
LinearRegressor, so a mistake in one exercise costs points in that exercise
only. Both map a [N] tensor to [N]; checks set their parameters before training.
running_norm drives the student's RunningNorm (the stretch exercise) through training and evaluation steps
and reports its registered names, outputs, input gradients and buffers; the judge recomputes them all.
"""

from typing import Any

import torch
from torch import nn


class Line(nn.Module):
    """a * x + b with parameters a and b of shape [1], as in the guide."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.zeros(1))
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a * x + self.b


class WrappedLinear(nn.Module):
    """The same line, held by an nn.Linear(1, 1) submodule: its parameters are linear.weight and linear.bias."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.unsqueeze(1)).squeeze(1)


def running_norm(num_features: int, steps: list[list[Any]], options: dict[str, float], dtype: str = "float32",
                 reload: bool = False) -> dict[str, Any]:
    """The student's RunningNorm(num_features, **options) moved to the inputs' device and `dtype`, run through
    `steps` ([mode, x, grad_output or None], mode "train" or "eval"); what it registers and what each step left.

    With `reload`, a fresh RunningNorm loads the module's state_dict and runs the last input in eval mode too.
    """
    student: dict[str, Any] = globals()["student"]  # the child puts the student's namespace here
    if "RunningNorm" not in student:
        raise NameError("`RunningNorm` is not defined: keep the name of the class in its answer cell")
    device = steps[0][1].device if steps else torch.device("cpu")
    module = student["RunningNorm"](num_features, **options).to(device=device, dtype=getattr(torch, dtype))

    def buffers() -> dict[str, torch.Tensor]:
        return {name: b.detach().clone() for name, b in module.named_buffers()}

    record: dict[str, Any] = {"parameters": [name for name, _ in module.named_parameters()],
                              "state_dict": list(module.state_dict()), "initial": buffers(), "steps": []}
    for mode, x, grad_output in steps:
        module.train(mode == "train")
        x = x.to(getattr(torch, dtype)).detach().requires_grad_(grad_output is not None)
        out = module(x)
        if grad_output is not None:
            out.backward(grad_output.to(out.dtype))
        record["steps"].append({"out": out.detach() if isinstance(out, torch.Tensor) else out, "x_grad": x.grad,
                                "buffers": buffers(),
                                "graph_in_buffers": [n for n, b in module.named_buffers() if b.requires_grad]})
    if reload:
        fresh = student["RunningNorm"](num_features, **options).to(device=device, dtype=getattr(torch, dtype))
        fresh.load_state_dict(module.state_dict())
        fresh.eval()
        module.eval()
        with torch.no_grad():
            last = steps[-1][1].to(getattr(torch, dtype))
            record["reloaded"] = {"fresh": fresh(last), "original": module(last)}
    return record
