"""Hidden checks for 03_broadcasting: Merge and paired_sums.

Merge is judged against the judge's own nn.Linear(in1 + in2, out) applied,
in float64, to the concatenation of `a` and `b` tiled to `a`'s shape: its
weight is split into two blocks and copied into the student's `linear1` and
`linear2`. Random inputs come from `rng`, seeded by the grading's secret seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
from torch import Tensor

from autograder.api import StudentApi, answer, harness
from autograder.expect import expect_tensor, failure, output_shape_checked
from autograder.plugin import check
from autograder.remote import summarize
from autograder.wire import RemoteObject

# -- the API: what the notebook asks for, as the judge calls it -----------------

# The notebook's example: a call every working paired_sums answers.
PAIRED_SUMS_EXAMPLE = (torch.tensor([[1.0], [2.0]]), torch.tensor([1.0, 2.0]))


class Api(StudentApi):
    @answer
    def Merge(self, in_features1: int, in_features2: int, out_features: int) -> RemoteObject:
        """A Module computing activation(linear1(a) + linear2(b)), b broadcast over a's N axis."""

    @harness()
    def make_merge(self, in_features1: int, in_features2: int, out_features: int, activation: str) -> RemoteObject:
        """The student's Merge with activation= the torch function named (functions cannot cross the wire)."""

    @answer(example=PAIRED_SUMS_EXAMPLE)
    def paired_sums(self, a: Tensor, b: Tensor) -> Tensor:
        """a[i, 0] + b[i] for a of shape [N, 1] and b of shape [N]."""


def build_merge(api: Api, in1: int, in2: int, out: int, device: str, activation: str | None = None) -> RemoteObject:
    """Merge(in1, in2, out) or, with `activation` named, the harness's make_merge; moved to `device`."""
    # Constructing it directly first gives the clearest message when Merge is missing or raises.
    merge = api.Merge(in1, in2, out)
    if activation is not None:
        merge = api.make_merge(in1, in2, out, activation)
    if not isinstance(merge, RemoteObject):
        raise failure(call=f"Merge({in1}, {in2}, {out})", expected="an nn.Module instance", got=summarize(merge),
                      hint=STRUCTURE_HINT)
    api.student.method(merge, ["to"], device)
    return merge


def run_merge(api: Api, merge: RemoteObject, a: Tensor, b: Tensor, wrt: tuple[int, ...] = (),
              grad_output: Tensor | None = None, trace: bool = False) -> dict[str, Any]:
    return api.student.method(merge, ["forward"], a, b, wrt=wrt, grad_output=grad_output, trace=trace)


# -- oracles -----------------------------------------------------------------------

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "tanh": torch.tanh}


def reference_linear(rng: torch.Generator, in1: int, in2: int, out: int) -> tuple[nn.Linear, dict[str, Tensor]]:
    """The judge's nn.Linear(in1 + in2, out) in float64, and the four float32 tensors for the student's Merge.

    The bias is split as c = c1 + c2 with both parts random, so dropping
    either bias (or adding one twice) changes the answer.
    """
    weight = torch.randn(out, in1 + in2, generator=rng) / (in1 + in2) ** 0.5
    c1, c2 = torch.randn(out, generator=rng), torch.randn(out, generator=rng)
    ref = nn.Linear(in1 + in2, out, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(weight)
        ref.bias.copy_(c1.double() + c2.double())
    params = {"linear1.weight": weight[:, :in1].contiguous(), "linear1.bias": c1,
              "linear2.weight": weight[:, in1:].contiguous(), "linear2.bias": c2}
    return ref, params


def tiled_concat(a: Tensor, b: Tensor) -> Tensor:
    """The tensor Merge must never build: [a, b tiled to a's shape] along the last axis."""
    return torch.cat([a, b.expand(*a.shape[:-1], b.shape[-1])], dim=-1)


def merge_oracle(ref: nn.Linear, a: Tensor, b: Tensor, activation: str | None = None) -> Tensor:
    y = ref(tiled_concat(a.double(), b.double()))
    return ACTIVATIONS[activation](y) if activation else y


def paired_sums_oracle(a: Tensor, b: Tensor) -> Tensor:
    return (a[:, 0].double() + b.double()).to(a.dtype)


STRUCTURE_HINT = ("Keep the guide's structure: in __init__, self.linear1 = nn.Linear(in_features1, out_features) "
                  "and self.linear2 = nn.Linear(in_features2, out_features), both with their bias, and no other "
                  "parameters; store `activation` as given.")
MERGE_HINT = ("forward(a, b) is activation(linear1(a) + linear2(b)): linear2(b) has shape [..., 1, out] and "
              "broadcasts over a's N axis. Add each layer's output once, with its own bias, and nothing else.")
ACTIVATION_HINT = ("Apply self.activation once, to the sum linear1(a) + linear2(b), when it is not None; "
                   "with activation=None return the sum unchanged.")
GRAD_HINT = ("Build the result from differentiable torch operations on a and b; avoid .detach(), .data, "
             "torch.no_grad() and in-place writes into tensors you made yourself.")
TILING_HINT = ("Broadcasting does the tiling for free: apply linear1 to a and linear2 to b as they are, and "
               "add the results; linear2(b) of shape [..., 1, out] broadcasts over the N axis. Never repeat, "
               "concatenate, index, expand-and-copy b, or allocate a new tensor in forward.")
BROADCAST_HINT = ("a + b broadcasts a's [N, 1] against b's [N] to an [N, N] table of all pairs a[i, 0] + b[j]. "
                  "Remove a's trailing axis first, naming it: a[:, 0] + b or a.squeeze(1) + b.")
SQUEEZE_HINT = ("squeeze() with no dim removes every axis of size 1, so for N = 1 the [1, 1] input becomes a "
                "0-d scalar and the result loses its [N] axis. Name the axis: a.squeeze(1) or a[:, 0].")
DTYPE_HINT = "Add the tensors directly; a result buffer made with torch.zeros(N) is float32 whatever the inputs."

TOL = {torch.float64: (1e-10, 1e-12), torch.float32: (1e-5, 1e-5)}

# aten operators (as TorchDispatchMode names them) that build a tiled or concatenated tensor.
TILING_OPS = frozenset({"repeat", "repeat_interleave", "tile", "cat", "concat", "concatenate", "stack", "hstack",
                        "vstack", "index", "index_select", "gather", "take_along_dim"})
NEW_TENSOR_OPS = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
                            "full", "full_like", "new_empty", "new_empty_strided", "new_zeros", "new_ones",
                            "new_full"})
# expand is a free view; one of these after it copies the expanded tensor into memory.
COPY_OPS = frozenset({"clone", "contiguous", "copy_", "_to_copy"})


def _expect(got: Tensor, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str) -> None:
    rtol, atol = TOL.get(want.dtype, (0.0, 0.0))
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device)


def _sizes(rng: torch.Generator, n: int, low: int = 2, high: int = 7) -> list[int]:
    return [int(s) for s in torch.randint(low, high, (n,), generator=rng)]


def _merge_inputs(rng: torch.Generator, rank: int, in1: int, in2: int) -> tuple[Tensor, Tensor]:
    """a: [*batch, N, in1]; b: [*batch', 1, in2], each batch' size equal to batch's or 1."""
    *batch, n = _sizes(rng, rank - 1)
    b_batch = [s if bool(torch.rand((), generator=rng) < 0.7) else 1 for s in batch]
    a = torch.randn(*batch, n, in1, generator=rng)
    b = torch.randn(*b_batch, 1, in2, generator=rng)
    return a, b


def _merge_with(api: Api, params: dict[str, Tensor], in1: int, in2: int, out: int, device: str,
                activation: str | None = None) -> RemoteObject:
    """A student Merge on `device` holding the judge's weights; a clear failure if its parameters do not fit."""
    merge = build_merge(api, in1, in2, out, device, activation)
    found = {name: list(t.shape) for name, t in api.student.inspect(merge)["parameters"].items()}
    wanted = {name: list(t.shape) for name, t in params.items()}
    if found != wanted:
        raise failure(call=f"Merge({in1}, {in2}, {out})", expected=f"parameters {wanted}", got=f"parameters {found}",
                      problem="the parameters are not those of two nn.Linear layers named linear1 and linear2, so "
                              "the judge cannot load known weights into them.", hint=STRUCTURE_HINT)
    api.student.set_parameters(merge, params)
    return merge


def _merge_call(a: Tensor, b: Tensor, out: int, activation: str | None = None) -> str:
    in1, in2 = a.shape[-1], b.shape[-1]
    act = f", activation=torch.{activation}" if activation else ""
    return (f"m = Merge({in1}, {in2}, {out}{act}) with the judge's weights, then m(a, b); expected: "
            f"nn.Linear({in1 + in2}, {out}) applied to torch.cat([a, b tiled to a's shape], -1)")


# -- Merge ---------------------------------------------------------------------------


@check(task="Merge", points=1, visible=True)
def check_merge_guide_example(api: Api, rng: torch.Generator, device: str) -> None:
    """the guide's shapes: a [5, 3, 5] and b [5, 1, 6] through Merge(5, 6, 10) give [5, 3, 10]"""
    ref, params = reference_linear(rng, 5, 6, 10)
    merge = _merge_with(api, params, 5, 6, 10, device)
    a, b = torch.rand(5, 3, 5, generator=rng), torch.rand(5, 1, 6, generator=rng)
    got = run_merge(api, merge, a, b)["value"]
    _expect(got, merge_oracle(ref, a, b).float(), _merge_call(a, b, 10), {"a": a, "b": b}, MERGE_HINT, device)


@check(task="Merge", points=1)
def check_merge_structure(api: Api, rng: torch.Generator, device: str) -> None:
    """Merge holds two nn.Linear layers, linear1 (in1 -> out) and linear2 (in2 -> out)"""
    in1, in2, out = _sizes(rng, 3)
    merge = build_merge(api, in1, in2, out, device)
    info = api.student.inspect(merge)
    kinds = {name: kind for name, kind in info["modules"].items() if name in ("linear1", "linear2")}
    found = {name: list(t.shape) for name, t in info["parameters"].items()}
    wanted = {"linear1.weight": [out, in1], "linear1.bias": [out], "linear2.weight": [out, in2],
              "linear2.bias": [out]}
    if kinds != {"linear1": "Linear", "linear2": "Linear"} or found != wanted:
        raise failure(call=f"Merge({in1}, {in2}, {out})",
                      expected=f"submodules linear1: Linear, linear2: Linear with parameters {wanted}",
                      got=f"submodules {dict(info['modules'])} with parameters {found}",
                      problem="the layers are not the guide's two nn.Linear layers.", hint=STRUCTURE_HINT)


@check(task="Merge", points=2)
def check_merge_random_shapes(api: Api, rng: torch.Generator, device: str) -> None:
    """equals a Linear on [a, b tiled] for random shapes of rank 2 to 4, b broadcast over N"""
    for rank in (2, 3, 4, 3):
        in1, in2, out = _sizes(rng, 3, 1, 9)
        ref, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device)
        a, b = _merge_inputs(rng, rank, in1, in2)
        got = run_merge(api, merge, a, b)["value"]
        _expect(got, merge_oracle(ref, a, b).float(), _merge_call(a, b, out), {"a": a, "b": b}, MERGE_HINT, device)


@check(task="Merge", points=2)
def check_merge_gradients(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradients with respect to a and b equal those of the Linear on [a, b tiled]"""
    for rank in (2, 3, 4):
        in1, in2, out = _sizes(rng, 3)
        ref, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device, "tanh")
        a, b = _merge_inputs(rng, rank, in1, in2)
        g = torch.randn(*torch.broadcast_shapes(a.shape[:-1], b.shape[:-1]), out, generator=rng)
        call = _merge_call(a, b, out, "tanh")
        _expect(run_merge(api, merge, a, b)["value"], merge_oracle(ref, a, b, "tanh").float(), call,
                {"a": a, "b": b}, MERGE_HINT, device)  # the value first
        with output_shape_checked():
            grads = run_merge(api, merge, a, b, wrt=(0, 1), grad_output=g)["grads"]
        a64, b64 = a.double().requires_grad_(True), b.double().requires_grad_(True)
        want = torch.autograd.grad(merge_oracle(ref, a64, b64, "tanh"), (a64, b64), g.double())
        for which, got, w in zip("ab", grads, want, strict=True):
            hint = GRAD_HINT + (" The gradient for b sums over the N axis b was broadcast along, so it has "
                                "b's shape." if which == "b" else "")
            _expect(got, w.float(), f"gradient with respect to {which} of {call}",
                    {"a": a, "b": b, "grad_output": g}, hint, device)


@check(task="Merge", points=2)
def check_merge_activation(api: Api, rng: torch.Generator, device: str) -> None:
    """activation=torch.relu or torch.tanh is applied once, to the sum"""
    for activation in ("relu", "tanh"):
        in1, in2, out = _sizes(rng, 3)
        ref, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device, activation)
        a, b = _merge_inputs(rng, 3, in1, in2)
        got = run_merge(api, merge, a, b)["value"]
        _expect(got, merge_oracle(ref, a, b, activation).float(), _merge_call(a, b, out, activation),
                {"a": a, "b": b}, ACTIVATION_HINT, device)


def _tiling_ops(ops: list[str]) -> list[str]:
    """The operators in `ops` that build a tiled copy, in the order they ran."""
    flagged = [op for op in ops if op in TILING_OPS or op in NEW_TENSOR_OPS]
    if "expand" in ops:
        after = ops[ops.index("expand"):]
        flagged += ["expand then " + op for op in after if op in COPY_OPS]
    return flagged


@check(task="Merge", points=2)
def check_merge_never_tiles(api: Api, rng: torch.Generator, device: str) -> None:
    """forward never builds the tiled tensor: no repeat, cat or expanded copy of b"""
    for rank in (3, 4):
        in1, in2, out = _sizes(rng, 3)
        _, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device)
        *batch, n = _sizes(rng, rank - 1, 3, 7)
        a, b = torch.randn(*batch, n, in1, generator=rng), torch.randn(*batch, 1, in2, generator=rng)
        ops = run_merge(api, merge, a, b, trace=True)["ops"]
        flagged = _tiling_ops(ops)
        if flagged:
            raise failure(call=f"m = Merge({in1}, {in2}, {out}); m(a, b), traced",
                          inputs=[f"a = {summarize(a)}", f"b = {summarize(b)}"],
                          expected="only the two linear layers and an add (for example view, t, addmm, add); nothing "
                                   "that copies b along the N axis",
                          got=f"these operators, in order: {', '.join(ops)}",
                          problem=f"{', '.join(dict.fromkeys(flagged))} build the tiled tensor that broadcasting "
                                  "avoids.", hint=TILING_HINT)


# -- paired_sums -----------------------------------------------------------------


@check(task="paired_sums", points=1, visible=True)
def check_paired_sums_guide_example(api: Api, device: str) -> None:
    """the guide's a = [[1.], [2.]], b = [1., 2.] give [2., 4.], not a 2 x 2 table"""
    a, b = torch.tensor([[1.0], [2.0]]), torch.tensor([1.0, 2.0])
    _expect(api.paired_sums(a, b), torch.tensor([2.0, 4.0]), "paired_sums(a, b)", {"a": a, "b": b},
            BROADCAST_HINT, device)


@check(task="paired_sums", points=2)
def check_paired_sums_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random a [N, 1] and b [N] give the [N] sums a[i, 0] + b[i]"""
    # one small N, and two above 36 so that messages show the inputs compactly
    for n in _sizes(rng, 1, 2, 7) + _sizes(rng, 2, 37, 65):
        a, b = torch.randn(n, 1, generator=rng), torch.randn(n, generator=rng)
        _expect(api.paired_sums(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)",
                {"a": a, "b": b}, BROADCAST_HINT, device)


@check(task="paired_sums", points=1, visible=True)
def check_paired_sums_single_pair(api: Api, rng: torch.Generator, device: str) -> None:
    """N = 1: a [1, 1] and b [1] give shape [1], not a 0-d scalar"""
    a, b = torch.randn(1, 1, generator=rng), torch.randn(1, generator=rng)
    _expect(api.paired_sums(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)", {"a": a, "b": b},
            SQUEEZE_HINT, device)


@check(task="paired_sums", points=1)
def check_paired_sums_dtypes(api: Api, rng: torch.Generator, device: str) -> None:
    """the result keeps the inputs' dtype: float64 and int64"""
    n = _sizes(rng, 1, 2, 20)[0]
    f64 = torch.float64
    pairs = [(torch.randn(n, 1, generator=rng, dtype=f64), torch.randn(n, generator=rng, dtype=f64)),
             (torch.randint(-100, 100, (n, 1), generator=rng), torch.randint(-100, 100, (n,), generator=rng))]
    for a, b in pairs:
        expect_tensor(api.paired_sums(a, b), paired_sums_oracle(a, b), call="paired_sums(a, b)",
                      inputs={"a": a, "b": b}, hint=BROADCAST_HINT, dtype_hint=DTYPE_HINT, rtol=1e-12, atol=0.0,
                      device=device)


@check(task="paired_sums", points=1)
def check_paired_sums_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradient flows back to a (shape [N, 1]) and to b (shape [N])"""
    n = _sizes(rng, 1, 2, 20)[0]
    a, b = torch.randn(n, 1, generator=rng), torch.randn(n, generator=rng)
    g = torch.randn(n, generator=rng)
    _expect(api.paired_sums(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)", {"a": a, "b": b},
            BROADCAST_HINT, device)  # the value first
    with output_shape_checked():
        _, grads = api.paired_sums.vjp(g, wrt=(0, 1))(a, b)
    for which, got, want in zip("ab", grads, (g.unsqueeze(1), g), strict=True):
        _expect(got, want, f"gradient of paired_sums(a, b) with respect to {which}",
                {"a": a, "b": b, "grad_output": g}, GRAD_HINT, device)
