"""Device mix-ups found on every CPU run (issue 38): the kit's own code keeps every tensor on the input's device.

Two mechanisms, both without a GPU:
- the judge's reading of the code (autograder/judging/static/devices.py) finds no line in the references, the
  correct forms of cases.py or the harnesses that makes a tensor on the CPU where the input's device is wanted
  (milliseconds);
- a grading on a second device (tests/devices/fakegpu.py: the inputs on `fakegpu`, CUDA's device rule applied to
  every operator) gives every reference and correct form its points and every wrong form its declared failure,
  as the self-test does on a GPU, and no result comes back on the CPU.

benchmarks/device_mixups.py puts back the mix-ups the first GPU run found, one at a time, and reports which
mechanism catches each; the last tests here put two of them back.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from autograder.course import selftest
from autograder.course.cases import CorrectForm, Mutant, cases
from autograder.judging.judge import Grade, GradeOptions
from autograder.judging.registry import CHAPTERS
from autograder.judging.static.devices import read_cells
from tests.devices import fakegpu
from tests.kit import solution_cells


def grader(registry: Any = None) -> tuple[selftest.Grader, list[str]]:
    """A self-test grader on fakegpu (the checks left out deselected), and the strays it saw."""
    strays: list[str] = []

    def grade(notebook: Path, device: str, only: str | None) -> Grade:
        options = GradeOptions("cpu", selftest.SEED, fakegpu.LIMITS, only=fakegpu.selection(only))
        g, findings = fakegpu.grade_on_fake_gpu(notebook, options, registry)
        strays.extend(s for s in findings.strays if not s.startswith(tuple(fakegpu.ON_THE_CPU)))
        return g

    return grade, strays


def lost(g: Grade | str) -> list[tuple[str, str]]:
    assert not isinstance(g, str), g
    return [(r.name, r.output[:600]) for r in g.results if r.status == "failed"]


# -- the second device ---------------------------------------------------------------------------------------------


def test_fakegpu_raises_where_cuda_raises_and_computes_what_the_cpu_does() -> None:
    x = torch.randn(5, 3)
    idx = torch.tensor([0, 2, 4])
    with fakegpu.on_fake_gpu():
        g = x.to(fakegpu.NAME)
        assert g.device == fakegpu.device() and torch.zeros(2, device=g.device).device == g.device
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            g + torch.arange(3)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            g @ torch.ones(3)
        with pytest.raises(TypeError, match="device type tensor to numpy"):
            g.numpy()
        # What CUDA takes from the CPU: a 0-dim tensor as a scalar, index tensors, copies.
        both = (g * torch.tensor(2.0) + g[idx].sum() + torch.zeros_like(g) + torch.arange(3, device=g.device)
                + torch.tensor([1.0, 2.0, 3.0], device=g.device))
        assert isinstance(both, fakegpu.OnGpu) and both.cpu().device.type == "cpu"
        assert torch.ones(3).cuda().device == g.device  # a hard-coded .cuda() goes to the grading's GPU
        w = torch.zeros(3, device=g.device, requires_grad=True)
        (g @ w).sum().backward()
        assert isinstance(w.grad, fakegpu.OnGpu) and torch.allclose(w.grad.elem, x.sum(0))
    assert torch.equal(both.elem, x * 2 + x[idx].sum() + torch.arange(3) + torch.tensor([1.0, 2.0, 3.0]))


# -- the judge's reading of the kit's own code -----------------------------------------------------------------------


def _notes(chapter: str, cells: dict[str, str]) -> list[str]:
    return [str(n) for n in read_cells([{"id": k, "source": v} for k, v in cells.items()],
                                       CHAPTERS[chapter].preamble)]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_reading_finds_no_mix_up_in_references_correct_forms_or_harnesses(chapter: str) -> None:
    found = _notes(chapter, solution_cells(chapter))
    for form in cases(chapter).right:
        found += [f"{form.name}: {n}" for n in _notes(chapter, form.cells)]
    harness = CHAPTERS[chapter].harness_source()
    found += [f"harness: {n}" for n in _notes(chapter, {"harness": harness})]
    assert not found


# -- gradings on the second device -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_keeps_every_tensor_on_the_inputs_device(chapter: str) -> None:
    grade, strays = grader()
    g = selftest._graded(grade, chapter, solution_cells(chapter), "cpu")
    assert not lost(g) and not strays
    assert isinstance(g, Grade) and g.score > 0


def _emulated(case: Mutant | CorrectForm) -> bool:
    if isinstance(case, Mutant):  # a hang is the clock's to show, and the emulation's limits are long
        return not set(case.fails) <= fakegpu.LEFT_OUT and not all("timed out" in p for p in case.fails.values())
    return "torch.func" not in case.name  # torch.func's transforms cannot wrap a Python tensor (fakegpu.py)


def _forms(chapter: str) -> list[Mutant | CorrectForm]:
    return [*cases(chapter).wrong, *cases(chapter).right]


FORMS = [case for chapter in CHAPTERS for case in _forms(chapter) if _emulated(case)]
# `make test` grades every correct form and one wrong form a chapter on fakegpu (about 20 s on 2 cores); every
# wrong form as well runs with `make device-sweep` (the `device_sweep` marker; about a minute more).
SAMPLED = {next(c.id for c in FORMS if c.chapter == ch and isinstance(c, Mutant)) for ch in CHAPTERS
           if any(c.chapter == ch and isinstance(c, Mutant) for c in FORMS)}
SAMPLED |= {c.id for c in FORMS if isinstance(c, CorrectForm)}


@pytest.mark.slow
@pytest.mark.parametrize("case", [case if case.id in SAMPLED else pytest.param(case, marks=pytest.mark.device_sweep)
                                  for case in FORMS], ids=lambda case: case.id)
def test_each_form_is_graded_on_the_gpu_as_it_declares(case: Mutant | CorrectForm) -> None:
    grade, strays = grader()
    if isinstance(case, Mutant):
        fails = {k: v for k, v in case.fails.items() if k not in fakegpu.LEFT_OUT}
        row = selftest.mutant_row(dataclasses.replace(case, fails=fails), "cpu", grade)
        assert row.ok, row.detail
        return
    g = selftest._graded(grade, case.chapter, {**solution_cells(case.chapter), **case.cells}, "cpu", case.only)
    assert not lost(g) and not strays


# -- the mix-ups of the first GPU run, put back ----------------------------------------------------------------------


def test_a_tensor_made_on_the_cpu_in_a_solution_loses_its_points_on_fakegpu() -> None:
    """03's one_hot as it was before the GPU run: both mechanisms see it."""
    cells = solution_cells("03_broadcasting")
    old = cells["one_hot"].replace("torch.arange(c, device=idx.device)", "torch.arange(c)")
    assert old != cells["one_hot"]
    assert _notes("03_broadcasting", {"one_hot": old}) and not _notes("03_broadcasting", cells)
    grade, _ = grader()
    g = selftest._graded(grade, "03_broadcasting", {**cells, "one_hot": old}, "cpu", "one_hot")
    assert any("same device" in output for _, output in lost(g))


@pytest.mark.slow
def test_a_harness_that_mixes_devices_is_caught_on_fakegpu(tmp_path: Path) -> None:
    """08's scaler_run as it was: the model on the CPU, the case's inputs on the grading's device. The reading
    cannot see it (no tensor is made in that line); the grading can."""
    chapter = CHAPTERS["08_mixed_precision"]
    fixed = '    inputs, targets = case["inputs"].cpu(), case["targets"].cpu()'
    source = chapter.harness_source()
    assert fixed in source
    harness = tmp_path / "harness.py"
    harness.write_text(source.replace(fixed, '    inputs, targets = case["inputs"], case["targets"]'))
    grade, _ = grader({**CHAPTERS, chapter.id: dataclasses.replace(chapter, harness=harness)})
    g = selftest._graded(grade, chapter.id, solution_cells(chapter.id), "cpu", "loss_scaler")
    assert any("same device" in output for _, output in lost(g))


def test_the_checks_left_out_deselect_no_other_check() -> None:
    """selection() is a pytest -k expression, which matches substrings: `not check_x` would also drop check_x_y."""
    names = {m for checks in Path(__file__).parents[2].glob("autograder/chapters/ch*/checks.py")
             for m in re.findall(r"^def (check_\w+)", checks.read_text(), re.M)}
    assert names >= fakegpu.LEFT_OUT
    assert not {(left, name) for left in fakegpu.LEFT_OUT for name in names if left in name and left != name}
