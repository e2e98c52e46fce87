"""Kit code for 08_mixed_precision, run in the student's process beside the answer cells, and in the judge's.

It builds what the checks hand to the student's amp_train_step (model, optimizer, GradScaler, loss function),
calls it and returns what the step produced: the returned value, the parameters and their gradients after it, the
scaler's scale and growth tracker. The judge compares those with its own replays of the step (replay_steps: the
same objects built from the same case, stepped in the right order and in the wrong ones), run in the judge's
process on CPU and in a clean child (kit code only) on CUDA.

Two records are made inside the student's process, for failure messages only (student code can rewrite them):
forward hooks note each Linear layer's output dtype and whether autocast was on, and an identity autograd
Function on the loss notes what its backward received (the scale, for a scaled loss). The same Function can
poison the gradients with inf or nan during backward, which is an input to the step, not a record.

train_checkerboard runs with the kit's amp_train_step in place of the student's, or with a sham that changes
nothing when it is called as the notebook asks (run_checkerboard).
"""

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch._dynamo  # the first optimizer imports it: about 3 s, better spent loading than inside a call
import torch.nn as nn
import torch.nn.functional as F

LINEAR_OR_CONV = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
# The replays: (forward pass, backward pass). "autocast" runs the forward under torch.autocast, "float32" without;
# "scaled" backpropagates scaler.scale(loss), "unscaled" the loss itself, "scaled after" the loss itself and then
# multiplies every gradient by the scale. Each then unscales and clips when asked, steps, updates and zero_grads
# through the scaler, as the notebook's step does.
REPLAYS = [(forward, backward) for forward in ("autocast", "float32")
           for backward in ("scaled", "unscaled", "scaled after")]


def _student() -> dict[str, Any]:
    return globals()["student"]  # the child puts the student's namespace here


def _function(name: str) -> Any:
    namespace = _student()
    if not callable(namespace.get(name)):
        raise NameError(f"`{name}` is not defined: its answer cell must define it (see the notes above the checks)")
    return namespace[name]


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def observed_loss(device_type: str, poison: float | None
                  ) -> tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], list[dict[str, Any]]]:
    """F.mse_loss through an identity that notes what backpropagation brought the loss: (loss_fn, backward).

    The notes are for messages; `poison` (inf or nan) multiplies the gradients passing through."""
    backward: list[dict[str, Any]] = []

    class Probe(torch.autograd.Function):
        """Identity on the loss; its backward sees d(whatever was backpropagated)/d(loss)."""

        @staticmethod
        def forward(ctx: Any, loss: torch.Tensor) -> torch.Tensor:
            return loss.view_as(loss)

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            backward.append({"grad": float(grad.detach().float().sum()),
                             "autocast": torch.is_autocast_enabled(device_type)})
            return grad * poison if poison is not None else grad

    def loss_fn(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return Probe.apply(F.mse_loss(outputs, targets))

    return loss_fn, backward


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _scaler(device_type: str, config: dict[str, Any]) -> torch.amp.GradScaler:
    """A GradScaler that has already been used, as it would be after earlier iterations."""
    scaler = torch.amp.GradScaler(device_type, **config)
    scaler.scale(torch.zeros((), device=device_type))  # creates the scale tensor
    return scaler


def _built(case: Mapping[str, Any], device_type: str
           ) -> tuple[nn.Sequential, dict[str, nn.Parameter], torch.optim.SGD, torch.amp.GradScaler]:
    """The case's MLP with its weights, its parameters by name, SGD and the GradScaler."""
    model = _mlp(case["sizes"]).to(case["inputs"].device)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(case["params"][name])
    return model, params, torch.optim.SGD(model.parameters(), lr=case["lr"]), _scaler(device_type, case["scaler"])


def _produced(returned: Any, params: dict[str, nn.Parameter], scaler: torch.amp.GradScaler) -> dict[str, Any]:
    """What a step produced, read from the objects the kit built (the parameters it handed to the optimizer)."""
    return {
        "returned": returned if isinstance(returned, (float, int, torch.Tensor)) else None,
        "returned_type": type(returned).__name__,
        "after": {name: p.detach().clone() for name, p in params.items()},
        "grads": {name: None if p.grad is None else p.grad.detach().clone() for name, p in params.items()},
        "scale_after": float(scaler.get_scale()),
        "growth_tracker": int(scaler.state_dict()["_growth_tracker"]),
    }


def observe_step(case: dict[str, Any], device_type: str, dtype: torch.dtype, max_grad_norm: float | None = None,
                 poison: float | None = None) -> dict[str, Any]:
    """One call of the student's amp_train_step on an MLP with the judge's weights: what it produced.

    `case` holds the MLP's `sizes` and weights (`params`), the batch (`inputs`, `targets`), SGD's `lr` and
    the GradScaler's settings (`scaler`)."""
    model, params, optimizer, scaler = _built(case, device_type)
    forward: list[dict[str, Any]] = []

    def hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        forward.append({"dtype": _name(output.dtype), "autocast": torch.is_autocast_enabled(device_type)})

    for m in model.modules():
        if isinstance(m, LINEAR_OR_CONV):
            m.register_forward_hook(hook)
    loss_fn, loss_backward = observed_loss(device_type, poison)
    kwargs = {} if max_grad_norm is None else {"max_grad_norm": max_grad_norm}
    returned = _function("amp_train_step")(model, optimizer, scaler, case["inputs"], case["targets"], loss_fn,
                                           device_type=device_type, dtype=dtype, **kwargs)
    return {**_produced(returned, params, scaler), "forward": forward, "backward": loss_backward}


def replay_step(case: Mapping[str, Any], device_type: str, dtype: torch.dtype, forward: str, backward: str,
                max_grad_norm: float | None = None) -> dict[str, Any]:
    """The judge's replay of amp_train_step on the case, in one order and precision (see REPLAYS)."""
    model, params, optimizer, scaler = _built(case, device_type)
    loss_fn, _ = observed_loss(device_type, None)  # the student's step gets this loss_fn too
    with torch.autocast(device_type=device_type, dtype=dtype, enabled=forward == "autocast"):
        loss = loss_fn(model(case["inputs"]), case["targets"])
    if backward == "scaled":
        scaler.scale(loss).backward()
    else:
        loss.backward()
        if backward == "scaled after":
            with torch.no_grad():
                for p in params.values():
                    if p.grad is not None:
                        p.grad.mul_(scaler.get_scale())
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return _produced(loss.item(), params, scaler)


def replay_steps(case: Mapping[str, Any], device_type: str, dtype: torch.dtype,
                 max_grad_norm: float | None = None) -> dict[str, dict[str, Any]]:
    """Every replay of REPLAYS, by "forward/backward"."""
    return {f"{f}/{b}": replay_step(case, device_type, dtype, f, b, max_grad_norm) for f, b in REPLAYS}


def reference_amp_step(model: nn.Module, optimizer: Any, scaler: Any, inputs: torch.Tensor, targets: torch.Tensor,
                       loss_fn: Any, device_type: str = "cuda", dtype: torch.dtype = torch.float16,
                       max_grad_norm: float | None = None) -> float:
    """The notebook's amp_train_step: train_checkerboard runs with it in place of the student's, so that a
    mistake in amp_train_step costs points in amp_train_step only."""
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def run_checkerboard(steps: int, size: int, device: str, use_amp: bool, sham: bool) -> dict[str, Any]:
    """The student's train_checkerboard with the kit's amp_train_step in place of theirs, or (`sham`) with a step
    that changes nothing when called with device_type=device and the device's low-precision dtype (it returns the
    loss, computed without gradients) and is the kit's step otherwise. Every Conv/Linear output is noted for
    messages, as is each call of the step."""
    train = _function("train_checkerboard")
    namespace = _student()
    had, original = "amp_train_step" in namespace, namespace.get("amp_train_step")
    low = torch.float16 if device == "cuda" else torch.bfloat16
    amp_calls: list[dict[str, Any]] = []

    def step(*args: Any, **kwargs: Any) -> Any:
        bound = inspect.signature(reference_amp_step).bind_partial(*args, **kwargs)
        bound.apply_defaults()
        asked = bound.arguments.get("device_type") == device and bound.arguments.get("dtype") == low
        amp_calls.append({"device_type": str(bound.arguments.get("device_type")),
                          "dtype": _name(bound.arguments.get("dtype"))})
        if sham and asked:
            with torch.no_grad(), torch.autocast(device_type=device, dtype=low):
                return float(bound.arguments["loss_fn"](bound.arguments["model"](bound.arguments["inputs"]),
                                                        bound.arguments["targets"]))
        return reference_amp_step(*args, **kwargs)

    layers: set[tuple[str, bool]] = set()

    def hook(module: nn.Module, args: Any, output: Any) -> None:
        if isinstance(module, LINEAR_OR_CONV) and isinstance(output, torch.Tensor):
            layers.add((_name(output.dtype), torch.is_autocast_enabled(device)))

    handle = nn.modules.module.register_module_forward_hook(hook)
    namespace["amp_train_step"] = step
    try:
        result = train(steps, size, device, use_amp)
    finally:
        if had:
            namespace["amp_train_step"] = original
        else:
            del namespace["amp_train_step"]
        handle.remove()
    return {"result": result, "amp_calls": amp_calls, "layer_dtypes": sorted({dtype for dtype, _ in layers}),
            "autocast": any(on for _, on in layers)}


# -- the speed comparison on the guide's MLP (CUDA) --------------------------------


class SpeedRig:
    """The AMP recipe's MLP, optimizer and GradScaler, built identically from a seed; each timed call
    makes its own batch (`run_steps`)."""

    def __init__(self, seed: int, width: int, layers: int, batch: int, device: str) -> None:
        torch.manual_seed(seed)
        self.device = device
        self.model = _mlp([width] * (layers + 1)).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.scaler = torch.amp.GradScaler(device)
        self.inputs = torch.empty(batch, width, device=device)
        self.targets = torch.empty(batch, width, device=device)


def speed_rig(seed: int, width: int, layers: int, batch: int, device: str) -> SpeedRig:
    return SpeedRig(seed, width, layers, batch, device)


def float32_step(rig: SpeedRig) -> float:
    """One float32 training step (the kit's, timed against the AMP step here and by the self-test)."""
    loss = F.mse_loss(rig.model(rig.inputs), rig.targets)
    loss.backward()
    rig.optimizer.step()
    rig.optimizer.zero_grad(set_to_none=True)
    return loss.item()


def _amp_step(rig: SpeedRig) -> float:
    return _function("amp_train_step")(rig.model, rig.optimizer, rig.scaler, rig.inputs, rig.targets,
                                        F.mse_loss, device_type=rig.device,
                                        dtype=torch.float16 if rig.device == "cuda" else torch.bfloat16)


def run_steps(rig: SpeedRig, steps: int, amp: bool, seed: int) -> dict[str, Any]:
    """`steps` training steps (the student's AMP step, or the kit's float32 step) on a batch made from `seed`
    in this call; the judge times the call. The batch does not exist before the call, so no step can be
    worked out ahead of it (in an untimed warm-up round, say)."""
    cuda = rig.device == "cuda"
    gen = torch.Generator(device=rig.device).manual_seed(seed)
    torch.randn(rig.inputs.shape, generator=gen, device=rig.device, out=rig.inputs)
    torch.randn(rig.targets.shape, generator=gen, device=rig.device, out=rig.targets)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    losses = [float(_amp_step(rig) if amp else float32_step(rig)) for _ in range(steps)]
    if cuda:
        torch.cuda.synchronize()
    return {"losses": losses, "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0}


# -- LossScaler: the student's own, driven through a schedule of steps --------------------------


def scaler_run(case: Mapping[str, Any], scaler: Any) -> dict[str, Any]:
    """Train the case's MLP for its `steps` with `scaler` (the student's LossScaler, or torch's GradScaler in the
    judge's oracle): each step may poison one gradient entry with inf or nan after backward, or unscale and clip
    before the step. Returns the scale after every step, the final parameters and what scale(loss) gave."""
    inputs, targets = case["inputs"].cpu(), case["targets"].cpu()  # on the CPU in any grading, as stated
    model = _mlp(case["sizes"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(case["params"][name])
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"], momentum=0.9)
    dtype = getattr(torch, case["dtype"]) if case["dtype"] else None
    scales, ratios = [], []
    for step in case["steps"]:
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = F.mse_loss(model(inputs), targets)
        scaled = scaler.scale(loss)
        ratios.append(float(scaled.detach()) / float(loss.detach()) if isinstance(scaled, torch.Tensor) else None)
        scaled.backward()
        if step["poison"] is not None:
            with torch.no_grad():
                list(model.parameters())[step["param"]].grad.view(-1)[0] = float(step["poison"])
        if step["clip"] is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), step["clip"])
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        scales.append(float(scaler.get_scale()))
    return {"scales": scales, "ratios": ratios,
            "params": {name: p.detach().clone() for name, p in model.named_parameters()}}


def run_loss_scaler(case: dict[str, Any]) -> dict[str, Any]:
    """scaler_run with the student's LossScaler(**case["config"])."""
    return scaler_run(case, _function("LossScaler")(**case["config"]))
