"""The child: runs a student's answer cells and serves calls from the judge.

It starts in a sandbox made by autograder.sandbox.process, with a copy of
autograder/sandbox/runtime/ only (this module, wire, isolation, landlock, syscalls
and the zygote that forked it). It never sees the checks, the solutions or the seed, and
it decides nothing: it returns plain data that the judge then scores.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import sys
import traceback
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from autograder.sandbox.runtime import wire

# Taken before any student code runs, so that patching torch cannot change them.
_grad = torch.autograd.grad
_is_tensor = torch.is_tensor


def _where(exc: BaseException) -> str:
    """The traceback restricted to frames in the student's cells."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<cell ")]
    lines = [f'  {f.filename[1:-1]}, line {f.lineno}, in {f.name}\n    {f.line or ""}' for f in frames]
    return "\n".join(lines[-6:])


def _error(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "where": _where(exc)}


class Trace(TorchDispatchMode):
    """A dispatch mode for the kit's records. torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable by
    default, so that the first call imports torch._dynamo (0.7-3 s a child); this hook (torch 2.13) opts out. Where
    a torch has no such hook, the zygote's first trace imports it once for every child (zygote.warm_up)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


class OpTrace(Trace):
    """Records the name of every aten operator a call issues (after autograd)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


class Child:
    def __init__(self, device: str) -> None:
        self.device = device
        self.namespace: dict[str, Any] = {"__name__": "__student__"}
        # The chapter's harness: kit code (no secrets) that checks call (requests for "kit.NAME"),
        # for work that must happen beside the student's objects (hooks, DataLoaders).
        self.harness: dict[str, Any] = {"__name__": "__harness__", "student": self.namespace}
        self.objects: list[Any] = []

    def setup(self, preamble: str, harness: str) -> dict[str, Any]:
        """The chapter's imports and harness, before any student code: a failure here is the grader's."""
        try:
            exec(compile(preamble, "<preamble>", "exec"), self.namespace)
            exec(compile(harness, "<harness>", "exec"), self.harness)
        except Exception as exc:
            return {"setup_error": f"{type(exc).__name__}: {exc}", "cuda": False}
        cuda, why = torch.cuda.is_available(), None
        if self.device == "cuda" and not cuda:
            try:
                torch.cuda.init()  # raises the reason: no driver found, no device visible, ...
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
        return {"setup_error": None, "cuda": cuda, "cuda_error": why}

    def load(self, cells: list[dict[str, str]]) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        for cell in cells:
            filename = f"<cell {cell['id']}>"
            source = cell["source"]
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            try:
                exec(compile(source, filename, "exec"), self.namespace)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt too
                errors[cell["id"]] = _error(exc)
        names = {
            k: type(v).__name__
            for k, v in self.namespace.items()
            if not k.startswith("_") and (callable(v) or isinstance(v, type))
        }
        return {"errors": errors, "names": names}

    def _keep(self, obj: Any) -> dict[str, Any]:
        self.objects.append(obj)
        return {"$object": type(obj).__name__, "handle": len(self.objects) - 1}

    def _resolve(self, x: Any) -> Any:
        """Decoded request values: tensors go to the device, handles to objects."""
        if isinstance(x, wire.RemoteObject):
            return self.objects[x.handle]
        if _is_tensor(x):
            return x.to(self.device)
        if isinstance(x, (list, tuple)):
            return type(x)(self._resolve(v) for v in x)
        if isinstance(x, dict):
            return {k: self._resolve(v) for k, v in x.items()}
        return x

    def _target(self, req: dict[str, Any]) -> Any:
        owner = req.get("object")
        name = req["name"]
        if owner is not None:
            target = self.objects[owner]
        elif name.startswith("kit."):
            target = self.harness[name.removeprefix("kit.")]
        else:
            target = self.namespace[name]
        for attr in req.get("attrs", []):
            target = getattr(target, attr)
        return target

    def call(self, req: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        args, kwargs, grad_output = self._resolve(wire.decode(req, buffers))
        wrt = [args[i].requires_grad_(True) for i in req.get("wrt", [])]
        target = self._target(req)
        trace = OpTrace() if req.get("trace") else None
        if trace is None:
            value = target(*args, **kwargs)
        else:
            with trace:
                value = target(*args, **kwargs)
        grads = None
        if wrt:
            if not _is_tensor(value):
                raise TypeError(f"expected a tensor to differentiate, got {type(value).__name__}")
            if value.grad_fn is None:
                raise RuntimeError(
                    "the result is not connected to the inputs' autograd graph (it has no grad_fn): "
                    "avoid .detach(), .data, .item(), .numpy() and torch.tensor(...) on values you return"
                )
            grads = list(_grad(value, wrt, grad_output, allow_unused=True))
        ops = trace.ops if trace is not None else None
        return wire.encode({"value": value, "grads": grads, "ops": ops}, keep=self._keep)

    def inspect(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """A Module's registered parameters, buffers and submodules."""
        module = self.objects[req["object"]]
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"expected an nn.Module, got {type(module).__name__}")
        info = {
            "parameters": dict(module.named_parameters()),
            "state_dict": list(module.state_dict()),
            "modules": {name: type(m).__name__ for name, m in module.named_modules()},
        }
        return wire.encode(info)

    def set_parameters(self, req: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        module = self.objects[req["object"]]
        values = self._resolve(wire.decode(req, buffers))
        params = dict(module.named_parameters())
        with torch.no_grad():
            for name, value in values.items():
                params[name].copy_(value)
        return wire.encode(None)

    def run(self, req: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """Make `count` input sets from `seed`, then call the target once per set; the judge times this request.

        Call j takes its inputs from the spec list `specs[j % len(specs)]`, then `constants` (plain numbers).
        The inputs do not exist in this process before the request starts, so no work on them can happen
        outside the judge's timer. Making them costs the same in every process; with no `name` the request
        only makes them, and the judge subtracts that time (measured in its clean reference process). Every
        output goes back whole, inside the timed request: the judge compares it with its own oracle, so work
        the code defers until after it returns still counts. On CUDA the child also reports CUDA-event time,
        for information only: the verdict uses the judge's clock, which student code cannot touch.
        """
        gen = torch.Generator().manual_seed(int(req["seed"]))
        sets = req["specs"]
        inputs = [[make_input(spec, gen).to(self.device) for spec in sets[j % len(sets)]]
                  for j in range(int(req["count"]))]
        if req.get("name") is None:
            if self.device == "cuda":
                torch.cuda.synchronize()
            return wire.encode({"outputs": [], "events_ms": None})
        target, constants = self._target(req), req.get("constants", [])
        if self.device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            outputs = [target(*args, *constants) for args in inputs]
            end.record()
            torch.cuda.synchronize()
            events_ms = start.elapsed_time(end)
        else:
            outputs = [target(*args, *constants) for args in inputs]
            events_ms = None
        return wire.encode({"outputs": outputs, "events_ms": events_ms})


def make_input(spec: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """One tensor from a spec; the judge makes the identical tensor from the same seed."""
    dtype = wire.DTYPES[spec.get("dtype", "float32")]
    shape = [int(n) for n in spec["shape"]]
    if spec["kind"] == "randint":
        return torch.randint(int(spec["low"]), int(spec["high"]), shape, generator=gen, dtype=dtype)
    return torch.randn(shape, generator=gen, dtype=dtype)


def serve(channel_in: Any, channel_out: Any) -> None:
    read = wire.read_exact(channel_in)
    hello, _ = wire.read_frame(read)
    child = Child(hello["device"])
    wire.write_frame(channel_out, {"setup": child.setup(hello["preamble"], hello["harness"])}, [])
    # The cells come once the judge holds this box from outside (autograder/sandbox/control.py).
    cells, _ = wire.read_frame(read)
    wire.write_frame(channel_out, _noted({"value": None, "load": child.load(cells["cells"])}), [])
    while True:
        try:
            req, buffers = wire.read_frame(read)
        except EOFError:
            return
        try:
            op = req.get("op")
            if op == "call":
                header, out = child.call(req, buffers)
            elif op == "inspect":
                header, out = child.inspect(req)
            elif op == "set_parameters":
                header, out = child.set_parameters(req, buffers)
            elif op == "run":
                header, out = child.run(req)
            else:
                raise ValueError(f"unknown op {op!r}")
            header["ok"] = True
        except BaseException as exc:  # the student's code may raise SystemExit too
            header, out = {"ok": False, "error": _error(exc)}, []
        wire.write_frame(channel_out, _noted(header), out)


OUTPUT_KEPT = 1 << 20  # characters of the student's prints kept in the log; the rest is dropped


class KeptOutput(io.TextIOBase):
    """sys.stdout and sys.stderr of the student's code: the first OUTPUT_KEPT characters go to the log, the rest
    is dropped (`dropped` then says so, in every reply: the judge's note, never a point). A print never fails:
    the box's file-size limit (RLIMIT_FSIZE) would otherwise turn the log's growth into "File too large" errors
    raised in the student's code, a score that changes with prints. It answers what code asks of a console
    (`buffer`, `encoding`, `isatty`, `reconfigure`...), so that no such call fails either."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, log: int) -> None:
        self.log = open(log, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.left = OUTPUT_KEPT
        self.buffer = KeptBytes(self)

    @property
    def dropped(self) -> bool:
        return self.left < 0

    def write(self, text: str) -> int:
        text = text if isinstance(text, str) else str(text)
        kept = text[:max(self.left, 0)]
        self.left -= len(text)
        if kept:
            try:
                self.log.write(kept)
            except (OSError, ValueError):
                self.left = -1
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.log.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def reconfigure(self, **settings: Any) -> None:
        """Accepted and ignored (the encoding is UTF-8, the line buffering the log's)."""

    def fileno(self) -> int:
        return 1  # /dev/null: what writes to the descriptor itself reach


class KeptBytes(io.BufferedIOBase):
    """KeptOutput's `buffer`: bytes written to it are decoded and kept, or dropped, as text."""

    def __init__(self, text: KeptOutput) -> None:
        self.text = text

    def write(self, data: Any) -> int:
        size = len(memoryview(data).cast("B"))
        self.text.write(bytes(data).decode("utf-8", errors="replace"))
        return size

    def flush(self) -> None:
        self.text.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1


OUTPUT: KeptOutput | None = None  # the student's prints, as main() set them up (the judge's reference to them)


def _noted(header: dict[str, Any]) -> dict[str, Any]:
    """A reply's header, with `dropped` once some of the student's output was dropped."""
    if OUTPUT is not None and OUTPUT.dropped:
        header["dropped"] = True
    return header


def main() -> None:
    # The channel is the original stdin/stdout. Student prints go to a log file instead, so they can never
    # corrupt or forge a frame by accident; fd 1 and 2 are /dev/null, which no file-size limit applies to.
    channel_in = os.fdopen(os.dup(0), "rb")
    channel_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open("student-output.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    global OUTPUT
    sys.stdout = sys.stderr = OUTPUT = KeptOutput(log)
    torch.set_num_threads(1)  # see sandbox.Sandbox._env
    serve(channel_in, channel_out)


if __name__ == "__main__":
    main()
