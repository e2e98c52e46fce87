"""Chapter 08's claims that rest on this PyTorch, held here so that a new release cannot silently change them.

- Section 3's CPU cell: float16 autocast runs on the CPU, and a loss weighted by 1e-5 leaves almost every gradient
  entry 0 without a GradScaler and almost none with one (as in float32).
- LossScaler is graded (6 points) and 08 has no stretch task left.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.judging.registry import CHAPTERS

CH = "08_mixed_precision"


def _zero_share(dtype: torch.dtype, use_scaler: bool) -> float:
    """The share of 0 entries in the first step's gradients of the notebook's small MLP, the loss weighted 1e-5."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    scaler = torch.amp.GradScaler("cpu", enabled=use_scaler)
    x = torch.randn(256, 8)
    with torch.autocast("cpu", dtype=torch.float16, enabled=dtype == torch.float16):
        loss = 1e-5 * F.mse_loss(net(x), torch.sin(x[:, :1] * x[:, 1:2]))
    scaler.scale(loss).backward()
    grads = torch.cat([p.grad.flatten() for p in net.parameters() if p.grad is not None])
    return float((grads == 0).float().mean())


def test_float16_autocast_on_the_cpu_flushes_small_gradients_and_the_scaler_keeps_them() -> None:
    reference = _zero_share(torch.float32, use_scaler=False)  # ReLUs: a few entries are 0 in float32 too
    assert _zero_share(torch.float16, use_scaler=False) > 0.9
    assert abs(_zero_share(torch.float16, use_scaler=True) - reference) < 0.01


def test_the_graded_core_has_no_stretch_task() -> None:
    chapter = CHAPTERS[CH]
    assert (chapter.points, chapter.bonus) == ({"amp_train_step": 10, "train_checkerboard": 4, "LossScaler": 6}, {})
