"""Chapter 05's puzzles: the rule read from the code voids a right answer written out of the rule, and a stub keeps
no rule point. Their other correct forms and named wrong ones are graded in tests/chapters/test_every_chapter.py."""

from __future__ import annotations

from pathlib import Path

from tests.kit import by_name, grade_fast, solved, task_scores

CH = "05_batch_gather"
PUZZLES = ("pick_per_row", "last_valid", "batch_diagonal", "roll_rows", "pick_pair_sum", "permute_rows")

# Right on every input, but a comprehension: the rule breaks, and the random-shape check's pass is voided.
LOOPED = """
def pick_per_row(x, idx):
    return torch.stack([x[i, idx[i]] for i in range(x.shape[0])])
"""
# Keeps the rule (one allowed expression) but answers wrong: the rule check loses its point without voiding.
IN_RULE_WRONG = """
def last_valid(x, lengths):
    return x[torch.arange(x.shape[0]), lengths * 0]
"""


def test_a_right_answer_out_of_the_rule_scores_its_puzzle_zero(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, pick_per_row=LOOPED), only="pick_per_row")
    assert task_scores(g)["pick_per_row"] == 0, [(r.name, r.status, r.output[:200]) for r in g.results]
    assert "not allowed in a puzzle" in by_name(g)["check_pick_per_row_rule"].output


def test_a_wrong_answer_in_the_rule_loses_both_points_and_names_the_example(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, last_valid=IN_RULE_WRONG), only="last_valid")
    assert task_scores(g)["last_valid"] == 0
    assert "on the notebook's example" in by_name(g)["check_last_valid_rule"].output


def test_every_puzzle_has_a_rule_check_and_full_marks_from_the_solution(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH), only=" or ".join(PUZZLES))
    assert {name: task_scores(g)[name] for name in PUZZLES} == dict.fromkeys(PUZZLES, 2.0)
    assert {f"check_{name}_rule" for name in PUZZLES} <= set(by_name(g))
