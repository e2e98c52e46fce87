"""Judging helpers: compare what the student's code gave with an oracle.

Every failure message teaches: the call and its input, the expected answer,
what the code gave, what exactly differs, and what to fix.
"""

from __future__ import annotations

from typing import Any

import torch

# The judge's own comparison functions. Student code never runs in this
# process, but binding them once keeps every check on the same definitions.
_isclose = torch.isclose
_isfinite = torch.isfinite
_isnan = torch.isnan


class CheckFailure(AssertionError):
    """A check found a wrong answer; `str()` is the message shown to the student."""


def show(t: Any, limit: int = 6) -> str:
    """A compact, readable tensor: small ones whole, large ones as shape and corners."""
    if not isinstance(t, torch.Tensor):
        return repr(t)
    dtype = str(t.dtype).removeprefix("torch.")
    if t.numel() <= limit * limit and t.dim() <= 2:
        body = str(t.detach().to(torch.float64) if t.dtype == torch.bfloat16 else t.detach())
        body = body.replace("tensor(", "").rsplit(", dtype", 1)[0].rstrip(")")
        return f"{body}  ({dtype}, shape {list(t.shape)})"
    flat = t.detach().reshape(-1).to(torch.float64)
    head = ", ".join(f"{v:.4g}" for v in flat[:limit].tolist())
    return f"[{head}, ...]  ({dtype}, shape {list(t.shape)})"


def fail(call: str, inputs: dict[str, Any], expected: Any, got: Any, problem: str, hint: str) -> None:
    lines = [f"Call: {call}"]
    lines += [f"  {name} = {show(value)}" for name, value in inputs.items()]
    lines += [f"Expected: {show(expected)}", f"Got:      {show(got)}", f"Problem:  {problem}"]
    if hint:
        lines.append(f"Hint:     {hint}")
    raise CheckFailure("\n".join(lines))


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
) -> None:
    """Fail unless `got` is a tensor of `expected`'s shape (and dtype) and values.

    With `device`, the tensor must also have been on that device type in the
    student's process (inputs were sent there).
    """
    if not isinstance(got, torch.Tensor):
        fail(call, inputs, expected, got, f"returned {type(got).__name__}, not a torch.Tensor", hint)
    origin = getattr(got, "origin", ("cpu", False))[0]
    if device is not None and origin.split(":")[0] != device:
        fail(call, inputs, expected, got, f"the result is on {origin} but the inputs were on {device}",
             "Create new tensors on the input's device (device=x.device, torch.zeros_like(x)); "
             "never hard-code .cuda() or .cpu().")
    if got.shape != expected.shape:
        fail(call, inputs, expected, got,
             f"shape {list(got.shape)} instead of {list(expected.shape)}", hint)
    if check_dtype and got.dtype != expected.dtype:
        fail(call, inputs, expected, got,
             f"dtype {got.dtype} instead of {expected.dtype}",
             dtype_hint or "Keep the input's dtype: avoid .float(), .double() or torch.tensor(...) copies.")
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    bad_nan = _isnan(g) & ~_isnan(e)
    if bool(bad_nan.any()):
        at = _index(int(bad_nan.reshape(-1).nonzero()[0]), g.shape)
        fail(call, inputs, expected, got, f"nan at index {at} where a number was expected", hint)
    bad_inf = ~_isfinite(g) & _isfinite(e) & ~_isnan(g)
    if bool(bad_inf.any()):
        at = _index(int(bad_inf.reshape(-1).nonzero()[0]), g.shape)
        fail(call, inputs, expected, got, f"{g.reshape(-1)[bad_inf.reshape(-1)][0].item()} at index {at} "
             "where a finite number was expected", hint)
    close = _isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(close.all()):
        err = ((g - e).abs() - atol - rtol * e.abs()).masked_fill(close, float("-inf"))
        flat = int(err.reshape(-1).argmax())
        at = _index(flat, g.shape)
        fail(call, inputs, expected, got,
             f"at index {at} got {g.reshape(-1)[flat].item():.6g}, expected "
             f"{e.reshape(-1)[flat].item():.6g} (tolerance: rtol={rtol:g}, atol={atol:g}); "
             f"{int((~close).sum())} of {close.numel()} values differ", hint)
