"""The one seam between checks and student code: requests to the submission's sandboxed process.

Checks reach it through their chapter's typed API (autograder/judging/api.py: `api.softmax(x, dim=1)`), which
calls `Student.vjp`, `traced` and `timed_run` here and gets plain tensors back, decoded by the judge.
The same seam serves the reference solution, so the kit's tests and real submissions go through
exactly one path. Anything that goes wrong in the student's process becomes a `StudentError` whose
message tells the student what happened and what to fix. Everything the child sends (its load report,
every reply) is made safe text here, where it enters the judge (autograder/judging/untrusted.py).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from autograder.judging.notebook import Submission
from autograder.judging.results import NOT_DEFINED, OVER_LIMIT, TIMED_OUT, Outcome
from autograder.judging.untrusted import safe_json
from autograder.sandbox.control import NO_CONTROL, BoxControl, NoControl
from autograder.sandbox.launcher import Zygote
from autograder.sandbox.limits import Limits
from autograder.sandbox.process import ChildDied, ChildTimeout, Program, Sandbox, SandboxUnavailable
from autograder.sandbox.runtime import wire

MAX_RESTARTS = 8  # child restarts per grading, each ~2 s (import torch)
MAX_CRASHES = 2  # crashes of one function before its later checks fail fast
MAX_NAMES_SHOWN = 10  # names a message lists of those the answer cells define


# Signals a child dies of when it reaches one of the sandbox's limits (autograder/sandbox/process.py describe_exit).
LIMIT_SIGNALS = frozenset({-signal.SIGKILL, -signal.SIGXCPU, -signal.SIGXFSZ})


class StudentError(Exception):
    """Student code failed to produce an answer; `str()` is the teaching message.

    `outcome` is the kind of failure, decided where the error is raised: student_error (the code raised,
    crashed or answered with something unusable), not_implemented (a stub), timeout (out of time, or the
    process died of a limit), not_run (the notebook's code could not run at all), grader_error (the grading
    machine failed). `raised` is the name of the exception type the student's code raised, when it raised one.
    `mistake` names what the judge saw, for the class report's review list (one of MISTAKES, or None).
    Checks read these fields, never the message: a student's own error text cannot pose as either."""

    def __init__(self, message: str, outcome: Outcome = Outcome.STUDENT_ERROR, raised: str | None = None,
                 mistake: str | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.raised = raised
        self.mistake = mistake

    def restated(self, message: str) -> StudentError:
        """The same failure told with another message (a check adding what it was doing, or a hint)."""
        return StudentError(message, self.outcome, self.raised, self.mistake)


def summarize(value: Any) -> str:
    """A short description of a call argument for messages."""
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={list(value.shape)}, dtype={str(value.dtype).removeprefix('torch.')})"
    if isinstance(value, wire.RemoteObject):
        return value.type_name
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [summarize(a) for a in args] + [f"{k}={summarize(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


class Student:
    """A submission running in a sandboxed child forked by `zygote`, restarted after crashes."""

    def __init__(self, submission: Submission, device: str, limits: Limits, deadline: float, zygote: Zygote) -> None:
        self.submission = submission
        self.device = device
        self.limits = limits
        self.deadline = deadline
        self.zygote = zygote
        self.sandbox: Sandbox | None = None
        self.load_report: dict[str, Any] = {}
        self.cuda = False  # as the child found before any student code ran
        self.fatal: str | None = submission.error  # every call fails with this
        self.fatal_outcome = Outcome.NOT_RUN  # and this outcome
        self.broken: dict[str, StudentError] = {}  # name -> why it is not called again
        self.out_of_time = False  # the grading's time ran out before some call
        self.restarts = 0
        self.environment_error: str | None = None  # the grading machine failed, not the student
        self.crashes: dict[str, int] = {}
        self.arrived = 0.0  # time.perf_counter() when the last reply had arrived, before the judge read it
        self.protections: dict[str, list[str]] = {}
        self.dropped_before = False  # a box before this one dropped some of the student's prints
        # Input files that checks make (images, archives); the child may read them.
        self.data_dir = Path(tempfile.mkdtemp(prefix="grade-data-"))
        self.data_dir.chmod(0o755)

    # -- lifecycle -------------------------------------------------------
    def _ensure(self) -> Sandbox:
        if self.fatal:
            raise StudentError(self.fatal, self.fatal_outcome)
        if self.sandbox is not None and self.sandbox.alive:
            return self.sandbox
        if self.sandbox is not None:
            self.sandbox.close()
            self.dropped_before |= self.sandbox.output_dropped
            self.restarts += 1
            if self.restarts > MAX_RESTARTS:
                self.fatal = f"Grading stopped calling your code after it crashed {MAX_RESTARTS} times."
                raise StudentError(self.fatal, self.fatal_outcome)
        sub = self.submission
        program = Program(sub.chapter.preamble, sub.chapter.harness_source(), sub.cells, sub.chapter.loads_dynamo)
        self.sandbox = Sandbox(self.zygote, program, self.device, self.limits, self.data_dir)
        try:
            started = self.sandbox.start()
            self.cuda = started["cuda"]
            self.load_report = _checked_load_report(safe_json(started["load"]), {c["id"] for c in sub.cells})
        except ChildTimeout as e:
            self.fatal = (f"Running your answer cells took longer than {e.seconds:g} s, so nothing could "
                          "be graded. Look for an infinite loop or heavy work at the top level of a cell.")
        except SandboxUnavailable as e:  # fail closed: no student code ran
            self.environment_error = f"the grading machine could not sandbox this submission: {e}"
            self.fatal, self.fatal_outcome = self.environment_error, Outcome.GRADER_ERROR
        except ChildDied as e:
            self.fatal = (f"Running your answer cells ended the grading process: {e}. Remove calls such "
                          "as exit(), sys.exit() or os._exit() from your cells.")
        except wire.WireError as e:
            self.fatal = f"Your answer cells corrupted the grader's channel ({e})."
        finally:
            plan = self.sandbox.plan
            if plan is not None:
                self.protections = {"active": plan.active, "off": plan.off}
        if self.fatal:
            raise StudentError(self.fatal, self.fatal_outcome)
        return self.sandbox

    def start(self) -> None:
        with contextlib.suppress(StudentError):
            self._ensure()

    @property
    def control(self) -> BoxControl | NoControl:
        """The judge's hold on this submission's box, read from outside it: `frozen()` stops every process of it
        for a block (one that cannot be frozen is killed, and started again by the next call); `peak_memory()`
        and `cpu_time()` read from the kernel how far its host memory rose (GPU memory is not counted) and the
        CPU time all its threads used during a block (unlike the wall clock, another load on the machine hardly
        changes it). Start the process (a first call) before measuring: loading it is not the call measured.
        While no box is alive, a NoControl: nothing to freeze, nothing measured."""
        box = self.sandbox
        return box.control if box is not None and box.alive and box.control is not None else NO_CONTROL

    @property
    def output_dropped(self) -> bool:
        """Some of the student's prints were dropped (the box keeps the first MiB): a note, never a point."""
        return self.dropped_before or (self.sandbox is not None and self.sandbox.output_dropped)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- diagnosis of a missing name ----------------------------------------
    def _why_missing(self, name: str) -> StudentError:
        chapter = self.submission.chapter
        cell = name if name in chapter.answers else None
        if cell in self.submission.missing:
            return StudentError(f"The answer cell '{cell}' is missing from your notebook, so `{name}` could not be "
                                "graded. Do not delete answer cells: copy the cell back from the released notebook.")
        err = self.load_report.get("errors", {}).get(cell)
        if err:  # a stub that raises NotImplementedError when its cell runs (a class body) is not implemented
            stub = err.get("type") == "NotImplementedError"
            return StudentError(f"The answer cell '{cell}' failed when run:\n{_format_error(err)}",
                                Outcome.NOT_IMPLEMENTED if stub else Outcome.STUDENT_ERROR)
        defined = sorted(n for n, kind in self.load_report.get("names", {}).items() if kind == "function")
        more = len(defined) - MAX_NAMES_SHOWN
        shown = ", ".join(n[:60] for n in defined[:MAX_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")
        return StudentError(f"`{name}` is not defined by your answer cell '{cell}'"
                            + (f" (it defines: {shown})" if defined else "")
                            + ". Keep the name and the signature of the stub exactly as given.", mistake=NOT_DEFINED)

    # -- calls ---------------------------------------------------------------
    def _request(self, name: str, header: dict[str, Any], buffers: list[bytes], during: str,
                 timeout: float | None, shape: dict[str, Callable[[Any], bool]] | None = None,
                 shown: str | None = None) -> Any:
        """Send one request; the decoded reply, which must be a record with `shape`'s fields if given.

        `name` is what the child calls; messages name it `shown` (by default `name`)."""
        shown = shown or name
        if name in self.broken:
            raise self.broken[name].restated(str(self.broken[name]))
        sandbox = self._ensure()
        known = self.load_report.get("names")
        if not isinstance(known, dict):
            known = {}
        if "object" not in header and not name.startswith("kit.") and name not in known:
            raise self._why_missing(name)
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.out_of_time = True
            raise StudentError("The time limit for grading this notebook ran out before this check.", Outcome.TIMEOUT)
        try:
            reply, out = sandbox.request(header, buffers, min(timeout or self.limits.call_seconds, left), during)
            self.arrived = time.perf_counter()
        except ChildTimeout as e:
            self.broken[name] = StudentError(f"`{during}` did not finish within {e.seconds:g} s (an infinite loop, "
                                              "or far too slow?). Later checks of it were not run.", Outcome.TIMEOUT,
                                              mistake=TIMED_OUT)
            raise self.broken[name].restated(str(self.broken[name])) from None
        except ChildDied as e:
            self.crashes[name] = self.crashes.get(name, 0) + 1
            message = f"`{during}` crashed: {e}."
            limit = e.returncode in LIMIT_SIGNALS
            outcome = Outcome.TIMEOUT if limit else Outcome.STUDENT_ERROR
            mistake = OVER_LIMIT if limit else None
            if self.crashes[name] >= MAX_CRASHES:
                self.broken[name] = StudentError(
                    message + f" `{shown}` crashed {MAX_CRASHES} times; its later checks were not run.", outcome,
                    mistake=mistake)
            raise StudentError(message, outcome, mistake=mistake) from None
        except wire.WireError as e:
            sandbox.kill()
            raise StudentError(f"`{during}` corrupted the grader's channel ({e}).") from None
        reply = safe_json(reply)
        if reply.get("ok") is not True:
            err = reply.get("error")
            if not isinstance(err, dict) or not all(isinstance(err.get(k, ""), str) for k in ERROR_FIELDS):
                raise StudentError(f"`{during}` failed, and its process sent back a malformed error report.")
            if err.get("type") == "NotImplementedError":
                raise StudentError(f"not implemented: `{shown}` still raises NotImplementedError. "
                                   "Replace the stub in its answer cell with your code.", Outcome.NOT_IMPLEMENTED)
            kind = err.get("type", "")
            raise StudentError(f"`{during}` raised an error:\n{_format_error(err)}",
                               raised=kind if re.fullmatch(r"\w+", kind) else None)
        try:
            result = wire.decode(reply, out)
        except wire.WireError as e:
            raise StudentError(f"`{during}` returned something that is not plain data: {e}.") from None
        problem = _malformed(result, shape) if shape is not None else None
        if problem:
            raise StudentError(f"`{during}`: its process sent back a malformed reply ({problem}). Code that "
                               "changes the grader's modules in your process cannot pass a check.")
        return result

    def call(self, name: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Call a student function or class; returns decoded plain values."""
        return self.vjp(name, args, kwargs, timeout=timeout)[0]

    def traced(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], shown: str | None = None,
               during: str | None = None) -> tuple[Any, list[str]]:
        """Call under a TorchDispatchMode; also returns the aten operators it issued, in order.

        Messages name the function `shown` and the call `during` (by default `shown(args)`)."""
        header, buffers = wire.encode([list(args), kwargs, None])
        header.update(op="call", name=name, wrt=[], trace=True)
        during = during or describe_call(shown or name, args, kwargs)
        result = self._request(name, header, buffers, during, None, TRACED_REPLY, shown)
        return result["value"], result["ops"]

    def vjp(self, name: str, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any],
            wrt: tuple[int, ...] = (), grad_output: torch.Tensor | None = None, timeout: float | None = None,
            shown: str | None = None, during: str | None = None) -> tuple[Any, list[torch.Tensor | None]]:
        """Call, then backpropagate `grad_output` to the positional args in `wrt`.

        Messages name the function `shown` and the call `during` (by default `shown(args)`)."""
        header, buffers = wire.encode([list(args), kwargs, grad_output])
        header.update(op="call", name=name, wrt=list(wrt))
        during = during or describe_call(shown or name, tuple(args), kwargs)
        result = self._request(name, header, buffers, during, timeout, CALL_REPLY, shown)
        return result["value"], result["grads"] or []

    def method(self, obj: wire.RemoteObject, attrs: list[str], *args: Any, wrt: tuple[int, ...] = (),
               grad_output: torch.Tensor | None = None, trace: bool = False, timeout: float | None = None,
               **kwargs: Any) -> dict[str, Any]:
        """Call obj.attr1.attr2(*args) on an object living in the student's process.

        Returns {"value", "grads", "ops"}: grads for the positional args in
        `wrt`, and the aten operators issued when `trace` is set.
        """
        header, buffers = wire.encode([list(args), kwargs, grad_output])
        header.update(op="call", name=obj.type_name, object=obj.handle, attrs=attrs, wrt=list(wrt), trace=trace)
        during = describe_call(f"{obj.type_name}.{'.'.join(attrs)}" if attrs else obj.type_name, tuple(args), kwargs)
        return self._request(obj.type_name, header, buffers, during, timeout, TRACED_REPLY if trace else CALL_REPLY)

    def inspect(self, obj: wire.RemoteObject) -> dict[str, Any]:
        """A remote Module's parameters (name -> tensor), state_dict keys and submodule types."""
        header, buffers = wire.encode(None)
        header.update(op="inspect", object=obj.handle)
        return self._request(obj.type_name, header, buffers, f"inspecting your {obj.type_name}", None,
                             INSPECT_REPLY)

    def set_parameters(self, obj: wire.RemoteObject, values: dict[str, torch.Tensor]) -> None:
        """Copy tensors into a remote Module's named parameters (under no_grad)."""
        header, buffers = wire.encode(values)
        header.update(op="set_parameters", object=obj.handle)
        self._request(obj.type_name, header, buffers, f"setting the parameters of your {obj.type_name}", None)

    def timed_run(self, name: str | None, specs: list[list[dict[str, Any]]], seed: int, count: int,
                  timeout: float | None = None, constants: tuple[int | float, ...] = ()) -> dict[str, Any]:
        """One request that makes `count` input sets from `seed` in the child and calls `name` on each, call j
        on inputs made from `specs[j % len(specs)]`, then `constants`.

        The judge times the whole request. Returns {"outputs": what each call returned, whole, to compare
        with the judge's oracle, "events_ms": CUDA-event time of the calls as the child reports it, or None
        on CPU}. With `name` None the child only makes the inputs (no outputs), to time that part alone.
        """
        header, buffers = wire.encode(None)
        header.update(op="run", name=name, specs=specs, seed=seed, count=count, constants=list(constants))
        during = f"timed calls of {name}" if name else "making the inputs of a timed run"
        return self._request(name or "kit.make_inputs", header, buffers, during, timeout, RUN_REPLY)


def _checked_load_report(report: Any, cells: set[str]) -> dict[str, Any]:
    """The child's account of running the cells, sent after student code ran: shape-checked, with the errors
    of the answer `cells` only."""
    def strings(d: Any) -> bool:
        return isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in d.items())

    errors = report.get("errors") if isinstance(report, dict) else None
    names = report.get("names") if isinstance(report, dict) else None
    if not (isinstance(errors, dict) and all(isinstance(k, str) and strings(v) for k, v in errors.items())
            and strings(names)):
        raise wire.WireError("the report on running the answer cells is malformed")
    return {"errors": {k: v for k, v in errors.items() if k in cells}, "names": names}


# Errors that only a GPU grading shows, and their likely cause (the notebooks' "Grading on a GPU" paragraph).
DEVICE_HINTS = {
    "Expected all tensors to be on the same device": (
        "Likely cause: a tensor your code made itself (torch.arange, torch.zeros, torch.tensor, a plain tensor "
        "attribute of a Module) is on the CPU while the inputs are on the GPU. Make it on the input's device: "
        "torch.arange(n, device=x.device), and register a Module's state with register_buffer so that .to() "
        "moves it."),
    "device type tensor to numpy": (
        "Likely cause: numpy reads CPU memory only, and this grading ran on a GPU; loops in numpy are also what "
        "these tasks ask you to replace: write it with torch operations on the input's device."),
}


def _format_error(err: dict[str, Any]) -> str:
    text = f"{err.get('type', 'Error')}: {err.get('message', '')}"
    hints = [hint for key, hint in DEVICE_HINTS.items() if key in str(err.get("message", ""))]
    return text + (f"\n{err['where']}" if err.get("where") else "") + "".join(f"\n{h}" for h in hints)


def _list_of(kind: type | tuple[type, ...]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, list) and all(isinstance(v, kind) for v in x)


def _dict_of(kind: type) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, dict) and all(isinstance(v, kind) for v in x.values())


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# The fields each kind of reply must have, checked before any check reads them.
CALL_REPLY: dict[str, Callable[[Any], bool]] = {
    "value": lambda v: True,
    "grads": lambda g: g is None or _list_of((torch.Tensor, type(None)))(g),
    "ops": lambda o: o is None or _list_of(str)(o),
}
TRACED_REPLY = {**CALL_REPLY, "ops": _list_of(str)}
ERROR_FIELDS = ("type", "message", "where")  # strings, where present
INSPECT_REPLY = {"parameters": _dict_of(torch.Tensor), "state_dict": _list_of(str), "modules": _dict_of(str)}
RUN_REPLY = {"outputs": lambda o: isinstance(o, list),
             "events_ms": lambda e: e is None or _is_number(e)}


def _malformed(result: Any, shape: dict[str, Callable[[Any], bool]]) -> str | None:
    """What is wrong with a reply that should be a record with `shape`'s fields, or None."""
    if not isinstance(result, dict):
        return f"a {type(result).__name__} instead of a record"
    for key, ok in shape.items():
        if key not in result:
            return f"no {key!r}"
        if not ok(result[key]):
            return f"{key!r} of the wrong type"
    return None


def origin(t: torch.Tensor) -> tuple[str, bool]:
    """(device, requires_grad) of a tensor as it was in the student's process."""
    return getattr(t, "origin", ("cpu", False))
