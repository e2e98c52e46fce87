"""Every point earned honestly: NaN never passes, no check passes on just any exception, a wrong
implementation scores the same under every seed, a task's checks judge that task only, and messages
name the cause rather than the check.

WRONG holds typical mistakes beyond the named ones in each chapter's cases.py (autograder/chapters/ch<id>/);
benchmarks/seed_stability.py grades both over 20 seeds.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

from autograder.course.cases import all_mutants, mutant
from autograder.judging.expect import CheckFailure, JudgeError, expect_tensor, fail, output_shape_checked
from autograder.judging.plugin import _message, declared_checks
from autograder.judging.registry import CHAPTERS
from autograder.judging.student import StudentError
from tests.kit import FAST, TRAINING, by_name, grade_fast, solution_cells, solved, task_scores

pytestmark = pytest.mark.slow  # minutes in all: tests/conftest.py starts it first


class Wrong(NamedTuple):
    chapter: str
    name: str
    cell: str
    code: str


C5, C7, C8 = "05_batch_gather", "07_numerical_stability", "08_mixed_precision"


def _softmax(body: str) -> str:
    return f"\ndef softmax(logits, dim=-1):\n{body}\n"


def _xent(body: str) -> str:
    return f"\ndef softmax_cross_entropy(labels, logits, dim=-1):\n{body}\n"


def _gather(body: str) -> str:
    return f"\ndef batch_gather(tensor, indices):\n{body}\n"


def _step(body: str) -> str:
    return ("\ndef amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type='cuda',\n"
            f"                   dtype=torch.float16, max_grad_norm=None):\n{body}\n")


FLAT = ("    b, n = tensor.shape[:2]\n    flat = tensor.reshape(b * n, *tensor.shape[2:])\n"
        "    offsets = (torch.arange(b, device=indices.device) * n).reshape([b] + [1] * (indices.dim() - 1))\n")
FORWARD = ("    with torch.autocast(device_type=device_type, dtype=dtype):\n"
           "        loss = loss_fn(model(inputs), targets)\n")
ALWAYS_RAISES = _gather("    raise ValueError('batch_gather is not finished')")
NAN_PARAMETERS = _step(FORWARD + '''    scaler.scale(loss).backward()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    optimizer.zero_grad()
    return loss.item()''')

WRONG = [
    Wrong(C7, "max without keepdim", "softmax", _softmax(
        "    e = torch.exp(logits - logits.amax(dim))\n    return e / e.sum(dim, keepdim=True)")),
    Wrong(C7, "sum without keepdim", "softmax", _softmax(
        "    e = torch.exp(logits - logits.amax(dim, keepdim=True))\n    return e / e.sum(dim)")),
    Wrong(C7, "dim 1 always", "softmax", _softmax(
        "    e = torch.exp(logits - logits.amax(1, keepdim=True))\n    return e / e.sum(1, keepdim=True)")),
    Wrong(C7, "mean subtracted", "softmax", _softmax(
        "    e = torch.exp(logits - logits.mean(dim, keepdim=True))\n    return e / e.sum(dim, keepdim=True)")),
    Wrong(C7, "min subtracted", "softmax", _softmax(
        "    e = torch.exp(logits - logits.amin(dim, keepdim=True))\n    return e / e.sum(dim, keepdim=True)")),
    Wrong(C7, "clamped logits", "softmax", _softmax(
        "    e = torch.exp(logits.clamp(max=80))\n    return e / e.sum(dim, keepdim=True)")),
    Wrong(C7, "float32 inside", "softmax", _softmax(
        "    x = logits.float()\n    e = torch.exp(x - x.amax(dim, keepdim=True))\n"
        "    return (e / e.sum(dim, keepdim=True)).to(logits.dtype)")),
    Wrong(C7, "nan to zero", "softmax", _softmax(
        "    e = torch.exp(logits)\n    return torch.nan_to_num(e / e.sum(dim, keepdim=True))")),
    Wrong(C7, "default dim 0", "softmax", "\ndef softmax(logits, dim=0):\n    return torch.softmax(logits, dim)\n"),
    Wrong(C7, "xent clamped log", "softmax_cross_entropy", _xent(
        "    return -(labels * torch.log(torch.softmax(logits, dim).clamp(min=1e-12))).sum(dim)")),
    Wrong(C7, "xent mean", "softmax_cross_entropy", _xent(
        "    return -(labels * torch.log_softmax(logits, dim)).mean(dim)")),
    Wrong(C7, "xent hard labels", "softmax_cross_entropy", _xent(
        "    return -torch.log_softmax(logits, dim).gather(dim, labels.argmax(dim, keepdim=True)).squeeze(dim)")),
    Wrong(C7, "xent log_softmax on -1", "softmax_cross_entropy", _xent(
        "    return -(labels * torch.log_softmax(logits, -1)).sum(dim)")),
    Wrong(C7, "xent float32", "softmax_cross_entropy", _xent(
        "    x = logits.float()\n    return -(labels * torch.log_softmax(x, dim)).sum(dim)")),
    Wrong(C5, "raises on every call", "batch_gather", ALWAYS_RAISES),
    Wrong(C5, "range check off by one", "batch_gather", _gather(
        "    if bool((indices > tensor.shape[1]).any()):\n        raise IndexError(f'index {indices.max()}')\n"
        + FLAT + "    return flat[indices + offsets]")),
    Wrong(C5, "ValueError for an index out of range", "batch_gather", _gather(
        "    if bool((indices >= tensor.shape[1]).any()):\n        raise ValueError(f'index {indices.max()}')\n"
        + FLAT + "    return flat[indices + offsets]")),
    Wrong(C5, "IndexError that names no index", "batch_gather", _gather(
        "    if bool((indices >= tensor.shape[1]).any()):\n        raise IndexError('index out of range')\n"
        + FLAT + "    return flat[indices + offsets]")),
    Wrong(C5, "torch.gather without expand", "batch_gather",
          _gather("    return torch.gather(tensor, 1, indices.long())")),
    Wrong(C5, "row numbers not shaped", "batch_gather", _gather(
        "    return tensor[torch.arange(tensor.shape[0], device=indices.device), indices]")),
    Wrong(C5, "squeezed result", "batch_gather", _gather(FLAT + "    return flat[indices + offsets].squeeze()")),
    Wrong(C8, "nan parameters", "amp_train_step", NAN_PARAMETERS),
    Wrong(C8, "scaled loss returned", "amp_train_step", _step(FORWARD + '''    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return scaled.item()''')),
    Wrong(C8, "optimizer.step on scaled gradients", "amp_train_step",
          _step(FORWARD + '''    scaler.scale(loss).backward()
    optimizer.step()
    scaler.update()
    optimizer.zero_grad()
    return loss.item()''')),
]


# -- NaN never passes ------------------------------------------------------------------


def test_nan_parameters_earn_nothing_in_amp_train_step(tmp_path: Path) -> None:
    checks = ("check_amp_step_returns_loss_and_updates", "check_amp_update_matches_sgd",
              "check_amp_clips_unscaled_gradients")
    g = grade_fast(solved(tmp_path, C8, amp_train_step=NAN_PARAMETERS), only=" or ".join(checks))
    results = by_name(g)
    for check in checks:
        assert results[check].status == "failed", check
        assert "holds nan at index" in results[check].output, results[check].output


def test_nan_line_fails_train_and_says_so(tmp_path: Path) -> None:
    code = "def train(model, x, y, steps=1000, lr=0.01):\n    with torch.no_grad():\n" \
           "        for p in model.parameters():\n            p.fill_(float('nan'))\n    return float('nan')\n"
    g = grade_fast(solved(tmp_path, "02_modules", train=code), limits=TRAINING,
                   only="check_train_fits_line or check_train_returns_final_loss")
    assert g.score == 0
    assert "a = nan" in by_name(g)["check_train_fits_line"].output
    assert "not finite" in by_name(g)["check_train_fits_line"].output


def test_expect_tensor_names_nan_and_inf() -> None:
    want = torch.tensor([1.0, 2.0])
    for bad, phrase in ((torch.tensor([1.0, float("nan")]), "found nan"), (torch.tensor([float("-inf"), 2.0]),
                                                                            "found -inf")):
        with pytest.raises(CheckFailure, match=phrase):
            expect_tensor(bad, want, call="f(x)", inputs={})


# -- no check passes on just any exception ------------------------------------------------


def test_a_batch_gather_that_always_raises_earns_nothing(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, C5, batch_gather=ALWAYS_RAISES), only="check_batch_gather and not speed")
    assert g.score == 0, [(r.name, r.status) for r in g.results if r.status == "passed"]
    out = by_name(g)["check_batch_gather_out_of_range"].output
    assert "raised ValueError on this call and on the notebook's example too" in out, out


@pytest.mark.parametrize(("name", "phrase"), [("ValueError for an index out of range", "not IndexError"),
                                              ("IndexError that names no index", "which index is wrong")])
def test_out_of_range_needs_the_contracts_index_error(tmp_path: Path, name: str, phrase: str) -> None:
    code = next(w.code for w in WRONG if w.name == name)
    g = grade_fast(solved(tmp_path, C5, batch_gather=code), only="check_batch_gather_out_of_range")
    assert g.score == 0 and phrase in g.results[0].output, g.results[0].output


TAR_HEAD = solution_cells("06_data_loaders")["TarImageDataset"].split("    def __iter__")[0]


@pytest.mark.parametrize(("iterate", "phrase"), [
    ("        raise ValueError('this archive cannot be read')\n        yield", "a tar file of good images"),
    ("        for path in self.paths:\n            try:\n                yield from tar_image_iterator(path)\n"
     "            except ValueError as e:\n                raise RuntimeError(str(e)) from None", "not ValueError"),
])
def test_corrupt_member_needs_a_value_error_of_the_datasets_own(tmp_path: Path, iterate: str, phrase: str) -> None:
    code = TAR_HEAD + "    def __iter__(self):\n" + iterate + "\n"
    g = grade_fast(solved(tmp_path, "06_data_loaders", TarImageDataset=code), only="check_tar_corrupt_member_named")
    assert g.score == 0 and phrase in g.results[0].output, g.results[0].output


# -- scores that do not depend on luck ---------------------------------------------------------

SEEDS = (0, 1)
# Two seeds over the registry's wrong implementations of 05 and 07 (the chapters with random hard cases),
# and WRONG, keep the suite within its time; benchmarks/seed_stability.py grades every one under 20 seeds.
# Those that only the timed checks catch (loops) are left to benchmarks/timing_stability.py.
TIMED = ("speed", "vectorized")  # in the names of the checks that time the student's code on the judge's clock


def _timed(check: str) -> bool:
    return any(word in check for word in TIMED)


STABLE = [(m.chapter, m.name, m.cells) for m in all_mutants()
          if m.chapter in (C5, C7) and not all(_timed(check) for check in m.fails)]
STABLE += [(w.chapter, w.name, {w.cell: w.code}) for w in WRONG]


def _own_checks(chapter: str, cells: dict[str, str]) -> str:
    """-k for the untimed checks of the tasks whose answer cells `cells` replaces: the other tasks keep the
    reference's code, and a task's checks judge that task only (tests below)."""
    module = importlib.import_module(f"autograder.chapters.{CHAPTERS[chapter].folder.name}.checks")
    names = [name for name, spec in declared_checks(module).items() if spec.task in cells and not _timed(name)]
    assert names, f"no untimed check of {sorted(cells)}"
    return " or ".join(names)


@pytest.mark.parametrize(("chapter", "name", "cells"), STABLE, ids=[f"{c}/{n}" for c, n, _ in STABLE])
def test_a_wrong_implementation_scores_the_same_under_every_seed(tmp_path: Path, chapter: str, name: str,
                                                                 cells: dict[str, str]) -> None:
    path = solved(tmp_path, chapter, **cells)
    only = _own_checks(chapter, cells)
    grades = {seed: grade_fast(path, seed=seed, only=only, limits=FAST) for seed in SEEDS}
    scores = {seed: (g.score, g.bonus) for seed, g in grades.items()}  # a stretch task's wrong form loses bonus
    assert len(set(scores.values())) == 1, {
        seed: [r.nodeid.split("::")[-1] for r in g.results if r.status == "failed"] for seed, g in grades.items()}
    assert sum(scores[0]) < grades[0].max_score + grades[0].bonus_max, f"{name} earned full marks"


# -- no cross-task penalty ------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["deprecated torch.cuda.amp", "raises"])
def test_the_reference_checkerboard_keeps_its_points_whatever_amp_train_step_does(tmp_path: Path,
                                                                                   step: str) -> None:
    code = (_step("    raise RuntimeError('unfinished')") if step == "raises"
            else mutant(C8, step).cells["amp_train_step"])
    g = grade_fast(solved(tmp_path, C8, amp_train_step=code), only="checkerboard")
    assert task_scores(g) == {"train_checkerboard": 4}, [r.output for r in g.results if r.status == "failed"]


def test_cross_entropy_keeps_its_points_whatever_softmax_does(tmp_path: Path) -> None:
    xent = _xent("    shifted = logits - logits.amax(dim, keepdim=True)\n"
                 "    logp = shifted - torch.logsumexp(shifted, dim, keepdim=True)\n"
                 "    return -(labels * logp).sum(dim) + 0 * softmax(logits, dim).sum(dim)")
    g = grade_fast(solved(tmp_path, C7, softmax=_softmax("    raise ValueError('unfinished')"),
                          softmax_cross_entropy=xent))
    assert task_scores(g) == {"softmax": 0, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}, [
        r.output for r in g.results]


# -- messages name the cause -----------------------------------------------------------------------


def test_a_function_raising_on_every_call_is_told_so(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, C5, batch_gather=ALWAYS_RAISES), only="check_batch_gather_index_tensors")
    out = g.results[0].output
    assert "`batch_gather` raised ValueError on this call and on the notebook's example too" in out, out
    assert "Hint:" not in out and "every call" not in out, out


def test_ignoring_dim_is_told_so_not_to_avoid_detach(tmp_path: Path) -> None:
    wrong_dim = mutant(C7, "wrong dim").cells["softmax"]
    g = grade_fast(solved(tmp_path, C7, softmax=wrong_dim), only="check_softmax_gradient")
    out = g.results[0].output
    assert "the `dim` argument was not used" in out and ".detach()" not in out, out


def test_float64_values_that_print_alike_show_all_their_digits() -> None:
    want = torch.tensor([1 / 3, 2.0], dtype=torch.float64)
    with pytest.raises(CheckFailure) as info:
        expect_tensor(want + 1e-9, want, call="f(x)", inputs={}, rtol=1e-12, atol=0.0)
    text = str(info.value)
    assert "got 0.33333333433333334, expected 0.3333333333333333" in text, text
    assert "Got:      [0.33333333433333334, 2.000000001]" in text, text
    with pytest.raises(CheckFailure, match=r"Expected: \[0.1\]"):
        fail("f(x)", {}, torch.tensor([0.1], dtype=torch.float64), torch.tensor([0.1 + 1e-12], dtype=torch.float64),
             "differs", "")


def test_a_wrong_output_shape_is_the_students_problem_not_a_gradient_error(tmp_path: Path) -> None:
    all_pairs = mutant("03_broadcasting", "all pairs").cells["paired_sums"]
    g = grade_fast(solved(tmp_path, "03_broadcasting", paired_sums=all_pairs), only="check_paired_sums_gradient")
    out = g.results[0].output
    assert "instead of" in out and "Mismatch in shape" not in out, out


def test_a_gradient_shape_mismatch_after_the_shape_was_checked_is_a_grader_error() -> None:
    with pytest.raises(JudgeError) as info, output_shape_checked():
        raise StudentError("`f(x)` raised an error:\nRuntimeError: Mismatch in shape: grad_output[0] has a shape "
                           "of torch.Size([3]) and output[0] has a shape of torch.Size([2])")
    assert "The grader itself failed" in _message(info)
