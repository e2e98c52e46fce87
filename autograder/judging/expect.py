"""Judging helpers: compare what the student's code gave with an oracle.

Every failure message teaches: the call and its input, the expected answer,
what the code gave, what exactly differs, and what to fix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, NoReturn

import torch

from autograder.judging.results import Outcome
from autograder.judging.student import StudentError

MAX_SHOWN = 1000  # characters of a value that is not a tensor, as a message shows it

# The judge's own comparison functions. Student code never runs in this
# process, but binding them once keeps every check on the same definitions.
_isclose = torch.isclose
_isfinite = torch.isfinite
_isnan = torch.isnan


class CheckFailure(AssertionError):
    """A check found a wrong answer; `str()` is the message shown to the student.

    The mistake is also kept as data, for the class report to group failures without reading the message back:
    `problem` (what exactly differs), `hint` (what to fix) and `mistake`, a stable short id where the check
    knows which named mistake it saw (None otherwise)."""

    outcome: ClassVar[Outcome] = Outcome.WRONG

    def __init__(self, message: str, *, problem: str = "", hint: str = "", mistake: str | None = None) -> None:
        super().__init__(message)
        self.problem, self.hint, self.mistake = problem, hint, mistake


class RuleBroken(CheckFailure):
    """A rule check (@check(..., rule=True)) found the task's code breaking the rule the notebook states: the
    task's other checks are not scored. Any other failure of a rule check (a wrong answer on the example) costs
    that check alone."""


class JudgeError(Exception):
    """The judge's own mistake, not the student's: the plugin reports it as an error of the grader."""

    outcome: ClassVar[Outcome] = Outcome.GRADER_ERROR


def error_type(e: StudentError) -> str | None:
    """The type of the exception the student's code raised, when `e` reports one (its field, not its text)."""
    return e.raised


def on_every_call(e: StudentError, name: str, example: Callable[[], Any]) -> StudentError | None:
    """`e` (an exception raised by `name`) restated as raised on the notebook's example too when `example`, a
    call every working `name` answers, raises; else None. It says no more than that: a function may fail the
    example and pass other checks."""
    if error_type(e) is None:
        return None
    try:
        example()
    except StudentError as again:
        if error_type(again) is not None:
            return e.restated(f"`{name}` raised {error_type(e)} on this call and on the notebook's example too: "
                              f"fix that error first (other checks of `{name}` may fail on it).\n{e}")
    return None


def explain_error(e: StudentError, name: str, example: Callable[[], Any] | None, hint: str = "") -> StudentError:
    """`e` said to happen on every call (see on_every_call; not without an `example`), or else with the check's
    `hint` added."""
    every = on_every_call(e, name, example) if example is not None else None
    if every is not None:
        return every
    return e.restated(f"{e}\nHint:     {hint}") if hint and error_type(e) is not None else e


@contextlib.contextmanager
def output_shape_checked() -> Iterator[None]:
    """Around a backward pass whose grad_output has the shape the check already verified of the output:
    autograd's shape mismatch there is the judge's mistake, never the student's."""
    try:
        yield
    except StudentError as e:
        if "Mismatch in shape: grad_output" in str(e):
            raise JudgeError(f"the judge's grad_output does not fit the output it checked:\n{e}") from None
        raise


def show(t: Any, limit: int = 6, precise: bool = False) -> str:
    """A compact, readable tensor: small ones whole, large ones as shape and corners.

    `precise` prints every value with all its digits (Python's repr of each float).
    """
    if not isinstance(t, torch.Tensor):
        text = repr(t)  # a value the student's code returned may be huge
        return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."
    dtype = str(t.dtype).removeprefix("torch.")
    if precise:
        small = t.numel() <= limit * limit and t.dim() <= 2
        values = t.detach().cpu().tolist() if small else t.detach().reshape(-1)[:limit].cpu().tolist()
        body = repr(values) if small else repr(values)[:-1] + ", ...]"
        return f"{body}  ({dtype}, shape {list(t.shape)})"
    if t.numel() <= limit * limit and t.dim() <= 2:
        body = str(t.detach().to(torch.float64) if t.dtype == torch.bfloat16 else t.detach())
        body = body.replace("tensor(", "").rsplit(", dtype", 1)[0].rstrip(")")
        return f"{body}  ({dtype}, shape {list(t.shape)})"
    flat = t.detach().reshape(-1).to(torch.float64)
    head = ", ".join(f"{v:.4g}" for v in flat[:limit].tolist())
    return f"[{head}, ...]  ({dtype}, shape {list(t.shape)})"


def number(value: float, other: float) -> str:
    """`value` with 6 significant digits, or all of them when that would print the same as `other`."""
    short = f"{value:.6g}"
    return repr(value) if short == f"{other:.6g}" and value != other else short


def nonfinite(t: torch.Tensor) -> str | None:
    """'nan' or 'inf' (with its sign and first index) when `t` holds a non-finite value, else None."""
    t = t.detach()
    if not t.dtype.is_floating_point or bool(_isfinite(t).all()):
        return None
    flat = t.reshape(-1)
    first = int((~_isfinite(flat)).nonzero()[0])
    return f"{flat[first].item()} at index {_index(first, t.shape)}"


def failure(*, call: str = "", inputs: Iterable[str] = (), expected: str = "", got: str = "",
            timing: str = "", problem: str = "", detail: str = "", hint: str = "", after: str = "",
            breaks_rule: bool = False, mistake: str | None = None) -> CheckFailure:
    """The one layout of a failed check's message, each part on its own labelled line where given:

        <after: what went wrong before, e.g. an error of the student's code>
        Call: <the call>
          <one line per input>
        Expected: <the right answer>
        Got:      <what the code gave>
        Timing:   <a speed measurement>
        Problem:  <what exactly differs>
        <detail: a tool's own report>
        Hint:     <what to fix>

    `breaks_rule`: the code breaks the task's stated rule (RuleBroken), not merely a wrong answer. `problem`,
    `hint` and `mistake` (a stable id of a named mistake) are kept on the exception as fields too.
    """
    labelled = [("Call: ", call), *(("  ", line) for line in inputs), ("Expected: ", expected), ("Got:      ", got),
                ("Timing:   ", timing), ("Problem:  ", problem), ("", detail), ("Hint:     ", hint)]
    lines = ([after] if after else []) + [label + text for label, text in labelled if text]
    return (RuleBroken if breaks_rule else CheckFailure)("\n".join(lines), problem=problem, hint=hint,
                                                         mistake=mistake)


def fail(call: str, inputs: dict[str, Any], expected: Any, got: Any, problem: str, hint: str,
         mistake: str | None = None) -> NoReturn:
    """A failure showing the call's inputs, the expected answer and what the code gave as values (see show)."""
    want, have = show(expected), show(got)
    if want == have and isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor):
        want, have = show(expected, precise=True), show(got, precise=True)  # they differ past 4 digits
    raise failure(call=call, inputs=[f"{name} = {show(value)}" for name, value in inputs.items()], expected=want,
                  got=have, problem=problem, hint=hint, mistake=mistake)


def _index(flat_index: int, shape: torch.Size) -> list[int]:
    idx = []
    for size in reversed(shape):
        idx.append(flat_index % size)
        flat_index //= size
    return idx[::-1]


def expect_tensor(
    got: Any,
    expected: torch.Tensor,
    *,
    call: str,
    inputs: dict[str, Any],
    hint: str = "",
    rtol: float = 1e-5,
    atol: float = 1e-6,
    check_dtype: bool = True,
    dtype_hint: str = "",
    device: str | None = None,
    mistake: str | None = None,
) -> None:
    """Fail unless `got` is a tensor of `expected`'s shape (and dtype) and values.

    With `device`, the tensor must also have been on that device type in the
    student's process (inputs were sent there). `mistake`: the id of the named
    mistake the caller saw the result match, kept on the failure.
    """
    if not isinstance(got, torch.Tensor):
        fail(call, inputs, expected, got, f"returned {type(got).__name__}, not a torch.Tensor", hint, mistake=mistake)
    origin = getattr(got, "origin", ("cpu", False))[0]
    if device is not None and origin.split(":")[0] != device:
        fail(call, inputs, expected, got, f"the result is on {origin} but the inputs were on {device}",
             "Create new tensors on the input's device (device=x.device, torch.zeros_like(x)); "
             "never hard-code .cuda() or .cpu().", mistake=mistake)
    if got.shape != expected.shape:
        fail(call, inputs, expected, got,
             f"shape {list(got.shape)} instead of {list(expected.shape)}", hint, mistake=mistake)
    if check_dtype and got.dtype != expected.dtype:
        fail(call, inputs, expected, got,
             f"dtype {got.dtype} instead of {expected.dtype}",
             dtype_hint or "Keep the input's dtype: avoid .float(), .double() or torch.tensor(...) copies.",
             mistake=mistake)
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    bad_nan = _isnan(g) & ~_isnan(e)
    if bool(bad_nan.any()):
        at = _index(int(bad_nan.reshape(-1).nonzero()[0]), g.shape)
        fail(call, inputs, expected, got, f"found nan (not a number) at index {at}, where a number was expected",
             hint, mistake=mistake)
    bad_inf = ~_isfinite(g) & _isfinite(e) & ~_isnan(g)
    if bool(bad_inf.any()):
        at = _index(int(bad_inf.reshape(-1).nonzero()[0]), g.shape)
        fail(call, inputs, expected, got, f"found {g.reshape(-1)[bad_inf.reshape(-1)][0].item()} at index {at}, "
             "where a finite number was expected", hint, mistake=mistake)
    close = _isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(close.all()):
        err = ((g - e).abs() - atol - rtol * e.abs()).masked_fill(close, float("-inf"))
        flat = int(err.reshape(-1).argmax())
        at = _index(flat, g.shape)
        have, want = g.reshape(-1)[flat].item(), e.reshape(-1)[flat].item()
        fail(call, inputs, expected, got,
             f"at index {at} got {number(have, want)}, expected {number(want, have)} "
             f"(tolerance: rtol={rtol:g}, atol={atol:g}); "
             f"{int((~close).sum())} of {close.numel()} values differ", hint, mistake=mistake)
