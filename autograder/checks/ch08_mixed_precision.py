"""Hidden checks for 08_mixed_precision: amp_train_step and train_checkerboard.

The harness (autograder/harness/ch08_mixed_precision.py) hands the student's
amp_train_step a small MLP holding the judge's weights, an SGD optimizer, a
GradScaler and a loss function, and records from outside what happened: layer
output dtypes and autocast state (forward hooks), the loss's dtype, what the
loss's backward received (the scale, for a scaled loss) and whether autocast
was on then, the parameters and gradients afterwards, the scale before and
after, and any warnings. The judge decides: its oracle is the same MLP in
float64, without autocast, and an SGD step on the (clipped) gradient.

train_checkerboard runs with the kit's amp_train_step in place of the
student's, so that a mistake in amp_train_step costs points there only.

On CPU the low-precision dtype is bfloat16; on CUDA it is float16. Random
inputs come from `rng`, seeded by the grading's secret seed.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.expect import CheckFailure, fail, nonfinite, show
from autograder.plugin import check
from autograder.remote import Student, StudentError
from autograder.scan import references
from autograder.timing import RecordProperty, reference_process
from autograder.wire import RemoteObject

# -- the seam: typed adapters to the harness and the student's code ----------------


def _kit(student: Student, fn: str, call: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
    """student.call("kit.fn", ...), with messages naming the student's call instead of the kit's."""
    try:
        return student.call(f"kit.{fn}", *args, timeout=timeout, **kwargs)
    except StudentError as e:
        raise StudentError(re.sub(rf"`kit\.{fn}[^`]*`", f"`{call}`", str(e))) from None


def low_dtype(device: str) -> torch.dtype:
    """The autocast dtype this course uses: bfloat16 on CPU, float16 on CUDA."""
    return torch.float16 if device == "cuda" else torch.bfloat16


@dataclass
class Case:
    """One step's inputs: an MLP's weights, a batch, SGD's learning rate and a GradScaler's settings."""

    sizes: list[int]
    params: dict[str, Tensor]
    inputs: Tensor
    targets: Tensor
    lr: float
    scaler: dict[str, float] = field(default_factory=dict)

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


def run_step(student: Student, case: Case, device: str, max_grad_norm: float | None = None,
             poison: float | None = None) -> dict[str, Any]:
    """One call of the student's amp_train_step, watched by the harness."""
    return _kit(student, "observe_step", case.call(device, max_grad_norm), case.params, case.sizes, case.inputs,
                case.targets, case.lr, case.scaler, device, low_dtype(device), max_grad_norm=max_grad_norm,
                poison=poison)


@pytest.fixture(scope="module")
def board_runs() -> dict[bool, dict[str, Any]]:
    """train_checkerboard's records by use_amp, shared by the checks of one grading (training takes seconds)."""
    return {}


def run_checkerboard(student: Student, runs: dict[bool, dict[str, Any]], device: str, use_amp: bool
                     ) -> dict[str, Any]:
    if use_amp not in runs:
        call = f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp={use_amp})"
        runs[use_amp] = _kit(student, "run_checkerboard", call, STEPS, SIZE, device, use_amp, timeout=SECONDS)
    return runs[use_amp]


# -- oracles -------------------------------------------------------------------------


def reference_step(case: Case) -> tuple[float, dict[str, Tensor]]:
    """The MSE loss and its gradients at the case's weights: float64, no autocast."""
    params = {name: t.double().requires_grad_(True) for name, t in case.params.items()}
    h = case.inputs.double()
    layers = len(case.sizes) - 1
    for i in range(layers):
        h = h @ params[f"{2 * i}.weight"].T + params[f"{2 * i}.bias"]
        if i < layers - 1:
            h = h.relu()
    loss = F.mse_loss(h, case.targets.double())
    grads = torch.autograd.grad(loss, list(params.values()))
    return float(loss.detach()), dict(zip(params, grads, strict=True))


def grad_norm(grads: dict[str, Tensor]) -> float:
    return math.sqrt(sum(float((g**2).sum()) for g in grads.values()))


def grid(width: int, height: int) -> Tensor:
    """The guide's input: [2, height, width] coordinates in [0, 1)."""
    h = torch.arange(width).unsqueeze(0).repeat([height, 1]).div(width)
    v = torch.arange(height).unsqueeze(1).repeat([1, width]).div(height)
    return torch.stack([h, v], 0)


def checker(width: int, height: int, freq: int) -> Tensor:
    """The guide's target: a [height, width] board of 0/1 squares, `freq` squares across."""
    h = torch.arange(width).reshape([1, width]).mul(freq / width / 2.0).fmod(1.0).gt(0.5)
    v = torch.arange(height).reshape([height, 1]).mul(freq / height / 2.0).fmod(1.0).gt(0.5)
    return h.logical_xor(v).float()


# bfloat16 keeps 8 significant bits, so the update is compared with the float64 oracle
# in relative L2 norm. Over 300 random cases the reference solution's error had a
# median of 0.5 % and a maximum of 12 % (a ReLU flipping near zero); every targeted
# mistake is off by a factor of 4 or more, an error of at least 75 %.
UPDATE_RTOL = 0.35
LOSS_RTOL = 0.03
CLIP_FACTOR = 4.0  # max_grad_norm is the true gradient norm divided by this

SIZE, FREQ, STEPS = 16, 4, 300  # train_checkerboard: a 16x16 grid, a 4x4 board, 300 steps
THRESHOLD = 0.05  # mean squared error; predicting the mean gives 0.25
SECONDS = 60.0  # the time bound for one train_checkerboard call (the reference takes about 1 s on CPU)

AUTOCAST_HINT = ("Run the forward pass and the loss inside `with torch.autocast(device_type=device_type, "
                 "dtype=dtype):` (the current API; torch.cuda.amp.autocast is deprecated and ignores CPU "
                 "tensors). Do not cast the model or the inputs yourself.")
SCALE_HINT = ("After the `with` block, call scaler.scale(loss).backward(): backward runs outside autocast, "
              "on the scaled loss, so that small float16 gradients do not underflow to zero.")
STEP_HINT = ("Let the scaler apply the update: scaler.step(optimizer) unscales the gradients and skips the "
             "step when they hold inf or NaN; then scaler.update() adjusts the scale.")
CLIP_HINT = ("Gradients are scaled after backward. Call scaler.unscale_(optimizer) first, then "
             "torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm), then scaler.step(optimizer): "
             "clipping scaled gradients clips at max_grad_norm times the scale.")
ZERO_HINT = ("Clear the gradients at the end of the step with optimizer.zero_grad() (after scaler.update()), "
             "so the next step does not add to them.")
API_HINT = ("torch.cuda.amp.autocast and torch.cuda.amp.GradScaler are deprecated. Use "
            "torch.autocast(device_type, dtype=dtype) (torch.amp.autocast) and torch.amp.GradScaler(device).")
RETURN_HINT = "Return loss.item(): the unscaled loss as a Python float (not scaler.scale(loss))."
BOARD_HINT = ("Build the guide's 1x1-convolution network (Conv2d 1x1 layers with BatchNorm2d and ReLU), "
              "train it with Adam (lr about 3e-3) on grid(size, size) -> checker(size, size, 4), and return "
              "(model, final_loss).")


def _flat(tensors: dict[str, Tensor], names: list[str]) -> Tensor:
    return torch.cat([tensors[n].detach().double().reshape(-1) for n in names])


def _deprecations(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "torch.cuda.amp" in w]


def expect_finite_parameters(record: dict[str, Any], case: Case, device: str,
                             max_grad_norm: float | None = None) -> dict[str, Tensor]:
    """The parameters after the step: the model's own names, float32 and finite."""
    names = list(case.params)
    after = record["after"]
    if set(after) != set(names) or any(after[n].dtype != torch.float32 for n in names):
        fail(case.describe(device, max_grad_norm), {}, "float32 parameters " + ", ".join(names),
             {n: str(t.dtype) for n, t in after.items()}, "the model's parameters changed name or dtype",
             "Leave the model's parameters in float32: autocast casts inside the forward pass only; never "
             "call model.half() or model.to(dtype).")
    for name in names:
        found = nonfinite(after[name])
        if found is not None:
            fail(case.describe(device, max_grad_norm), {}, "finite parameters after a step with finite gradients",
                 f"{name} = {show(after[name])}", f"{name} holds {found} after the step", STEP_HINT)
    return after


def expect_update(record: dict[str, Any], case: Case, want: dict[str, Tensor], device: str, problem: str,
                  hint: str, max_grad_norm: float | None = None) -> None:
    """The parameters moved by `want` (judge's float64 update), within UPDATE_RTOL in relative L2 norm."""
    names = list(case.params)
    after = expect_finite_parameters(record, case, device, max_grad_norm)
    got = _flat(after, names) - _flat(case.params, names)
    expected = _flat(want, names)
    error = float((got - expected).norm() / expected.norm())
    if not error <= UPDATE_RTOL:
        fail(case.describe(device, max_grad_norm), {}, expected, got,
             f"{problem}: the update (parameters after minus before, all parameters flattened) is "
             f"{float(got.norm()) / float(expected.norm()):.4g} times as large as expected and off by "
             f"{error:.0%} (tolerance {UPDATE_RTOL:.0%} for {str(low_dtype(device)).removeprefix('torch.')})",
             hint)


# -- amp_train_step ------------------------------------------------------------------


@check(task="amp_train_step", points=2, visible=True)
def check_amp_step_returns_loss_and_updates(student: Student, rng: torch.Generator, device: str) -> None:
    """one step returns the unscaled loss as a float and changes the parameters"""
    case = make_case(rng)
    record = run_step(student, case, device)
    loss, _ = reference_step(case)
    returned = record["returned"]
    if not isinstance(returned, float):
        fail(case.describe(device), {}, f"a Python float close to {loss:.6g}", record["returned_type"],
             f"returned a {record['returned_type']}, not a float", RETURN_HINT)
    if not abs(returned - loss) <= LOSS_RTOL * abs(loss):
        found = f"the returned loss is {returned}, not a finite number: " if not math.isfinite(returned) else ""
        fail(case.describe(device), {"inputs": case.inputs, "targets": case.targets}, loss, returned,
             f"{found}the returned loss is not the MSE of the model's outputs (float64 oracle; tolerance "
             f"{LOSS_RTOL:.0%})", RETURN_HINT)
    expect_finite_parameters(record, case, device)
    if all(torch.equal(record["after"][n], case.params[n]) for n in case.params):
        fail(case.describe(device), {}, "parameters changed by one SGD step", "parameters unchanged",
             "the healthy step (finite gradients) did not update the model", STEP_HINT)


def _dtype_and_autocast(record: dict[str, Any]) -> str:
    return f"{record['dtype']} (autocast {'on' if record['autocast'] else 'off'})"


@check(task="amp_train_step", points=2, forgeable=True)
def check_amp_forward_under_autocast(student: Student, rng: torch.Generator, device: str) -> None:
    """the forward pass runs under autocast: Linear outputs in low precision, the loss in float32"""
    case = make_case(rng)
    record = run_step(student, case, device)
    low = str(low_dtype(device)).removeprefix("torch.")
    layers = record["forward"]
    want_layers = f"{len(case.sizes) - 1} Linear outputs in {low}, computed with autocast on"
    if not layers:
        fail(case.describe(device), {}, want_layers, "the model was never called",
             "the forward pass did not run the model given as `model`", AUTOCAST_HINT)
    got_layers = [_dtype_and_autocast(r) for r in layers]
    if any(r["dtype"] != low or not r["autocast"] for r in layers):
        fail(case.describe(device), {}, want_layers, got_layers,
             f"the matrix multiplications did not run in {low} under torch.autocast({device!r})", AUTOCAST_HINT)
    calls = record["loss_calls"]
    got_loss = [_dtype_and_autocast(r) for r in calls]
    if len(calls) != 1 or calls[0]["dtype"] != "float32" or not calls[0]["autocast"]:
        fail(case.describe(device), {}, "one loss_fn call, under autocast, giving a float32 loss", got_loss,
             "the loss must be computed once, inside the same autocast block as the forward pass "
             "(autocast runs mse_loss in float32)", AUTOCAST_HINT)


@check(task="amp_train_step", points=2, forgeable=True)
def check_amp_backward_scaled_outside_autocast(student: Student, rng: torch.Generator, device: str) -> None:
    """backward runs once, outside autocast, on the loss scaled by the GradScaler"""
    case = make_case(rng)
    record = run_step(student, case, device)
    scale = record["scale_before"]
    seen = [f"backward reached the loss with gradient {r['grad']:g}, autocast {'on' if r['autocast'] else 'off'}"
            for r in record["backward"]]
    expected = f"backward reached the loss with gradient {scale:g} (the scale), autocast off"
    if len(seen) != 1:
        fail(case.describe(device), {}, expected, seen or "backward never reached the loss",
             f"backward reached the loss returned by loss_fn {len(seen)} times; expected exactly once", SCALE_HINT)
    problems = []
    if record["backward"][0]["grad"] != scale:
        problems.append(f"the loss was not scaled: d(backpropagated value)/d(loss) is "
                        f"{record['backward'][0]['grad']:g}, not the scale {scale:g}")
    if record["backward"][0]["autocast"]:
        problems.append("backward ran inside the autocast block")
    if problems:
        fail(case.describe(device), {}, expected, seen, "; ".join(problems), SCALE_HINT)


@check(task="amp_train_step", points=2)
def check_amp_update_matches_sgd(student: Student, rng: torch.Generator, device: str) -> None:
    """the update equals SGD on the unscaled gradient (float64 oracle)"""
    case = make_case(rng)
    record = run_step(student, case, device)
    _, grads = reference_step(case)
    want = {n: -case.lr * g for n, g in grads.items()}
    expect_update(record, case, want, device, "the parameters did not move by -lr * gradient",
                  STEP_HINT + " Do not divide by the scale yourself, and call optimizer.step() only through "
                  "scaler.step(optimizer).")


@check(task="amp_train_step", points=2)
def check_amp_skips_inf_and_nan_steps(student: Student, rng: torch.Generator, device: str) -> None:
    """a step whose gradients hold inf or NaN leaves the parameters unchanged and lowers the scale"""
    case = make_case(rng)
    for poison in (float("inf"), float("nan")):
        record = run_step(student, case, device, poison=poison)
        call = case.describe(device) + f"\n  (the judge multiplies the gradients by {poison} during backward)"
        changed = [n for n in case.params if not torch.equal(record["after"][n], case.params[n])]
        if changed:
            fail(call, {}, "every parameter bit-for-bit unchanged (the step is skipped)",
                 {n: show(record["after"][n]) for n in changed[:2]},
                 f"the update was applied although the gradients hold {poison}: {', '.join(changed)} changed",
                 STEP_HINT)
        want = record["scale_before"] * case.scaler["backoff_factor"]
        if record["scale_after"] != want:
            fail(call, {}, f"scale {want:g} (= {record['scale_before']:g} x backoff_factor "
                 f"{case.scaler['backoff_factor']:g})", f"scale {record['scale_after']:g}",
                 "the scale was not lowered after a step with non-finite gradients: call scaler.update() "
                 "after scaler.step(optimizer), once per step", STEP_HINT)


@check(task="amp_train_step", points=2)
def check_amp_clips_unscaled_gradients(student: Student, rng: torch.Generator, device: str) -> None:
    """with max_grad_norm, the update is SGD on the unscaled gradients clipped to that norm"""
    case = make_case(rng)
    _, grads = reference_step(case)
    norm = grad_norm(grads)
    max_grad_norm = norm / CLIP_FACTOR
    record = run_step(student, case, device, max_grad_norm=max_grad_norm)
    want = {n: -case.lr * g / CLIP_FACTOR for n, g in grads.items()}
    expect_update(record, case, want, device,
                  f"the unscaled gradient norm is {norm:.4g}, so clipping to {max_grad_norm:.4g} divides the "
                  f"update by {CLIP_FACTOR:g}; the update did not match", CLIP_HINT, max_grad_norm)


@check(task="amp_train_step", points=1)
def check_amp_clears_gradients(student: Student, rng: torch.Generator, device: str) -> None:
    """the gradients are cleared (None or zero) when the step returns"""
    case = make_case(rng)
    record = run_step(student, case, device)
    left = {n: g for n, g in record["grads"].items() if g is not None and bool(g.ne(0).any())}
    if left:
        name, g = next(iter(left.items()))
        fail(case.describe(device), {}, "every parameter's .grad None or zero after the step",
             f"{name}.grad = {show(g)}", f"{len(left)} parameters still hold gradients after the step", ZERO_HINT)


@check(task="amp_train_step", points=1, forgeable=True)
def check_amp_uses_current_api(student: Student, rng: torch.Generator, device: str) -> None:
    """uses torch.autocast and torch.amp, not the deprecated torch.cuda.amp"""
    used = references(student.submission, "torch.cuda.amp", cell="amp_train_step")
    if used:  # the judge's own read of the cell: no warning filter can hide it
        fail("amp_train_step", {}, "torch.autocast and torch.amp.GradScaler",
             f"torch.cuda.amp in cell 'amp_train_step', line {used[0][1]}",
             "the step uses the deprecated torch.cuda.amp API (read from your code)", API_HINT)
    case = make_case(rng)
    record = run_step(student, case, device)
    deprecated = _deprecations(record["warnings"])
    if deprecated:
        fail(case.call(device), {}, "no deprecation warnings", deprecated[0][:300],
             "the step uses the deprecated torch.cuda.amp API (PyTorch warned about it)", API_HINT)


# -- the speed-up on CUDA ---------------------------------------------------------------

# The AMP recipe's network and batch: 3 Linear layers 4096 wide, batch 4096, SGD, MSE.
SPEED_WIDTH, SPEED_LAYERS, SPEED_BATCH = 4096, 3, 4096
SPEED_STEPS, SPEED_ROUNDS, SPEED_WARMUP = 10, 5, 1
MIN_SPEEDUP = 1.3  # the recipe measured 2.3x; float16 tensor cores give far more than 1.3x on any recent GPU
SPEED_SECONDS = 120.0


@dataclass
class AmpSpeed:
    amp: float  # median seconds per step of the student's AMP step
    float32: float  # median seconds per step of the kit's float32 step
    rounds: int
    steps: int  # per round
    memory_ratio: float  # peak bytes with AMP / peak bytes in float32

    @property
    def speedup(self) -> float:
        return self.float32 / self.amp

    def describe(self) -> str:
        return (f"your amp_train_step: {self.amp * 1e3:.3g} ms per step; the float32 step: "
                f"{self.float32 * 1e3:.3g} ms per step; {self.speedup:.2f}x (median of {self.rounds} interleaved "
                f"rounds of {self.steps} steps); peak memory with AMP: {self.memory_ratio:.2f}x that of float32")


def measure_amp_speed(student: Student, rng: torch.Generator, device: str, width: int = SPEED_WIDTH,
                      batch: int = SPEED_BATCH, steps: int = SPEED_STEPS, rounds: int = SPEED_ROUNDS,
                      warmup: int = SPEED_WARMUP) -> AmpSpeed:
    """The student's AMP step against the kit's float32 step (in a clean process), interleaved rounds.

    Both processes build the same model from one seed, and each round's batch from a fresh seed sent
    with that round's timed call, so their losses must agree step by step (within 5 %): the timed steps
    did the real work, and none could be worked out before its call.
    """
    seed = int(torch.randint(0, 2**31, (), generator=rng))
    call = f"amp_train_step on a {SPEED_LAYERS}-layer MLP {width} wide, batch {batch}, float16"
    with reference_process(student, "# kit code only: the float32 reference step") as ref:
        runs = [(student, True, _kit(student, "speed_rig", call, seed, width, SPEED_LAYERS, batch, device,
                                     timeout=SPEED_SECONDS)),
                (ref, False, ref.call("kit.speed_rig", seed, width, SPEED_LAYERS, batch, device,
                                      timeout=SPEED_SECONDS))]
        times: dict[bool, list[float]] = {True: [], False: []}
        peaks: dict[bool, int] = {True: 0, False: 0}
        for r in range(warmup + rounds):
            losses: dict[bool, list[float]] = {}
            batch_seed = int(torch.randint(0, 2**31, (), generator=rng))
            for who, amp, rig in runs if r % 2 == 0 else runs[::-1]:
                started = time.perf_counter()
                out = (_kit(who, "run_steps", call, rig, steps, amp, batch_seed, timeout=SPEED_SECONDS) if amp
                       else who.call("kit.run_steps", rig, steps, amp, batch_seed, timeout=SPEED_SECONDS))
                elapsed = time.perf_counter() - started
                losses[amp], peaks[amp] = out["losses"], max(peaks[amp], int(out["peak_bytes"]))
                if r >= warmup:
                    times[amp].append(elapsed / steps)
            mine, theirs = torch.tensor(losses[True]), torch.tensor(losses[False])
            if mine.shape != theirs.shape or not bool(torch.isclose(mine, theirs, rtol=0.05).all()):
                fail(call, {}, theirs, mine, "the losses of the timed AMP steps do not follow those of float32 "
                     "training of the same model on the same data", STEP_HINT)
    return AmpSpeed(statistics.median(times[True]), statistics.median(times[False]), rounds, steps,
                    peaks[True] / max(peaks[False], 1))


@check(task="amp_train_step", points=2, cuda_only=True)
def check_amp_speedup_on_cuda(student: Student, rng: torch.Generator, device: str,
                              record_property: RecordProperty) -> None:
    """on CUDA, AMP trains the recipe's 4096-wide MLP at least 1.3x faster than float32"""
    result = measure_amp_speed(student, rng, device)
    record_property("note", f"Timing:   {result.describe()}")
    if result.speedup < MIN_SPEEDUP:
        raise CheckFailure(
            f"Call: amp_train_step on the AMP recipe's MLP ({SPEED_LAYERS} Linear layers {SPEED_WIDTH} wide, batch "
            f"{SPEED_BATCH}, SGD, MSE), float16 on CUDA\nTiming:   {result.describe()}\nProblem:  needs to be "
            f"at least {MIN_SPEEDUP:g}x faster than the float32 step\nHint:     Keep the whole forward pass and "
            "the loss inside one torch.autocast block, call backward outside it, and avoid .item(), print or "
            "copies to the CPU inside the step except the final loss.item().")


# -- train_checkerboard ----------------------------------------------------------------


def _unpack(record: dict[str, Any], device: str, use_amp: bool) -> tuple[RemoteObject, float]:
    call = f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp={use_amp})"
    result = record["result"]
    if (not isinstance(result, (tuple, list)) or len(result) != 2 or not isinstance(result[0], RemoteObject)
            or not isinstance(result[1], (float, int))):
        fail(call, {}, "(model, final_loss): an nn.Module and a float", result,
             "the result is not a (model, final_loss) pair", BOARD_HINT)
    return result[0], float(result[1])


def expect_learned(student: Student, record: dict[str, Any], device: str, use_amp: bool) -> None:
    """The reported final loss and the judge's own MSE of the returned model are under THRESHOLD."""
    call = f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp={use_amp})"
    model, final_loss = _unpack(record, device, use_amp)
    if not final_loss < THRESHOLD:
        found = f" (it is {final_loss})" if not math.isfinite(final_loss) else ""
        fail(call, {}, f"final_loss < {THRESHOLD}", final_loss,
             f"the training loss did not get under {THRESHOLD}{found} (a constant prediction gives 0.25)", BOARD_HINT)
    inputs = grid(SIZE, SIZE).unsqueeze(0)
    target = checker(SIZE, SIZE, FREQ).unsqueeze(0).unsqueeze(1)
    out = student.method(model, [], inputs, timeout=SECONDS)["value"]
    if not isinstance(out, Tensor) or out.shape != target.shape:
        fail(f"model(grid({SIZE}, {SIZE}).unsqueeze(0)) with the returned model", {"inputs": inputs}, target, out,
             "the model does not map a [1, 2, H, W] grid to a [1, 1, H, W] image", BOARD_HINT)
    mse = float(F.mse_loss(out.double(), target.double()))
    if not mse < THRESHOLD:
        found = nonfinite(out)
        fail(f"model(grid({SIZE}, {SIZE}).unsqueeze(0)) with the returned model", {"inputs": inputs}, target, out,
             (f"the model's output holds {found}; " if found else "") +
             f"the judge's mean squared error of the returned model is {mse:.4g}, not under {THRESHOLD} "
             f"(you reported final_loss = {final_loss:.4g})",
             "Return the trained model itself, in the state it was trained to." + " " + BOARD_HINT)


@check(task="train_checkerboard", points=3, visible=True)
def check_checkerboard_learns_with_amp(student: Student, device: str, board_runs: dict[bool, dict[str, Any]]
                                       ) -> None:
    """with use_amp=True, 300 steps on a 16x16 grid bring the loss under 0.05 within 60 s"""
    expect_learned(student, run_checkerboard(student, board_runs, device, use_amp=True), device, use_amp=True)


@check(task="train_checkerboard", points=2, forgeable=True)
def check_checkerboard_trains_with_amp_train_step(student: Student, device: str,
                                                   board_runs: dict[bool, dict[str, Any]]) -> None:
    """with use_amp=True, every step goes through amp_train_step with the device's low-precision dtype"""
    record = run_checkerboard(student, board_runs, device, use_amp=True)
    call = f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp=True)"
    low = str(low_dtype(device)).removeprefix("torch.")
    want = {"device_type": device, "dtype": low}
    calls = record["amp_calls"]
    if len(calls) != STEPS or any(c != want for c in calls):
        got = f"{len(calls)} calls" + (f", the first with {calls[0]}" if calls else "")
        fail(call, {}, f"{STEPS} calls of amp_train_step, each with {want}", got,
             "the training loop must take every step with your amp_train_step, on the given device, in "
             f"{low} on {device}",
             f"Call amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type=device, "
             f"dtype={'torch.float16' if device == 'cuda' else 'torch.bfloat16'}) once per step.")
    deprecated = _deprecations(record["warnings"])
    if deprecated:
        fail(call, {}, "no deprecation warnings", deprecated[0][:300],
             "train_checkerboard uses the deprecated torch.cuda.amp API (PyTorch warned about it)", API_HINT)


@check(task="train_checkerboard", points=1, forgeable=True)
def check_checkerboard_float32_without_amp(student: Student, device: str,
                                           board_runs: dict[bool, dict[str, Any]]) -> None:
    """with use_amp=False, it trains in float32 without autocast and still gets under 0.05"""
    record = run_checkerboard(student, board_runs, device, use_amp=False)
    call = f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp=False)"
    if record["layer_dtypes"] != ["float32"] or record["autocast"]:
        raise CheckFailure(
            f"Call: {call}\nExpected: every Conv2d/Linear output in float32, autocast off\n"
            f"Got:      outputs in {record['layer_dtypes'] or 'no layer ran'}, autocast "
            f"{'on' if record['autocast'] else 'off'}\nProblem:  use_amp=False must train in plain float32, as "
            "the guide's single-precision loop does\nHint:     With use_amp=False, skip autocast and the "
            "GradScaler: loss = loss_fn(model(inputs), targets); loss.backward(); optimizer.step(); "
            "optimizer.zero_grad().")
    expect_learned(student, record, device, use_amp=False)
