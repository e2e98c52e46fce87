"""Hidden checks for 02_modules: AffineScalar, LinearRegressor, make_mlp and train.

Modules live in the student's process. Checks see them through student.inspect
(registered parameters, state_dict keys, submodule types), copy random weights
in with student.set_parameters and compare forward passes with the judge's own
formulas in float64. train runs on the harness's reference models
(autograder/chapters/ch02_modules/harness.py); the judge reads the trained parameters
back and computes the loss itself. Random inputs come from `rng`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, ParamSpec, TypedDict

import torch
from torch import Tensor

from autograder.chapters.ch02_modules.harness import reference_run, resume_model
from autograder.judging.authoring import (
    Remote,
    RemoteObject,
    StudentApi,
    answer,
    check,
    describe_call,
    expect_tensor,
    failure,
    harness,
    listed,
    names_used,
    number,
    origin,
    show,
    task_code,
    unreadable,
)

P = ParamSpec("P")

# -- the API: what the notebook asks for, as the judge calls it -----------------


class NormStep(TypedDict):
    out: Any  # what forward returned
    x_grad: Tensor | None  # x.grad after backward(grad_output), when the step had one
    buffers: dict[str, Tensor]  # named_buffers() after the step
    graph_in_buffers: list[str]  # buffers that require grad after the step


class MomentumCall(TypedDict):
    returned: Any  # what the student's sgd_momentum_step returned
    given: list[list[Tensor]]  # params, grads and velocities as they are after the call


class NormRun(TypedDict, total=False):
    parameters: list[str]  # named_parameters() of a fresh module
    state_dict: list[str]  # its state_dict keys
    initial: dict[str, Tensor]  # its buffers
    steps: list[NormStep]
    reloaded: dict[str, Any]  # eval outputs of the module and of a fresh one loaded from its state_dict


class ResumeRun(TypedDict):
    start: Any  # what restore returned: an int in range, else its repr
    state: dict[str, Tensor]  # the resumed model's state_dict at the end ({} when start was unusable)
    losses: list[float]  # the loss of every step of the run as resumed


class Api(StudentApi):
    @answer
    def AffineScalar(self) -> RemoteObject:
        """A Module computing a * x + b, with trainable parameters a and b of shape [1]."""

    @answer
    def LinearRegressor(self) -> RemoteObject:
        """A Module holding one nn.Linear(1, 1) named `linear`, mapping [N] to [N]."""

    @answer
    def make_mlp(self, in_features: int, hidden_features: int, out_features: int) -> RemoteObject:
        """Sequential(Linear, ReLU, Linear) of those sizes."""

    @answer
    def train(self, model: RemoteObject, x: Tensor, y: Tensor, steps: int = 1000, lr: float = 0.01) -> float:
        """Fits `model` to y(x) with SGD and MSE; the last step's loss."""

    @answer
    def sgd_momentum_step(self, params: list[Tensor], grads: list[Tensor], velocities: list[Tensor], lr: float,
                          momentum: float) -> Any:
        """One step of SGD with momentum: (new_params, new_velocities)."""

    @harness()
    def sgd_momentum_step_kept(self, params: list[Tensor], grads: list[Tensor], velocities: list[Tensor], lr: float,
                               momentum: float) -> MomentumCall:
        """The student's sgd_momentum_step on tensors the harness keeps, and those tensors after the call."""

    @harness()
    def running_norm(self, num_features: int, steps: list[list[Any]], options: dict[str, float],
                     dtype: str = "float32", reload: bool = False) -> NormRun:
        """The student's RunningNorm(num_features, **options) run through steps [mode, x, grad_output or None]."""

    @answer
    def checkpoint(self, model: RemoteObject, optimizer: RemoteObject, step: int) -> Any:
        """A snapshot of model, optimizer and step (its cell also defines restore(model, optimizer, ckpt) -> int)."""

    @harness()
    def resume_run(self, case: dict[str, Any]) -> ResumeRun:
        """Train, checkpoint, train on, (save and load,) restore into fresh objects and train to the end."""

    @harness()
    def Line(self) -> RemoteObject:
        """The harness's a * x + b with parameters a and b of shape [1]: train is graded on it."""

    @harness()
    def WrappedLinear(self) -> RemoteObject:
        """The same line in an nn.Linear(1, 1) submodule named `linear`."""


def build(constructor: Remote[P, RemoteObject], device: str, *args: P.args, **kwargs: P.kwargs) -> RemoteObject:
    """constructor(*args) in the child, moved to `device`: a handle to the module."""
    obj = constructor(*args, **kwargs)
    if not isinstance(obj, RemoteObject):
        raise failure(call=describe_call(constructor.name, args, kwargs), expected="an nn.Module", got=show(obj),
                      hint="Subclass nn.Module, or return an nn.Sequential.")
    constructor.student.method(obj, ["to"], device)
    return obj


def run_forward(api: Api, module: RemoteObject, x: Tensor) -> Any:
    return api.student.method(module, [], x)["value"]


# -- oracles -------------------------------------------------------------------


def affine_oracle(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """a * x + b for scalar parameters of any shape with one element, in float64."""
    return (a.double().reshape(()) * x.double() + b.double().reshape(())).to(x.dtype)


def mlp_oracle(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    hidden = torch.relu(x.double() @ w1.double().T + b1.double())
    return (hidden @ w2.double().T + b2.double()).to(x.dtype)


def mse(pred: Tensor, y: Tensor) -> float:
    return float(((pred.double() - y.double()) ** 2).mean())


PARAMETER_HINT = ("Assign each parameter as an nn.Parameter attribute in __init__ (after super().__init__()): "
                  "self.a = nn.Parameter(torch.rand(1)). A plain tensor, even with requires_grad=True, is not "
                  "registered: parameters(), state_dict(), .to() and optimisers never see it.")
SQUEEZE_HINT = ("nn.Linear(1, 1) maps [N, 1] to [N, 1]: give it x.unsqueeze(1) and squeeze(1) the result, so "
                "that a [N] input gives a [N] output.")
AFFINE_HINT = "forward must return self.a * x + self.b, using the parameters themselves."
LINEAR_HINT = ("In __init__, after super().__init__(): self.linear = nn.Linear(1, 1); it registers linear.weight "
               "[1, 1] and linear.bias [1].")
MLP_HINT = ("Return nn.Sequential(nn.Linear(in_features, hidden_features), nn.ReLU(), "
            "nn.Linear(hidden_features, out_features)); nn.Linear(i, o) has a weight of shape [o, i].")
TRAIN_HINT = ("Use torch.optim.SGD(model.parameters(), lr=lr) and nn.MSELoss(). For each of `steps` steps: "
              "optimizer.zero_grad(), loss = criterion(model(x), y), loss.backward(), optimizer.step(). "
              "Without zero_grad() the gradients of all steps add up and training does not settle.")
LOSS_HINT = "Return the loss of the last step as a Python float: loss.item() after the loop."

TOLERANCE = 0.1  # train must bring slope and intercept this close to 5 and 3
# Least-squares estimates from these samples stray from 5 and 3 by about 0.02 at most (the noise),
# and the default 1000 SGD steps at lr=0.01 shrink the starting error by a factor of about 1000.


def _expect_parameters(call: str, info: dict[str, Any], want: dict[str, list[int]], hint: str) -> None:
    """The module registers exactly `want` (name -> shape), all trainable, all in its state_dict."""
    got = {name: list(t.shape) for name, t in info["parameters"].items()}
    if got != want:
        problem = ("parameters() is empty: nothing was registered" if not got
                   else "the registered parameters differ in names or shapes")
        raise failure(call=f"{call}, then .named_parameters()", expected=str(want), got=str(got), problem=f"{problem}.",
                      hint=hint)
    frozen = [name for name, t in info["parameters"].items() if not origin(t)[1]]
    if frozen:
        raise failure(call=call, expected="every parameter has requires_grad=True",
                      got=f"requires_grad=False for {frozen}", hint=hint)
    missing = sorted(set(want) - set(info["state_dict"]))
    if missing:
        raise failure(call=f"{call}, then .state_dict()", expected=f"keys {sorted(want)}", got=str(info["state_dict"]),
                      problem=f"{missing} missing.", hint=hint)


def _set_parameters(api: Api, module: RemoteObject, values: dict[str, Tensor], call: str) -> None:
    """Copy values in, first making sure the parameters exist (a clearer message than a KeyError)."""
    _expect_parameters(call, api.student.inspect(module), {n: list(v.shape) for n, v in values.items()},
                       PARAMETER_HINT)
    api.student.set_parameters(module, values)


def _random(rng: torch.Generator, *shape: int) -> Tensor:
    return torch.randn(shape, generator=rng, dtype=torch.float64).float()


def _n(rng: torch.Generator, low: int = 3, high: int = 12) -> int:
    return int(torch.randint(low, high, (1,), generator=rng))


def _check_mlp_structure(api: Api, sizes: tuple[int, int, int], device: str) -> tuple[RemoteObject, list[str]]:
    """make_mlp(*sizes) is a Sequential of Linear, ReLU, Linear of those sizes; the module and its children's names."""
    i, h, o = sizes
    call = f"make_mlp({i}, {h}, {o})"
    module = build(api.make_mlp, device, i, h, o)
    info = api.student.inspect(module)
    top = info["modules"].get("", "?")
    children = [name for name in info["modules"] if name and "." not in name]
    layers = [info["modules"][name] for name in children]
    if top != "Sequential" or layers != ["Linear", "ReLU", "Linear"]:
        raise failure(call=call, expected="Sequential of Linear, ReLU, Linear",
                      got=f"{top} of {', '.join(layers) or 'no layers'}",
                      problem="the layers differ (without the ReLU, two Linear layers collapse into one linear map).",
                      hint=MLP_HINT)
    first, _, last = children
    _expect_parameters(call, info, {f"{first}.weight": [h, i], f"{first}.bias": [h], f"{last}.weight": [o, h],
                                    f"{last}.bias": [o]}, MLP_HINT)
    return module, children


def _line_data(rng: torch.Generator, x: Tensor, noise: float) -> Tensor:
    return (5 * x.double() + 3 + noise * torch.randn(x.shape, generator=rng, dtype=torch.float64)).float()


# Where each reference model keeps its slope and intercept.
LINE_PARAMETERS = {"Line": ("a", "b"), "WrappedLinear": ("linear.weight", "linear.bias")}


class Trained(NamedTuple):
    result: Any  # what train returned
    a: Tensor  # the slope and intercept after training
    b: Tensor
    call: str  # the call, for messages
    start: tuple[float, float]  # the slope and intercept it started from


def _train_line(api: Api, rng: torch.Generator, reference: Remote[[], RemoteObject], x: Tensor, y: Tensor,
                device: str, **kwargs: Any) -> Trained:
    """Train a reference model from a random start."""
    model_name = reference.name
    model = build(reference, device)
    slope_name, intercept_name = LINE_PARAMETERS[model_name]
    start = {slope_name: torch.rand([1, 1] if "weight" in slope_name else [1], generator=rng) * 2 - 1,
             intercept_name: torch.rand(1, generator=rng) * 2 - 1}
    api.student.set_parameters(model, start)
    result = api.train(model, x, y, **kwargs)
    trained = api.student.inspect(model)["parameters"]
    args = "".join(f", {k}={v}" for k, v in kwargs.items())
    call = (f"train(model, x, y{args}) with model = {model_name}, a line a * x + b starting at "
            f"a = {start[slope_name].item():.3f}, b = {start[intercept_name].item():.3f}")
    return Trained(result, trained[slope_name].reshape(()), trained[intercept_name].reshape(()), call,
                   (start[slope_name].item(), start[intercept_name].item()))


def _expect_line(result: Any, a: Tensor, b: Tensor, call: str, x: Tensor, y: Tensor, noise: float) -> None:
    if abs(a.item() - 5) <= TOLERANCE and abs(b.item() - 3) <= TOLERANCE:
        return
    found = [f"{name} = {v.item()}" for name, v in (("a", a), ("b", b)) if not math.isfinite(v.item())]
    problem = "the model did not fit the line" + (f" ({', '.join(found)}: not finite)" if found else "")
    raise failure(call=call, inputs=[f"x = {show(x)}", f"y = 5 * x + 3 + noise of std {noise}: {show(y)}"],
                  expected=f"a within {TOLERANCE} of 5 and b within {TOLERANCE} of 3 after training",
                  got=f"a = {a.item():.4f}, b = {b.item():.4f} (train returned {show(result)})", problem=f"{problem}.",
                  hint=TRAIN_HINT)


# -- sgd_momentum_step -----------------------------------------------------------

MOMENTUM_HINT = ("torch.optim.SGD with momentum updates each velocity first, v = momentum * v + g, and then the "
                 "parameter with the new velocity, p = p - lr * v; no (1 - momentum) factor on g.")
OPTIM_NAMES = ("optim", "SGD")
OPTIM_RULE_HINT = ("Write the update from tensor arithmetic, with every call written out by name; the rule is read "
                   "from the task's cell and every answer cell it uses.")
MOMENTUM_STEPS = 6


def _momentum_problem(rng: torch.Generator, dtype: torch.dtype) -> tuple[list[Tensor], list[Tensor]]:
    """Random parameters (1 to 4 tensors of rank 0 to 3) and the weights of the judge's loss on them."""
    count = _n(rng, 1, 5)
    shapes = [[_n(rng, 1, 4) for _ in range(_n(rng, 0, 4))] for _ in range(count)]
    params = [torch.randn(shape, generator=rng, dtype=torch.float64).to(dtype) for shape in shapes]
    weights = [torch.randn(shape, generator=rng, dtype=torch.float64) for shape in shapes]
    return params, weights


def _momentum_grads(params: list[Tensor], weights: list[Tensor]) -> list[Tensor]:
    """Gradients of sum(sin(p) * w + p^2 / 2) at params, worked out by hand in float64, in params' dtype."""
    return [(torch.cos(p.double()) * w + p.double()).to(p.dtype) for p, w in zip(params, weights, strict=True)]


def _expect_momentum_run(api: Api, rng: torch.Generator, device: str, dtype: torch.dtype, lr: float,
                         momentum: float) -> None:
    """MOMENTUM_STEPS steps of the student's update against torch.optim.SGD fed the same gradients."""
    params, weights = _momentum_problem(rng, dtype)
    reference = [p.clone().requires_grad_(True) for p in params]
    optimizer = torch.optim.SGD(reference, lr=lr, momentum=momentum)
    velocities = [torch.zeros_like(p) for p in params]
    shapes = [list(p.shape) for p in params]
    for step in range(1, MOMENTUM_STEPS + 1):
        grads = _momentum_grads(params, weights)
        for r, g in zip(reference, grads, strict=True):
            r.grad = g.clone()
        optimizer.step()
        call = (f"sgd_momentum_step(params, grads, velocities, lr={lr}, momentum={momentum}), step {step} of "
                f"{MOMENTUM_STEPS} on {len(params)} {dtype} parameters of shapes {shapes}")
        out = api.sgd_momentum_step([p.to(device) for p in params], [g.to(device) for g in grads],
                                    [v.to(device) for v in velocities], lr, momentum)
        if not (isinstance(out, (tuple, list)) and len(out) == 2 and all(
                isinstance(part, (tuple, list)) and len(part) == len(params) for part in out)):
            raise failure(call=call, expected=f"(new_params, new_velocities): two lists of {len(params)} tensors",
                          got=show(out), hint="Return a tuple of two lists, in the order of the inputs.")
        new_params, velocities = list(out[0]), list(out[1])
        for i, (got, want) in enumerate(zip(new_params, reference, strict=True)):
            expect_tensor(got, want.detach(), call=f"{call}: parameter {i}",
                          inputs={"params[i]": params[i], "grads[i]": grads[i]}, hint=MOMENTUM_HINT, device=device)
        params = [p.detach().cpu() for p in new_params]
        velocities = [v.detach().cpu() if isinstance(v, Tensor) else v for v in velocities]


@check(task="sgd_momentum_step", points=1, rule=True)
def check_sgd_momentum_step_by_hand(api: Api, device: str) -> None:
    """rule: no torch.optim in the update (read from your code), and the notebook's example right"""
    code = task_code(api.student.submission, "sgd_momentum_step")
    used, hidden = names_used(code, OPTIM_NAMES), unreadable(code)
    if used or hidden:
        raise failure(call="the judge's reading of the code of `sgd_momentum_step`",
                      expected="no torch.optim, and every function called by its name",
                      got=listed(used + hidden), problem="the exercise is to write the update yourself, so none of "
                      "this exercise's checks counts.", hint=OPTIM_RULE_HINT, breaks_rule=True)
    p, g = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 1.0])
    out = api.sgd_momentum_step([p], [g], [torch.zeros(2)], 0.1, 0.9)
    got = out[0][0] if isinstance(out, (tuple, list)) and out and isinstance(out[0], (tuple, list)) else out
    expect_tensor(got, p - 0.1 * g, call="sgd_momentum_step([p], [g], [zeros], lr=0.1, momentum=0.9)",
                  inputs={"p": p, "g": g}, hint="The rule's point needs the notebook's example right too: "
                  + MOMENTUM_HINT, device=device)


@check(task="sgd_momentum_step", points=1, visible=True)
def check_sgd_momentum_step_example(api: Api, rng: torch.Generator, device: str) -> None:
    """6 steps on random float32 parameters with lr=0.1 and momentum=0.9 match torch.optim.SGD"""
    _expect_momentum_run(api, rng, device, torch.float32, 0.1, 0.9)


@check(task="sgd_momentum_step", points=2)
def check_sgd_momentum_step_random(api: Api, rng: torch.Generator, device: str) -> None:
    """6 steps match torch.optim.SGD for other lr and momentum, on random lists of tensors of rank 0 to 3"""
    for lr, momentum in ((0.05, 0.5), (0.3, 0.99), (0.01, 0.0)):
        _expect_momentum_run(api, rng, device, torch.float32, lr, momentum)


GIVEN = ("params", "grads", "velocities")
IN_PLACE_HINT = ("Build new tensors: p - lr * v, momentum * v + g (or clone first). p.sub_(...), v.mul_(...), "
                 "p -= ... and v += ... change the caller's tensors, which it may still need.")


@check(task="sgd_momentum_step", points=1)
def check_sgd_momentum_step_float64(api: Api, rng: torch.Generator, device: str) -> None:
    """float64 parameters stay float64 and match torch.optim.SGD to float64 precision; the tensors it is given
    are unchanged after the call"""
    _expect_momentum_run(api, rng, device, torch.float64, 0.2, 0.8)
    params, weights = _momentum_problem(rng, torch.float64)
    given = [params, _momentum_grads(params, weights), [torch.randn_like(p) for p in params]]
    sent_params, sent_grads, sent_velocities = ([t.to(device) for t in ts] for ts in given)
    after = api.sgd_momentum_step_kept(sent_params, sent_grads, sent_velocities, 0.2, 0.8)["given"]
    for name, sent, kept in zip(GIVEN, given, after, strict=True):
        for i, (before, now) in enumerate(zip(sent, kept, strict=True)):
            if not torch.equal(before, now.cpu()):
                raise failure(call="sgd_momentum_step(params, grads, velocities, lr=0.2, momentum=0.8)",
                              inputs=[f"{name}[{i}] = {show(before)}"],
                              expected=f"{name}[{i}] unchanged after the call", got=f"{name}[{i}] = {show(now)}",
                              problem="sgd_momentum_step updated a tensor it was given in place.",
                              hint=IN_PLACE_HINT)


# -- AffineScalar --------------------------------------------------------------


@check(task="AffineScalar", points=1, visible=True)
def check_affine_scalar(api: Api, rng: torch.Generator, device: str) -> None:
    """AffineScalar registers trainable parameters a and b of shape [1], and with them set at random,
    forward(x) is a * x + b for [N] inputs"""
    module = build(api.AffineScalar, device)
    _expect_parameters("AffineScalar()", api.student.inspect(module), {"a": [1], "b": [1]}, PARAMETER_HINT)
    for _ in range(3):
        a, b, x = _random(rng, 1), _random(rng, 1), _random(rng, _n(rng))
        _set_parameters(api, module, {"a": a, "b": b}, "AffineScalar()")
        expect_tensor(run_forward(api, module, x), affine_oracle(x, a, b), call="AffineScalar()(x)",
                      inputs={"a": a, "b": b, "x": x}, device=device, hint=AFFINE_HINT)


# -- LinearRegressor -----------------------------------------------------------


@check(task="LinearRegressor", points=1, visible=True)
def check_linear_regressor(api: Api, rng: torch.Generator, device: str) -> None:
    """LinearRegressor holds one nn.Linear(1, 1) named `linear`, and with its weight and bias set at random,
    maps a [N] tensor to the [N] tensor weight * x + bias"""
    module = build(api.LinearRegressor, device)
    info = api.student.inspect(module)
    if info["modules"].get("linear") != "Linear":
        raise failure(call="LinearRegressor()", expected="a submodule `linear` of type nn.Linear",
                      got=f"submodules {info['modules']}", hint=LINEAR_HINT)
    _expect_parameters("LinearRegressor()", info, {"linear.weight": [1, 1], "linear.bias": [1]}, LINEAR_HINT)
    for _ in range(3):
        w, b, x = _random(rng, 1, 1), _random(rng, 1), _random(rng, _n(rng))
        _set_parameters(api, module, {"linear.weight": w, "linear.bias": b}, "LinearRegressor()")
        expect_tensor(run_forward(api, module, x), affine_oracle(x, w, b), call="LinearRegressor()(x)",
                      inputs={"linear.weight": w, "linear.bias": b, "x": x}, hint=SQUEEZE_HINT, device=device)


# -- make_mlp ------------------------------------------------------------------


@check(task="make_mlp", points=1, visible=True)
def check_make_mlp_guide_layers(api: Api, device: str) -> None:
    """make_mlp(64, 32, 10) is Sequential(Linear(64, 32), ReLU(), Linear(32, 10)), as in the guide"""
    _check_mlp_structure(api, (64, 32, 10), device)


@check(task="make_mlp", points=1)
def check_make_mlp_other_sizes(api: Api, rng: torch.Generator, device: str) -> None:
    """the layers take their sizes from the arguments, for random sizes, and with its weights set the network
    computes relu(x W1^T + b1) W2^T + b2"""
    for _ in range(2):
        _check_mlp_structure(api, (_n(rng, 2, 9), _n(rng, 2, 9), _n(rng, 2, 9)), device)
    i, h, o, n = _n(rng), _n(rng), _n(rng), _n(rng)
    module, (first, _, last) = _check_mlp_structure(api, (i, h, o), device)
    w1, b1, w2, b2 = _random(rng, h, i), _random(rng, h), _random(rng, o, h), _random(rng, o)
    api.student.set_parameters(module, {f"{first}.weight": w1, f"{first}.bias": b1, f"{last}.weight": w2,
                                    f"{last}.bias": b2})
    x = _random(rng, n, i)
    expect_tensor(run_forward(api, module, x), mlp_oracle(x, w1, b1, w2, b2), call=f"make_mlp({i}, {h}, {o})(x)",
                  inputs={"x": x, "W1": w1, "b1": b1, "W2": w2, "b2": b2}, hint=MLP_HINT, rtol=1e-4, atol=1e-5,
                  device=device)


# -- train ---------------------------------------------------------------------


@check(task="train", points=2, visible=True)
def check_train_fits_line(api: Api, rng: torch.Generator, device: str) -> None:
    """fits y = 5x + 3 + noise to within 0.1 on both coefficients with the default steps and lr"""
    x = torch.rand(100, generator=rng) * 2 - 1
    y = _line_data(rng, x, noise=0.1)
    result, a, b, call, _ = _train_line(api, rng, api.Line, x, y, device)
    _expect_line(result, a, b, call, x, y, noise=0.1)


def sgd_line(a: float, b: float, x: Tensor, y: Tensor, lr: float, steps: int) -> list[tuple[float, float]]:
    """The judge's own SGD on the MSE of a * x + b, in float64: (a, b) after 0, 1, ..., `steps` steps."""
    x64, y64 = x.double(), y.double()
    path = [(a, b)]
    for _ in range(steps):
        r = a * x64 + b - y64
        a, b = a - lr * float(2 * (r * x64).mean()), b - lr * float(2 * r.mean())
        path.append((a, b))
    return path


def _what_it_matches(got: tuple[float, float], start: tuple[float, float], x: Tensor, y: Tensor, lr: float,
                     steps: int) -> str:
    """Which other method lands where the student's train did: the likely cause, for the message."""
    def near(p: tuple[float, float]) -> bool:
        return all(math.isclose(g, w, rel_tol=REPLAY_RTOL, abs_tol=REPLAY_ATOL) for g, w in zip(got, p, strict=True))
    features = torch.stack([x.double(), torch.ones_like(x, dtype=torch.float64)], 1)
    fit = torch.linalg.lstsq(features, y.double().unsqueeze(1)).solution.squeeze(1).tolist()
    if near((fit[0], fit[1])):
        return ("it reached the least-squares line, which SGD at this rate does not reach in these steps: a closed "
                "form, another optimiser, or more steps than asked")
    for n, p in enumerate(sgd_line(*start, x, y, lr, max(4 * steps, 1000))):
        if near(p):
            return f"it matches {_steps(n)} of SGD at lr={lr}, not the {steps} asked"
    if near(sgd_line(*start, x, y, 0.01, 1000)[-1]):
        return f"it matches train's defaults, 1000 steps at lr=0.01: the steps={steps} and lr={lr} given were ignored"
    for other in (0.01, 0.1, 2 * lr, lr / 2):
        if near(sgd_line(*start, x, y, other, steps)[-1]):
            return f"it matches SGD at lr={other}, not the lr={lr} given"
    return "another optimiser, another rate or another number of steps"


def _steps(n: int) -> str:
    return f"{n} step{'s' * (n != 1)}"


REPLAY_RTOL, REPLAY_ATOL = 1e-4, 1e-5  # float32 training against the judge's float64 replay, a few dozen steps


@check(task="train", points=2)
def check_train_follows_steps_and_lr(api: Api, rng: torch.Generator, device: str) -> None:
    """takes exactly `steps` steps of SGD at the `lr` given: from the same start, the parameters end where the
    judge's own SGD leaves them (1, 2 and a few dozen steps, at random rates)"""
    x = torch.arange(200, dtype=torch.float32) / 200
    y = _line_data(rng, x, noise=0.05)
    for steps in (1, 2, int(torch.randint(10, 60, (1,), generator=rng))):
        lr = round(float(torch.empty(()).uniform_(0.05, 0.4, generator=rng)), 3)
        run = _train_line(api, rng, api.Line, x, y, device, steps=steps, lr=lr)
        got, want = (run.a.item(), run.b.item()), sgd_line(*run.start, x, y, lr, steps)[-1]
        if not all(math.isclose(g, w, rel_tol=REPLAY_RTOL, abs_tol=REPLAY_ATOL) for g, w in zip(got, want,
                                                                                               strict=True)):
            raise failure(call=run.call, inputs=[f"x = {show(x)}", f"y = 5 * x + 3 + noise of std 0.05: {show(y)}"],
                          expected=f"a = {want[0]:.6f}, b = {want[1]:.6f}: where {_steps(steps)} of SGD at "
                                   f"lr={lr} take that start (the judge's own SGD, step by step)",
                          got=f"a = {got[0]:.6f}, b = {got[1]:.6f}",
                          problem=f"train did not take {_steps(steps)} of SGD at lr={lr}: "
                                  f"{_what_it_matches(got, run.start, x, y, lr, steps)}.", hint=TRAIN_HINT)


@check(task="train", points=2)
def check_train_returns_final_loss(api: Api, rng: torch.Generator, device: str) -> None:
    """returns the final loss as a Python float, equal to the MSE of the trained model"""
    x = torch.rand(100, generator=rng) * 2 - 1
    y = _line_data(rng, x, noise=0.1)
    result, a, b, call, _ = _train_line(api, rng, api.Line, x, y, device)
    want = mse(a.double() * x + b.double(), y)
    if not isinstance(result, float):
        raise failure(call=call, expected=f"a Python float, about {want:.6g}", got=show(result),
                      problem=f"train returned {type(result).__name__}, not float.", hint=LOSS_HINT)
    if not math.isclose(result, want, rel_tol=1e-3, abs_tol=1e-6):
        found = "" if math.isfinite(result) else f" ({result} is not a finite number)"
        raise failure(call=call, inputs=[f"x = {show(x)}", f"y = {show(y)}"],
                      expected=f"{want:.6g}, the MSE of the trained model (a = {a.item():.4f}, b = {b.item():.4f}) "
                               "on x, y", got=number(result, want),
                      problem=f"that is not the loss at the end of training{found}.", hint=LOSS_HINT)


@check(task="train", points=1)
def check_train_any_module(api: Api, rng: torch.Generator, device: str) -> None:
    """trains every parameter of any Module, here one whose line sits in an nn.Linear submodule"""
    x = torch.rand(100, generator=rng) * 2 - 1
    y = _line_data(rng, x, noise=0.1)
    result, a, b, call, _ = _train_line(api, rng, api.WrappedLinear, x, y, device)
    _expect_line(result, a, b, call, x, y, noise=0.1)


# -- checkpoint and restore ---------------------------------------------------------------------------------------

RESUME_RTOL, RESUME_ATOL = 1e-7, 1e-10  # float64; on the CPU both runs agree bit for bit
CHECKPOINT_HINT = ("checkpoint returns {'model': a copy of model.state_dict(), 'optimizer': a copy of "
                   "optimizer.state_dict(), 'step': step}; restore calls model.load_state_dict and "
                   "optimizer.load_state_dict on the objects it is given and returns the step.")
OPTIMIZER_STATE_HINT = ("The optimizer carries state between steps: SGD's momentum buffers, Adam's two moving "
                        "averages and its step count. Save optimizer.state_dict() in the checkpoint and load it "
                        "into the fresh optimizer with optimizer.load_state_dict.")
COPY_HINT = ("model.state_dict() and optimizer.state_dict() hand out the live tensors, and the optimizer's per-"
             "parameter dicts too: the next optimizer.step() changes them in place. Store copies: "
             "copy.deepcopy of each state_dict, or .clone() of every tensor in it, nested dicts included.")
STEP_HINT = "Store the step in the checkpoint and have restore return it as a Python int: int(ckpt['step'])."
ASSIGN_HINT = ("Load the values into the model's own tensors, model.load_state_dict(ckpt['model']), without "
               "assign=True, and never build a new model or optimizer inside restore: the optimizer the caller "
               "trains with holds the model's Parameter objects, and must keep holding the ones the model uses.")
BUFFER_STATE_HINT = ("Save model.state_dict(), not the parameters alone: it holds the buffers too, here "
                     "BatchNorm1d's running_mean, running_var and num_batches_tracked.")
FILE_HINT = ("Keep only tensors, numbers, strings, lists and dicts in the checkpoint (state_dicts are made of "
             "them), so that torch.load(..., weights_only=True), the safe default, reads it back.")


def _resume_case(rng: torch.Generator, device: str, optimizer: dict[str, Any], file: bool) -> dict[str, Any]:
    """A random run: sizes, two starting states, one batch per step, the checkpoint's step (restored at once)."""
    sizes, batch = [_n(rng, 2, 6), _n(rng, 3, 9), _n(rng, 1, 4)], _n(rng, 6, 13)
    at, after = _n(rng, 3, 8), _n(rng, 3, 8)

    def state() -> dict[str, Tensor]:
        out = {}
        for name, t in resume_model(sizes).state_dict().items():
            noise = torch.randn(t.shape, generator=rng, dtype=torch.float64)
            out[name] = (torch.zeros_like(t) if not t.is_floating_point() else 1 + 0.5 * noise.abs()
                         if name.endswith("running_var") else 1 + 0.2 * noise if name == "1.weight" else 0.5 * noise)
        return out

    steps = at + after
    inputs = torch.randn([steps, batch, sizes[0]], generator=rng, dtype=torch.float64)
    mix = torch.randn([sizes[0], sizes[2]], generator=rng, dtype=torch.float64)
    targets = torch.sin(inputs @ mix) + 0.1 * torch.randn([steps, batch, sizes[2]], generator=rng, dtype=torch.float64)
    return {"sizes": sizes, "initial": state(), "fresh": state(), "optimizer": optimizer, "inputs": inputs.to(device),
            "targets": targets.to(device), "at": at, "crash": at, "file": file}


def _on_cpu(case: dict[str, Any]) -> dict[str, Any]:
    return {**case, "inputs": case["inputs"].cpu(), "targets": case["targets"].cpu()}


def _describe_resume(case: dict[str, Any]) -> tuple[str, list[str]]:
    i, h, o = case["sizes"]
    spec = case["optimizer"]
    options = ", ".join(f"{k}={tuple(v) if isinstance(v, list) else v}" for k, v in spec.items() if k != "name")
    total, at, crash = len(case["inputs"]), case["at"], case["crash"]
    went_on = f"the original trains on to {crash} steps in all, " if crash > at else ""
    through = ("torch.save(ckpt, buffer), ckpt = torch.load(buffer, weights_only=True) with an io.BytesIO buffer, "
               if case["file"] else "")
    call = (f"{at} steps; ckpt = checkpoint(model, optimizer, {at}); {went_on}{through}then "
            f"start = restore(fresh_model, fresh_optimizer, ckpt) and the fresh pair trains on batches start to "
            f"{total - 1} ({total} steps in all)")
    inputs = [f"model = Sequential(Linear({i}, {h}, bias=False), BatchNorm1d({h}), Tanh(), Linear({h}, {o})) in "
              "float64, fresh_model the same with other weights",
              f"optimizer = torch.optim.{spec['name']}(model.parameters(), {options}), fresh_optimizer the same "
              "on fresh_model",
              f"one batch of {case['inputs'].shape[1]} per step, F.mse_loss, zero_grad/backward/step"]
    return call, inputs


def _state_differences(got: dict[str, Tensor], want: dict[str, Tensor]) -> list[str]:
    """The entries of a state_dict that differ from the judge's, with how far."""
    out = []
    for name, expected in want.items():
        have = got.get(name)
        if not isinstance(have, Tensor) or have.shape != expected.shape:
            out.append(f"{name}: {show(have)} instead of a tensor of shape {list(expected.shape)}")
        elif not torch.allclose(have.cpu().double(), expected.double(), rtol=RESUME_RTOL, atol=RESUME_ATOL):
            gap = (have.cpu().double() - expected.double()).abs().max().item()
            out.append(f"{name}: off by up to {gap:.3g}")
    return out


def _first_departure(got: list[float], want: list[float]) -> str:
    for step, (have, expected) in enumerate(zip(got, want, strict=False)):
        if not math.isclose(have, expected, rel_tol=1e-6, abs_tol=1e-9):
            return f"the loss agrees with the uninterrupted run's up to step {step - 1} and departs at step {step} " \
                   f"({have:.6g} instead of {expected:.6g})"
    return "the losses agree, the final state does not"


def _diagnose(got: ResumeRun, case: dict[str, Any], differences: list[str]) -> tuple[str, str]:
    """(problem, hint) for a resumed run that ended away from the uninterrupted one, from the judge's own runs."""
    at = case["at"]
    params = [name for name, _ in resume_model(case["sizes"]).named_parameters()]
    stopped = reference_run(case, stop=at)["state"]
    if not _state_differences({n: got["state"][n] for n in params if n in got["state"]},
                              {n: stopped[n] for n in params}):
        return ("the parameters after the last step equal those of the checkpoint: nothing moved them after "
                "restore, so the optimizer the caller trains with no longer holds the model's parameters.",
                ASSIGN_HINT)
    if not _state_differences(got["state"], reference_run(case, fresh_optimizer_at=at)["state"]):
        return (f"the run matches one whose optimizer started afresh at step {at}: the optimizer's state was not "
                "restored.", OPTIMIZER_STATE_HINT)
    wrong = {line.split(":")[0] for line in differences}
    if wrong and not wrong & set(params):
        return (f"the parameters match, but the buffers {sorted(wrong)} do not.", BUFFER_STATE_HINT)
    return f"{_first_departure(got['losses'], reference_run(case)['losses'])}.", CHECKPOINT_HINT


def _expect_resumed(api: Api, case: dict[str, Any], hint: str = CHECKPOINT_HINT, live: bool = False) -> None:
    """The student's resumed run ends where the judge's uninterrupted run ends, restore returning the step."""
    call, inputs = _describe_resume(case)
    got = api.resume_run.using(call=call, hint=hint)(case)
    cpu_case = _on_cpu(case)
    if got["start"] != case["at"]:
        raise failure(call=call, inputs=inputs, expected=f"restore returns {case['at']}, the step of the checkpoint",
                      got=f"restore returned {got['start']}", problem="training resumes at the step restore "
                      "returns, so batches are skipped or repeated.", hint=STEP_HINT)
    differences = _state_differences(got["state"], reference_run(cpu_case)["state"])
    if not differences:
        return
    if live:
        problem, hint = (f"restored at once, the checkpoint resumes right; restored after {case['crash'] - case['at']}"
                         " more steps of training, it does not: the checkpoint changed after it was taken, so it "
                         "holds live tensors of the model or the optimizer, not copies.", COPY_HINT)
    else:
        problem, hint = _diagnose(got, cpu_case, differences)
    raise failure(call=call, inputs=inputs, expected="fresh_model.state_dict() at the end equal to the uninterrupted "
                  f"run's (rtol={RESUME_RTOL}, atol={RESUME_ATOL})", got="; ".join(differences[:4]),
                  problem=problem, hint=hint)


SGD_MOMENTUM = {"name": "SGD", "lr": 0.05, "momentum": 0.9}
ADAM = {"name": "Adam", "lr": 0.01, "betas": [0.9, 0.99]}


@check(task="checkpoint", points=2, visible=True)
def check_checkpoint_resume_momentum(api: Api, rng: torch.Generator, device: str) -> None:
    """with SGD and momentum, restored at once into a fresh model and optimizer, the run ends where the
    uninterrupted one does, and restore returns the step"""
    _expect_resumed(api, _resume_case(rng, device, SGD_MOMENTUM, file=False))


@check(task="checkpoint", points=1)
def check_checkpoint_resume_adam(api: Api, rng: torch.Generator, device: str) -> None:
    """the same with Adam (its moving averages and step counts) and with SGD, weight decay and Nesterov momentum"""
    _expect_resumed(api, _resume_case(rng, device, ADAM, file=False))
    _expect_resumed(api, _resume_case(rng, device, {**SGD_MOMENTUM, "weight_decay": 0.01, "nesterov": True},
                                      file=False))


@check(task="checkpoint", points=1)
def check_checkpoint_is_a_copy(api: Api, rng: torch.Generator, device: str) -> None:
    """a snapshot: training on after checkpoint() leaves it unchanged (its tensors are copies, not live views)"""
    for spec in (SGD_MOMENTUM, ADAM):
        case = _resume_case(rng, device, spec, file=False)
        _expect_resumed(api, case)
        _expect_resumed(api, {**case, "crash": len(case["inputs"])}, hint=COPY_HINT, live=True)


@check(task="checkpoint", points=1)
def check_checkpoint_through_file(api: Api, rng: torch.Generator, device: str) -> None:
    """the checkpoint survives torch.save and torch.load(weights_only=True) through an io.BytesIO, with Adam"""
    # Restored at once: saving copies the tensors, so a live checkpoint costs the snapshot check's point only.
    _expect_resumed(api, _resume_case(rng, device, ADAM, file=True), hint=FILE_HINT)


# -- RunningNorm (stretch: bonus) ------------------------------------------------

BUFFERS = ("running_mean", "running_var")
NORM_TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-10)}
# eps sizes that make a misplaced or missing eps cost the same points under every seed: the eval check
# never sees it (1e-8 moves no output past the tolerance) and the gradient check always does (0.1 moves
# every output of these batches by more than 0.5%).
EPS_NEGLIGIBLE, EPS_FELT = 1e-8, 0.1
BUFFER_HINT = ("Running statistics are state, not parameters: in __init__, self.register_buffer('running_mean', "
               "torch.zeros(num_features)) and the same for running_var with torch.ones. A buffer is in "
               "state_dict() and follows .to(), but parameters() and optimisers never see it; a plain tensor "
               "attribute gets neither, and an nn.Parameter, even with requires_grad=False, is a parameter.")
TRAIN_NORM_HINT = ("In training mode, normalise with the batch's own statistics over every dimension but the last "
                   "(x.reshape(-1, num_features)): (x - mean) / sqrt(var + eps), var the biased variance "
                   "(unbiased=False). Then running = (1 - momentum) * running + momentum * batch statistic, with "
                   "the unbiased variance for running_var, as nn.BatchNorm1d does.")
EVAL_HINT = ("In eval mode (self.training is False), normalise with running_mean and running_var and leave them "
             "unchanged: model.eval() is how a trained model is used on new data, one sample at a time if need be.")
GRAD_NORM_HINT = ("The output must stay differentiable through the batch mean and variance (do not detach them "
                  "there), while the running statistics are updated outside autograd: under torch.no_grad(), "
                  "or from detached statistics. Otherwise every batch's graph stays attached to the buffers.")
STATE_HINT = ("Keep the running statistics in registered buffers and create every new tensor from them or from "
              "x (same device and dtype), so that .to(torch.float64) converts them and load_state_dict restores "
              "them.")


def norm_oracle(x: Tensor, mean: Tensor, var: Tensor, momentum: float, eps: float, training: bool
                ) -> tuple[Tensor, Tensor, Tensor]:
    """(output, running_mean, running_var after the step), in float64."""
    x64, mean, var = x.double(), mean.double(), var.double()
    flat = x64.reshape(-1, x64.shape[-1])
    if not training:
        return (x64 - mean) / torch.sqrt(var + eps), mean, var
    n = flat.shape[0]
    batch_mean, batch_var = flat.mean(0), flat.var(0, correction=0)
    out = (x64 - batch_mean) / torch.sqrt(batch_var + eps)
    return (out, (1 - momentum) * mean + momentum * batch_mean,
            (1 - momentum) * var + momentum * batch_var * n / (n - 1))


def norm_grad_oracle(x: Tensor, g: Tensor, mean: Tensor, var: Tensor, eps: float, training: bool) -> Tensor:
    """d(sum(out * g))/dx through the batch statistics, in float64."""
    vjp = torch.func.vjp(lambda t: norm_oracle(t, mean, var, 0.0, eps, training)[0], x.double())[1]
    return vjp(g.double())[0]


def _batch(rng: torch.Generator, shape: list[int]) -> Tensor:
    """Features on their own scales and offsets, as real inputs are before normalisation."""
    scale = 0.5 + 2.5 * torch.rand(shape[-1], generator=rng, dtype=torch.float64)
    offset = 6 * torch.rand(shape[-1], generator=rng, dtype=torch.float64) - 3
    return (torch.randn(shape, generator=rng, dtype=torch.float64) * scale + offset).float()


def _hard_batch() -> Tensor:
    """[6, 3]: a constant feature (variance 0: eps keeps it finite) and one with variance 1e-4 (eps matters)."""
    steps = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], dtype=torch.float64)
    return torch.stack([steps * 3 + 1, torch.full((6,), 0.3, dtype=torch.float64), 0.5 + 0.006 * steps], 1).float()


def _describe_norm(num_features: int, options: dict[str, float], dtype: str) -> str:
    args = "".join(f", {k}={v}" for k, v in options.items())
    return f"RunningNorm({num_features}{args})" + (f".to(torch.{dtype})" if dtype != "float32" else "")


def _expect_registered(run: NormRun, call: str, num_features: int) -> None:
    initial = run["initial"]
    shapes = {name: list(t.shape) for name, t in initial.items()}
    problems = []
    if run["parameters"]:
        problems.append(f"parameters() lists {run['parameters']}: the statistics must not be parameters")
    problems += [f"{name} is not a registered buffer (named_buffers() has {sorted(shapes)})" for name in BUFFERS
                 if name not in initial]
    problems += [f"{name} is not in state_dict() (keys {run['state_dict']})" for name in BUFFERS
                 if name in initial and name not in run["state_dict"]]
    if not problems:
        want = {"running_mean": torch.zeros(num_features), "running_var": torch.ones(num_features)}
        problems += [f"{name} starts as {show(initial[name])}, not {show(t)}" for name, t in want.items()
                     if initial[name].shape != t.shape or not torch.equal(initial[name].double().cpu(), t.double())]
    if problems:
        raise failure(call=call, expected="no parameters; buffers running_mean = zeros and running_var = ones, "
                      f"of shape [{num_features}], in state_dict()",
                      got=f"parameters {run['parameters']}, buffers {shapes}", problem="; ".join(problems) + ".",
                      hint=BUFFER_HINT)


def _judge_norm(run: NormRun, steps: list[list[Any]], num_features: int, options: dict[str, float], device: str,
                dtype: str = "float32") -> None:
    """Every step's output, buffers and input gradient against the float64 oracle, from the initial state."""
    call = _describe_norm(num_features, options, dtype)
    _expect_registered(run, call, num_features)
    momentum, eps = options.get("momentum", 0.1), options.get("eps", 1e-5)
    mean, var = torch.zeros(num_features, dtype=torch.float64), torch.ones(num_features, dtype=torch.float64)
    rtol, atol = NORM_TOL[dtype]
    want_dtype = getattr(torch, dtype)
    history: list[str] = []
    for (mode, x, g), got in zip(steps, run["steps"], strict=True):
        training = mode == "train"
        out, new_mean, new_var = norm_oracle(x, mean, var, momentum, eps, training)
        before = f"running_mean = {show(mean.to(want_dtype))}, running_var = {show(var.to(want_dtype))}"
        inputs = {"x": x.to(want_dtype)}
        where = f"{'; '.join(history) + '; then ' if history else ''}in {mode} mode, with {before}"
        hint = TRAIN_NORM_HINT if training else EVAL_HINT
        expect_tensor(got["out"], out.to(want_dtype), call=f"m = {call}; {where}: m(x)", inputs=inputs, hint=hint,
                      rtol=rtol, atol=atol, device=device, dtype_hint=STATE_HINT)
        for name, want in (("running_mean", new_mean), ("running_var", new_var)):
            expect_tensor(got["buffers"][name], want.to(want_dtype), call=f"m = {call}; {where}: m(x), then m.{name}",
                          inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device, dtype_hint=STATE_HINT)
        if got["graph_in_buffers"]:
            raise failure(call=f"m = {call}; {where}: m(x)", inputs=[f"x = {show(x)} with requires_grad=True"],
                          expected="buffers that do not require grad after the step",
                          got=f"{got['graph_in_buffers']} require grad",
                          problem="the update recorded autograd history into the buffers: every batch's graph stays "
                                  "alive, and a later backward() can reach into old batches.", hint=GRAD_NORM_HINT)
        if g is not None:
            want_grad = norm_grad_oracle(x, g, mean, var, eps, training).to(want_dtype)
            expect_tensor(got["x_grad"], want_grad, call=f"m = {call}; {where}: m(x).backward(g), then x.grad",
                          inputs={**inputs, "g": g}, hint=GRAD_NORM_HINT, rtol=rtol, atol=atol, device=device)
        mean, var = new_mean, new_var
        history.append(f"a {mode} step on {list(x.shape)}")


def _features(rng: torch.Generator) -> int:
    return int(torch.randint(2, 7, (1,), generator=rng))


def _momentum(rng: torch.Generator) -> float:
    return round(float(0.2 + 0.4 * torch.rand(1, generator=rng, dtype=torch.float64)), 3)


@check(task="RunningNorm", points=1, visible=True)
def check_running_norm_buffers(api: Api, rng: torch.Generator, device: str) -> None:
    """RunningNorm(4) has no parameters and registers buffers running_mean (zeros) and running_var (ones)"""
    # What it registers first, before any forward pass: on a GPU a plain tensor attribute stays on the CPU, and
    # the forward pass would raise before the registration could be judged.
    _judge_norm(api.running_norm.using(hint=BUFFER_HINT)(4, [], {}), [], 4, {}, device)
    steps = [["eval", _batch(rng, [5, 4]), None]]
    _judge_norm(api.running_norm.using(hint=BUFFER_HINT)(4, steps, {}), steps, 4, {}, device)


@check(task="RunningNorm", points=1)
def check_running_norm_training(api: Api, rng: torch.Generator, device: str) -> None:
    """in training mode, normalises with the batch's statistics over all but the last dimension and updates the
    running ones (momentum, unbiased variance), also for a constant feature and one of tiny variance"""
    steps = [["train", _hard_batch(), None], ["train", _hard_batch() * 2 - 1, None]]
    _judge_norm(api.running_norm.using(hint=TRAIN_NORM_HINT)(3, steps, {}), steps, 3, {}, device)
    f, options = _features(rng), {"momentum": _momentum(rng), "eps": 1e-3}
    steps = [["train", _batch(rng, [4, 5, f]), None], ["train", _batch(rng, [7, f]), None],
             ["train", _batch(rng, [2, 3, 2, f]), None]]
    _judge_norm(api.running_norm.using(hint=TRAIN_NORM_HINT)(f, steps, options), steps, f, options, device)


@check(task="RunningNorm", points=1)
def check_running_norm_eval(api: Api, rng: torch.Generator, device: str) -> None:
    """in eval mode, normalises with the running statistics and leaves them alone; training resumes after"""
    f, options = _features(rng), {"momentum": _momentum(rng), "eps": EPS_NEGLIGIBLE}
    steps = [["train", _batch(rng, [8, f]), None], ["train", _batch(rng, [3, 4, f]), None],
             ["eval", _batch(rng, [1, f]), None], ["eval", _batch(rng, [5, 2, f]), None],
             ["train", _batch(rng, [6, f]), None]]
    _judge_norm(api.running_norm.using(hint=EVAL_HINT)(f, steps, options), steps, f, options, device)


@check(task="RunningNorm", points=1)
def check_running_norm_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """gradients flow to x through the batch mean and variance, and never into the running buffers"""
    f, options = _features(rng), {"momentum": _momentum(rng), "eps": EPS_FELT}
    steps = [["train", _batch(rng, [3, 4, f]), _batch(rng, [3, 4, f])],
             ["train", _batch(rng, [6, f]), _batch(rng, [6, f])],
             ["eval", _batch(rng, [5, f]), _batch(rng, [5, f])]]
    _judge_norm(api.running_norm.using(hint=GRAD_NORM_HINT)(f, steps, options), steps, f, options, device)


@check(task="RunningNorm", points=1)
def check_running_norm_state(api: Api, rng: torch.Generator, device: str) -> None:
    """.to(torch.float64) converts the buffers, and load_state_dict into a fresh RunningNorm restores them"""
    f, options = _features(rng), {"momentum": _momentum(rng), "eps": 1e-4}
    x_eval = _batch(rng, [4, f])
    steps = [["train", _batch(rng, [9, f]), None], ["train", _batch(rng, [2, 5, f]), None], ["eval", x_eval, None]]
    run = api.running_norm.using(hint=STATE_HINT)(f, steps, options, dtype="float64", reload=True)
    _judge_norm(run, steps, f, options, device, dtype="float64")
    call = f"m = {_describe_norm(f, options, 'float64')} after the steps above; fresh.load_state_dict(m.state_dict())"
    expect_tensor(run["reloaded"]["fresh"], run["steps"][-1]["out"], call=f"{call}; fresh.eval()(x)",
                  inputs={"x": x_eval.double()}, hint=STATE_HINT, rtol=0, atol=0, device=device)
