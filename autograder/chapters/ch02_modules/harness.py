"""Harness for 02_modules: reference models that checks train with the student's train().

train is graded on these models rather than on the student's AffineScalar or
LinearRegressor, so a mistake in one exercise costs points in that exercise
only. Both map a [N] tensor to [N]; checks set their parameters before training.
running_norm drives the student's RunningNorm (the stretch exercise) through training and evaluation steps
and reports its registered names, outputs, input gradients and buffers; the judge recomputes them all.
resume_run trains, checkpoints, restores into fresh objects and trains on with the student's checkpoint and
restore; the judge runs reference_run, the same code without interruption, in its own process.
"""

import io
import operator
from typing import Any

import torch
import torch.nn.functional as F
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


# -- checkpoint and restore ----------------------------------------------------------------------------------------
# A case is plain data from the judge: "sizes" [i, h, o]; "initial" and "fresh" (state_dicts: the starting model and
# the different one that restore loads into); "optimizer" {"name": "SGD" or "Adam", **hyperparameters}; "inputs"
# [T, B, i] and "targets" [T, B, o], one batch per step; "at" (the step checkpoint is called after), "crash" (the
# step the original run reaches before it is dropped) and "file" (whether the checkpoint goes through torch.save
# and torch.load(weights_only=True) first).


def resume_model(sizes: list[int]) -> nn.Module:
    """Linear (no bias: the batch norm after it would cancel one), BatchNorm1d, Tanh, Linear; float64."""
    i, h, o = sizes
    return nn.Sequential(nn.Linear(i, h, bias=False), nn.BatchNorm1d(h), nn.Tanh(), nn.Linear(h, o)).double()


def resume_optimizer(model: nn.Module, spec: dict[str, Any]) -> torch.optim.Optimizer:
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items() if k != "name"}
    return getattr(torch.optim, spec["name"])(model.parameters(), **options)


def _started(case: dict[str, Any], weights: str) -> tuple[nn.Module, torch.optim.Optimizer]:
    model = resume_model(case["sizes"]).to(case["inputs"].device)
    model.load_state_dict(case[weights])
    return model, resume_optimizer(model, case["optimizer"])


def _train_steps(model: nn.Module, optimizer: torch.optim.Optimizer, case: dict[str, Any], steps: range
                 ) -> list[float]:
    losses = []
    for step in steps:
        optimizer.zero_grad()
        loss = F.mse_loss(model(case["inputs"][step]), case["targets"][step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: t.detach().clone() for name, t in model.state_dict().items()}


def reference_run(case: dict[str, Any], fresh_optimizer_at: int | None = None, stop: int | None = None
                  ) -> dict[str, Any]:
    """The judge's run, without interruption, to `stop` (default: every batch); with `fresh_optimizer_at`, the
    optimizer is replaced by a new one at that step (what a resume without the optimizer's state does)."""
    model, optimizer = _started(case, "initial")
    stop = len(case["inputs"]) if stop is None else stop
    losses = _train_steps(model, optimizer, case, range(fresh_optimizer_at or 0))
    if fresh_optimizer_at is not None:
        optimizer = resume_optimizer(model, case["optimizer"])
    losses += _train_steps(model, optimizer, case, range(fresh_optimizer_at or 0, stop))
    return {"state": _state(model), "losses": losses}


def resume_run(case: dict[str, Any]) -> dict[str, Any]:
    """Train `at` steps, ckpt = checkpoint(model, optimizer, at), train on to `crash`, (save and load ckpt,) then
    restore it into a fresh model and optimizer and train from the step restore returns to the end."""
    student: dict[str, Any] = globals()["student"]
    for name in ("checkpoint", "restore"):
        if name not in student:
            raise NameError(f"`{name}` is not defined: keep the name of the function in its answer cell")
    model, optimizer = _started(case, "initial")
    losses = _train_steps(model, optimizer, case, range(case["at"]))
    ckpt = student["checkpoint"](model, optimizer, case["at"])
    losses += _train_steps(model, optimizer, case, range(case["at"], case["crash"]))
    if case["file"]:
        buffer = io.BytesIO()
        try:
            torch.save(ckpt, buffer)
        except Exception as err:
            raise TypeError(f"torch.save(checkpoint(...), io.BytesIO()) failed: {err}. Keep only tensors, numbers, "
                            "strings, lists and dicts in the checkpoint.") from None
        buffer.seek(0)
        try:
            ckpt = torch.load(buffer, weights_only=True)
        except Exception as err:
            raise TypeError("torch.load(..., weights_only=True) refused the checkpoint: it holds an object that is "
                            "not a tensor or plain data (a Module or an optimizer itself?). Store "
                            "model.state_dict() and optimizer.state_dict(), never the objects. torch.load said: "
                            f"{str(err).splitlines()[0][:300]}") from None
    del model, optimizer
    model, optimizer = _started(case, "fresh")
    start = student["restore"](model, optimizer, ckpt)
    try:
        first = operator.index(start)
    except TypeError:
        return {"start": repr(start)[:200], "state": {}, "losses": losses}
    if isinstance(start, bool) or not 0 <= first <= len(case["inputs"]):
        return {"start": repr(start)[:200], "state": {}, "losses": losses}
    resumed = _train_steps(model, optimizer, case, range(first, len(case["inputs"])))
    return {"start": first, "state": _state(model), "losses": losses[:first] + resumed}


def sgd_momentum_step_kept(params: list[torch.Tensor], grads: list[torch.Tensor], velocities: list[torch.Tensor],
                           lr: float, momentum: float) -> dict[str, Any]:
    """The student's sgd_momentum_step on tensors this process keeps: what it returned, and the tensors it was
    given as they are after the call (the judge compares them with what it sent)."""
    student: dict[str, Any] = globals()["student"]
    out = student["sgd_momentum_step"](params, grads, velocities, lr, momentum)
    return {"returned": out, "given": [[t.detach().clone() for t in ts] for ts in (params, grads, velocities)]}
