"""Harness for 02_modules: reference models that checks train with the student's train().

train is graded on these models rather than on the student's AffineScalar or
LinearRegressor, so a mistake in one exercise costs points in that exercise
only. Both map a [N] tensor to [N]; checks set their parameters before training.
"""

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
