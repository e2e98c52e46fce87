"""Hidden checks for 02_modules: AffineScalar, LinearRegressor, make_mlp and train.

Modules live in the student's process. Checks see them through student.inspect
(registered parameters, state_dict keys, submodule types), copy random weights
in with student.set_parameters and compare forward passes with the judge's own
formulas in float64. train runs on the harness's reference models
(autograder/harness/ch02_modules.py); the judge reads the trained parameters
back and computes the loss itself. Random inputs come from `rng`.
"""

from __future__ import annotations

import math
from typing import Any, ParamSpec

import torch
from torch import Tensor

from autograder.api import Remote, StudentApi, answer, harness
from autograder.expect import expect_tensor, failure, number, show
from autograder.plugin import check
from autograder.remote import describe_call, origin
from autograder.wire import RemoteObject

P = ParamSpec("P")

# -- the API: what the notebook asks for, as the judge calls it -----------------


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


def _train_line(api: Api, rng: torch.Generator, reference: Remote[[], RemoteObject], x: Tensor, y: Tensor,
                device: str, **kwargs: Any) -> tuple[Any, Tensor, Tensor, str]:
    """Train a reference model from a random start; (train's result, slope, intercept, call text)."""
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
    return result, trained[slope_name].reshape(()), trained[intercept_name].reshape(()), call


def _expect_line(result: Any, a: Tensor, b: Tensor, call: str, x: Tensor, y: Tensor, noise: float) -> None:
    if abs(a.item() - 5) <= TOLERANCE and abs(b.item() - 3) <= TOLERANCE:
        return
    found = [f"{name} = {v.item()}" for name, v in (("a", a), ("b", b)) if not math.isfinite(v.item())]
    problem = "the model did not fit the line" + (f" ({', '.join(found)}: not finite)" if found else "")
    raise failure(call=call, inputs=[f"x = {show(x)}", f"y = 5 * x + 3 + noise of std {noise}: {show(y)}"],
                  expected=f"a within {TOLERANCE} of 5 and b within {TOLERANCE} of 3 after training",
                  got=f"a = {a.item():.4f}, b = {b.item():.4f} (train returned {show(result)})", problem=f"{problem}.",
                  hint=TRAIN_HINT)


# -- AffineScalar --------------------------------------------------------------


@check(task="AffineScalar", points=2, visible=True)
def check_affine_parameters_registered(api: Api, device: str) -> None:
    """AffineScalar registers trainable parameters a and b of shape [1]"""
    module = build(api.AffineScalar, device)
    _expect_parameters("AffineScalar()", api.student.inspect(module), {"a": [1], "b": [1]}, PARAMETER_HINT)


@check(task="AffineScalar", points=2)
def check_affine_forward(api: Api, rng: torch.Generator, device: str) -> None:
    """with a and b set, forward(x) is a * x + b for [N] inputs"""
    module = build(api.AffineScalar, device)
    for _ in range(3):
        a, b, x = _random(rng, 1), _random(rng, 1), _random(rng, _n(rng))
        _set_parameters(api, module, {"a": a, "b": b}, "AffineScalar()")
        expect_tensor(run_forward(api, module, x), affine_oracle(x, a, b), call="AffineScalar()(x)",
                      inputs={"a": a, "b": b, "x": x}, device=device,
                      hint="forward must return self.a * x + self.b, using the parameters themselves.")


# -- LinearRegressor -----------------------------------------------------------


@check(task="LinearRegressor", points=1, visible=True)
def check_linear_regressor_structure(api: Api, device: str) -> None:
    """LinearRegressor holds one nn.Linear(1, 1) named `linear`"""
    info = api.student.inspect(build(api.LinearRegressor, device))
    if info["modules"].get("linear") != "Linear":
        raise failure(call="LinearRegressor()", expected="a submodule `linear` of type nn.Linear",
                      got=f"submodules {info['modules']}",
                      hint="In __init__, after super().__init__(): self.linear = nn.Linear(1, 1).")
    _expect_parameters("LinearRegressor()", info, {"linear.weight": [1, 1], "linear.bias": [1]},
                       "self.linear = nn.Linear(1, 1) registers linear.weight [1, 1] and linear.bias [1].")


@check(task="LinearRegressor", points=2)
def check_linear_regressor_forward(api: Api, rng: torch.Generator, device: str) -> None:
    """with weight and bias set, maps a [N] tensor to the [N] tensor weight * x + bias"""
    module = build(api.LinearRegressor, device)
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
    """the layers take their sizes from the arguments, for random sizes"""
    for _ in range(2):
        _check_mlp_structure(api, (_n(rng, 2, 9), _n(rng, 2, 9), _n(rng, 2, 9)), device)


@check(task="make_mlp", points=1)
def check_make_mlp_forward(api: Api, rng: torch.Generator, device: str) -> None:
    """with its weights set, the network computes relu(x W1^T + b1) W2^T + b2"""
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
    result, a, b, call = _train_line(api, rng, api.Line, x, y, device)
    _expect_line(result, a, b, call, x, y, noise=0.1)


@check(task="train", points=2)
def check_train_follows_steps_and_lr(api: Api, rng: torch.Generator, device: str) -> None:
    """on the guide's x in [0, 1), fits the line with the steps=2000 and lr=0.2 it is given"""
    x = torch.arange(200, dtype=torch.float32) / 200
    y = _line_data(rng, x, noise=0.05)
    result, a, b, call = _train_line(api, rng, api.Line, x, y, device, steps=2000, lr=0.2)
    _expect_line(result, a, b, call, x, y, noise=0.05)


@check(task="train", points=2)
def check_train_returns_final_loss(api: Api, rng: torch.Generator, device: str) -> None:
    """returns the final loss as a Python float, equal to the MSE of the trained model"""
    x = torch.rand(100, generator=rng) * 2 - 1
    y = _line_data(rng, x, noise=0.1)
    result, a, b, call = _train_line(api, rng, api.Line, x, y, device)
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
    result, a, b, call = _train_line(api, rng, api.WrappedLinear, x, y, device)
    _expect_line(result, a, b, call, x, y, noise=0.1)
