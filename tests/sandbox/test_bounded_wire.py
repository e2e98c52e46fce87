"""A bounded judge: hostile frames and forged replies from the child only ever become
wire.WireError (in the wire) or a StudentError with a clear message (in remote), and every string the
judge keeps from them is safe (valid UTF-8, no terminal control characters) and bounded."""

from __future__ import annotations

import contextlib
import io
import json
import struct
import time
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import HealthCheck, given, settings

from autograder.judging import judge as judge_module
from autograder.judging import student as student_module
from autograder.judging.notebook import load_submission
from autograder.judging.student import RUN_REPLY, Student, StudentError
from autograder.judging.untrusted import MAX_TEXT
from autograder.sandbox.runtime import wire
from tests.kit import FAST, by_name, grade_fast, solved, strings, unsafe, zygote

CH = "07_numerical_stability"


class Ended(Exception):
    """The test stream ran out (what a real channel reports as the other side closing)."""


def reader(data: bytes, most: int = wire.MAX_TENSOR_BYTES) -> Any:
    """read(n) over `data`; refuses to be asked for more than `most` bytes at once."""
    stream = io.BytesIO(data)

    def read(n: int) -> bytes:
        if n > most:
            raise AssertionError(f"the judge asked for {n} bytes before checking the frame")
        chunk = stream.read(n)
        if len(chunk) != n:
            raise Ended
        return chunk

    return read


def frame(header: Any, buffers: list[bytes] | None = None, sizes: Any = None) -> bytes:
    buffers = buffers or []
    if isinstance(header, dict):
        header = {**header, "buffers": [len(b) for b in buffers] if sizes is None else sizes}
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + b"".join(buffers)


def read_and_decode(data: bytes) -> Any:
    return wire.decode(*wire.read_frame(reader(data)))


def tensor_meta(idx: int = 0, shape: Any = (2,), dtype: Any = "float32") -> dict[str, Any]:
    return {"$tensor": idx, "dtype": dtype, "shape": list(shape) if isinstance(shape, tuple) else shape,
            "device": "cpu", "requires_grad": False}


def test_a_huge_header_is_refused_before_it_is_read() -> None:
    with pytest.raises(wire.WireError, match="header"):
        wire.read_frame(reader(struct.pack("<Q", 64 << 20) + b"{}"))


@pytest.mark.parametrize("depth", [70, 900, 200_000])
def test_deep_nesting_is_refused_without_recursion_error(depth: int) -> None:
    head = b'{"value": ' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(wire.WireError, match="nested"):
        read_and_decode(frame(head))


def test_deeply_nested_values_are_refused_by_decode_too() -> None:
    value: Any = 1
    for _ in range(500):
        value = {"$list": [value]}
    with pytest.raises(wire.WireError, match="nested"):
        wire.decode({"value": value}, [])


def test_total_tensor_bytes_are_capped_before_reading() -> None:
    data = frame({"value": None}, sizes=[wire.MAX_TENSOR_BYTES, 1])
    with pytest.raises(wire.WireError, match="tensor bytes"):
        wire.read_frame(reader(data))


def test_buffer_count_is_bounded() -> None:
    with pytest.raises(wire.WireError, match="buffer sizes"):
        wire.read_frame(reader(frame({"value": None}, sizes=[0] * (wire.MAX_BUFFERS + 1))))


def test_a_buffer_is_used_at_most_once() -> None:
    value = {"$list": [tensor_meta(0, (1,)), tensor_meta(0, (1,))], "tuple": False}
    with pytest.raises(wire.WireError, match="referenced twice"):
        read_and_decode(frame({"value": value}, [b"\0" * 4]))


def test_an_overlong_integer_in_the_header_is_a_wire_error() -> None:
    with pytest.raises(wire.WireError, match="not JSON"):
        read_and_decode(frame(b'{"value": ' + b"1" * 5000 + b"}"))


F4 = [b"\0" * 4]
HOSTILE = {
    "shape missing": ({"$tensor": 0, "dtype": "float32"}, F4),
    "negative dims": (tensor_meta(shape=[-1, -1]), F4),
    "dims as strings": (tensor_meta(shape=["1"]), F4),
    "dims as floats": (tensor_meta(shape=[1.0]), F4),
    "dims as booleans": (tensor_meta(shape=[True]), F4),
    "rank too high": (tensor_meta(shape=[1] * (wire.MAX_RANK + 1)), F4),
    "empty but overflowing strides": (tensor_meta(shape=[0, 2**40, 2**40]), [b""]),
    "shape not a list": (tensor_meta(shape={"a": 1}), F4),
    "dtype unhashable": (tensor_meta(dtype=["float32"]), F4),
    "tensor index a boolean": ({**tensor_meta(), "$tensor": True, "shape": [1]}, [b"", b"\0" * 4]),
    "tensor index a string": ({**tensor_meta(), "$tensor": "0", "shape": [1]}, F4),
    "device not a string": ({**tensor_meta(shape=[1]), "device": ["cuda"]}, F4),
    "float not a string": ({"$float": 1.5}, []),
    "float not a number": ({"$float": "one"}, []),
    "float a list": ({"$float": ["inf"]}, []),
    "list not a list": ({"$list": 5}, []),
    "dict not an object": ({"$dict": [1, 2]}, []),
    "dtype unhashable tag": ({"$dtype": []}, []),
    "object handle a string": ({"$object": "Module", "handle": "3"}, []),
    "object handle missing": ({"$object": "Module"}, []),
    "object handle a list": ({"$object": "Module", "handle": [1]}, []),
    "object type not a string": ({"$object": 7, "handle": 0}, []),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_values_are_wire_errors(case: str) -> None:
    value, buffers = HOSTILE[case]
    with pytest.raises(wire.WireError):
        read_and_decode(frame({"value": value}, buffers))


# -- fuzzing: random and garbled frames -------------------------------------------------

TAGS = ["$tensor", "$float", "$list", "$dict", "$dtype", "$object", "tuple", "handle", "dtype", "shape",
        "device", "requires_grad", "buffers", "value"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats() | st.sampled_from(list(wire.DTYPES))
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(TAGS) | st.text(max_size=3),
                                                                 inner, max_size=4),
    max_leaves=25)


def _outcome(data: bytes) -> None:
    with contextlib.suppress(wire.WireError, Ended):  # anything else fails the test
        read_and_decode(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.lists(st.binary(max_size=16), max_size=3))
def test_random_headers_only_ever_give_a_value_or_a_wire_error(value: Any, buffers: list[bytes]) -> None:
    _outcome(frame({"value": value}, buffers))
    _outcome(frame(value if isinstance(value, dict) else {"value": value}, buffers, sizes=value))


@st.composite
def garbled(draw: st.DrawFn) -> bytes:
    value = draw(st.recursive(st.none() | st.integers() | st.floats() | st.text(max_size=4)
                              | st.builds(torch.arange, st.integers(0, 3)),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3),
                                                                                          inner, max_size=3),
                              max_leaves=8))
    header, buffers = wire.encode(value)
    data = bytearray(frame(json.loads(json.dumps(header)), buffers))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(garbled())
def test_garbled_frames_only_ever_give_a_value_or_a_wire_error(data: bytes) -> None:
    _outcome(data)


# -- forged replies reaching remote.Student ----------------------------------------------


class ForgedChild:
    """Stands in for the sandbox: answers every request with one forged reply."""

    def __init__(self, reply: dict[str, Any], buffers: list[bytes]) -> None:
        self.reply, self.buffers = reply, buffers
        self.alive, self.plan, self.output_dropped = True, None, False

    def request(self, header: dict[str, Any], buffers: list[bytes], timeout: float | None,
                during: str) -> tuple[dict[str, Any], list[bytes]]:
        return dict(self.reply), list(self.buffers)

    def kill(self) -> None:
        self.alive = False

    def close(self) -> None:
        self.alive = False


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return solved(tmp_path_factory.mktemp("forged"), CH)


def _student(notebook: Path, reply: dict[str, Any], value: Any = None) -> Student:
    student = Student(load_submission(notebook), "cpu", FAST, time.monotonic() + 60, zygote())
    header, buffers = wire.encode(value)
    student.sandbox = ForgedChild({**header, **reply}, buffers)  # type: ignore[assignment]
    student.load_report = {"names": {"softmax": "function"}, "errors": {}}
    return student


X = torch.zeros(2, 3)
FORGED: dict[str, tuple[str, dict[str, Any], Any]] = {
    "no value at all": ("call", {"ok": True}, None),
    "value not a record": ("call", {"ok": True}, [1, 2]),
    "grads missing": ("call", {"ok": True}, {"value": X}),
    "grads a string": ("vjp", {"ok": True}, {"value": X, "grads": "abc", "ops": None}),
    "grads of the wrong kind": ("vjp", {"ok": True}, {"value": X, "grads": [1], "ops": None}),
    "ops missing from a trace": ("traced", {"ok": True}, {"value": X, "grads": None}),
    "ops a number": ("traced", {"ok": True}, {"value": X, "grads": None, "ops": 5}),
    "ops not names": ("traced", {"ok": True}, {"value": X, "grads": None, "ops": [1, 2]}),
    "method reply a list": ("method", {"ok": True}, [X]),
    "outputs a number": ("run", {"ok": True}, {"outputs": 5, "events_ms": None}),
    "outputs missing": ("run", {"ok": True}, {"events_ms": None}),
    "events not a number": ("run", {"ok": True}, {"outputs": [], "events_ms": "fast"}),
    "inspect reply not a record": ("inspect", {"ok": True}, ["weight"]),
    "inspect parameters a list": ("inspect", {"ok": True}, {"parameters": [X], "state_dict": [], "modules": {}}),
    "error a string": ("call", {"ok": False, "error": "boom"}, None),
    "error a list": ("call", {"ok": False, "error": ["NotImplementedError"]}, None),
    "error fields of the wrong types": ("call", {"ok": False, "error": {"type": ["x"], "message": {"a": 1}}}, None),
    "ok not a boolean": ("call", {"ok": "yes"}, None),
}


def _use(student: Student, accessor: str) -> Any:
    module = wire.RemoteObject("Module", 0)
    if accessor == "call":
        return student.call("softmax", X)
    if accessor == "vjp":
        return student.vjp("softmax", (X,), {}, wrt=(0,), grad_output=X)
    if accessor == "traced":
        return student.traced("softmax", (X,), {})
    if accessor == "method":
        return student.method(module, ["forward"], X)["value"]
    if accessor == "inspect":
        return student.inspect(module)["parameters"].items()
    # The timed-run reply, whichever accessor sends the request.
    reply = student._request("softmax", {"op": "run", "name": "softmax"}, [], "timed calls of softmax", None,
                             RUN_REPLY)
    return len(reply["outputs"]) + reply["events_ms"]


@pytest.mark.parametrize("case", FORGED)
def test_a_forged_reply_is_a_student_error_with_a_clear_message(notebook: Path, case: str) -> None:
    accessor, reply, value = FORGED[case]
    student = _student(notebook, reply, value)
    try:
        with pytest.raises(StudentError) as caught:
            _use(student, accessor)
    finally:
        student.close()
    assert "softmax" in str(caught.value) or "Module" in str(caught.value)
    assert any(w in str(caught.value) for w in ("malformed", "raised an error")), str(caught.value)


def test_well_formed_replies_still_pass_through(notebook: Path) -> None:
    student = _student(notebook, {"ok": True}, {"value": X, "grads": [X, None], "ops": ["add"]})
    try:
        value, grads = student.vjp("softmax", (X, X), {}, wrt=(0, 1), grad_output=X)
        assert torch.equal(value, X) and grads[0] is not None and torch.equal(grads[0], X) and grads[1] is None
        assert student.traced("softmax", (X,), {})[1] == ["add"]
    finally:
        student.close()


FORGES_REPLIES = """
import autograder.sandbox.runtime.wire as _wire
_encode = _wire.encode
def _forged(obj, keep=None):  # the child's replies to calls lose their "grads"
    if isinstance(obj, dict) and "grads" in obj:
        obj = {"value": obj["value"]}
    return _encode(obj, keep)
_wire.encode = _forged
def softmax(logits, dim=-1):
    return torch.softmax(logits, dim)
"""


def test_student_code_forging_replies_in_the_child_fails_clearly(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=FORGES_REPLIES), only="check_softmax_guide_example")
    out = by_name(g)["check_softmax_guide_example"].output
    assert g.score == 0 and "malformed" in out and "grader itself failed" not in out, out


# -- fuzzing what reaches the judge: strings safe and bounded ------------------------------------

# Lone surrogates (JSON's "\ud800" escapes), terminal escapes, NUL, bidi overrides; and huge strings.
BAD = ["\ud800", "\udfff", "\x1b[2J", "\x00", "\x9b", "\u202e", "\r", "<script>"]
HUGE = ["x" * 100_000, "\x00" * 30_000, "\ud800" * 20_000]
hostile_text = (st.lists(st.characters(codec=None, exclude_categories=()) | st.sampled_from(BAD), max_size=12)
                .map("".join) | st.sampled_from(HUGE))


def _nested(depth: int) -> Any:
    value: Any = "\x1b[31m\ud800"
    for _ in range(depth):
        value = {"$list": [value]}
    return value


reply_values = st.recursive(
    st.none() | st.integers() | hostile_text,
    lambda inner: (st.lists(inner, max_size=3).map(lambda v: {"$list": v})
                   | st.dictionaries(hostile_text, inner, max_size=3).map(lambda d: {"$dict": d})
                   | hostile_text.map(lambda t: {"$dtype": t})
                   | hostile_text.map(lambda t: {"$object": t, "handle": 0})),
    max_leaves=12) | st.integers(1, 70).map(_nested)
errors = st.fixed_dictionaries({}, optional={"type": hostile_text, "message": hostile_text, "where": hostile_text})
replies = (reply_values.map(lambda v: {"ok": True, "value": v})
           | errors.map(lambda e: {"ok": False, "error": e}))
# One string at most this long as the judge keeps it (MAX_TEXT and the note of what was cut).
LONGEST = MAX_TEXT + 100


@pytest.fixture(scope="module")
def judge(notebook: Path) -> Any:
    """The judge's handling of raw bytes as the child's reply: the value, or the StudentError's message;
    None when the frame is a WireError."""
    student = Student(load_submission(notebook), "cpu", FAST, time.monotonic() + 3600, zygote())
    student.load_report = {"names": {"softmax": "function"}, "errors": {}}

    def judged(data: bytes) -> Any:
        try:
            header, buffers = wire.read_frame(reader(data))
        except (wire.WireError, Ended):
            return None
        student.sandbox = ForgedChild(header, buffers)  # type: ignore[assignment]
        try:
            return student._request("softmax", {"op": "call", "name": "softmax"}, [], "softmax(x)", None)
        except StudentError as e:
            return str(e)

    yield judged
    student.close()


def _assert_safe(got: Any) -> None:
    assert not unsafe(got), unsafe(got)[:3]
    longest = max(map(len, strings(got)), default=0)
    assert longest <= (4 * LONGEST if isinstance(got, str) else LONGEST), longest  # a message holds 3 fields


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies)
def test_any_json_reply_reaches_the_judge_as_safe_bounded_strings(judge: Any, reply: dict[str, Any]) -> None:
    _assert_safe(judge(frame(reply)))  # json.dumps writes lone surrogates as \ud800 escapes


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64).map(lambda b: struct.pack("<Q", len(b)) + b) | st.binary(max_size=80))
def test_any_bytes_reach_the_judge_as_safe_strings_or_a_wire_error(judge: Any, data: bytes) -> None:
    _assert_safe(judge(data))


class ForgedStart(ForgedChild):
    """Stands in for a sandbox whose child ran the cells and sent back `report` as its load report."""

    report: Any = None

    def __init__(self, *args: Any) -> None:
        super().__init__({}, [])

    def start(self) -> dict[str, Any]:
        return {"load": self.report, "cuda": False}


def _many_names(count: int) -> dict[str, str]:
    return {f"f{i}\x1b[2J" + "\ud800" * 50: "function" for i in range(count)}


load_reports = st.fixed_dictionaries({
    "errors": st.dictionaries(st.sampled_from(["softmax", "log_softmax"]) | hostile_text,
                              st.fixed_dictionaries({"type": hostile_text, "message": hostile_text,
                                                     "where": hostile_text}), max_size=4),
    "names": st.dictionaries(hostile_text, hostile_text | st.just("function"), max_size=4)
    | st.sampled_from([10, 3000]).map(_many_names)})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(load_reports)
def test_any_load_report_reaches_the_judge_as_safe_bounded_notes(notebook: Path, report: dict[str, Any]) -> None:
    ForgedStart.report = report
    student = Student(load_submission(notebook), "cpu", FAST, time.monotonic() + 60, zygote())
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(student_module, "Sandbox", ForgedStart)
            student.start()
        assert not unsafe(student.load_report)
        notes = judge_module._load_notes(student)
        missing = str(student._why_missing("softmax_cross_entropy"))
    finally:
        student.close()
    assert not unsafe([*notes, missing])
    assert len(notes) <= 3 and max(map(len, notes), default=0) <= 4 * LONGEST and len(missing) <= 4 * LONGEST
