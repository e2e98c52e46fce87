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

from autograder.judging.api import StudentApi, answer, harness
from autograder.judging.expect import expect_tensor, failure, output_shape_checked
from autograder.judging.plugin import check
from autograder.judging.remote import summarize
from autograder.judging.results import OPS_LARGE, OPS_SMALL, RecordProperty, record_measured
from autograder.sandbox.runtime.wire import RemoteObject

# -- the API: what the notebook asks for, as the judge calls it -----------------

# The notebook's example: a call every working paired_sums answers.
PAIRED_SUMS_EXAMPLE = (torch.tensor([[1.0], [2.0]]), torch.tensor([1.0, 2.0]))
# The stretch's: B = 1, N = 1, M = 2, one real key; H = Dq = Dk = 1.
ADDITIVE_EXAMPLE = (torch.ones(1, 1, 1), torch.ones(1, 2, 1), torch.tensor([1]), torch.ones(1, 1), torch.ones(1, 1),
                    torch.ones(1))


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

    @answer(example=ADDITIVE_EXAMPLE)
    def additive_scores(self, q: Tensor, k: Tensor, lengths: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor) -> Tensor:
        """Stretch: [B, N, M] scores v . tanh(W_q q_i + W_k k_j), -inf for keys j >= lengths[b]."""


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


def _expect(got: Tensor | None, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str) -> None:
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


# -- additive_scores (stretch, bonus) ------------------------------------------------
# Every pair on purpose: Merge's two projections broadcast over a [B, N, M] table, and a per-example length
# mask that must broadcast over the queries. The oracle concatenates every pair in float64, as the guide's
# tiled form would, and fills the padding example by example.

ADDITIVE_CALL = "additive_scores(q, k, lengths, w_q, w_k, v)"
PAIRS_HINT = ("Project once per vector, pq = q @ w_q.T of shape [B, N, H] and pk = k @ w_k.T of shape [B, M, H], "
              "then give each its own new axis so that pq[:, :, None] + pk[:, None] is [B, N, M, H]; tanh, then "
              "contract H with v. Swapping the two new axes gives [B, M, N], the same shape when N == M.")
MASK_HINT = ("The lengths are one per example: compare torch.arange(M) with lengths[:, None] to get a [B, M] mask, "
             "then give it a query axis, [B, 1, M]. torch.arange(M) < lengths lines lengths up with the keys (the "
             "rule matches shapes from the right), which broadcasts without error when B == M and is wrong.")
FILL_HINT = ("Set the padded scores with masked_fill(mask, float('-inf')) or torch.where: multiplying by a 0/1 mask "
             "computes 0 * -inf = nan.")
ADDITIVE_GRAD_HINT = ("Build the scores from differentiable operations on all five inputs, and put -inf in with "
                      "masked_fill or torch.where: a padded score then has zero gradient everywhere, not nan. "
                      "Avoid .detach(), .data and in-place writes into tensors you made yourself.")
ADDITIVE_TOL = {torch.float64: (1e-10, 1e-10), torch.float32: (1e-5, 1e-5)}


def additive_inputs(rng: torch.Generator, b: int, n: int, m: int, lengths: list[int] | None = None,
                    dtype: torch.dtype = torch.float32, features: list[int] | None = None) -> tuple[Tensor, ...]:
    """q, k, lengths, w_q, w_k, v; feature sizes Dq, Dk, H random unless given, lengths random in [0, m]."""
    dq, dk, h = features or _sizes(rng, 3, 1, 9)
    q = torch.randn(b, n, dq, generator=rng, dtype=dtype)
    k = torch.randn(b, m, dk, generator=rng, dtype=dtype)
    lens = torch.tensor(lengths) if lengths is not None else torch.randint(0, m + 1, (b,), generator=rng)
    w_q = torch.randn(h, dq, generator=rng, dtype=dtype) / dq ** 0.5
    w_k = torch.randn(h, dk, generator=rng, dtype=dtype) / dk ** 0.5
    v = torch.randn(h, generator=rng, dtype=dtype)
    return q, k, lens, w_q, w_k, v


def additive_oracle(q: Tensor, k: Tensor, lengths: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor) -> Tensor:
    """Every pair concatenated and fed to the joint layer [w_q, w_k], in float64; -inf past each length."""
    b, n, m = q.shape[0], q.shape[1], k.shape[1]
    q64, k64, v64 = q.double(), k.double(), v.double()
    pairs = torch.cat([q64[:, :, None, :].expand(b, n, m, -1), k64[:, None, :, :].expand(b, n, m, -1)], dim=-1)
    scores = torch.tanh(pairs @ torch.cat([w_q, w_k], dim=1).double().T) @ v64
    for i, length in enumerate(lengths.tolist()):
        scores[i, :, length:] = float("-inf")
    return scores.to(q.dtype)


def _additive_shown(inputs: tuple[Tensor, ...]) -> dict[str, Tensor]:
    return dict(zip(("q", "k", "lengths", "w_q", "w_k", "v"), inputs, strict=True))


def _expect_additive(api: Api, inputs: tuple[Tensor, ...], hint: str, device: str) -> None:
    rtol, atol = ADDITIVE_TOL[inputs[0].dtype]
    want = additive_oracle(*inputs)
    got = api.additive_scores(*inputs)
    if isinstance(got, Tensor) and got.shape == want.shape and bool(torch.isnan(got).any()):
        hint = FILL_HINT
    expect_tensor(got, want, call=ADDITIVE_CALL, inputs=_additive_shown(inputs), hint=hint, rtol=rtol,
                  atol=atol * (1.0 + float(inputs[5].abs().sum())), device=device)


@check(task="additive_scores", points=1, visible=True)
def check_additive_scores_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random B, N, M (all different) and lengths match every pair concatenated, float32 and float64"""
    for dtype in (torch.float32, torch.float32, torch.float64):
        b, n, m = (int(s) for s in torch.randperm(6, generator=rng)[:3] + 2)
        _expect_additive(api, additive_inputs(rng, b, n, m, dtype=dtype), PAIRS_HINT, device)


@check(task="additive_scores", points=1)
def check_additive_scores_lengths_per_example(api: Api, rng: torch.Generator, device: str) -> None:
    """B == N == M, with lengths 0, M and in between: the mask goes per example, not per key"""
    m = _sizes(rng, 1, 3, 6)[0]
    lengths = [int(x) for x in torch.randint(1, m, (m,), generator=rng)]
    lengths[0], lengths[-1] = m, 0
    _expect_additive(api, additive_inputs(rng, m, m, m, lengths), MASK_HINT, device)


@check(task="additive_scores", points=1)
def check_additive_scores_sizes_of_one(api: Api, rng: torch.Generator, device: str) -> None:
    """one query, one key, one example: the [B, N, M] shape keeps every axis"""
    n, m = _sizes(rng, 2, 2, 6)
    for b, n_, m_ in ((2, 1, m), (2, n, 1), (1, n, m), (1, 1, 1)):
        lengths = [int(x) for x in torch.randint(0, m_ + 1, (b,), generator=rng)]
        lengths[0] = m_
        _expect_additive(api, additive_inputs(rng, b, n_, m_, lengths), SQUEEZE_HINT + " " + PAIRS_HINT, device)


@check(task="additive_scores", points=1)
def check_additive_scores_gradients(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradients with respect to q, k, w_q, w_k and v are those of the reference, finite where masked"""
    b, n, m = (int(s) for s in torch.randperm(5, generator=rng)[:3] + 2)
    inputs = additive_inputs(rng, b, n, m, [m] + [int(x) for x in torch.randint(0, m, (b - 1,), generator=rng)])
    _expect_additive(api, inputs, PAIRS_HINT, device)  # the value first
    g = torch.randn(b, n, m, generator=rng)
    wrt = (0, 1, 3, 4, 5)
    with output_shape_checked():
        _, grads = api.additive_scores.vjp(g, wrt=wrt)(*inputs)
    leaves = [t.double().requires_grad_(True) if i in wrt else t for i, t in enumerate(inputs)]
    out = additive_oracle(*leaves)
    real = torch.isfinite(out)
    want = torch.autograd.grad(out.masked_fill(~real, 0.0), [leaves[i] for i in wrt], g.double() * real)
    names = ("q", "k", "lengths", "w_q", "w_k", "v")
    for i, got, w in zip(wrt, grads, want, strict=True):
        expect_tensor(got, w.float(), call=f"gradient with respect to {names[i]} of {ADDITIVE_CALL}",
                      inputs={**_additive_shown(inputs), "grad_output": g}, hint=ADDITIVE_GRAD_HINT, rtol=1e-4,
                      atol=1e-4 * (1.0 + float(g.abs().sum())), device=device)


@check(task="additive_scores", points=1)
def check_additive_scores_never_tiles(api: Api, rng: torch.Generator, record_property: RecordProperty) -> None:
    """no pairs built by repeat, cat or an expanded copy, and no loop: the operations do not grow with B, N, M"""
    features = _sizes(rng, 3, 2, 9)  # the same for both: einsum's path may depend on them
    small = additive_inputs(rng, 2, 3, 4, [4, 1], features=features)
    large = additive_inputs(rng, 7, 9, 11, [11, 0, 3, 5, 7, 9, 10], features=features)
    _, ops_small = api.additive_scores.traced(*small)
    _, ops = api.additive_scores.traced(*large)
    record_measured(record_property, **{OPS_SMALL: len(ops_small), OPS_LARGE: len(ops)})
    shown = ", ".join(ops[:30]) + (", ..." if len(ops) > 30 else "")
    flagged = [op for op in ops if op in TILING_OPS]
    if "expand" in ops:
        flagged += ["expand then " + op for op in ops[ops.index("expand"):] if op in COPY_OPS]
    if flagged:
        raise failure(call=f"{ADDITIVE_CALL}, traced", inputs=[f"q = {summarize(large[0])}",
                                                              f"k = {summarize(large[1])}"],
                      expected="one projection of q and one of k, a broadcast add, tanh, a contraction with v and a "
                               "masked fill; nothing that copies the vectors into pairs",
                      got=f"these operators, in order: {shown}",
                      problem=f"{', '.join(dict.fromkeys(flagged))} build the tiled pairs that broadcasting avoids.",
                      hint=PAIRS_HINT)
    if len(ops) > len(ops_small):
        raise failure(call=f"{ADDITIVE_CALL}, traced on two input sizes",
                      expected="the same number of tensor operations for B, N, M = 2, 3, 4 as for 7, 9, 11",
                      got=f"{len(ops_small)} operations for the small input, {len(ops)} for the large one: {shown}",
                      problem="the number of operations grows with the input, so your code loops in Python.",
                      hint=MASK_HINT)
