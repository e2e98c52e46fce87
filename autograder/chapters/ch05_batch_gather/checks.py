"""Hidden checks for 05_batch_gather: batch_gather.

The oracle is plain advanced indexing in the judge, tensor[rows, indices]
with rows = arange(B) shaped to broadcast against indices; gradients come
from autograd through it in float64. Random shapes and dtypes come from
`rng`, seeded by the grading's secret seed; the inputs go to the grading's
device, and the harness's gather_on sends them to the other device too.
"Vectorized" and "fast" are measured on the judge's clock (autograder/judging/
timing.py) against the vectorized reference, timed in the same interleaved run
on a large batch of small rows: a loop pays a fixed cost per row in any library.
The operators a call issues (a trace made in the student's process) only shape
the failure message.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

import torch
from torch import Tensor

from autograder.chapters.ch05_batch_gather.puzzles import PUZZLES, random_tensor
from autograder.judging.authoring import (
    RecordProperty,
    Remote,
    Spec,
    Speed,
    StudentApi,
    StudentError,
    answer,
    check,
    compare_speed,
    expect_puzzle_random,
    expect_puzzle_rule,
    expect_tensor,
    expect_within,
    fail,
    failure,
    harness,
    operations_growth,
    output_shape_checked,
    randint,
    randn,
    record_note,
    reference_process,
)

# -- the API: what the notebook asks for, as the judge calls it -----------------

# The notebook's example: a call every working batch_gather answers.
EXAMPLE = (torch.tensor([[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]]), torch.tensor([2, 0]))


class GatheredOn(TypedDict):
    value: Any  # what batch_gather returned
    devices: list[str]  # the device types of every tensor its operators made


class Raised(TypedDict, total=False):
    type: str | None  # the exception's type name; None when batch_gather returned
    index_error: bool  # whether it is an IndexError (or a subclass)
    message: str  # its own message
    value: Any  # what it returned instead


class Api(StudentApi):
    @answer(example=EXAMPLE)
    def batch_gather(self, tensor: Tensor, indices: Tensor) -> Tensor:
        """output[i] = tensor[i, indices[i]]: shape indices.shape + tensor.shape[2:]."""

    @harness()
    def gather_on(self, device: str, tensor: Tensor, indices: Tensor) -> GatheredOn:
        """batch_gather with both inputs on `device` (not the grading's), its operators' devices recorded."""

    @harness()
    def gather_error(self, tensor: Tensor, indices: Tensor) -> Raised:
        """The exception batch_gather(tensor, indices) raises, as plain data (nothing of the grader's)."""

    @answer(example=(torch.tensor([[1.0, 2.0]]), torch.tensor([[1, 1]]), 2))
    def batch_scatter_add(self, values: Tensor, indices: Tensor, n: int) -> Tensor:
        """The stretch task: out[i, j] = sum of values[i, k] over indices[i, k] == j, shape [B, n] + trailing."""

    @answer(example=PUZZLES["pick_per_row"].example)
    def pick_per_row(self, x: Tensor, idx: Tensor) -> Tensor:
        """Puzzle: out[i] = x[i, idx[i]]."""

    @answer(example=PUZZLES["last_valid"].example)
    def last_valid(self, x: Tensor, lengths: Tensor) -> Tensor:
        """Puzzle: out[i] = x[i, lengths[i] - 1]."""

    @answer(example=PUZZLES["batch_diagonal"].example)
    def batch_diagonal(self, m: Tensor) -> Tensor:
        """Puzzle: out[b, i] = m[b, i, i]."""

    @answer(example=PUZZLES["roll_rows"].example)
    def roll_rows(self, x: Tensor, shifts: Tensor) -> Tensor:
        """Puzzle: out[i, j] = x[i, (j - shifts[i]) % N]."""

    @answer(example=PUZZLES["pick_pair_sum"].example)
    def pick_pair_sum(self, x: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """Puzzle: out[i] = x[i, a[i]] + x[i, b[i]]."""

    @answer(example=PUZZLES["permute_rows"].example)
    def permute_rows(self, x: Tensor, perm: Tensor) -> Tensor:
        """Puzzle: out[b, j] = x[b, perm[b, j]]."""


# -- oracles -------------------------------------------------------------------------


def gather_oracle(tensor: Tensor, indices: Tensor) -> Tensor:
    """output[i] = tensor[i, indices[i]], by advanced indexing with one row number per index."""
    rows = torch.arange(tensor.shape[0]).reshape([-1] + [1] * (indices.dim() - 1))
    return tensor[rows, indices.long()]


def scatter_oracle(values: Tensor, indices: Tensor, n: int) -> Tensor:
    """out[i, j] = the sum of values[i, k] over indices[i, k] == j, accumulated in float64 (int64 for integers)."""
    wide = values.double() if values.dtype.is_floating_point else values.long()
    trailing = values.shape[indices.dim():]
    out = torch.zeros((indices.shape[0], n, *trailing), dtype=wide.dtype)
    rows = torch.arange(indices.shape[0]).reshape([-1] + [1] * (indices.dim() - 1)).expand(indices.shape)
    out.index_put_((rows, indices.long()), wide, accumulate=True)
    return out.to(values.dtype)


def gather_grad_oracle(tensor: Tensor, indices: Tensor, grad_output: Tensor) -> Tensor:
    x = tensor.detach().double().requires_grad_(True)
    (grad,) = torch.autograd.grad(gather_oracle(x, indices), x, grad_output.double())
    return grad.to(tensor.dtype)


# The vectorized references, run in a clean process and timed beside the student's code: the
# flat offsets, range check included, and the stretch task's one index_add.
REFERENCE = """
def gather_reference(tensor, indices):
    batch, n = tensor.shape[0], tensor.shape[1]
    out_of_range = (indices < 0) | (indices >= n)
    if bool(out_of_range.any()):
        raise IndexError(f"index {int(indices[out_of_range][0])} is out of range for N = {n}")
    offsets = (torch.arange(batch, device=indices.device) * n).reshape([batch] + [1] * (indices.dim() - 1))
    return tensor.reshape(batch * n, *tensor.shape[2:])[indices + offsets]


def scatter_reference(values, indices, n):
    batch, trailing = indices.shape[0], values.shape[indices.dim():]
    offsets = (torch.arange(batch, device=indices.device) * n).reshape([batch] + [1] * (indices.dim() - 1))
    out = values.new_zeros((batch * n, *trailing))
    return out.index_add(0, (indices + offsets).reshape(-1), values.reshape(-1, *trailing)).reshape(batch, n, *trailing)
"""


# Timed inputs: a large batch of tiny rows, so that a loop over the batch pays its fixed cost per row
# thousands of times while one vectorized call pays it once, and making the inputs (timed in both) and
# sending the outputs back whole cost little beside a loop's rows. Scattered values are small integers (as
# float32): their sums are exact in any order, so every correct form matches the oracle exactly.
BATCH = 16384
GATHER_TIMED: list[Spec] = [randn(BATCH, 2, 1), randint(0, 2, BATCH, 1)]
GATHER_TIMED_SHOWN = f"[{BATCH}, 2, 1] tensors with [{BATCH}, 1] indices"
SCATTER_BATCH, SCATTER_SLOTS = 8192, 2
SCATTER_TIMED: list[Spec] = [randint(-100, 100, SCATTER_BATCH, 2, dtype="float32"),
                             randint(0, SCATTER_SLOTS, SCATTER_BATCH, 2)]
SCATTER_TIMED_SHOWN = f"[{SCATTER_BATCH}, 2] values and indices, n = {SCATTER_SLOTS}"
# The bar: the most time a call may take against the vectorized reference's. Measured through compare_speed by
# benchmarks/timing_stability.py (docs/architecture.md's benchmarks have the figures behind it): every correct form
# (one-hot products included, which do N times the work) stays far below it, and every loop (torch, numpy,
# Python, scripted) far above it. One bar serves "vectorized" and "fast" alike: a bar tight enough to ask more
# speed would fail correct forms on a busy machine. torch.compile on the loop unrolls it (27-45 s to compile at
# B = 64), beyond the time limit of a call.
AT_MOST = 8.0
GROWS = "the time grows with the batch, as a loop's does."


def _timed(fn: Remote[..., Any], reference: str, specs: list[Spec], oracle: Any, rng: torch.Generator,
           constants: tuple[int, ...] = (), tolerance: float = 0.0) -> Speed:
    """`fn` against REFERENCE's function `reference` on inputs made from `specs` (then `constants`)."""
    with reference_process(fn.student, REFERENCE) as ref:
        return compare_speed(fn, fn.run_by(ref, reference), specs, oracle, rng, constants=constants,
                             count=10, rounds=15, warmup=2, rtol=tolerance, atol=tolerance,
                             subtract_making=False, at_most=AT_MOST)


TENSOR_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32)
INDEX_DTYPES = (torch.int64, torch.int32)

SHAPE_HINT = ("output[i] = tensor[i, indices[i]] keeps every trailing axis of tensor: the result has shape "
              "indices.shape + tensor.shape[2:]. Flatten only the first two axes ([B * N, ...]) and step the "
              "row offsets by N = tensor.shape[1], not by the size of the last axis.")
OFFSET_HINT = ("indices may have more axes than [B], and the result has shape indices.shape + tensor.shape[2:]: "
               "shape the row offsets [B, 1, ..., 1] (one 1 per extra axis of indices) so that they broadcast "
               "against indices of shape [B, K, ...].")
DEVICE_HINT = ("Never hard-code .cuda() (or .cpu()): make new tensors where the inputs are, "
               "torch.arange(B, device=indices.device). The guide's batch_gather_vec has this bug.")
GRAD_HINT = ("Build the result by indexing `tensor` itself with differentiable torch operations: no .detach(), "
             ".data, torch.no_grad() or copies through .tolist(). Indexing adds up the gradient of an entry "
             "gathered twice.")
SPEED_HINT = ("Index all rows at once: flatten tensor to [B * N, ...] and add a row offset i * N to indices[i] "
              "(or index with a column of row numbers, tensor[rows, indices]). A loop over rows pays a fixed cost "
              "per row, whether it runs in numpy or on Python numbers, and torch.jit.script or torch.compile on "
              "it does not remove that per-row work.")
RANGE_HINT = ("Check the indices yourself before gathering, (indices < 0) | (indices >= N), and raise IndexError "
              "naming the bad index: -1 is out of range too (plain indexing reads it as the last entry), with "
              "flat offsets index N of row i silently reads row i + 1, and on CUDA an out-of-range index is a "
              "device-side assert that breaks the whole process.")


def _random_case(rng: torch.Generator, rank: int, index_rank: int, dtype: torch.dtype = torch.float32,
                 index_dtype: torch.dtype = torch.int64, batch: int | None = None) -> tuple[Tensor, Tensor]:
    """tensor [B, 6, 3, 2][:rank] and indices [B, 4, 3][:index_rank] (B = `batch`, else 5) of random values,
    indices in [0, 6).

    Fixed shapes keep every verdict independent of the seed. Trailing axes stay shorter than N, so offsets
    stepped by the wrong axis stay in range and give wrong values rather than an error.
    """
    b = batch or 5
    return _case(rng, [b, 6, 3, 2][:rank], [b, 4, 3][:index_rank], dtype, index_dtype)


def _case(rng: torch.Generator, shape: list[int], index_shape: list[int], dtype: torch.dtype = torch.float32,
          index_dtype: torch.dtype = torch.int64) -> tuple[Tensor, Tensor]:
    """A random tensor of `shape` and random indices of `index_shape`, all in [0, N = shape[1])."""
    indices = torch.randint(0, shape[1], index_shape, generator=rng).to(index_dtype)
    return random_tensor(rng, shape, dtype), indices


# Fixed shapes [B, N, ...] and index shapes, so that every mistake fails the same checks under any seed:
# B = 1 and size-1 axes, K equal to B and not, and trailing axes shorter than N (offsets stepped by the
# wrong axis then stay in range and give wrong values rather than an error).
ROW_CASES = (([3, 5], [3]), ([4, 6, 2], [4]), ([2, 7, 3, 2], [2]), ([1, 5], [1]), ([5, 8, 1], [5]),
             ([6, 5, 2, 3], [6]))
INDEX_CASES = (([3, 6], [3, 3]), ([2, 5], [2, 1, 3]), ([4, 5, 3], [4, 4]), ([1, 7, 2], [1, 2, 2]),
               ([3, 6, 2, 4], [3, 1]), ([2, 5, 3, 1], [2, 3, 2]))


def _expect(got: Tensor, want: Tensor, tensor: Tensor, indices: Tensor, hint: str, device: str,
            call: str = "batch_gather(tensor, indices)") -> None:
    # Gathering copies values: exact, whatever the dtype.
    expect_tensor(got, want, call=call, inputs={"tensor": tensor, "indices": indices}, hint=hint,
                  rtol=0.0, atol=0.0, device=device)


def _dtype_order(trials: int) -> list[torch.dtype]:
    """Every tensor dtype at least once in `trials` (>= 5)."""
    return [TENSOR_DTYPES[i % len(TENSOR_DTYPES)] for i in range(trials)]


# -- batch_gather ------------------------------------------------------------------------


@check(task="batch_gather", points=1, visible=True)
def check_batch_gather_notebook_example(api: Api, device: str) -> None:
    """the notebook's examples: [2, 3] with indices [2, 0] and [[0, 2], [1, 1]]"""
    tensor = torch.tensor([[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]])
    for indices in (torch.tensor([2, 0]), torch.tensor([[0, 2], [1, 1]])):
        got = api.batch_gather.using(hint=OFFSET_HINT)(tensor, indices)
        _expect(got, gather_oracle(tensor, indices), tensor, indices, OFFSET_HINT, device)


@check(task="batch_gather", points=2)
def check_batch_gather_row_indices(api: Api, rng: torch.Generator, device: str) -> None:
    """one index per row ([B] indices) into random tensors of rank 2 to 4, float and integer dtypes"""
    dtypes = _dtype_order(len(ROW_CASES))
    for trial, (shape, index_shape) in enumerate(ROW_CASES):
        tensor, indices = _case(rng, shape, index_shape, dtypes[trial], INDEX_DTYPES[trial % 2])
        got = api.batch_gather.using(hint=SHAPE_HINT)(tensor, indices)
        _expect(got, gather_oracle(tensor, indices), tensor, indices, SHAPE_HINT, device)


@check(task="batch_gather", points=3)
def check_batch_gather_index_tensors(api: Api, rng: torch.Generator, device: str) -> None:
    """[B, K] and [B, K1, K2] indices into random tensors of rank 2 to 4, float and integer dtypes"""
    dtypes = _dtype_order(len(INDEX_CASES))
    for trial, (shape, index_shape) in enumerate(INDEX_CASES):
        tensor, indices = _case(rng, shape, index_shape, dtypes[trial], INDEX_DTYPES[trial % 2])
        got = api.batch_gather.using(hint=OFFSET_HINT)(tensor, indices)
        _expect(got, gather_oracle(tensor, indices), tensor, indices, OFFSET_HINT, device)


# The device rule rests on what comes back: the result's values, dtype and device (as its tensor left the student's
# process) against the oracle, for inputs on each device the machine has; and, on a machine without a GPU, the error
# any CUDA call raises there. A CUDA round trip for CPU inputs that returns a correct CPU result cannot be seen from
# outside on a machine with a GPU: the harness's trace of the devices the operators used (a record made in the
# student's process) only adds a note then, and decides nothing.
@check(task="batch_gather", points=2)
def check_batch_gather_device(api: Api, rng: torch.Generator, device: str, record_property: RecordProperty) -> None:
    """CPU inputs give a CPU result (a CUDA call fails without a GPU), and CUDA inputs a CUDA result"""
    tensor, indices = _random_case(rng, 3, 2)
    want = gather_oracle(tensor, indices)
    devices = ["cpu", "cuda"] if api.student.cuda else ["cpu"]
    try:
        _expect(api.batch_gather(tensor, indices), want, tensor, indices, DEVICE_HINT, device)
        for on in devices:
            gathered = api.gather_on(on, tensor, indices)
            call = f"batch_gather(tensor, indices) with both inputs on {on}"
            _expect(gathered["value"], want, tensor, indices, DEVICE_HINT, on, call)
            if on == "cpu" and "cuda" in gathered["devices"]:
                record_note(record_property, f"Note:     for CPU inputs an operator trace in your process saw tensors "
                                             f"made on the GPU ({', '.join(gathered['devices'])}): on a machine "
                                             f"without a GPU that call fails. {DEVICE_HINT}")
    except StudentError as e:
        text = str(e)
        if "cuda" in text.lower() or "nvidia" in text.lower():
            raise failure(after=text, problem="your code put a tensor on another device than the inputs' (CUDA for "
                                              "CPU inputs fails outright on a machine without a GPU).",
                          hint=DEVICE_HINT) from None
        raise


@check(task="batch_gather", points=3)
def check_batch_gather_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """gradients flow to `tensor` and match indexing's; an index used twice gets its gradient added up"""
    for dtype, shape, index_shape in ((torch.float32, [3, 5, 2], [3, 2]), (torch.float64, [4, 6], [4]),
                                      (torch.float64, [2, 5, 3, 2], [2, 2, 3])):
        tensor, indices = _case(rng, shape, index_shape, dtype)
        if indices.dim() > 1:
            indices = torch.cat([indices, indices[:, :1]], dim=1)  # every row gathers some entries twice
        want = gather_oracle(tensor, indices)
        _expect(api.batch_gather.using(hint=SHAPE_HINT)(tensor, indices), want, tensor, indices, SHAPE_HINT, device)
        grad_output = torch.randn(want.shape, generator=rng, dtype=torch.float64).to(dtype)
        with output_shape_checked():
            _, grads = api.batch_gather.vjp(grad_output, wrt=(0,))(tensor, indices)
        inputs = {"tensor": tensor, "indices": indices, "grad_output": grad_output}
        call = "gradient of batch_gather(tensor, indices) with respect to tensor, for a random output gradient"
        if not grads or grads[0] is None:
            raise failure(call=call, problem="no gradient reached `tensor`: the result does not depend on it through "
                                             "autograd.", hint=GRAD_HINT)
        rtol, atol = (1e-12, 1e-12) if dtype == torch.float64 else (1e-6, 1e-6)
        expect_tensor(grads[0], gather_grad_oracle(tensor, indices, grad_output), call=call, inputs=inputs,
                      hint=GRAD_HINT, rtol=rtol, atol=atol, device=device)


def _gather_growth(api: Api, rng: torch.Generator) -> str:
    small, large = _random_case(rng, 3, 2, batch=4), _random_case(rng, 3, 2, batch=64)
    return operations_growth(api.batch_gather, small, large, ("B = 4", "B = 64"))


@check(task="batch_gather", points=7, speed=True)
def check_batch_gather_speed(api: Api, rng: torch.Generator, device: str,
                             record_property: RecordProperty) -> None:
    """vectorized and fast: for B = 16384 small rows, at most 8x the time of a flat-offsets reference"""
    tensor, indices = _random_case(rng, 3, 2)
    _expect(api.batch_gather(tensor, indices), gather_oracle(tensor, indices), tensor, indices, SHAPE_HINT,
            device)
    speed = _timed(api.batch_gather, "gather_reference", GATHER_TIMED, gather_oracle, rng)
    expect_within(speed, AT_MOST, f"batch_gather on {GATHER_TIMED_SHOWN}",
                  "a flat-offsets reference (with the range check)",
                  GROWS, SPEED_HINT, record_property, lambda: _gather_growth(api, rng))


# -- puzzles: one expression each over the stated operations ------------------------------------------------------

@check(task="pick_per_row", points=1, rule=True)
def check_pick_per_row_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["pick_per_row"], device)


@check(task="pick_per_row", points=1)
def check_pick_per_row_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["pick_per_row"], rng, device)


@check(task="last_valid", points=1, rule=True)
def check_last_valid_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["last_valid"], device)


@check(task="last_valid", points=1)
def check_last_valid_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["last_valid"], rng, device)


@check(task="batch_diagonal", points=1, rule=True)
def check_batch_diagonal_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["batch_diagonal"], device)


@check(task="batch_diagonal", points=1)
def check_batch_diagonal_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["batch_diagonal"], rng, device)


@check(task="roll_rows", points=1, rule=True)
def check_roll_rows_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["roll_rows"], device)


@check(task="roll_rows", points=1)
def check_roll_rows_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["roll_rows"], rng, device)


@check(task="pick_pair_sum", points=1, rule=True)
def check_pick_pair_sum_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["pick_pair_sum"], device)


@check(task="pick_pair_sum", points=1)
def check_pick_pair_sum_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["pick_pair_sum"], rng, device)


@check(task="permute_rows", points=1, rule=True)
def check_permute_rows_rule(api: Api, device: str) -> None:
    """rule: one expression over the allowed operations (read from your code), right on the notebook's example"""
    expect_puzzle_rule(api, PUZZLES["permute_rows"], device)


@check(task="permute_rows", points=1)
def check_permute_rows_random(api: Api, rng: torch.Generator, device: str) -> None:
    """random shapes (B != N), float and integer values"""
    expect_puzzle_random(api, PUZZLES["permute_rows"], rng, device)


# -- batch_scatter_add (the stretch task, bonus points) ------------------------------------

COLLIDE_HINT = ("Values sent to the same slot must add up. `out[idx] += v` runs as `out[idx] = out[idx] + v`: "
                "each repeated slot is written once, and all but one of its values are lost. Accumulate with "
                "index_add, index_put_(..., accumulate=True) or scatter_add.")
SLOTS_HINT = ("The result has shape [B, n] + E, where E = values.shape[indices.dim():]: n slots per row (not "
              "indices.max() + 1), every trailing axis of values kept. With flat offsets, row i starts at i * n.")
SCATTER_DTYPE_HINT = ("Make the result in values' dtype and on its device: values.new_zeros(...) or torch.zeros(..., "
                      "dtype=values.dtype, device=values.device); torch.zeros(...) alone is float32.")
SCATTER_GRAD_HINT = ("Build the result from `values` with differentiable operations (index_add, index_put, "
                     "scatter_add, out-of-place or on a fresh zeros tensor): no .detach(), .data or torch.no_grad(). "
                     "The gradient of a scatter-add is the gather of the output's gradient.")
SCATTER_VECTOR_HINT = ("Do the whole batch in one accumulating operation: offset each row's indices by i * n into a "
                       "[B * n, ...] result (or pass a column of row numbers to index_put_), as in batch_gather. A "
                       "loop over rows pays a fixed cost per row, in torch, numpy or Python alike.")

# (values shape, index rank, n): collisions everywhere. Every index of a row the same, more values than slots,
# slots that no index names (the last ones included), [B] indices and [B, K1, K2] indices with trailing axes.
COLLISION_CASES = (([3, 6], 2, 4), ([2, 9, 2], 2, 3), ([4], 1, 3), ([2, 3, 4, 2], 3, 5), ([1, 7, 1], 2, 2))
# (values shape, index rank, n): random slots, trailing axes E of rank 0 to 2, K equal to B and not.
SCATTER_CASES = (([3, 4], 2, 6), ([4, 2, 3], 2, 5), ([2, 3, 2, 2], 2, 4), ([5], 1, 7), ([2, 2, 3, 4], 3, 6),
                 ([1, 5, 3], 2, 8))
SCATTER_DTYPES = (torch.float32, torch.float64, torch.int64, torch.int32)


def _scatter_case(rng: torch.Generator, shape: list[int], rank: int, n: int, dtype: torch.dtype,
                  collide: bool = False, top: int | None = None) -> tuple[Tensor, Tensor]:
    """Values of `shape` and indices of shape[:rank] in [0, top or n). With rank >= 2, every row's first two
    indices are equal (a collision whatever the seed). With `collide`, row i's indices all lie in one pair of
    neighbouring slots below n - 1, so that every row repeats slots and slot n - 1 stays empty."""
    values = random_tensor(rng, shape, dtype)
    if collide and n > 2:
        low = torch.randint(0, n - 2, (shape[0],) + (1,) * (rank - 1), generator=rng)
        indices = low + torch.randint(0, 2, shape[:rank], generator=rng)
    elif collide:
        indices = torch.zeros(shape[:rank], dtype=torch.long)
    else:
        indices = torch.randint(0, top or n, shape[:rank], generator=rng)
    if rank >= 2:
        rows = indices.reshape(shape[0], -1)
        rows[:, 1] = rows[:, 0]
    return values, indices.to(INDEX_DTYPES[rank % 2])


def _expect_scatter(api: Api, values: Tensor, indices: Tensor, n: int, hint: str, device: str) -> Tensor:
    got = api.batch_scatter_add.using(hint=hint)(values, indices, n)
    want = scatter_oracle(values, indices, n)
    if isinstance(got, Tensor) and got.shape != want.shape:
        hint = SLOTS_HINT
    exact = not values.dtype.is_floating_point
    expect_tensor(got, want, call=f"batch_scatter_add(values, indices, n={n})",
                  inputs={"values": values, "indices": indices}, hint=hint, rtol=0.0 if exact else 1e-5,
                  atol=0.0 if exact else 1e-5, dtype_hint=SCATTER_DTYPE_HINT, device=device)
    return got


@check(task="batch_scatter_add", points=1, visible=True)
def check_scatter_add_notebook_example(api: Api, device: str) -> None:
    """the notebook's examples: two slots hit twice and thrice, n = 4 keeps an empty last slot; int64 vectors"""
    _expect_scatter(api, torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([[0, 0, 2], [1, 1, 1]]), 4,
                    COLLIDE_HINT, device)
    _expect_scatter(api, torch.arange(12).reshape(2, 3, 2), torch.tensor([[2, 0, 2], [1, 1, 0]]), 3, SLOTS_HINT,
                    device)


@check(task="batch_scatter_add", points=1)
def check_scatter_add_collisions(api: Api, rng: torch.Generator, device: str) -> None:
    """every row sends many values to the same few slots ([B] to [B, K1, K2] indices): they all add up"""
    for trial, (shape, rank, n) in enumerate(COLLISION_CASES):
        values, indices = _scatter_case(rng, shape, rank, n, (torch.int64, torch.float64)[trial % 2], collide=True)
        _expect_scatter(api, values, indices, n, COLLIDE_HINT, device)


@check(task="batch_scatter_add", points=1)
def check_scatter_add_shapes_and_dtypes(api: Api, rng: torch.Generator, device: str) -> None:
    """random slots, trailing axes of rank 0 to 2; float32, float64, int64 and int32 values keep their dtype"""
    for trial, (shape, rank, n) in enumerate(SCATTER_CASES):
        # The first case leaves slot n - 1 empty whatever the seed.
        values, indices = _scatter_case(rng, shape, rank, n, SCATTER_DTYPES[trial % len(SCATTER_DTYPES)],
                                        top=n - 1 if trial == 0 else None)
        _expect_scatter(api, values, indices, n, SLOTS_HINT, device)


@check(task="batch_scatter_add", points=1)
def check_scatter_add_gradient(api: Api, rng: torch.Generator, device: str) -> None:
    """gradients flow to `values`: the gradient of the scatter is the gather of the output's gradient"""
    for dtype, shape, rank, n in ((torch.float64, [3, 5], 2, 4), (torch.float32, [2, 4, 3], 2, 6),
                                  (torch.float64, [2, 2, 3, 2], 3, 3)):
        values, indices = _scatter_case(rng, shape, rank, n, dtype, collide=True)
        want = _expect_scatter(api, values, indices, n, SLOTS_HINT, device)
        grad_output = torch.randn(want.shape, generator=rng, dtype=torch.float64).to(dtype)
        with output_shape_checked():
            _, grads = api.batch_scatter_add.vjp(grad_output, wrt=(0,))(values, indices, n)
        call = f"gradient of batch_scatter_add(values, indices, n={n}) with respect to values"
        inputs = {"values": values, "indices": indices, "grad_output": grad_output}
        if not grads or grads[0] is None:
            raise failure(call=call, problem="no gradient reached `values`: the result does not depend on it through "
                                             "autograd.", hint=SCATTER_GRAD_HINT)
        rtol, atol = (1e-12, 1e-12) if dtype == torch.float64 else (1e-6, 1e-6)
        expect_tensor(grads[0], gather_oracle(grad_output, indices), call=call, inputs=inputs, hint=SCATTER_GRAD_HINT,
                      rtol=rtol, atol=atol, device=device)


@check(task="batch_scatter_add", points=1)
def check_scatter_add_vectorized(api: Api, rng: torch.Generator, record_property: RecordProperty) -> None:
    """vectorized: for B = 8192 small rows, at most 8x the time of one index_add on flat offsets"""
    speed = _timed(api.batch_scatter_add, "scatter_reference", SCATTER_TIMED, scatter_oracle, rng, (SCATTER_SLOTS,),
                   1e-5)

    def growth() -> str:
        cases = [_scatter_case(rng, [batch, 6, 3], 2, 8, torch.float32) for batch in (4, 64)]
        return operations_growth(api.batch_scatter_add, (*cases[0], 8), (*cases[1], 8), ("B = 4", "B = 64"))

    expect_within(speed, AT_MOST, f"batch_scatter_add on {SCATTER_TIMED_SHOWN}",
                  "one index_add on flat offsets", GROWS, SCATTER_VECTOR_HINT, record_property, growth)


# Last in the module: on CUDA, code that indexes out of range breaks the process's CUDA context.
@check(task="batch_gather", points=2)
def check_batch_gather_out_of_range(api: Api, rng: torch.Generator, device: str) -> None:
    """an index of N, then one of -1, raises IndexError naming it, from a batch_gather that answers in-range indices"""
    tensor, indices = _case(rng, [4, 6, 3], [4, 2])
    n = tensor.shape[1]
    api.batch_gather(tensor, indices)  # a function that raises on every call earns nothing here
    # N: with flat offsets, row 1's entry 0 (valid memory, wrong answer). -1: plain indexing reads the last entry.
    for bad, (row, column) in ((n, (0, 0)), (-1, (2, 1))):
        wrong = indices.clone()
        wrong[row, column] = bad
        _expect_index_error(api, tensor, wrong, bad, f"batch_gather(tensor, indices) with indices[{row}, {column}] = "
                                                     f"{bad} on an axis of size N = {n}")


def _expect_index_error(api: Api, tensor: Tensor, indices: Tensor, bad: int, call: str) -> None:
    """batch_gather(tensor, indices) raises an IndexError whose message names `bad`."""
    inputs = {"tensor": tensor, "indices": indices}
    expected = f"IndexError with {bad} in its message, since {bad} is not in [0, N)"
    try:
        outcome = api.gather_error(tensor, indices)
    except StudentError as e:
        text = str(e)
        if "device-side assert" in text:
            if api.student.sandbox is not None:
                api.student.sandbox.kill()  # its CUDA context is unusable: later checks get a fresh process
            raise failure(after=text, problem=f"{call} hit a device-side assert: the GPU kernel read out of range.",
                          hint=RANGE_HINT) from None
        if "crashed" in text or "did not finish" in text:
            raise failure(after=text, problem=f"{call} must raise an exception, not crash or hang.",
                          hint=RANGE_HINT) from None
        raise
    if outcome["type"] is None:
        fail(call, inputs, expected, outcome["value"], "returned a result for an out-of-range index: silent garbage",
             RANGE_HINT)
    if "device-side assert" in outcome["message"]:
        if api.student.sandbox is not None:
            api.student.sandbox.kill()
        fail(call, inputs, expected, f"{outcome['type']}: {outcome['message'][:300]}",
             "the GPU kernel read out of range (a device-side assert)", RANGE_HINT)
    if not outcome["index_error"]:
        fail(call, inputs, expected, f"{outcome['type']}: {outcome['message'][:300]}",
             f"raised {outcome['type']}, not IndexError (or a subclass of it)", RANGE_HINT)
    if not re.search(rf"(?<![\d.]){re.escape(str(bad))}(?![\d.])", outcome["message"]):
        fail(call, inputs, expected, f"{outcome['type']}: {outcome['message'][:300]}",
             f"the message does not say which index is wrong ({bad})", RANGE_HINT)
