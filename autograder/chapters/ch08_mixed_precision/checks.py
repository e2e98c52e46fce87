"""Hidden checks for 08_mixed_precision: amp_train_step, train_checkerboard and LossScaler.

The harness (autograder/chapters/ch08_mixed_precision/harness.py) hands the student's amp_train_step a small MLP
holding the judge's weights (a Case, ch08_inputs), an SGD optimizer, a GradScaler and a loss function, and returns
what the step produced: the value it returned, the parameters and gradients afterwards, the scale and the growth
tracker. The judge decides from those alone. Its oracles: the same MLP in float64 without autocast (ch08_oracles)
for the size of the update, and its own replays of the step (harness.replay_steps: the same objects, stepped with
the forward pass under autocast or in float32, and backward on the scaled loss, on the unscaled one, or on the
unscaled one with the gradients multiplied by the scale afterwards) for the order and precision. The cases are
drawn so that the right replay and the wrong ones differ by at least MARGIN times the tolerance; a correct step
reproduces the right one bit for bit. What only the source can show (the deprecated API, backward inside the
autocast block, use_amp switching autocast off) is read from the code the task reaches (amp_rules.py). Records
made inside the student's process (the layer dtypes hooks saw, what backward brought the loss) only shape messages.

train_checkerboard runs with the kit's amp_train_step in place of the student's, so that a mistake in
amp_train_step costs points there only; and once more with a sham amp_train_step that changes nothing when
called as the notebook asks: with use_amp=True the model must then not learn (every step went through
amp_train_step), with use_amp=False it must (the float32 path does not use it).

LossScaler is a dynamic loss scaler written from scratch: the harness trains a
small MLP through a schedule of clean, poisoned (inf or nan) and clipped steps
with it (scaler_run); the oracle is the same schedule with
torch.amp.GradScaler, run in the judge.

On CPU the low-precision dtype is bfloat16; on CUDA it is float16. Random
inputs come from `rng`, seeded by the grading's secret seed.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.chapters.ch08_mixed_precision.amp_rules import (
    backward_inside_autocast,
    deprecated_amp,
    grad_scaler_uses,
    unguarded_autocast,
)
from autograder.chapters.ch08_mixed_precision.inputs import (
    FREQ,
    OVERFLOW_SCALE,
    SIZE,
    STEPS,
    Case,
    StepCase,
    grid,
    low_dtype,
    make_case,
    near_case,
    odd_scale_case,
    overflow_case,
)
from autograder.chapters.ch08_mixed_precision.oracles import (
    STEP_HINT,
    checker,
    expect_finite_parameters,
    expect_loss,
    expect_update,
    grad_norm,
    reference_step,
)
from autograder.judging.authoring import (
    AMP_MEMORY_RATIO,
    NEEDED_RATIO,
    RATIO,
    REFERENCE_SECONDS,
    STUDENT_SECONDS,
    RecordProperty,
    RemoteObject,
    Run,
    Student,
    StudentApi,
    answer,
    check,
    fail,
    failure,
    harness,
    interleave,
    listed,
    record_measured,
    record_note,
    reference_process,
    show,
)

SECONDS = 60.0  # the time bound for one train_checkerboard call (the reference takes about 1 s on CPU)
SPEED_SECONDS = 120.0  # the time bound for one call of the speed comparison

# -- the API: what the notebook asks for, as the judge calls it (through the harness) ----------------


class StepRecord(TypedDict):
    returned: Any  # what amp_train_step returned, if a number
    returned_type: str
    after: dict[str, Tensor]  # the parameters after the step
    grads: dict[str, Tensor | None]  # their .grad after the step
    scale_after: float
    growth_tracker: int  # the scaler's count of clean steps since the last change of scale


class Observed(StepRecord):
    """A step of the student's, with what was noted inside their process (for messages only)."""

    forward: list[dict[str, Any]]  # per Linear layer: its output's dtype and whether autocast was on
    backward: list[dict[str, Any]]  # per backward through the loss: the gradient it got and the autocast state


class BoardRecord(TypedDict):
    result: Any  # what train_checkerboard returned: (model, final_loss)
    amp_calls: list[dict[str, str]]  # per amp_train_step call: its device_type and dtype (for messages)
    layer_dtypes: list[str]  # the dtypes of every Conv2d/Linear output (for messages)
    autocast: bool  # whether autocast was on for any of them (for messages)


class Steps(TypedDict):
    losses: list[float]
    peak_bytes: int  # CUDA memory at its peak during the steps (0 on CPU)


class ScalerStep(TypedDict):
    poison: float | None  # inf or nan written into one gradient entry after backward, or None
    param: int  # which parameter (in model.parameters() order) is poisoned
    clip: float | None  # unscale_ then clip_grad_norm_ to this before the step, or None


class ScalerCase(TypedDict):
    sizes: list[int]
    params: dict[str, Tensor]
    inputs: Tensor
    targets: Tensor
    lr: float  # SGD with momentum 0.9
    dtype: str | None  # the autocast dtype on CPU, or None for no autocast
    config: dict[str, Any]  # LossScaler(**config), as GradScaler("cpu", **config): its keyword arguments
    steps: list[ScalerStep]


class ScalerRecord(TypedDict):
    scales: list[float]  # get_scale() after each step's update()
    ratios: list[float | None]  # scale(loss) / loss at each step
    params: dict[str, Tensor]  # the parameters after the last step


class Api(StudentApi):
    @harness()
    def observe_step(self, case: StepCase, device_type: str, dtype: torch.dtype, max_grad_norm: float | None = None,
                     poison: float | None = None) -> Observed:
        """The student's amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type=...,
        dtype=..., max_grad_norm=...) on the case's MLP: what it produced; `poison` multiplies the
        gradients during backward."""

    @harness()
    def replay_steps(self, case: StepCase, device_type: str, dtype: torch.dtype,
                     max_grad_norm: float | None = None) -> dict[str, StepRecord]:
        """The judge's replays of the step on the case (in a clean process of kit code only), by
        "forward/backward"."""

    @harness(timeout=SECONDS)
    def run_checkerboard(self, steps: int, size: int, device: str, use_amp: bool, sham: bool) -> BoardRecord:
        """The student's train_checkerboard(steps, size, device, use_amp), with the kit's amp_train_step, or
        (`sham`) one that changes nothing when called as asked."""

    @harness(timeout=SPEED_SECONDS)
    def speed_rig(self, seed: int, width: int, layers: int, batch: int, device: str) -> RemoteObject:
        """The AMP recipe's MLP, optimizer and GradScaler, built identically from `seed` in each process."""

    @answer
    def LossScaler(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                   growth_interval: int = 2000) -> RemoteObject:
        """A dynamic loss scaler with GradScaler's scale, unscale_, step, update, get_scale."""

    @harness()
    def run_loss_scaler(self, case: ScalerCase) -> ScalerRecord:
        """The case's MLP trained through its schedule of steps with the student's LossScaler(**case["config"])."""

    @harness(timeout=SPEED_SECONDS)
    def run_steps(self, rig: RemoteObject, steps: int, amp: bool, seed: int) -> Steps:
        """`steps` training steps on a batch made from `seed` in the call: the student's AMP step, or the kit's
        float32 step."""


def run_step(api: Api, case: Case, device: str, max_grad_norm: float | None = None,
             poison: float | None = None) -> Observed:
    """One call of the student's amp_train_step on the case: what it produced."""
    observe = api.observe_step.using(call=case.call(device, max_grad_norm))
    return observe(case.record(), device, low_dtype(device), max_grad_norm=max_grad_norm, poison=poison)


Replay = Callable[[Case], dict[str, StepRecord]]


@contextlib.contextmanager
def replayer(api: Api, device: str) -> Iterator[Replay]:
    """The judge's replays of a step (harness.replay_steps): in the judge's process on CPU; on CUDA in a clean
    child running kit code only, where the GPU is."""
    if device != "cuda":
        from autograder.chapters.ch08_mixed_precision.harness import replay_steps

        yield lambda case: cast(dict[str, StepRecord], replay_steps(case.record(), device, low_dtype(device)))
        return
    with reference_process(api.student, "# kit code only: the judge's replays of amp_train_step") as ref:
        theirs = Api(ref)
        yield lambda case: theirs.replay_steps(case.record(), device, low_dtype(device))


def _board_call(device: str, use_amp: bool) -> str:
    return f"train_checkerboard(steps={STEPS}, size={SIZE}, device={device!r}, use_amp={use_amp})"


@pytest.fixture(scope="module")
def board_runs() -> dict[tuple[bool, bool], BoardRecord]:
    """train_checkerboard's records by (use_amp, sham), shared by the checks of one grading (training takes
    seconds)."""
    return {}


def run_checkerboard(api: Api, runs: dict[tuple[bool, bool], BoardRecord], device: str, use_amp: bool,
                     sham: bool) -> BoardRecord:
    if (use_amp, sham) not in runs:
        run = api.run_checkerboard.using(call=_board_call(device, use_amp))
        runs[use_amp, sham] = run(STEPS, SIZE, device, use_amp, sham)
    return runs[use_amp, sham]


THRESHOLD = 0.05  # mean squared error; predicting the mean gives 0.25
CLIP_FACTOR = 4.0  # max_grad_norm is the true gradient norm divided by this

AUTOCAST_HINT = ("Run the forward pass and the loss inside `with torch.autocast(device_type=device_type, "
                 "dtype=dtype):` (the current API; torch.cuda.amp.autocast is deprecated and ignores CPU "
                 "tensors). Do not cast the model or the inputs yourself.")
SCALE_HINT = ("After the `with` block, call scaler.scale(loss).backward(): backward runs outside autocast, "
              "on the scaled loss, so that small float16 gradients do not underflow to zero.")
CLIP_HINT = ("Gradients are scaled after backward. Call scaler.unscale_(optimizer) first, then "
             "torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm), then scaler.step(optimizer): "
             "clipping scaled gradients clips at max_grad_norm times the scale.")
ZERO_HINT = ("Clear the gradients at the end of the step with optimizer.zero_grad() (after scaler.update()), "
             "so the next step does not add to them.")
API_HINT = ("torch.cuda.amp and torch.cpu.amp (autocast, GradScaler) are deprecated. Use "
            "torch.autocast(device_type, dtype=dtype) (torch.amp.autocast) and torch.amp.GradScaler(device).")
RETURN_HINT = "Return loss.item(): the unscaled loss as a Python float (not scaler.scale(loss))."
BOARD_HINT = ("Build the guide's 1x1-convolution network (Conv2d 1x1 layers with BatchNorm2d and ReLU), "
              "train it with Adam (lr about 3e-3) on grid(size, size) -> checker(size, size, 4), and return "
              "(model, final_loss).")

# -- comparing a step with the judge's replays ------------------------------------------------------------------

# A correct step reproduces the right replay bit for bit (distance 0): the same operations on the same objects.
# The cases are drawn so that the right replay and every wrong one lie at least MARGIN tolerances apart
# (DRAWS tries; should none reach it, the best draw's tolerances shrink to keep the margin).
LOSS_MATCH = 2e-5  # relative difference of the returned loss
DIRECTION_MATCH = 1e-3  # distance between unit update vectors (forward: autocast against float32)
BACKWARD_MATCH = 5e-5  # the same, for the order of scaling (scaled backward against unscaled)
MARGIN = 20.0
DRAWS = 20


def _update(after: dict[str, Tensor], case: Case) -> Tensor:
    """Parameters after the step minus before, all flattened, in float64."""
    return torch.cat([(after[n].detach().double() - case.params[n].double()).reshape(-1) for n in case.params])


def _direction_gap(u: Tensor, v: Tensor) -> float:
    """The distance between u / |u| and v / |v| (0 to 2); inf if either is zero or not finite."""
    nu, nv = float(u.norm()), float(v.norm())
    if not (math.isfinite(nu) and math.isfinite(nv) and nu > 0 and nv > 0):
        return math.inf
    return float((u / nu - v / nv).norm())


def _loss_gap(a: Any, b: float) -> float:
    return abs(float(a) - b) / abs(b) if isinstance(a, float) and math.isfinite(a) and b != 0 else math.inf


def _drawn(rng: torch.Generator, make: Callable[[torch.Generator], Case], replay: Replay,
           separation: Callable[[Case, dict[str, StepRecord]], float]) -> tuple[Case, dict[str, StepRecord], float]:
    """A case whose replays are separated by MARGIN or more (in tolerances), its replays, and the factor (<= 1) by
    which its tolerances shrink when no draw reached MARGIN."""
    best: tuple[Case, dict[str, StepRecord], float] | None = None
    for _ in range(DRAWS):
        case = make(rng)
        replays = replay(case)
        apart = separation(case, replays)
        if best is None or apart > best[2]:
            best = (case, replays, apart)
        if apart >= MARGIN:
            break
    assert best is not None
    return best[0], best[1], min(1.0, best[2] / MARGIN)


def _of(replays: dict[str, StepRecord], forward: str) -> dict[str, StepRecord]:
    return {k: r for k, r in replays.items() if k.startswith(forward + "/")}


def _forward_separation(case: Case, replays: dict[str, StepRecord]) -> float:
    low, full = _of(replays, "autocast"), _of(replays, "float32")
    loss = _loss_gap(replays["autocast/scaled"]["returned"], replays["float32/scaled"]["returned"]) / LOSS_MATCH
    update = min(_direction_gap(_update(a["after"], case), _update(f["after"], case))
                 for a in low.values() for f in full.values()) / DIRECTION_MATCH
    return min(loss, update)


def _nearest(gaps: dict[str, float], tolerance: float) -> str | None:
    """The replay nearest within tolerance, if any."""
    key = min(gaps, key=gaps.__getitem__)
    return key if gaps[key] <= tolerance else None


def _seen_forward(record: Observed) -> str:
    seen = sorted({f"{r['dtype']} (autocast {'on' if r['autocast'] else 'off'})" for r in record["forward"]})
    return ("; as noted inside your process (a hint, not the evidence), the Linear layers gave " + ", ".join(seen)
            if seen else "; as noted inside your process, the model's Linear layers never ran")


# -- amp_train_step ------------------------------------------------------------------


@check(task="amp_train_step", points=1, visible=True)
def check_amp_step_returns_loss_and_updates(api: Api, rng: torch.Generator, device: str) -> None:
    """one step returns the unscaled loss as a float and changes the parameters"""
    case = make_case(rng)
    record = run_step(api, case, device)
    expect_loss(record["returned"], record["returned_type"], case, device, RETURN_HINT)
    expect_finite_parameters(record["after"], case, device)
    if all(torch.equal(record["after"][n], case.params[n]) for n in case.params):
        fail(case.describe(device), {}, "parameters changed by one SGD step", "parameters unchanged",
             "the healthy step (finite gradients) did not update the model", STEP_HINT)


@check(task="amp_train_step", points=2)
def check_amp_forward_under_autocast(api: Api, rng: torch.Generator, device: str) -> None:
    """the forward pass runs under autocast: the loss and update are those of the judge's autocast replay"""
    low = str(low_dtype(device)).removeprefix("torch.")
    with replayer(api, device) as replay:
        case, replays, shrink = _drawn(rng, near_case, replay, _forward_separation)
    record = run_step(api, case, device)
    loss_tol, direction_tol = LOSS_MATCH * shrink, DIRECTION_MATCH * shrink
    loss_low, loss_full = replays["autocast/scaled"]["returned"], replays["float32/scaled"]["returned"]
    returned = record["returned"]
    loss_is = _nearest({"autocast": _loss_gap(returned, loss_low), "float32": _loss_gap(returned, loss_full)},
                       loss_tol)
    update = _update(record["after"], case)
    gaps = {k: _direction_gap(update, _update(r["after"], case)) for k, r in replays.items()}
    nearest = _nearest(gaps, direction_tol)
    update_is = nearest.split("/")[0] if nearest else None
    moved = math.isfinite(float(update.norm())) and float(update.norm()) > 0
    got = (f"returned loss {returned!r}; update direction {min(_of_gaps(gaps, 'autocast')):.3g} from the "
           f"autocast replay's, {min(_of_gaps(gaps, 'float32')):.3g} from the float32 replay's")
    expected = (f"the returned loss {loss_low:.9g} (the float32 forward gives {loss_full:.9g}) and the update of "
                f"the judge's replay under torch.autocast in {low}, within {loss_tol:.1g} (loss, relative) and "
                f"{direction_tol:.1g} (direction)")
    if "float32" in (loss_is, update_is):
        parts = [w for w, c in (("loss", loss_is), ("update", update_is)) if c == "float32"]
        which = " and ".join(parts) + (" equal" if len(parts) == 2 else " equals")
        fail(case.describe(device), {}, expected, got,
             f"the step's {which} those of the judge's replay of this step with the forward pass in float32: the "
             f"forward pass did not run under torch.autocast({device!r}, dtype=torch.{low})", AUTOCAST_HINT)
    if (update_is if moved else loss_is) != "autocast":
        fail(case.describe(device), {}, expected, got,
             f"the step's {'update' if moved else 'loss (it did not update the parameters)'} matches no replay of "
             f"the judge's with the forward pass under torch.autocast({device!r}, dtype=torch.{low})"
             + _seen_forward(record), AUTOCAST_HINT)


def _of_gaps(gaps: dict[str, float], forward: str) -> list[float]:
    return [g for k, g in gaps.items() if k.startswith(forward + "/")]


ACCEPTED = ("autocast/scaled", "float32/scaled", "float32/scaled after")  # float32 cannot tell the last two apart


def _backward_separation(case: Case, replays: dict[str, StepRecord]) -> float:
    updates = {k: _update(r["after"], case) for k, r in replays.items()}
    return min(_direction_gap(updates[a], updates[w]) for a in ACCEPTED for w in updates
               if w not in ACCEPTED) / BACKWARD_MATCH


def _seen_backward(record: Observed) -> str:
    seen = [f"{r['grad']:g} (autocast {'on' if r['autocast'] else 'off'})" for r in record["backward"]]
    return ("; as noted inside your process (a hint, not the evidence), backward brought loss_fn's loss the "
            "gradient " + ", ".join(seen) if seen else "; as noted inside your process, backward never reached "
            "the loss that loss_fn returned")


@check(task="amp_train_step", points=2)
def check_amp_backward_scaled_outside_autocast(api: Api, rng: torch.Generator, device: str) -> None:
    """backward runs outside autocast, on the loss scaled by the GradScaler (judge's replays, and the cell)"""
    problems = [f"backward ran inside the autocast block (cell 'amp_train_step', line {line})"
                for line in backward_inside_autocast(api.student.submission, "amp_train_step")]
    # The scale overflows every scaled gradient: a step whose backward ran on the scaled loss finds inf, and is
    # skipped (or, if it steps anyway, leaves inf or nan in the parameters: check_amp_skips_inf_and_nan_steps's
    # business). Unscaled gradients are finite: they move the parameters, or nothing marks the step as bad.
    case = overflow_case(rng)
    record = run_step(api, case, device)
    scale, backoff = case.scaler["init_scale"], case.scaler["backoff_factor"]
    skipped = all(torch.equal(record["after"][n], case.params[n]) for n in case.params)
    inf_applied = any(not bool(record["after"][n].isfinite().all()) for n in case.params)
    found_inf = (record["scale_after"], record["growth_tracker"]) in ((scale * backoff, 0), (scale, 0))
    if not (inf_applied or (skipped and found_inf)):
        fail(case.describe(device), {}, "the step skipped (parameters bit-for-bit unchanged) and, after "
             f"scaler.update(), the scale lowered to {scale * backoff:g}",
             f"parameters {'unchanged' if skipped else 'changed'}, scale {record['scale_after']:g}, growth tracker "
             f"{record['growth_tracker']}",
             "; ".join([*problems, f"the loss was not scaled: with init_scale={OVERFLOW_SCALE:g} every scaled "
                        "gradient overflows, so a step whose backward ran on scaler.scale(loss) finds inf and is "
                        "skipped; this one's gradients were finite: it "
                        + ("found no inf" if skipped else "updated the parameters")])
             + _seen_backward(record),
             SCALE_HINT)
    # A scale that is not a power of two: the scaled backward rounds differently from an unscaled one.
    with replayer(api, device) as replay:
        case, replays, shrink = _drawn(rng, odd_scale_case, replay, _backward_separation)
    record = run_step(api, case, device)
    update = _update(record["after"], case)
    gaps = {k: _direction_gap(update, _update(r["after"], case)) for k, r in replays.items()}
    tolerance = BACKWARD_MATCH * shrink
    nearest = _nearest(gaps, tolerance)
    if nearest not in ACCEPTED:
        accepted = min(gaps[k] for k in ACCEPTED)
        unscaled = ("the loss was not scaled: backward ran on the loss itself, and scaler.step then divided its "
                    "gradients by the scale")
        why = {"autocast/unscaled": unscaled, "float32/unscaled": unscaled,
               "autocast/scaled after": "backward ran on the unscaled loss (its gradients multiplied by the scale "
                                        "after it, or never scaled): in 16 bits they round differently from those "
                                        "of a backward pass from scaler.scale(loss)"}
        problems.append(why.get(nearest or "", "the update matches none of the judge's replays of this step "
                                "(forward under autocast or in float32; backward on the scaled loss, the unscaled "
                                "one, or the unscaled one with the gradients scaled after)") + _seen_backward(record))
        fail(case.describe(device), {}, f"the update of the judge's replay with backward on scaler.scale(loss) "
             f"(direction within {tolerance:.1g})",
             f"update direction {accepted:.3g} from it" + (f", {gaps[nearest]:.3g} from the replay "
                                                          f"'{nearest}'" if nearest else ""),
             "; ".join(problems), SCALE_HINT)
    if problems:
        fail("amp_train_step (its cell, as the judge reads it)", {}, "backward after the `with` block",
             problems, "; ".join(problems) + ": autocast is for the forward pass and the loss; backward runs each "
             "operation in the dtype its forward pass used without it", SCALE_HINT)


@check(task="amp_train_step", points=1)
def check_amp_update_matches_sgd(api: Api, rng: torch.Generator, device: str) -> None:
    """the update equals SGD on the unscaled gradient (float64 oracle)"""
    case = make_case(rng)
    record = run_step(api, case, device)
    _, grads = reference_step(case)
    want = {n: -case.lr * g for n, g in grads.items()}
    expect_update(record["after"], case, want, device, "the parameters did not move by -lr * gradient",
                  STEP_HINT + " Do not divide by the scale yourself, and call optimizer.step() only through "
                  "scaler.step(optimizer).")


@check(task="amp_train_step", points=1)
def check_amp_skips_inf_and_nan_steps(api: Api, rng: torch.Generator, device: str) -> None:
    """a step whose gradients hold inf or NaN leaves the parameters unchanged and lowers the scale"""
    case = make_case(rng)
    for poison in (float("inf"), float("nan")):
        record = run_step(api, case, device, poison=poison)
        call = case.describe(device) + f"\n  (the judge multiplies the gradients by {poison} during backward)"
        changed = [n for n in case.params if not torch.equal(record["after"][n], case.params[n])]
        if changed:
            fail(call, {}, "every parameter bit-for-bit unchanged (the step is skipped)",
                 {n: show(record["after"][n]) for n in changed[:2]},
                 f"the update was applied although the gradients hold {poison}: {', '.join(changed)} changed",
                 STEP_HINT)
        before = case.scaler["init_scale"]
        want = before * case.scaler["backoff_factor"]
        if record["scale_after"] != want:
            fail(call, {}, f"scale {want:g} (= {before:g} x backoff_factor "
                 f"{case.scaler['backoff_factor']:g})", f"scale {record['scale_after']:g}",
                 "the scale was not lowered after a step with non-finite gradients: call scaler.update() "
                 "after scaler.step(optimizer), once per step", STEP_HINT)


@check(task="amp_train_step", points=1)
def check_amp_clips_unscaled_gradients(api: Api, rng: torch.Generator, device: str) -> None:
    """with max_grad_norm, the update is SGD on the unscaled gradients clipped to that norm"""
    case = make_case(rng)
    _, grads = reference_step(case)
    norm = grad_norm(grads)
    max_grad_norm = norm / CLIP_FACTOR
    record = run_step(api, case, device, max_grad_norm=max_grad_norm)
    want = {n: -case.lr * g / CLIP_FACTOR for n, g in grads.items()}
    expect_update(record["after"], case, want, device,
                  f"the unscaled gradient norm is {norm:.4g}, so clipping to {max_grad_norm:.4g} divides the "
                  f"update by {CLIP_FACTOR:g}; the update did not match", CLIP_HINT, max_grad_norm)


@check(task="amp_train_step", points=1)
def check_amp_clears_gradients(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradients are cleared (None or zero) when the step returns"""
    case = make_case(rng)
    record = run_step(api, case, device)
    left = {n: g for n, g in record["grads"].items() if g is not None and bool(g.ne(0).any())}
    if left:
        name, g = next(iter(left.items()))
        fail(case.describe(device), {}, "every parameter's .grad None or zero after the step",
             f"{name}.grad = {show(g)}", f"{len(left)} parameters still hold gradients after the step", ZERO_HINT)


def _named(cell: str, line: int, name: str) -> str:
    """Where the cell names a deprecated namespace: torch.cuda.amp in cell 'c', line 3 (torch.cuda.amp.autocast)."""
    namespace = ".".join(name.split(".")[:3])
    return f"{namespace} in cell '{cell}', line {line}" + (f" ({name})" if name != namespace else "")


@check(task="amp_train_step", points=1)
def check_amp_uses_current_api(api: Api, rng: torch.Generator, device: str) -> None:
    """a step that runs, written with torch.autocast and torch.amp, not the deprecated torch.cuda.amp or
    torch.cpu.amp (read from the cell)"""
    used = deprecated_amp(api.student.submission, "amp_train_step")
    if used:
        fail("amp_train_step (its cell, as the judge reads it)", {}, "torch.autocast and torch.amp.GradScaler",
             [_named(*use) for use in used],
             f"the step uses a deprecated AMP API: {used[0][2]} (read from your code)",
             API_HINT)
    run_step(api, make_case(rng), device)  # the point is for a step that exists and runs


# -- the speed-up on CUDA ---------------------------------------------------------------

# The AMP recipe's network and batch: 3 Linear layers 4096 wide, batch 4096, SGD, MSE.
SPEED_WIDTH, SPEED_LAYERS, SPEED_BATCH = 4096, 3, 4096
SPEED_STEPS, SPEED_ROUNDS, SPEED_WARMUP = 10, 5, 1
MIN_SPEEDUP = 1.3  # the recipe measured 2.3x; float16 tensor cores give far more than 1.3x on any recent GPU


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
    """The student's AMP step against the kit's float32 step (in a clean process), through timing.interleave.

    Both processes build the same model from one seed, and each round's batch from the round's fresh seed
    sent with its timed call, so their losses must agree step by step (within 5 %): the timed steps did
    the real work, and none could be worked out before its call.
    """
    seed = int(torch.randint(0, 2**31, (), generator=rng))
    call = f"amp_train_step on a {SPEED_LAYERS}-layer MLP {width} wide, batch {batch}, float16"
    with reference_process(student, "# kit code only: the float32 reference step") as ref:
        mine, theirs = Api(student), Api(ref)
        my_rig = mine.speed_rig.using(call=call)(seed, width, SPEED_LAYERS, batch, device)
        their_rig = theirs.speed_rig(seed, width, SPEED_LAYERS, batch, device)

        def verify(_: int, replies: list[Steps]) -> None:
            amp, float32 = (torch.tensor(reply["losses"]) for reply in replies)
            if amp.shape != float32.shape or not bool(torch.isclose(amp, float32, rtol=0.05).all()):
                fail(call, {}, float32, amp, "the losses of the timed AMP steps do not follow those of float32 "
                     "training of the same model on the same data", STEP_HINT)

        timed = interleave([Run(student, lambda s: mine.run_steps.using(call=call)(my_rig, steps, True, s)),
                            Run(ref, lambda s: theirs.run_steps(their_rig, steps, False, s))], rng, rounds, warmup,
                           verify)
    (amp, float32) = ([t / steps for t, _ in runs] for runs in timed)
    peak_amp, peak_float32 = (max(int(reply["peak_bytes"]) for _, reply in runs) for runs in timed)
    return AmpSpeed(statistics.median(amp), statistics.median(float32), rounds, steps,
                    peak_amp / max(peak_float32, 1))


@check(task="amp_train_step", points=2, cuda_only=True, speed=True)
def check_amp_speedup_on_cuda(api: Api, rng: torch.Generator, device: str, record_property: RecordProperty) -> None:
    """on CUDA, AMP trains the recipe's 4096-wide MLP at least 1.3x faster than float32"""
    result = measure_amp_speed(api.student, rng, device)
    record_note(record_property, f"Timing:   {result.describe()}")
    record_measured(record_property, {RATIO: result.speedup, NEEDED_RATIO: MIN_SPEEDUP, STUDENT_SECONDS: result.amp,
                                      REFERENCE_SECONDS: result.float32, AMP_MEMORY_RATIO: result.memory_ratio})
    if result.speedup < MIN_SPEEDUP:
        raise failure(call=f"amp_train_step on the AMP recipe's MLP ({SPEED_LAYERS} Linear layers {SPEED_WIDTH} wide, "
                           f"batch {SPEED_BATCH}, SGD, MSE), float16 on CUDA",
                      timing=result.describe(), problem=f"needs to be at least {MIN_SPEEDUP:g}x faster than the "
                                                        "float32 step",
                      hint="Keep the whole forward pass and the loss inside one torch.autocast block, call backward "
                           "outside it, and avoid .item(), print or copies to the CPU inside the step except the "
                           "final loss.item().")


# -- train_checkerboard ----------------------------------------------------------------


def _unpack(record: BoardRecord, device: str, use_amp: bool) -> tuple[RemoteObject, float]:
    call = _board_call(device, use_amp)
    result = record["result"]
    if (not isinstance(result, (tuple, list)) or len(result) != 2 or not isinstance(result[0], RemoteObject)
            or not isinstance(result[1], (float, int))):
        fail(call, {}, "(model, final_loss): an nn.Module and a float", result,
             "the result is not a (model, final_loss) pair", BOARD_HINT)
    return result[0], float(result[1])


def _board_mse(api: Api, model: RemoteObject, final_loss: float, note: str = "") -> float:
    """The judge's mean squared error of the returned model on the guide's board."""
    inputs = grid(SIZE, SIZE).unsqueeze(0)
    target = checker(SIZE, SIZE, FREQ).unsqueeze(0).unsqueeze(1)
    out = api.student.method(model, [], inputs, timeout=SECONDS)["value"]
    if not isinstance(out, Tensor) or out.shape != target.shape:
        fail(f"model(grid({SIZE}, {SIZE}).unsqueeze(0)) with the returned model", {"inputs": inputs}, target, out,
             "the model does not map a [1, 2, H, W] grid to a [1, 1, H, W] image" + note, BOARD_HINT)
    return float(F.mse_loss(out.double(), target.double()))


def expect_learned(api: Api, record: BoardRecord, device: str, use_amp: bool, note: str = "") -> None:
    """The reported final loss and the judge's own MSE of the returned model are under THRESHOLD."""
    call = _board_call(device, use_amp)
    model, final_loss = _unpack(record, device, use_amp)
    if not final_loss < THRESHOLD:
        found = f" (it is {final_loss})" if not math.isfinite(final_loss) else ""
        fail(call, {}, f"final_loss < {THRESHOLD}", final_loss,
             f"the training loss did not get under {THRESHOLD}{found} (a constant prediction gives 0.25)" + note,
             BOARD_HINT)
    mse = _board_mse(api, model, final_loss, note)
    if not mse < THRESHOLD:
        fail(f"model(grid({SIZE}, {SIZE}).unsqueeze(0)) with the returned model", {}, f"MSE under {THRESHOLD}", mse,
             f"the judge's mean squared error of the returned model is {mse:.4g}, not under {THRESHOLD} "
             f"(you reported final_loss = {final_loss:.4g})" + note,
             "Return the trained model itself, in the state it was trained to." + " " + BOARD_HINT)


@check(task="train_checkerboard", points=2, visible=True)
def check_checkerboard_learns_with_amp(api: Api, device: str,
                                       board_runs: dict[tuple[bool, bool], BoardRecord]) -> None:
    """with use_amp=True, 300 steps on a 16x16 grid bring the loss under 0.05 within 60 s"""
    expect_learned(api, run_checkerboard(api, board_runs, device, use_amp=True, sham=False), device, use_amp=True)


SHAM_FLOOR = 0.1  # the judge's MSE of the guide's network untrained: 0.27 at least over 300 inits (median 0.45)


def _calls(record: BoardRecord, device: str) -> str:
    """What the sham saw, for messages (noted inside the student's process)."""
    low = str(low_dtype(device)).removeprefix("torch.")
    asked = sum(c == {"device_type": device, "dtype": low} for c in record["amp_calls"])
    return (f"amp_train_step was called {len(record['amp_calls'])} times, {asked} of them with "
            f"device_type={device!r}, dtype=torch.{low} (as noted inside your process)")


@check(task="train_checkerboard", points=1)
def check_checkerboard_trains_with_amp_train_step(api: Api, device: str,
                                                   board_runs: dict[tuple[bool, bool], BoardRecord]) -> None:
    """with use_amp=True, every step goes through amp_train_step with the device's low-precision dtype (a sham
    amp_train_step that does nothing leaves the model untrained), and no deprecated AMP API (read from the cell)"""
    low = str(low_dtype(device)).removeprefix("torch.")
    used = deprecated_amp(api.student.submission, "train_checkerboard")
    if used:
        fail("train_checkerboard (its cell, as the judge reads it)", {}, "torch.autocast and torch.amp.GradScaler",
             [_named(*use) for use in used],
             f"train_checkerboard uses a deprecated AMP API: {used[0][2]} (read from your code)", API_HINT)
    record = run_checkerboard(api, board_runs, device, use_amp=True, sham=True)
    model, final_loss = _unpack(record, device, True)
    mse = _board_mse(api, model, final_loss)
    if mse < SHAM_FLOOR:
        fail(f"{_board_call(device, True)}, with amp_train_step replaced by a step that does nothing when called "
             f"with device_type={device!r}, dtype=torch.{low}", {}, f"an untrained model: MSE {SHAM_FLOOR} or more",
             f"MSE {mse:.4g}; {_calls(record, device)}",
             "the model learned although amp_train_step did nothing: the training steps did not all go through "
             f"amp_train_step called with device_type={device!r} and dtype=torch.{low}",
             f"Call amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss, device_type=device_type, "
             f"dtype={'torch.float16' if device == 'cuda' else 'torch.bfloat16'}) once per step, and train the "
             "model by nothing else.")


@check(task="train_checkerboard", points=1)
def check_checkerboard_float32_without_amp(api: Api, device: str,
                                           board_runs: dict[tuple[bool, bool], BoardRecord]) -> None:
    """with use_amp=False, it trains in float32 without autocast (read from the cell) or amp_train_step (a sham
    that does nothing) and still gets under 0.05"""
    hint = ("With use_amp=False, skip autocast, the GradScaler and amp_train_step: loss = loss_fn(model(inputs), "
            "targets); loss.backward(); optimizer.step(); optimizer.zero_grad().")
    record = run_checkerboard(api, board_runs, device, use_amp=False, sham=True)
    lines = unguarded_autocast(api.student.submission, "train_checkerboard", "train_checkerboard", 3)
    if lines:
        seen = (f"; the use_amp=False run's Conv2d/Linear layers gave outputs in {', '.join(record['layer_dtypes'])} "
                "with autocast on (as noted inside your process)" if record["autocast"] else "")
        fail("train_checkerboard (its cell, as the judge reads it)", {}, "no autocast block that runs with "
             "use_amp=False", [f"`with ...autocast(...)` in cell 'train_checkerboard', line {line}" for line in lines],
             "use_amp=False must train in plain float32, but this autocast block runs when use_amp is False (it "
             f"is not inside an `if` on use_amp, after an early exit, or given enabled=use_amp){seen}", hint)
    calls = (f"; {_calls(record, device)}: grading replaced amp_train_step with a step that does nothing, and "
             "use_amp=False must not use it") if record["amp_calls"] else ""
    expect_learned(api, record, device, use_amp=False, note=calls)


# -- LossScaler: a dynamic loss scaler of the student's own -------------------------------------------------

SCALER_HINT = ("scale(loss) returns loss * scale. unscale_(optimizer) multiplies the .grad of every parameter of "
               "the optimizer's param_groups by 1 / scale, once per step, and records whether any of them holds "
               "inf or nan (torch.isfinite(...).all() catches both). step(optimizer) unscales if unscale_ was not "
               "called, then calls optimizer.step() only if every gradient was finite. update(): after a step with "
               "inf or nan, scale *= backoff_factor and the count of clean steps restarts at 0; otherwise the count "
               "grows, and when it reaches growth_interval, scale *= growth_factor and it restarts at 0. Then "
               "forget this step's unscale and inf records.")
INF_STEP, NAN_STEP = float("inf"), float("nan")


def _scaler_case(rng: torch.Generator, steps: list[ScalerStep], config: dict[str, float],
                 dtype: str | None = None) -> ScalerCase:
    case = make_case(rng)
    return ScalerCase(sizes=case.sizes, params=case.params, inputs=case.inputs, targets=case.targets, lr=0.01,
                      dtype=dtype, config=config, steps=steps)


def _step(poison: float | None = None, param: int = 0, clip: float | None = None) -> ScalerStep:
    return ScalerStep(poison=poison, param=param, clip=clip)


def _event(step: ScalerStep) -> str:
    if step["poison"] is not None:
        return f"{step['poison']} written into one gradient entry of parameter {step['param']}"
    return "clean" + ("" if step["clip"] is None else f", unscale_ then clip_grad_norm_ to {step['clip']:.3g}")


def _scaler_call(case: ScalerCase) -> tuple[str, list[str]]:
    config = ", ".join(f"{k}={v:g}" for k, v in case["config"].items())
    autocast = f"torch.autocast('cpu', dtype=torch.{case['dtype']})" if case["dtype"] else "no autocast"
    return (f"scaler = LossScaler({config}), {len(case['steps'])} training steps "
            "(scale(loss).backward(), [unscale_ + clip], step, update, zero_grad)",
            [f"model = MLP {case['sizes']} with the judge's weights, SGD(lr={case['lr']:g}, momentum=0.9), "
             f"F.mse_loss, {autocast}"])


def expect_scaler_run(api: Api, case: ScalerCase, hint: str = SCALER_HINT) -> None:
    """The student's LossScaler through the case's schedule against torch.amp.GradScaler through the same, in the
    judge: the same scale after every step and the same final parameters."""
    from autograder.chapters.ch08_mixed_precision.harness import scaler_run

    call, inputs = _scaler_call(case)
    got = api.run_loss_scaler.using(call=call)(case)
    want = scaler_run(case, torch.amp.GradScaler("cpu", **case["config"]))
    initial = case["config"].get("init_scale", 2.0**16)
    for i, (have, expected) in enumerate(zip(got["scales"], want["scales"], strict=True)):
        if have != expected:
            before = want["scales"][i - 1] if i else initial
            schedule = [f"step {j}: {_event(s)}; scale after update {want['scales'][j]:g}"
                        for j, s in enumerate(case["steps"][: i + 1])]
            raise failure(call=call, inputs=inputs + schedule, expected=f"get_scale() = {expected:g} after step {i}",
                          got=f"{have:g} (it was {before:g} before that step)",
                          problem=f"the scale follows GradScaler's rule until step {i} ({_event(case['steps'][i])}), "
                          "then departs from it.", hint=hint)
    # scale(loss) against the student's own scale at the time: the scales are right by now. A nan ratio (a nan loss)
    # comes from weights already ruined by a step that ran on nan gradients: the parameters say so below.
    for i, (ratio, expected) in enumerate(zip(got["ratios"], [initial, *got["scales"][:-1]], strict=True)):
        if ratio is None or not (math.isnan(ratio) or math.isclose(ratio, expected, rel_tol=1e-3)):
            raise failure(call=call, inputs=inputs, expected=f"scale(loss) = loss * {expected:g} (get_scale()) at "
                          f"step {i}", got="not a tensor" if ratio is None else f"loss * {ratio:.6g}",
                          problem="scale(loss) must multiply the loss by the current scale, as a tensor that "
                          "backward() goes through.", hint=hint)
    for name, p in want["params"].items():
        param = got["params"].get(name)
        if not (isinstance(param, Tensor) and param.shape == p.shape and
                bool(torch.isclose(param, p, rtol=1e-4, atol=1e-6).all())):
            events = [f"step {j}: {_event(s)}" for j, s in enumerate(case["steps"])]
            raise failure(call=call, inputs=inputs + events, expected=f"parameter {name} = {show(p)}",
                          got=show(param), problem="the scales were right but the parameters differ from training "
                          "with torch.amp.GradScaler: a step ran on gradients still scaled (or divided twice), or a "
                          "step with inf/nan was not skipped.", hint=hint)


@check(task="LossScaler", points=1, visible=True)
def check_loss_scaler_clean_steps(api: Api, rng: torch.Generator) -> None:
    """clean steps: scale(loss) multiplies by the scale, steps use the unscaled gradients, the scale stays put"""
    config = {"init_scale": float(2 ** int(torch.randint(8, 17, (), generator=rng))), "growth_interval": 100}
    expect_scaler_run(api, _scaler_case(rng, [_step()] * 6, config))


GRAD_SCALER_HINT = ("Keep the scale, the count of clean steps and the step's two records in attributes of your "
                    "own and compute every update yourself: the exercise is the scaler, so LossScaler may not "
                    "subclass, hold, make or call torch.amp.GradScaler (under any name), and the judge must be "
                    "able to read every name it uses.")


@check(task="LossScaler", points=1, rule=True)
def check_loss_scaler_grows(api: Api, rng: torch.Generator) -> None:
    """a scaler of its own (no GradScaler in its code, read from it); after growth_interval clean steps in a row
    the scale grows by growth_factor, and counting starts again"""
    uses = grad_scaler_uses(api.student.submission)
    if uses:
        raise failure(call="the judge's reading of the code of `LossScaler` (its cell, the functions and classes it "
                           "uses, and the statements that bind names it uses)",
                      expected="a scaler of your own: no GradScaler subclassed, held, made or called",
                      got=listed(uses), problem="the notebook's rule forbids GradScaler itself, so none of "
                                                "LossScaler's checks counts.", hint=GRAD_SCALER_HINT,
                      breaks_rule=True)
    for interval, factor in ((3, 2.0), (1, 4.0), (int(torch.randint(2, 5, (), generator=rng)), 2.0)):
        config = {"init_scale": 256.0, "growth_factor": factor, "growth_interval": interval}
        expect_scaler_run(api, _scaler_case(rng, [_step()] * 8, config))


@check(task="LossScaler", points=2)
def check_loss_scaler_skips_bad_steps(api: Api, rng: torch.Generator) -> None:
    """a step with inf or nan in any gradient is skipped, the scale backs off and the clean count restarts"""
    # inf and nan, in the first and the last parameter, just before a growth, twice in a row.
    fixed = [_step(), _step(), _step(INF_STEP, 0), _step(), _step(), _step(NAN_STEP, 5), _step(NAN_STEP, 3),
             _step(), _step(), _step(), _step()]
    expect_scaler_run(api, _scaler_case(rng, fixed, {"init_scale": 1024.0, "backoff_factor": 0.25,
                                                     "growth_interval": 3}))
    draws = torch.rand(14, generator=rng).tolist()
    steps = [_step(None if d < 0.6 else INF_STEP if d < 0.8 else NAN_STEP, int(d * 1000) % 6) for d in draws]
    expect_scaler_run(api, _scaler_case(rng, steps, {"init_scale": 2.0**12, "growth_interval": 2}))


@check(task="LossScaler", points=1)
def check_loss_scaler_unscale_then_clip(api: Api, rng: torch.Generator) -> None:
    """unscale_ before clipping: clipping sees true gradients, and step does not divide them a second time"""
    steps = [_step(clip=0.05), _step(), _step(clip=0.02), _step(INF_STEP, 2, clip=0.05), _step(clip=0.1)]
    expect_scaler_run(api, _scaler_case(rng, steps, {"init_scale": 2.0**10, "growth_interval": 2}))


@check(task="LossScaler", points=1)
def check_loss_scaler_float16_dynamics(api: Api) -> None:
    """float16 autocast from a scale too large: backs off until gradients fit, then grows; bfloat16 never skips"""
    rng = torch.Generator().manual_seed(8)  # a fixed case: the overflow pattern must not depend on the seed
    for dtype in ("float16", "bfloat16"):
        expect_scaler_run(api, _scaler_case(rng, [_step()] * 28, {"init_scale": 2.0**24, "growth_interval": 4},
                                            dtype=dtype))
