"""Chapter 03's puzzles: the rule read from the source voids a puzzle's checks, a wrong answer that keeps the rule
loses the points on its own (the rule's too, for its example), other correct forms under other seeds earn every
point, and an unanswered puzzle fails on its NotImplementedError rather than on a broken rule. The named cases
(cases.py) are graded in tests/chapters/test_every_chapter.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course.cases import mutant
from tests.kit import by_name, grade_fast, solved, task_scores, write_submission

CH = "03_broadcasting"
PUZZLES = ("times_table", "outer_sum", "lower_mask", "one_hot", "rescale_rows", "pairwise_l1")
ONLY = " or ".join(f"check_{p}_" for p in PUZZLES)


def test_a_broken_rule_voids_that_puzzle_alone(tmp_path: Path) -> None:
    helper = ("def rescale_rows(x):\n    low = x.amin(1, keepdim=True)\n"
              "    return (x - low) / (x.amax(1, keepdim=True) - low)\n")
    g = grade_fast(solved(tmp_path, CH, rescale_rows=helper), only=ONLY)
    scores = task_scores(g)
    assert scores["rescale_rows"] == 0, scores
    assert all(scores[p] == 3 for p in PUZZLES if p != "rescale_rows"), scores
    random = by_name(g)["check_rescale_rows_random"]
    assert "breaks its stated rule" in random.output and "On its own this check passed" in random.output


def test_a_rule_kept_with_a_wrong_answer_is_no_broken_rule(tmp_path: Path) -> None:
    """The transposed outer sum keeps the rule: every check fails on its values, none as a broken rule."""
    cells = mutant(CH, "outer_sum transposed").cells
    results = by_name(grade_fast(solved(tmp_path, CH, **cells), only="check_outer_sum_"))
    assert [r.score for r in results.values()] == [0, 0, 0]
    assert not any("breaks its stated rule" in r.output for r in results.values())
    assert "transposed" in results["check_outer_sum_rule"].output


def test_an_unanswered_puzzle_fails_on_its_stub(tmp_path: Path) -> None:
    rule = by_name(grade_fast(write_submission(tmp_path, CH, {}), only="check_lower_mask_rule"))
    r = rule["check_lower_mask_rule"]
    assert r.score == 0 and "NotImplementedError" in r.output and "rule is broken" not in r.output, r.output


@pytest.mark.parametrize("seed", [1, 77])
def test_the_solution_earns_every_puzzle_point_under_other_seeds(tmp_path: Path, seed: int) -> None:
    scores = task_scores(grade_fast(solved(tmp_path, CH), only=ONLY, seed=seed))
    assert {p: scores[p] for p in PUZZLES} == dict.fromkeys(PUZZLES, 3), scores


def test_a_named_mistake_is_recorded_by_its_id(tmp_path: Path) -> None:
    """times_table counted from 0: the failure carries the named mistake's id as data, not only in its hint."""
    cells = {"times_table": "def times_table(n):\n    return torch.arange(n)[:, None] * torch.arange(n)\n"}
    results = by_name(grade_fast(solved(tmp_path, CH, **cells), only="check_times_table_"))
    wrong = [r for r in results.values() if r.status == "failed"]
    assert wrong and all(r.mistake == "times_table/entry-0-0-is-1-1-count-from-1-torch-arange-1-n-1-not-from-0"
                         for r in wrong), [(r.name, r.mistake) for r in wrong]
    assert all(r.mistake is None for r in results.values() if r.status == "passed")
