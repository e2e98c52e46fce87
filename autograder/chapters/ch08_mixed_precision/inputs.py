"""Inputs for 08_mixed_precision: one training step's case, drawn from the check's `rng`, and the guide's grid.

A Case is what the judge hands the student's amp_train_step through the harness: an MLP's weights, a
batch, SGD's learning rate and a GradScaler's settings. It sends them as a StepCase record (the harness
builds the model, optimizer and scaler from it in the student's process) and names them in messages.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TypedDict

import torch
from torch import Tensor

SIZE, FREQ, STEPS = 16, 4, 300  # train_checkerboard: a 16x16 grid, a 4x4 board, 300 steps


def low_dtype(device: str) -> torch.dtype:
    """The autocast dtype this course uses: bfloat16 on CPU, float16 on CUDA."""
    return torch.float16 if device == "cuda" else torch.bfloat16


class StepCase(TypedDict):
    sizes: list[int]  # the MLP's layer widths
    params: dict[str, Tensor]  # its weights, by parameter name
    inputs: Tensor
    targets: Tensor
    lr: float
    scaler: dict[str, float]  # GradScaler(device, **scaler)


@dataclass
class Case:
    """One step's inputs: an MLP's weights, a batch, SGD's learning rate and a GradScaler's settings."""

    sizes: list[int]
    params: dict[str, Tensor]
    inputs: Tensor
    targets: Tensor
    lr: float
    scaler: dict[str, float] = field(default_factory=dict)

    def record(self) -> StepCase:
        """The case as the harness takes it."""
        return StepCase(sizes=self.sizes, params=self.params, inputs=self.inputs, targets=self.targets, lr=self.lr,
                        scaler=self.scaler)

    def call(self, device: str, max_grad_norm: float | None = None) -> str:
        clip = "" if max_grad_norm is None else f", max_grad_norm={max_grad_norm:.4g}"
        return (f"amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type={device!r}, "
                f"dtype=torch.{str(low_dtype(device)).removeprefix('torch.')}{clip})")

    def describe(self, device: str, max_grad_norm: float | None = None) -> str:
        """The call with its objects spelled out, for failure messages."""
        return (f"{self.call(device, max_grad_norm)}\n  model = MLP {self.sizes} (Linear, ReLU, ...) with the "
                f"judge's weights\n  optimizer = torch.optim.SGD(model.parameters(), lr={self.lr:g})\n"
                f"  scaler = torch.amp.GradScaler({device!r}, init_scale={self.scaler['init_scale']:g}, "
                f"backoff_factor={self.scaler['backoff_factor']:g}, growth_interval="
                f"{self.scaler['growth_interval']})\n  loss_fn = F.mse_loss")


def make_case(rng: torch.Generator) -> Case:
    def size(low: int, high: int) -> int:
        return int(torch.randint(low, high, (), generator=rng))

    sizes = [size(3, 9), size(16, 33), size(16, 33), size(2, 6)]
    params: dict[str, Tensor] = {}
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        params[f"{2 * i}.weight"] = torch.randn(fan_out, fan_in, generator=rng) / fan_in**0.5
        params[f"{2 * i}.bias"] = torch.randn(fan_out, generator=rng) * 0.1
    batch = size(8, 17)
    scaler = {"init_scale": float(2 ** size(8, 13)), "growth_factor": 2.0, "backoff_factor": 0.25,
              "growth_interval": 1000}
    return Case(sizes, params, torch.randn(batch, sizes[0], generator=rng),
                torch.randn(batch, sizes[-1], generator=rng), lr=0.05, scaler=scaler)


def grid(width: int, height: int) -> Tensor:
    """The guide's input: [2, height, width] coordinates in [0, 1)."""
    h = torch.arange(width).unsqueeze(0).repeat([height, 1]).div(width)
    v = torch.arange(height).unsqueeze(1).repeat([1, width]).div(height)
    return torch.stack([h, v], 0)
