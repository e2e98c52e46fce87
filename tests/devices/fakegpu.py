"""A second device without a GPU: grading whose inputs live on `fakegpu`, for the kit's own code only.

What PyTorch 2.13 offers, tried on the CPU build (benchmarks/device_mixups.py measures each on the mix-ups the
first GPU run found):
- FakeTensorMode makes "cuda" tensors without CUDA and raises CUDA's own "Expected all tensors to be on the
  same device" when one meets a CPU tensor, but its tensors hold no data: .item(), .tolist(), a loop until a
  loss is small, anything the checks compare, raises DataDependentOutputException. It can run a function, not
  a grading.
- The meta device mixes with CPU tensors into an error too ("Tensor on device cpu is not on the expected device
  meta"), and holds no data either.
- A wrapper tensor claiming device "cuda" holds real data, but the CPU build has no CUDA device guard: autograd
  and some kernels (mv under matmul) abort the process ("PyTorch is not linked with support for cuda devices").
- So: PrivateUse1, renamed `fakegpu`, with torch's Python backend registration (device guard, hooks), and a
  wrapper tensor on it whose data is an ordinary CPU tensor. A TorchDispatchMode runs every aten operator on
  that data and applies CUDA's rule first: tensors of one operator share a device, a 0-dim CPU tensor (a
  scalar) and CPU index tensors excepted, and copies (`.to`, `copy_`) cross. Factories follow `device=`, so
  `torch.arange(n)` makes a CPU tensor and mixing it with an input raises as on a GPU; `.numpy()` on a fakegpu
  tensor raises CUDA's TypeError. Values are exact (the same CPU kernels run), so a whole grading runs.

`FakeGpuBox` stands in for the sandbox: the chapter's harness and the cells run in the judge's process (forked
for each grading), in a `FakeGpuChild`, the runtime's own Child with its inputs moved to `fakegpu`. The judge
grades on "cpu" as usual: what reaches it is plain CPU tensors, the same values. Only the kit's own code runs
here (references, cases.py's forms): no sandbox is needed.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.judging import student as student_module
from autograder.judging.judge import Grade, GradeOptions, grade
from autograder.judging.registry import Chapter
from autograder.sandbox.limits import Limits
from autograder.sandbox.runtime import child as child_module
from autograder.sandbox.runtime import wire

NAME = "fakegpu"
# Each operator costs a Python call here: long limits, so that a loaded machine never turns a call into a timeout
# (no check of these gradings is about time).
LIMITS = Limits(call_seconds=300.0, load_seconds=120.0)
aten = torch.ops.aten

# Checks decided by the judge's clock or the box's CPU time: the emulation's cost per operator would decide them
# (a loop over 16384 rows takes minutes here), and they hold nothing device-specific that the rest do not.
MEASURED = {"check_row_sum_speed", "check_batch_gather_speed", "check_amp_speedup_on_cuda",
            "check_additive_scores_never_tiles", "check_pairwise_vectorized", "check_scatter_add_vectorized"}
# Checks that name the grading's device to the student's code ("cpu" here): that code then rightly works on the
# CPU while the emulation has put the judge's inputs on fakegpu. On a GPU both are "cuda".
NAMES_THE_DEVICE = {"check_amp_forward_under_autocast",  # torch.autocast("cpu") does not act on fakegpu tensors
                    "check_amp_backward_scaled_outside_autocast",  # its evidence: the rounding autocast gives
                    "check_checkerboard_learns_with_amp", "check_checkerboard_trains_with_amp_train_step",
                    "check_checkerboard_float32_without_amp",  # train_checkerboard(..., device="cpu")
                    # 09: GradScaler("cpu") and autocast("cpu") around a model the emulation put on fakegpu
                    "check_checkpoint_restores_run", "check_checkpoint_scaler", "check_checkpoint_snapshot_file"}
LEFT_OUT = MEASURED | NAMES_THE_DEVICE
# Harness calls whose results are on the CPU by design.
ON_THE_CPU = {"call kit.run_loss_scaler",  # 08: LossScaler trains on the CPU in any grading, as the notebook says
              "call kit.collate",  # 06: pad_collate gets images as a dataset gives them, on the CPU
              "call pad_collate"}  # 09: sequences come from the shards on the CPU, moved after collating


def selection(only: str | None) -> str:
    """A pytest -k expression: `only` without the checks left out."""
    without = " and ".join(f"not {name}" for name in sorted(LEFT_OUT))
    return f"({only}) and {without}" if only else without


@functools.cache
def device() -> torch.device:
    """The second device (registered once per process: PrivateUse1 can be renamed only once)."""
    if torch._C._get_privateuse1_backend_name() != NAME:
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
        _setup_privateuseone_for_python_backend(NAME)
    return torch.device(NAME, 0)


class OnGpu(torch.Tensor):
    """A tensor on `fakegpu`: its data is `elem`, an ordinary CPU tensor."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> OnGpu:
        r = torch.Tensor._make_wrapper_subclass(
            cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=device(), requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None  # type: ignore[override]
                           ) -> Any:
        with FakeGpu():
            return func(*args, **(kwargs or {}))

    def numpy(self, *args: Any, **kwargs: Any) -> Any:
        """Refused, as CUDA refuses it: numpy reads CPU memory only."""
        raise TypeError(f"can't convert {NAME}:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                        "to host memory first.")

    def tolist(self) -> Any:
        return self.elem.tolist()

    def __reduce_ex__(self, protocol: Any) -> Any:
        """torch.save writes the data (a CUDA tensor saved is read back on the GPU; here on the CPU, which
        load_state_dict copies across as it would)."""
        return self.elem.__reduce_ex__(protocol)

    def __repr__(self) -> str:  # type: ignore[override]
        return f"{self.elem!r} on {NAME}"


# Operators that cross devices (copies), and those whose index tensors may stay on the CPU (CUDA moves them).
CROSSING = {aten.copy_.default, aten._to_copy.default, aten._copy_from.default, aten._copy_from_and_resize.default}
INDEXING = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default,
            aten._unsafe_index.Tensor}


def _tensors(x: Any, found: list[torch.Tensor]) -> list[torch.Tensor]:
    """The tensors in an operator's arguments (tensors, and lists or tuples of them), in order."""
    if isinstance(x, torch.Tensor):
        found.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, found)
    return found


def mixed(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """CUDA's rule: an operator's tensors on one device, CPU scalars (0-dim) and CPU index tensors excepted."""
    if func in CROSSING:
        return False
    if func in INDEXING:  # self (and the values put) decide; the indices may be CPU tensors
        args = (args[0], *args[2:])
    tensors = _tensors([args, list(kwargs.values())], [])
    return (any(type(t) is OnGpu for t in tensors)
            and any(type(t) is not OnGpu and t.dim() > 0 for t in tensors))


NOT_EMULATED = "not emulated on fakegpu"


class NotEmulated(RuntimeError):
    """What the emulation cannot run (a grading that meets it says so, and decides nothing about devices)."""


def _unwrap(x: Any, given: dict[int, OnGpu]) -> Any:
    if type(x) is OnGpu:
        given[id(x.elem)] = x
        return x.elem
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, given) for v in x)
    return x


def _wrap(x: Any, given: dict[int, OnGpu], on_gpu: bool) -> Any:
    if isinstance(x, torch.Tensor):
        if id(x) in given:  # in place, or out=: the tensor given
            return given[id(x)]
        return OnGpu(x) if on_gpu else x
    if isinstance(x, (list, tuple)):
        return type(x)(_wrap(v, given, on_gpu) for v in x)
    return x


class FakeGpu(TorchDispatchMode):
    """Every aten operator while active: CUDA's device rule, then the CPU kernel on the data."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if mixed(func, args, kwargs):
            # CUDA's words, which the kit's messages key on ("cuda"), and where it was
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{NAME}:0 (for cuda:0) and cpu! (in {func})")
        target = kwargs.get("device")
        if target is not None:
            on_gpu = torch.device(target).type == NAME
            kwargs["device"] = torch.device("cpu")
        else:
            on_gpu = any(type(t) is OnGpu for t in _tensors(args, []))
        given: dict[int, OnGpu] = {}
        out = func(*_unwrap(args, given), **{k: _unwrap(v, given) for k, v in kwargs.items()})
        return _wrap(out, given, on_gpu)


def _made_from_data(make: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """torch.tensor and torch.as_tensor build from Python data in C++, below the mode: on fakegpu, made on the
    CPU, then copied across."""
    def made(*args: Any, **kwargs: Any) -> torch.Tensor:
        where = kwargs.get("device")
        if where is not None and torch.device(where).type == NAME:
            return make(*args, **{**kwargs, "device": "cpu"}).to(device())
        return make(*args, **kwargs)
    return made


def _cuda(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """A hard-coded .cuda() moves to the GPU on a GPU grading: here, to fakegpu."""
    return self.to(device())


# torch.func's transforms wrap tensors in their own C++ wrappers, which crash the process (a segfault) around a
# Python wrapper tensor: while the emulation runs they raise NotEmulated instead.
TRANSFORMS = ("grad", "grad_and_value", "jvp", "vjp", "vmap", "jacrev", "jacfwd", "hessian", "linearize")


def _not_emulated(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotEmulated(f"{NOT_EMULATED}: torch.func.{name}")
    return refuse


@contextlib.contextmanager
def on_fake_gpu() -> Iterator[None]:
    device()
    with contextlib.ExitStack() as stack:
        for name in TRANSFORMS:
            stack.enter_context(mock.patch.object(torch.func, name, _not_emulated(name)))
        stack.enter_context(mock.patch.object(torch, "vmap", _not_emulated("vmap")))
        for name in ("tensor", "as_tensor"):
            stack.enter_context(mock.patch.object(torch, name, _made_from_data(getattr(torch, name))))
        stack.enter_context(mock.patch.object(torch.Tensor, "cuda", _cuda))
        stack.enter_context(FakeGpu())
        yield


def to_host(x: Any, strays: list[str] | None = None, where: str = "") -> Any:
    """x with every fakegpu tensor as a plain CPU tensor (as .cpu() would give); a plain tensor of more than 0
    dimensions among them is recorded in `strays` (a result left on the CPU)."""
    if isinstance(x, OnGpu):
        data = x.elem.detach()
        return data.requires_grad_() if x.requires_grad else data
    if isinstance(x, torch.Tensor):
        if strays is not None and x.dim() > 0:
            strays.append(f"{where}: a tensor of shape {list(x.shape)} on the CPU")
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(to_host(v, strays, where) for v in x)
    if isinstance(x, dict):
        return {k: to_host(v, strays, where) for k, v in x.items()}
    return x


@dataclass
class Findings:
    """What one grading on fakegpu saw besides the checks' verdicts: results that came back on the CPU."""

    strays: list[str] = field(default_factory=list)


class FakeGpuChild(child_module.Child):
    """The runtime's Child, its inputs moved to fakegpu and every request run under on_fake_gpu."""

    def __init__(self, findings: Findings) -> None:
        super().__init__(NAME)
        self.findings = findings
        self.given_tensors = False  # the request being served sent tensors (now on fakegpu)
        self.names_cpu = False  # and named the CPU as a device

    def _resolve(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            self.given_tensors = True
        elif x == "cpu":  # a call told to use the CPU (05's gather_on, 08's device_type) may return CPU tensors
            self.names_cpu = True
        return super()._resolve(x)

    def _target(self, req: dict[str, Any]) -> Any:
        target = super()._target(req)
        if req.get("attrs", [])[-1:] != ["to"]:
            return target
        # The judge moves a Module to its grading's device, "cpu": here, to fakegpu.
        return lambda *args, **kwargs: target(*[NAME if a == "cpu" else a for a in args], **kwargs)

    def serve(self, op: str, req: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        during = f"{op} {req.get('name', '')}".strip()
        encode = wire.encode
        self.given_tensors = op == "run"  # a timed run makes its inputs on the device
        self.names_cpu = False

        def host_encode(obj: Any, keep: Callable[[Any], dict[str, Any]] | None = None
                        ) -> tuple[dict[str, Any], list[bytes]]:
            strays = self.findings.strays if self.given_tensors and not self.names_cpu else None
            return encode(to_host(obj, strays, during), keep)

        # A child's own thread: grad mode on, whatever the judge's check holds around the call.
        with on_fake_gpu(), torch.enable_grad(), mock.patch.object(child_module.wire, "encode", host_encode):
            if op == "call":
                return self.call(req, buffers)
            if op == "inspect":
                return self.inspect(req)
            if op == "set_parameters":
                return self.set_parameters(req, buffers)
            if op == "run":
                return self.run(req)
            raise ValueError(f"unknown op {op!r}")


class FakeGpuBox:
    """Stands in for autograder.sandbox.process.Sandbox: the program runs here, in a FakeGpuChild."""

    def __init__(self, findings: Findings, zygote: Any, program: Any, device: str, limits: Any,
                 data_dir: Path | None = None) -> None:
        self.program = program
        self.child = FakeGpuChild(findings)
        self.alive = False
        self.plan = None
        self.control = None
        self.output_dropped = False  # the real box's flag; prints stay in this process

    def start(self) -> dict[str, Any]:
        with on_fake_gpu():
            setup = self.child.setup(self.program.preamble, self.program.harness)
            if setup["setup_error"]:
                raise student_module.SandboxUnavailable(setup["setup_error"])
            load = self.child.load(self.program.cells)
        self.alive = True
        return {"load": load, "cuda": False}

    def request(self, header: dict[str, Any], buffers: list[bytes], timeout: float | None, during: str
                ) -> tuple[dict[str, Any], list[bytes]]:
        try:
            reply, out = self.child.serve(str(header.get("op")), header, buffers)
            reply["ok"] = True
        except BaseException as exc:  # as the runtime's serve loop reports it
            reply, out = {"ok": False, "error": child_module._error(exc)}, []
        return reply, out

    def kill(self) -> None:
        self.alive = False

    def close(self) -> None:
        self.alive = False


def _grade_in_child(conn: Connection, notebook: Path, options: GradeOptions,
                    registry: Mapping[str, Chapter] | None) -> None:  # pragma: no cover - in the forkserver's child
    try:
        findings = Findings()
        with mock.patch.object(student_module, "Sandbox", functools.partial(FakeGpuBox, findings)):
            g = grade(notebook, options=options, zygote=None, registry=registry)  # type: ignore[arg-type]
        data = pickle.dumps((g, findings))
    except BaseException as exc:  # sent back, raised in the test
        data = pickle.dumps(RuntimeError(f"the grading on fakegpu raised {type(exc).__name__}: {exc}"))
    conn.send_bytes(data)
    conn.close()


# Each grading runs in a child of a fork server that imported torch and this module and never ran a backward:
# autograd's device threads do not survive a fork, and a test process has run backwards before (a plain fork of
# it fails every backward on fakegpu). What a grading changes (04's case that replaces torch.Tensor.T, a crash)
# goes with its child, as a sandboxed child's would. The server imports what a grading imports (pytest, every
# chapter's checks and cases, through the test module), once, so that each child starts warm.
_SERVER = multiprocessing.get_context("forkserver")
_SERVER.set_forkserver_preload([__name__, "pytest", "tests.devices.test_fake_gpu"])


def grade_on_fake_gpu(notebook: Path, options: GradeOptions, registry: Mapping[str, Chapter] | None = None
                      ) -> tuple[Grade, Findings]:
    """`grade` with the cells run on fakegpu (the judge on the CPU, as `options` say), in a child process."""
    got, sent = _SERVER.Pipe(duplex=False)
    child = _SERVER.Process(target=_grade_in_child, args=(sent, notebook, options, registry))
    child.start()
    sent.close()
    try:
        data = got.recv_bytes()
    except EOFError:
        data = b""
    child.join()
    if not data:
        raise RuntimeError(f"the grading on fakegpu died (exit code {child.exitcode})")
    result = pickle.loads(data)
    if isinstance(result, BaseException):
        raise result
    return result
