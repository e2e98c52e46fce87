"""Plain-data framing between the judge and the child that runs student code.

A frame is a JSON header followed by raw tensor buffers. Nothing is ever
unpickled: tensors travel as (dtype, shape, bytes) and the receiver rebuilds
them itself, so a hostile child can only send numbers, never objects.

Every frame is read within bounds (header size, nesting depth, buffer count,
tensor bytes, each buffer used once), and anything out of bounds or
malformed raises WireError, never another exception.
"""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Callable
from typing import Any, BinaryIO

import torch

# The only dtypes that may cross; anything else is refused.
DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
# Bounds on one frame; beyond them a frame is a protocol error, not an allocation.
MAX_HEADER = 8 << 20  # bytes of JSON header
MAX_DEPTH = 64  # nesting levels of JSON containers in a header
MAX_BUFFERS = 16384  # tensor buffers
MAX_TENSOR_BYTES = 1 << 30  # all tensor buffers together
MAX_RANK = 32  # dimensions of one tensor


class WireError(Exception):
    """The other side sent something that is not a well-formed frame."""


# A tensor's dtype, shape, device and requires_grad, read through its C type's own descriptors, taken when this module
# loads (before any student code): torch.Tensor is a Python class whose attributes code in the child can replace,
# TensorBase is an immutable C type.
_DTYPE, _SHAPE, _DEVICE, _REQUIRES_GRAD = (torch._C.TensorBase.__dict__[name].__get__
                                           for name in ("dtype", "shape", "device", "requires_grad"))


def _tensor_header(t: torch.Tensor) -> dict[str, Any]:
    dtype = _DTYPE(t)
    if dtype not in DTYPE_NAMES:
        raise WireError(f"unsupported dtype {dtype}")
    return {
        "dtype": DTYPE_NAMES[dtype],
        "shape": list(_SHAPE(t)),
        "device": str(_DEVICE(t)),
        "requires_grad": bool(_REQUIRES_GRAD(t)),
    }


def _tensor_bytes(t: torch.Tensor) -> bytes:
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    elif flat.dtype.is_floating_point and flat.element_size() == 2:
        flat = flat.view(torch.int16)  # numpy has no bfloat16; keep the bits
    return flat.numpy().tobytes()


def encode(
    obj: Any, keep: Callable[[Any], dict[str, Any]] | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """Turn nested plain data with tensors into a JSON-able tree plus buffers.

    `keep` handles values that are not data (a Module, say): the child keeps
    them and sends a reference instead. Without it such values are refused.
    """
    buffers: list[bytes] = []

    def walk(x: Any) -> Any:
        if type(x) is torch.Tensor or type(x) is torch.nn.Parameter:
            meta = _tensor_header(x)
            meta["$tensor"] = len(buffers)
            buffers.append(_tensor_bytes(x))
            return meta
        if x is None or type(x) in (bool, int, str):
            return x
        if type(x) is float:
            return x if x == x and abs(x) != float("inf") else {"$float": repr(x)}
        if type(x) in (list, tuple):
            return {"$list": [walk(v) for v in x], "tuple": type(x) is tuple}
        if type(x) is dict and all(type(k) is str for k in x):
            return {"$dict": {k: walk(v) for k, v in x.items()}}
        if type(x) is torch.dtype:
            return {"$dtype": DTYPE_NAMES.get(x, str(x))}
        if type(x) is RemoteObject:
            return {"$object": x.type_name, "handle": x.handle}
        if isinstance(x, torch.Tensor):
            raise WireError(f"a torch.Tensor subclass ({type(x).__name__}) is not a plain tensor")
        if keep is not None:
            return keep(x)
        raise WireError(f"cannot send a value of type {type(x).__name__}")

    return {"value": walk(obj)}, buffers


def _rebuild_tensor(meta: dict[str, Any], buf: bytes) -> torch.Tensor:
    name = meta.get("dtype")
    if not isinstance(name, str) or name not in DTYPES:
        raise WireError(f"unknown dtype {_short(name)}")
    dtype = DTYPES[name]
    shape = meta.get("shape")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(type(s) is int and s >= 0 for s in shape):
        raise WireError(f"bad tensor shape {_short(shape)}: need at most {MAX_RANK} non-negative integers")
    numel, span = 1, 1
    for s in shape:
        numel *= s
        span *= max(s, 1)  # bounds empty tensors too, whose strides still multiply
    if span > MAX_TENSOR_BYTES:
        raise WireError(f"tensor shape {shape} is too large")
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(buf) != numel * itemsize:
        raise WireError(f"tensor of shape {shape} {name} needs {numel * itemsize} bytes, got {len(buf)}")
    try:
        if numel == 0:
            return torch.empty(shape, dtype=dtype)
        raw = torch.frombuffer(bytearray(buf), dtype=torch.uint8)
        return raw.view(dtype).reshape(shape).clone()
    except (RuntimeError, MemoryError) as e:
        raise WireError(f"cannot rebuild a tensor of shape {shape} {name}: {e}") from None


def _float(text: Any) -> float:
    if isinstance(text, str):
        with contextlib.suppress(ValueError):
            return float(text)
    raise WireError(f"$float {_short(text)} is not a number written as a string")


def _short(x: Any) -> str:
    """A bounded repr of a hostile value for error messages."""
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def decode(header: dict[str, Any], buffers: list[bytes]) -> Any:
    """Inverse of encode. Tensors come back on the CPU; `t.origin` holds the
    sender's (device, requires_grad). Raises WireError for anything malformed."""
    if not isinstance(header, dict):
        raise WireError("frame header is not an object")
    if sum(len(b) for b in buffers) > MAX_TENSOR_BYTES:
        raise WireError(f"more than {MAX_TENSOR_BYTES} bytes of tensors in one frame")
    used: set[int] = set()

    def tensor(x: dict[str, Any]) -> torch.Tensor:
        idx = x["$tensor"]
        if type(idx) is not int or not 0 <= idx < len(buffers):
            raise WireError(f"bad tensor reference {_short(idx)}")
        if idx in used:
            raise WireError(f"tensor buffer {idx} is referenced twice")
        used.add(idx)
        device, requires_grad = x.get("device", "cpu"), x.get("requires_grad", False)
        if not isinstance(device, str) or type(requires_grad) is not bool:
            raise WireError("bad tensor device or requires_grad")
        t = _rebuild_tensor(x, buffers[idx])
        t.origin = (device, requires_grad)  # type: ignore[attr-defined]
        return t

    def walk(x: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
        if isinstance(x, dict):
            if "$tensor" in x:
                return tensor(x)
            if "$float" in x:
                return _float(x["$float"])
            if "$list" in x:
                if not isinstance(x["$list"], list):
                    raise WireError("$list is not a list")
                items = [walk(v, depth + 1) for v in x["$list"]]
                return tuple(items) if x.get("tuple") is True else items
            if "$dict" in x:
                if not isinstance(x["$dict"], dict):
                    raise WireError("$dict is not an object")
                return {str(k): walk(v, depth + 1) for k, v in x["$dict"].items()}
            if "$dtype" in x:
                if not isinstance(x["$dtype"], str):
                    raise WireError(f"$dtype {_short(x['$dtype'])} is not a string")
                return DTYPES.get(x["$dtype"], x["$dtype"])
            if "$object" in x:
                type_name, handle = x["$object"], x.get("handle")
                if not isinstance(type_name, str) or type(handle) is not int:
                    raise WireError("$object needs a type name (string) and a handle (integer)")
                return RemoteObject(type_name, handle)
            raise WireError(f"unknown value tag in {_short(sorted(map(str, x)))}")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise WireError(f"unexpected JSON value {type(x).__name__}")

    return walk(header.get("value"), 1)


class RemoteObject:
    """A student object that cannot cross as data (a Module, a Dataset...)."""

    def __init__(self, type_name: str, handle: int) -> None:
        self.type_name = type_name
        self.handle = handle

    def __repr__(self) -> str:
        return f"<{self.type_name} object in the student's process>"


def frame(header: dict[str, Any], buffers: list[bytes]) -> list[bytes]:
    """The pieces of one frame, in order: its header's size, the header, the buffers."""
    head = json.dumps({**header, "buffers": [len(b) for b in buffers]}).encode()
    return [struct.pack("<Q", len(head)), head, *buffers]


def write_frame(stream: BinaryIO, header: dict[str, Any], buffers: list[bytes]) -> None:
    for piece in frame(header, buffers):
        stream.write(piece)
    stream.flush()


def read_exact(stream: BinaryIO) -> Callable[[int], bytes]:
    """A reader that returns exactly n bytes from a blocking stream."""

    def read(n: int) -> bytes:
        chunks = []
        while n:
            chunk = stream.read(n)
            if not chunk:
                raise EOFError("the other side closed the channel")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    return read


def _check_depth(tree: Any) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, without recursion."""
    stack = [(tree, 1)]
    while stack:
        x, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise WireError(f"frame header nested deeper than {MAX_DEPTH} levels")
        children = x.values() if isinstance(x, dict) else x
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def read_frame(read: Callable[[int], bytes]) -> tuple[dict[str, Any], list[bytes]]:
    """Read one frame with `read(n)`, which returns exactly n bytes or raises.

    Raises WireError for a malformed or out-of-bounds frame; what `read`
    raises (the other side closed, a timeout) passes through.
    """
    (n,) = struct.unpack("<Q", read(8))
    if n > MAX_HEADER:
        raise WireError(f"frame header of {n} bytes (at most {MAX_HEADER})")
    try:
        header = json.loads(read(n))
    except RecursionError:
        raise WireError("frame header is nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, integers too long to convert
        raise WireError(f"frame header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise WireError("frame header is not an object")
    _check_depth(header)
    sizes = header.pop("buffers", [])
    if (not isinstance(sizes, list) or len(sizes) > MAX_BUFFERS
            or not all(type(s) is int and s >= 0 for s in sizes)):
        raise WireError(f"bad buffer sizes: need a list of at most {MAX_BUFFERS} non-negative integers")
    if sum(sizes) > MAX_TENSOR_BYTES:
        raise WireError(f"frame of {sum(sizes)} tensor bytes (at most {MAX_TENSOR_BYTES})")
    return header, [read(s) for s in sizes]
