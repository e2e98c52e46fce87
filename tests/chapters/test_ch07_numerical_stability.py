"""Chapter 07 alone: what its cases cannot say (they are graded in tests/chapters/test_every_chapter.py).

- The logsumexp softmax, exp(x - logsumexp(x)), loses one point of six, with a message and a hint about that form,
  not the global-max or overflow hints of other mistakes (issue 36: it lost 3 of 20 with hints for mistakes it
  does not make). Its failure at -3000 is the same flaw as at 1e30 (the shift is rounded), measured here.
- robust_loss, the NaN hunt, is graded from outcomes only: a correct form scores 5 under several seeds, and a nan
  hidden from the value (nan_to_num on the loss) still costs the checks that look at the gradient.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autograder.course.cases import correct_forms, mutant
from autograder.judging.registry import CHAPTERS
from tests.kit import by_name, grade_fast, solved, task_scores

CH = "07_numerical_stability"


def test_the_graded_core_has_no_stretch_task() -> None:
    chapter = CHAPTERS[CH]
    assert (chapter.points, chapter.bonus) == (
        {"softmax": 6, "softmax_cross_entropy": 6, "log_softmax": 5, "robust_loss": 5}, {})


def test_the_logsumexp_softmax_loses_one_point_named_as_what_it_is(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, softmax=mutant(CH, "exp(x - logsumexp(x))").cells["softmax"])
    g = grade_fast(path, only="softmax and not cross")
    assert task_scores(g)["softmax"] == 5
    (failed,) = [r for r in g.results if r.score < r.points]
    assert failed.nodeid.endswith("check_softmax_huge_and_infinite_logits")
    assert "exp(x - logsumexp(x))" in failed.output and "Shift by the maximum" in failed.output
    assert "global max" not in failed.output and "Subtract the maximum along `dim`" not in failed.output


@pytest.mark.parametrize("offset", [-3000.0, 1e4])
def test_a_rounded_shift_is_the_flaw_at_minus_3000_too(offset: float) -> None:
    """The 1e-5 tolerance of the rows far apart is the lesson, not an accident: x - logsumexp(x) subtracts a number
    rounded to float32's spacing at |x| (2.4e-4 at 3000), x - max subtracts a stored logit, exactly."""
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(200, 5, generator=gen, dtype=torch.float64) * 3 + offset).float()
    truth = torch.softmax(x.double(), -1)
    shifted = x - x.amax(-1, keepdim=True)
    by_max = shifted.exp() / shifted.exp().sum(-1, keepdim=True)
    by_lse = torch.exp(x - torch.logsumexp(x, -1, keepdim=True))

    def worst(p: torch.Tensor) -> float:
        return float(((p.double() - truth).abs() / truth).max())

    assert worst(by_max) < 1e-6 < 1e-5 < worst(by_lse)


def test_a_correct_robust_loss_scores_full_marks_under_several_seeds(tmp_path: Path) -> None:
    (form,) = [f for f in correct_forms(CH) if f.name == "robust_loss: safe sqrt and safe log by where"]
    path = solved(tmp_path, CH, **form.cells)
    for seed in (1, 2, 3):
        assert task_scores(grade_fast(path, seed=seed, only="robust"))["robust_loss"] == 5, seed


def test_a_nan_hidden_from_the_value_is_still_in_the_gradient(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, **mutant(CH, "robust_loss: nan_to_num on the loss").cells)
    checks = by_name(grade_fast(path, only="robust"))
    assert checks["check_robust_loss_values"].score == 1  # no row at distance 0: right
    for name in ("check_robust_loss_example", "check_robust_loss_zero_distance", "check_robust_loss_training_step"):
        assert checks[name].score == 0 and "distance 0" in checks[name].output, name
