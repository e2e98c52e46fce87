"""The plain-data channel: tensors round-trip exactly, and nothing else gets through."""

from __future__ import annotations

import io

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given, settings

from autograder.sandbox.runtime import wire

dtypes = st.sampled_from(list(wire.DTYPES.values()))
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4)


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    dtype, shape = draw(dtypes), draw(shapes)
    seed = draw(st.integers(0, 2**31))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 100
    return x.to(dtype)


def _roundtrip(obj: object) -> object:
    header, buffers = wire.encode(obj)
    stream = io.BytesIO()
    wire.write_frame(stream, header, buffers)
    stream.seek(0)
    return wire.decode(*wire.read_frame(wire.read_exact(stream)))


@settings(max_examples=60, deadline=None)
@given(tensors())
def test_tensors_round_trip_bit_for_bit(x: torch.Tensor) -> None:
    y = _roundtrip(x)
    assert isinstance(y, torch.Tensor)
    assert y.dtype == x.dtype and y.shape == x.shape
    bits = wire._tensor_bytes  # the exact bytes, so nan payloads and -0.0 count too
    assert bits(y) == bits(x)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=10))
def test_plain_values_round_trip(value: object) -> None:
    assert _roundtrip(value) == value


def test_non_finite_floats_round_trip() -> None:
    out = _roundtrip([float("inf"), float("-inf")])
    assert out == [float("inf"), float("-inf")]


class Sneaky(torch.Tensor):
    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return True


@pytest.mark.parametrize("value", [torch.zeros(2).as_subclass(Sneaky), object(), {1: 2}])
def test_objects_and_tensor_subclasses_are_refused(value: object) -> None:
    with pytest.raises(wire.WireError):
        wire.encode(value)


@pytest.mark.parametrize("frame", [
    b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}",
    b"\x02\x00\x00\x00\x00\x00\x00\x00[]",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
])
def test_malformed_frames_are_rejected(frame: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.read_frame(wire.read_exact(io.BytesIO(frame)))


def test_a_buffer_of_the_wrong_size_is_rejected() -> None:
    header, _ = wire.encode(torch.zeros(4))
    with pytest.raises(wire.WireError):
        wire.decode(header, [b"\x00" * 3])


def test_properties_put_on_torch_tensor_do_not_change_what_a_header_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code in the child can put properties on torch.Tensor (a Python class); the header reads the C type's own."""
    def lying(value: object) -> property:
        return property(lambda t: value)

    for name, lie in (("device", torch.device("meta")), ("requires_grad", False), ("dtype", torch.float64)):
        monkeypatch.setattr(torch.Tensor, name, lying(lie), raising=False)
    header, _ = wire.encode(torch.zeros(2, requires_grad=True))
    assert header["value"]["device"] == "cpu" and header["value"]["requires_grad"] is True
    assert header["value"]["dtype"] == "float32"
