"""Plain-data framing between the judge and the child that runs student code.

A frame is a JSON header followed by raw tensor buffers. Nothing is ever
unpickled: tensors travel as (dtype, shape, bytes) and the receiver rebuilds
them itself, so a hostile child can only send numbers, never objects.
"""

from __future__ import annotations

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
MAX_FRAME = 1 << 31  # 2 GiB: larger is a protocol error, not an allocation


class WireError(Exception):
    """The other side sent something that is not a well-formed frame."""


def _tensor_header(t: torch.Tensor) -> dict[str, Any]:
    if t.dtype not in DTYPE_NAMES:
        raise WireError(f"unsupported dtype {t.dtype}")
    return {
        "dtype": DTYPE_NAMES[t.dtype],
        "shape": list(t.shape),
        "device": str(t.device),
        "requires_grad": bool(t.requires_grad),
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
    if name not in DTYPES:
        raise WireError(f"unknown dtype {name!r}")
    dtype = DTYPES[name]
    shape = [int(s) for s in meta["shape"]]
    numel = 1
    for s in shape:
        numel *= s
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(buf) != numel * itemsize:
        raise WireError(f"tensor of shape {shape} {name} needs {numel * itemsize} bytes, got {len(buf)}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(buf), dtype=torch.uint8)
    return raw.view(dtype).reshape(shape).clone()


def decode(header: dict[str, Any], buffers: list[bytes]) -> Any:
    """Inverse of encode. Tensors come back on the CPU; `t.origin` holds the
    sender's (device, requires_grad)."""

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            if "$tensor" in x:
                idx = x["$tensor"]
                if not isinstance(idx, int) or not 0 <= idx < len(buffers):
                    raise WireError("bad tensor reference")
                t = _rebuild_tensor(x, buffers[idx])
                t.origin = (str(x.get("device", "cpu")), bool(x.get("requires_grad")))  # type: ignore[attr-defined]
                return t
            if "$float" in x:
                return float(x["$float"])
            if "$list" in x:
                items = [walk(v) for v in x["$list"]]
                return tuple(items) if x.get("tuple") else items
            if "$dict" in x:
                return {str(k): walk(v) for k, v in x["$dict"].items()}
            if "$dtype" in x:
                return DTYPES.get(x["$dtype"], x["$dtype"])
            if "$object" in x:
                return RemoteObject(str(x["$object"]), int(x.get("handle", -1)))
            raise WireError(f"unknown value tag in {sorted(x)}")
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise WireError(f"unexpected JSON value {type(x).__name__}")

    return walk(header.get("value"))


class RemoteObject:
    """A student object that cannot cross as data (a Module, a Dataset...)."""

    def __init__(self, type_name: str, handle: int) -> None:
        self.type_name = type_name
        self.handle = handle

    def __repr__(self) -> str:
        return f"<{self.type_name} object in the student's process>"


def write_frame(stream: BinaryIO, header: dict[str, Any], buffers: list[bytes]) -> None:
    head = json.dumps({**header, "buffers": [len(b) for b in buffers]}).encode()
    stream.write(struct.pack("<Q", len(head)))
    stream.write(head)
    for b in buffers:
        stream.write(b)
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


def read_frame(read: Callable[[int], bytes]) -> tuple[dict[str, Any], list[bytes]]:
    """Read one frame with `read(n)`, which returns exactly n bytes or raises."""
    (n,) = struct.unpack("<Q", read(8))
    if n > MAX_FRAME:
        raise WireError(f"frame header of {n} bytes")
    try:
        header = json.loads(read(n))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WireError(f"frame header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise WireError("frame header is not an object")
    sizes = header.pop("buffers", [])
    if not isinstance(sizes, list) or not all(isinstance(s, int) and 0 <= s <= MAX_FRAME for s in sizes):
        raise WireError("bad buffer sizes")
    return header, [read(s) for s in sizes]
