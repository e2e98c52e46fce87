"""Hidden checks for 03_broadcasting: Merge, paired_sums and six broadcasting puzzles.

Merge is judged against the judge's own nn.Linear(in1 + in2, out) applied,
in float64, to the concatenation of `a` and `b` tiled to `a`'s shape: its
weight is split into two blocks and copied into the student's `linear1` and
`linear2`. Random inputs come from `rng`, seeded by the grading's secret seed.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
from torch import Tensor

from autograder.chapters.ch03_broadcasting.puzzles import PUZZLES, TOL, sizes
from autograder.judging.authoring import (
    LOOP_RATIO,
    MEMORY_BAR_MIB,
    MEMORY_MIB,
    CpuTime,
    RecordProperty,
    RemoteObject,
    Run,
    Student,
    StudentApi,
    StudentError,
    answer,
    check,
    expect_puzzle,
    expect_puzzle_random,
    expect_puzzle_rule,
    expect_tensor,
    fail,
    failure,
    harness,
    interleave,
    output_shape_checked,
    record_measured,
    record_note,
    reference_process,
    summarize,
)

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

    @answer(example=PUZZLES["times_table"].example)
    def times_table(self, n: int) -> Tensor:
        """Puzzle: [n, n] int64, entry [i, j] = (i + 1) * (j + 1)."""

    @answer(example=PUZZLES["outer_sum"].example)
    def outer_sum(self, x: Tensor, y: Tensor) -> Tensor:
        """Puzzle: [N, M], entry [i, j] = x[i] + y[j]."""

    @answer(example=PUZZLES["lower_mask"].example)
    def lower_mask(self, n: int) -> Tensor:
        """Puzzle: [n, n] bool, True where j <= i."""

    @answer(example=PUZZLES["one_hot"].example)
    def one_hot(self, idx: Tensor, c: int) -> Tensor:
        """Puzzle: [N, c] bool, entry [i, j] True where idx[i] == j."""

    @answer(example=PUZZLES["rescale_rows"].example)
    def rescale_rows(self, x: Tensor) -> Tensor:
        """Puzzle: each row of x [N, D] mapped linearly onto [0, 1]: its smallest entry 0, its largest 1."""

    @answer(example=PUZZLES["pairwise_l1"].example)
    def pairwise_l1(self, x: Tensor, y: Tensor) -> Tensor:
        """Puzzle: [N, M], entry [i, j] = sum over d of |x[i, d] - y[j, d]|."""


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
    return (a[..., 0].double() + b.double()).to(a.dtype)


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
               "concatenate or expand-and-copy b (in torch, numpy or anything else): its tiled copy can be far "
               "larger than memory.")
BROADCAST_HINT = ("a + b broadcasts a's [N, 1] against b's [N] to an [N, N] table of all pairs a[i, 0] + b[j]. "
                  "Remove a's trailing axis first, naming it from the right, so that a batch's leading axis "
                  "does not move it: a[..., 0] + b or a.squeeze(-1) + b.")
SQUEEZE_HINT = ("squeeze() without a dim removes every axis of size 1: for N = 1 a [1, 1] becomes a 0-d scalar, "
                "and in a batch a [B, 1, 1] becomes [B], which broadcasts against b's [B, 1] to a [B, B] table. "
                "Name the axis: a.squeeze(-1) or a[..., 0].")
# additive_scores' [B, N, 1] scores, squeezed at N = 1 or M = 1
SCORES_SQUEEZE_HINT = ("squeeze() with no dim removes every axis of size 1, so for N = 1 the [1, 1] input becomes "
                       "a 0-d scalar and the result loses its [N] axis. Name the axis: a.squeeze(1) or a[:, 0].")
BATCH_HINT = ("With a batch, a is [B, N, 1] and b is [B, N]: a[:, 0] picks a's N axis, not its last one, and "
              "squeeze(1) squeezes N. Count from the right: a[..., 0] or a.squeeze(-1).")
DTYPE_HINT = "Add the tensors directly; a result buffer made with torch.zeros(N) is float32 whatever the inputs."

# aten operators (as TorchDispatchMode names them) that build a tiled or concatenated tensor: messages name them.
TILING_OPS = frozenset({"repeat", "repeat_interleave", "tile", "cat", "concat", "concatenate", "stack", "hstack",
                        "vstack", "index", "index_select", "gather", "take_along_dim"})
# expand is a free view; one of these after it copies the expanded tensor into memory.
COPY_OPS = frozenset({"clone", "contiguous", "copy_", "_to_copy"})


def _expect(got: Tensor | None, want: Tensor, call: str, inputs: dict[str, Tensor], hint: str, device: str) -> None:
    rtol, atol = TOL.get(want.dtype, (0.0, 0.0))
    expect_tensor(got, want, call=call, inputs=inputs, hint=hint, rtol=rtol, atol=atol, device=device)


def _merge_inputs(rng: torch.Generator, rank: int, in1: int, in2: int) -> tuple[Tensor, Tensor]:
    """a: [*batch, N, in1]; b: [*batch', 1, in2], each batch' size equal to batch's or 1."""
    *batch, n = sizes(rng, rank - 1)
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
    in1, in2, out = sizes(rng, 3)
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


@check(task="Merge", points=1)
def check_merge_random_shapes(api: Api, rng: torch.Generator, device: str) -> None:
    """equals a Linear on [a, b tiled] for random shapes of rank 2 to 4, b broadcast over N"""
    for rank in (2, 3, 4, 3):
        in1, in2, out = sizes(rng, 3, 1, 9)
        ref, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device)
        a, b = _merge_inputs(rng, rank, in1, in2)
        got = run_merge(api, merge, a, b)["value"]
        _expect(got, merge_oracle(ref, a, b).float(), _merge_call(a, b, out), {"a": a, "b": b}, MERGE_HINT, device)


@check(task="Merge", points=1)
def check_merge_gradients(api: Api, rng: torch.Generator, device: str) -> None:
    """the gradients with respect to a and b equal those of the Linear on [a, b tiled]"""
    for rank in (2, 3, 4):
        in1, in2, out = sizes(rng, 3)
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


@check(task="Merge", points=1)
def check_merge_activation(api: Api, rng: torch.Generator, device: str) -> None:
    """activation=torch.relu or torch.tanh is applied once, to the sum"""
    for activation in ("relu", "tanh"):
        in1, in2, out = sizes(rng, 3)
        ref, params = reference_linear(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device, activation)
        a, b = _merge_inputs(rng, 3, in1, in2)
        got = run_merge(api, merge, a, b)["value"]
        _expect(got, merge_oracle(ref, a, b, activation).float(), _merge_call(a, b, out, activation),
                {"a": a, "b": b}, ACTIVATION_HINT, device)


def _tiling_ops(ops: list[str]) -> list[str]:
    """The operators in `ops` that build a tiled copy, in the order they ran (for messages only)."""
    flagged = [op for op in ops if op in TILING_OPS]
    if "expand" in ops:
        flagged += ["expand then " + op for op in ops[ops.index("expand"):] if op in COPY_OPS]
    return list(dict.fromkeys(flagged))


# -- never building the tiled tensor: the kernel's evidence ---------------------------------------------------------
# Whether code builds the tiled copy rests on limits and accounting of the kernel and on the judge's oracle, never on
# a record made in the student's process (an operator trace there misses numpy, other threads, and can be switched
# off). Two inputs, one call each:
# - out of reach, in every mode: the tiled copy takes about 1 TiB, far beyond any memory a grading has (the box's
#   8 GiB address-space limit on CPU, its 8 GiB memory cgroup, a GPU's memory), while broadcasting needs some tens
#   of MiB. Code that builds the copy fails to allocate it, or is killed; memory it reserved earlier cannot hold it.
#   The output must equal the judge's broadcasting oracle (inputs of small integers, so float32 sums are exact).
# - measured, on CPU where the kernel's accounting can be read: the tiled copy takes 256 MiB, and the judge reads how
#   far the box's memory rose during the call (Student.control.peak_memory: its memory cgroup's high-water mark, cgroup
#   v1 memory.max_usage_in_bytes, or v2 memory.peak on kernels 6.12 and later; else the VmHWM of its processes, as on
#   a v2 kernel before 6.12 or without cgroups). A rise above a quarter of the copy fails. `benchmarks/never_tiles.py
#   --runs 2` on the kit's 2-core machine (kernel 6.18) beside a CPU hog, against the bar of 64 MiB: every correct
#   form rose by 0.75 MiB at most (cgroup v1; 0.125 MiB with VmHWM, less the file pages mapped during the call),
#   every tiled form by 254 MiB or more (memory reserved before the call and reused hides it: the out-of-reach
#   input catches that). Where
#   nothing can be read (no cgroup and /proc/PID/clear_refs not writable) or on a GPU (device memory is not
#   counted) this part is skipped: the out-of-reach input still fails every tiled copy, and no correct code loses
#   a point for a measurement that could not be made.
OUT_OF_REACH = 1 << 19  # the N axis and the tiled features: 2^19 x 2^19 float32 = 1 TiB
MEASURED = (1 << 12, 1 << 14)  # the same, measured: 2^12 x 2^14 float32 = 256 MiB
MEMORY_SHARE = 4  # a rise above 1 / MEMORY_SHARE of the tiled copy fails
MIB = 1 << 20


def _size(n: int) -> str:
    """Bytes in a unit a student reads at a glance."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n / MIB:.2g} MiB"


def _small_ints(rng: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    """Entries -1, 0 or 1 times `scale` (a power of 2): float32 sums of their products are exact in any order."""
    return torch.randint(-1, 2, shape, generator=rng).float() * scale


def _exact_params(rng: torch.Generator, in1: int, in2: int, out: int) -> dict[str, Tensor]:
    return {"linear1.weight": _small_ints(rng, out, in1, scale=0.25), "linear1.bias": torch.randn(out, generator=rng),
            "linear2.weight": _small_ints(rng, out, in2, scale=0.25), "linear2.bias": torch.randn(out, generator=rng)}


def merge_broadcast_oracle(params: dict[str, Tensor], a: Tensor, b: Tensor) -> Tensor:
    """linear1(a) + linear2(b) in float64, b broadcast: the judge never builds the tiled copy either."""
    w1, c1, w2, c2 = (params[k].double() for k in ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"))
    return (a.double() @ w1.T + c1) + (b.double() @ w2.T + c2)


def _traced_note(trace: Callable[[], list[str]]) -> str:
    """What an operator trace on a small input saw, for the message only (it decides nothing); '' if nothing."""
    try:
        flagged = _tiling_ops(trace())
    except StudentError:
        return ""
    return (f"An operator trace of the same code on a small input (for information; it decides nothing) saw: "
            f"{', '.join(flagged)}." if flagged else "")


def expect_no_tiled_copy(api: StudentApi, measured: bool, run: Callable[[], Any], tiled: int, needs: int, call: str,
                         inputs: list[str], hint: str, note: Callable[[], str], record_property: RecordProperty,
                         device: str) -> Any:
    """`run()`'s value, on an input whose tiled copy takes `tiled` bytes (broadcasting needs about `needs`).

    `measured`: fail if the box's memory rose by more than 1 / MEMORY_SHARE of the copy during the call, where the
    kernel's accounting can be read (on CPU). Else the copy is out of reach: a failure of the call is said to be the
    copy that could not be made."""
    if not measured:
        try:
            return run()
        except StudentError as e:
            raise failure(after=str(e), call=call, inputs=inputs,
                          expected=f"the answer, with about {_size(needs)} of memory (inputs, output and temporaries)",
                          problem=f"the tiled copy of this input takes {_size(tiled)}, more memory than any grading "
                                  "has (8 GiB for the whole process on CPU, and any GPU's), so code that builds it "
                                  "fails here.", detail=note(), hint=hint) from None
    if device != "cpu":
        return run()
    with api.student.control.peak_memory() as peak:
        value = run()
    bar = tiled // MEMORY_SHARE
    if peak.grown is None:
        record_note(record_property, "Memory:   not measured here (no memory accounting the judge can read); the "
                                     "input whose tiled copy cannot fit decides alone.")
        return value
    record_measured(record_property, {MEMORY_MIB: peak.grown / MIB, MEMORY_BAR_MIB: bar / MIB})
    record_note(record_property, f"Memory:   {call}: rose by {_size(peak.grown)} ({peak.how}); the tiled copy would "
                                 f"take {_size(tiled)}, broadcasting needs about {_size(needs)} (bar: {_size(bar)})")
    if peak.grown > bar:
        raise failure(call=call, inputs=inputs,
                      expected=f"memory rising by about {_size(needs)} (inputs, output and temporaries), and by no "
                               f"more than {_size(bar)}",
                      got=f"the box's memory rose by {_size(peak.grown)} during the call (the kernel's {peak.how})",
                      problem=f"the call built a tiled copy: it takes {_size(tiled)}, which broadcasting never "
                              "builds.", detail=note(), hint=hint)
    return value


def _merge_value(api: Api, merge: RemoteObject, a: Tensor, b: Tensor) -> Any:
    return run_merge(api, merge, a, b)["value"]


@check(task="Merge", points=1)
def check_merge_never_tiles(api: Api, rng: torch.Generator, device: str, record_property: RecordProperty) -> None:
    """forward never builds the tiled tensor: b [1, 1, 2^19] broadcast over a [1, 2^19, in1], 1 TiB if copied"""
    in1, out = sizes(rng, 2, 1, 5)

    def tiled_ops() -> list[str]:
        small = torch.Generator().manual_seed(0)
        merge = _merge_with(api, _exact_params(small, in1, 6, out), in1, 6, out, device)
        return run_merge(api, merge, torch.randn(1, 5, in1), torch.randn(1, 1, 6), trace=True)["ops"]

    note = functools.partial(_traced_note, tiled_ops)
    for measured, (n, in2) in ((True, MEASURED), (False, (OUT_OF_REACH, OUT_OF_REACH))):
        n, in2 = n + sizes(rng, 1, 0, 64)[0], in2 + sizes(rng, 1, 0, 64)[0]
        params = _exact_params(rng, in1, in2, out)
        merge = _merge_with(api, params, in1, in2, out, device)
        a, b = _small_ints(rng, 1, n, in1), _small_ints(rng, 1, 1, in2)
        call = f"m = Merge({in1}, {in2}, {out}); m(a, b)"
        inputs = [f"a = {summarize(a)}", f"b = {summarize(b)}"]
        tiled, needs = 4 * n * in2, 4 * (a.numel() + b.numel() + params["linear2.weight"].numel() + 3 * n * out)
        got = expect_no_tiled_copy(api, measured, functools.partial(_merge_value, api, merge, a, b), tiled, needs,
                                   call, inputs, TILING_HINT, note, record_property, device)
        _expect(got, merge_broadcast_oracle(params, a, b).float(), call, {"a": a, "b": b}, MERGE_HINT, device)


# -- paired_sums -----------------------------------------------------------------


@check(task="paired_sums", points=1, visible=True)
def check_paired_sums_guide_example(api: Api, device: str) -> None:
    """the guide's a = [[1.], [2.]], b = [1., 2.] give [2., 4.], not a 2 x 2 table"""
    a, b = torch.tensor([[1.0], [2.0]]), torch.tensor([1.0, 2.0])
    _expect(api.paired_sums(a, b), torch.tensor([2.0, 4.0]), "paired_sums(a, b)", {"a": a, "b": b},
            BROADCAST_HINT, device)


@check(task="paired_sums", points=1)
def check_paired_sums_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random a [N, 1] and b [N] give the [N] sums a[i, 0] + b[i]; batches [B, N, 1] and [B, N] give [B, N]"""
    # one small N, and two above 36 so that messages show the inputs compactly
    for n in sizes(rng, 1, 2, 7) + sizes(rng, 2, 37, 65):
        a, b = torch.randn(n, 1, generator=rng), torch.randn(n, generator=rng)
        _expect(api.paired_sums(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)",
                {"a": a, "b": b}, BROADCAST_HINT, device)
    for batch, n in ((sizes(rng, 1, 2, 5)[0], sizes(rng, 1, 5, 9)[0]), (1, sizes(rng, 1, 2, 7)[0])):
        a, b = torch.randn(batch, n, 1, generator=rng), torch.randn(batch, n, generator=rng)
        _expect(api.paired_sums.using(hint=BATCH_HINT)(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)",
                {"a": a, "b": b}, BATCH_HINT, device)


def squeezed_everything(a: Tensor, b: Tensor) -> Tensor | None:
    """What `a.squeeze() + b` gives, the mistake section 4 warns about, or None where it raises."""
    try:
        return a.squeeze() + b
    except RuntimeError:
        return None


@check(task="paired_sums", points=1, visible=True)
def check_paired_sums_single_pair(api: Api, rng: torch.Generator, device: str) -> None:
    """N = 1: a [1, 1] and b [1] give shape [1]; in a batch, a [B, 1, 1] and b [B, 1] give [B, 1], not [B, B]"""
    batch = sizes(rng, 1, 2, 6)[0]
    for a, b in ((torch.randn(1, 1, generator=rng), torch.randn(1, generator=rng)),
                 (torch.randn(batch, 1, 1, generator=rng), torch.randn(batch, 1, generator=rng))):
        got = api.paired_sums.using(hint=SQUEEZE_HINT)(a, b)
        want, inputs = paired_sums_oracle(a, b), {"a": a, "b": b}
        squeezed = squeezed_everything(a, b)
        if isinstance(got, Tensor) and got.shape != want.shape and squeezed is not None \
                and got.shape == squeezed.shape and torch.equal(got, squeezed):
            fail("paired_sums(a, b)", inputs, want, got,
                 f"the result of a.squeeze() + b: squeeze() without a dim also dropped the axis N = 1, "
                 f"leaving {list(a.squeeze().shape)}, which broadcasts against b {list(b.shape)}.", SQUEEZE_HINT,
                 "paired_sums/squeeze-without-dim")
        _expect(got, want, "paired_sums(a, b)", inputs, SQUEEZE_HINT, device)


@check(task="paired_sums", points=1)
def check_paired_sums_dtypes(api: Api, rng: torch.Generator, device: str) -> None:
    """the result keeps the inputs' dtype: float64 and int64"""
    n = sizes(rng, 1, 2, 20)[0]
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
    n = sizes(rng, 1, 2, 20)[0]
    a, b = torch.randn(n, 1, generator=rng), torch.randn(n, generator=rng)
    g = torch.randn(n, generator=rng)
    _expect(api.paired_sums(a, b), paired_sums_oracle(a, b), "paired_sums(a, b)", {"a": a, "b": b},
            BROADCAST_HINT, device)  # the value first
    with output_shape_checked():
        _, grads = api.paired_sums.vjp(g, wrt=(0, 1))(a, b)
    for which, got, want in zip("ab", grads, (g.unsqueeze(-1), g), strict=True):
        _expect(got, want, f"gradient of paired_sums(a, b) with respect to {which}",
                {"a": a, "b": b, "grad_output": g}, GRAD_HINT, device)


# -- puzzles (puzzles.py) ------------------------------------------------------------------------------------------
# Six one-expression puzzles. Each: a visible check (the notebook's example), a hidden one on random shapes from
# `rng`, and a rule check read from the source (autograder/judging/static/rules.py, puzzle_breaks) whose point also
# needs the right answer on the example. A wrong answer that matches a named mistake gets that mistake's hint.


@check(task="times_table", points=1, visible=True)
def check_times_table_example(api: Api) -> None:
    """times_table(3) is the notebook's 3 x 3 table"""
    expect_puzzle(api, PUZZLES["times_table"], PUZZLES["times_table"].example, None, example=True)


@check(task="times_table", points=1)
def check_times_table_random(api: Api, rng: torch.Generator) -> None:
    """random n from 1 to 12, int64"""
    expect_puzzle_random(api, PUZZLES["times_table"], rng, None)


@check(task="times_table", points=1, rule=True)
def check_times_table_rule(api: Api) -> None:
    """rule: one expression of operators, indexing and torch.arange (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["times_table"], None)


@check(task="outer_sum", points=1, visible=True)
def check_outer_sum_example(api: Api, device: str) -> None:
    """the notebook's x of 2 and y of 3 give a [2, 3] table"""
    expect_puzzle(api, PUZZLES["outer_sum"], PUZZLES["outer_sum"].example, device, example=True)


@check(task="outer_sum", points=1)
def check_outer_sum_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random N and M (1 included, N == M too), float32 and int64"""
    expect_puzzle_random(api, PUZZLES["outer_sum"], rng, device)


@check(task="outer_sum", points=1, rule=True)
def check_outer_sum_rule(api: Api, device: str) -> None:
    """rule: one expression of operators and indexing (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["outer_sum"], device)


@check(task="lower_mask", points=1, visible=True)
def check_lower_mask_example(api: Api) -> None:
    """lower_mask(3) is the notebook's 3 x 3 mask"""
    expect_puzzle(api, PUZZLES["lower_mask"], PUZZLES["lower_mask"].example, None, example=True)


@check(task="lower_mask", points=1)
def check_lower_mask_random(api: Api, rng: torch.Generator) -> None:
    """random n from 1 to 12, bool"""
    expect_puzzle_random(api, PUZZLES["lower_mask"], rng, None)


@check(task="lower_mask", points=1, rule=True)
def check_lower_mask_rule(api: Api) -> None:
    """rule: one expression of operators, indexing and torch.arange (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["lower_mask"], None)


@check(task="one_hot", points=1, visible=True)
def check_one_hot_example(api: Api, device: str) -> None:
    """the notebook's idx = [2, 0] with c = 3"""
    expect_puzzle(api, PUZZLES["one_hot"], PUZZLES["one_hot"].example, device, example=True)


@check(task="one_hot", points=1)
def check_one_hot_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random N and c (1 included, N == c too), classes repeated and unused"""
    expect_puzzle_random(api, PUZZLES["one_hot"], rng, device)


@check(task="one_hot", points=1, rule=True)
def check_one_hot_rule(api: Api, device: str) -> None:
    """rule: one expression of operators, indexing and torch.arange (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["one_hot"], device)


@check(task="rescale_rows", points=1, visible=True)
def check_rescale_rows_example(api: Api, device: str) -> None:
    """the notebook's [2, 3] example"""
    expect_puzzle(api, PUZZLES["rescale_rows"], PUZZLES["rescale_rows"].example, device, example=True)


@check(task="rescale_rows", points=1)
def check_rescale_rows_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random N and D >= 2 (N = 1 and N == D included), float32 and float64"""
    expect_puzzle_random(api, PUZZLES["rescale_rows"], rng, device)


@check(task="rescale_rows", points=1, rule=True)
def check_rescale_rows_rule(api: Api, device: str) -> None:
    """rule: one expression of operators, indexing, .amin and .amax (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["rescale_rows"], device)


@check(task="pairwise_l1", points=1, visible=True)
def check_pairwise_l1_example(api: Api, device: str) -> None:
    """the notebook's 2 rows against 3 rows of 2 features"""
    expect_puzzle(api, PUZZLES["pairwise_l1"], PUZZLES["pairwise_l1"].example, device, example=True)


@check(task="pairwise_l1", points=1)
def check_pairwise_l1_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random N, M and D (1 included, N == M == D too)"""
    expect_puzzle_random(api, PUZZLES["pairwise_l1"], rng, device)


@check(task="pairwise_l1", points=1, rule=True)
def check_pairwise_l1_rule(api: Api, device: str) -> None:
    """rule: one expression of operators, indexing, .abs and .sum (read from your code)"""
    expect_puzzle_rule(api, PUZZLES["pairwise_l1"], device)


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
    dq, dk, h = features or sizes(rng, 3, 1, 9)
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
    m = sizes(rng, 1, 3, 6)[0]
    lengths = [int(x) for x in torch.randint(1, m, (m,), generator=rng)]
    lengths[0], lengths[-1] = m, 0
    _expect_additive(api, additive_inputs(rng, m, m, m, lengths), MASK_HINT, device)


@check(task="additive_scores", points=1)
def check_additive_scores_sizes_of_one(api: Api, rng: torch.Generator, device: str) -> None:
    """one query, one key, one example: the [B, N, M] shape keeps every axis"""
    n, m = sizes(rng, 2, 2, 6)
    for b, n_, m_ in ((2, 1, m), (2, n, 1), (1, n, m), (1, 1, 1)):
        lengths = [int(x) for x in torch.randint(0, m_ + 1, (b,), generator=rng)]
        lengths[0] = m_
        _expect_additive(api, additive_inputs(rng, b, n_, m_, lengths), SCORES_SQUEEZE_HINT + " " + PAIRS_HINT, device)


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


def additive_broadcast_oracle(q: Tensor, k: Tensor, lengths: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor) -> Tensor:
    """The scores by broadcasting, in float64: for inputs whose pairs the judge cannot build either."""
    pq, pk = q.double() @ w_q.double().T, k.double() @ w_k.double().T
    scores = torch.tanh(pq[:, :, None] + pk[:, None]) @ v.double()
    real = torch.arange(k.shape[1]) < lengths[:, None]
    return scores.masked_fill(~real[:, None], float("-inf")).to(q.dtype)


def _exact_additive(rng: torch.Generator, n: int, m: int, dq: int, dk: int) -> tuple[Tensor, ...]:
    """One example (B = 1) with every key real, one hidden unit (H = 1): q, k of entries -1, 0, 1 and weights of
    +-1/256 or 0, so the projections are exact in float32 whatever the order of the sums; the pairs would take
    4 N M (Dq + Dk) bytes."""
    q, k = _small_ints(rng, 1, n, dq), _small_ints(rng, 1, m, dk)
    w_q, w_k = _small_ints(rng, 1, dq, scale=1 / 256), _small_ints(rng, 1, dk, scale=1 / 256)
    return q, k, torch.tensor([m]), w_q, w_k, torch.randn(1, generator=rng)


# The loop part, on the kernel's CPU accounting (an operator count in the student's process could be hidden): the
# CPU time the student's box spends on one call with B = 16384 examples (N = M = Dq = Dk = H = 1), against the
# reference's in a clean process, read by the judge from outside (Student.control.cpu_time: its v2 group's cpu.stat,
# else /proc), each box frozen while the other runs, fresh inputs every round, every output checked against the
# oracle; the median of LOOP_ROUNDS rounds after a warm-up round. Work in any library counts, and padding other
# calls cannot help (no ratio to a smaller call). Where no CPU time can be read, the judge's wall clock is used.
# CPU time hardly moves with other load on the machine: for B = 16384 against B = 16 beside a CPU hog on the kit's
# 2-core machine, the correct forms spread over 1.3-2.5x in CPU time and 0.4-12x in wall time.
# `benchmarks/never_tiles.py --runs 10` (2 cores, a CPU hog, other gradings running): the solution and cases.py's
# correct forms 0.6-1.4x the reference, a Python loop over the examples (one torch operation each) 87-132x. The
# bar sits 7x above the worst correct form and 8.7x below the fastest loop.
LOOP_BATCH = 16384
LOOP_ROUNDS = 5
LOOP_BAR = 10.0
REFERENCE_SRC = """
def additive_scores(q, k, lengths, w_q, w_k, v):
    scores = torch.tanh((q @ w_q.T)[:, :, None, :] + (k @ w_k.T)[:, None, :, :]) @ v
    real = torch.arange(k.shape[1], device=k.device) < lengths[:, None]
    return scores.masked_fill(~real[:, None, :], float("-inf"))
"""


def _loop_inputs(seed: int) -> tuple[Tensor, ...]:
    return additive_inputs(torch.Generator().manual_seed(seed), LOOP_BATCH, 1, 1, features=[1, 1, 1])


def _expect_no_loop(api: Api, rng: torch.Generator, record_property: RecordProperty) -> None:
    def measured(fn: Callable[..., Any], process: Student) -> Callable[[int], tuple[CpuTime, Any]]:
        def call(seed: int) -> tuple[CpuTime, Any]:
            inputs = _loop_inputs(seed)
            with process.control.cpu_time() as spent:
                value = fn(*inputs)
            return spent, value
        return call

    def verify(seed: int, replies: list[tuple[CpuTime, Any]]) -> None:
        inputs = _loop_inputs(seed)
        rtol, atol = ADDITIVE_TOL[torch.float32]
        expect_tensor(replies[0][1], additive_broadcast_oracle(*inputs), call=ADDITIVE_CALL,
                      inputs=_additive_shown(inputs), hint=PAIRS_HINT, rtol=rtol,
                      atol=atol * (1.0 + float(inputs[5].abs().sum())))

    with reference_process(api.student, REFERENCE_SRC) as clean:
        reference = api.additive_scores.run_by(clean, "additive_scores")
        timed = interleave([Run(api.student, measured(api.additive_scores, api.student)),
                            Run(clean, measured(reference, clean))], rng, LOOP_ROUNDS, 1, verify)
    cpu = all(spent.seconds is not None for runs in timed for _, (spent, _) in runs)
    how = next(spent.how for _, (spent, _) in timed[0]) if cpu else "the judge's clock"
    student, ref = (statistics.median((spent.seconds or 0.0) if cpu else wall for wall, (spent, _) in runs)
                    for runs in timed)
    ratio = student / max(ref, 1e-9)
    record_measured(record_property, {LOOP_RATIO: ratio})
    timing = (f"your additive_scores: {student * 1e3:.3g} ms per call for B = {LOOP_BATCH}; the reference: "
              f"{ref * 1e3:.3g} ms; {ratio:.1f}x (CPU time from {how}, median of {LOOP_ROUNDS} interleaved rounds; "
              f"at most {LOOP_BAR:g}x)")
    record_note(record_property, f"Timing:   {timing}")
    if ratio > LOOP_BAR:
        raise failure(call=f"{ADDITIVE_CALL} for B = {LOOP_BATCH} examples (N = M = 1)", timing=timing,
                      problem="it takes far longer than tensor operations on the whole batch: your code loops in "
                              "Python over the examples.", hint=MASK_HINT)


@check(task="additive_scores", points=1)
def check_additive_scores_never_tiles(api: Api, rng: torch.Generator, device: str,
                                      record_property: RecordProperty) -> None:
    """no pairs built (512 GiB if tiled: a query of 2^17 features against 2^20 keys) and no loop over the examples"""
    def tiled_ops() -> list[str]:
        return api.additive_scores.traced(*additive_inputs(torch.Generator().manual_seed(0), 2, 3, 4))[1]

    note = functools.partial(_traced_note, tiled_ops)
    steps = ((True, 4, 1 << 12, 1 << 12, 1), (True, 1 << 12, 4, 1, 1 << 12),
             (False, 1, 1 << 20, 1 << 17, 1), (False, 1 << 20, 1, 1, 1 << 17))
    for measured, n, m, dq, dk in steps:
        inputs = _exact_additive(rng, n, m, dq, dk)
        want = additive_broadcast_oracle(*inputs)
        shown = [f"{name} = {summarize(t)}" for name, t in _additive_shown(inputs).items()]
        tiled, needs = 4 * n * m * (dq + dk), 4 * (n * dq + m * dk + 6 * n * m)

        got = expect_no_tiled_copy(api, measured, functools.partial(api.additive_scores, *inputs), tiled, needs,
                                   ADDITIVE_CALL, shown, PAIRS_HINT, note, record_property, device)
        rtol, atol = ADDITIVE_TOL[torch.float32]
        expect_tensor(got, want, call=ADDITIVE_CALL, inputs={}, hint=PAIRS_HINT, rtol=rtol,
                      atol=atol * (1.0 + float(inputs[5].abs().sum())), device=device)
    _expect_no_loop(api, rng, record_property)
