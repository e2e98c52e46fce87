"""The review scan (autograder/judging/static/review.py) is a flag for the instructor, never a deduction, and ordinary
Python never raises it.

The issue's three false positives cost correct code points before: a timm-style AMP wrapper's own
`self._scaler` (8 points), a Dual built on `__torch_function__` (4), `dict(self.__dict__)` in a bonus
class (8 core points). Now no point depends on the scan, and those idioms are not flagged at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course.nbgrader.gradebook import feedback_html
from autograder.judging.report import gradescope, text
from autograder.judging.static.review import scan_cells
from tests.judging.idioms.ordinary import IDIOMS
from tests.kit import grade_fast, solution_cells, solved

PREAMBLE = "import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@pytest.mark.parametrize("idiom", IDIOMS)
def test_ordinary_python_is_never_flagged(idiom: str) -> None:
    code = IDIOMS[idiom]
    exec(compile(PREAMBLE + code, idiom, "exec"), {})  # the corpus is real, running Python
    assert not scan_cells([{"id": "cell", "source": code}], PREAMBLE), idiom


# Public code that must keep full marks: each idiom inside a correct answer of the chapter.
RUNNING_NORM_STATE = solution_cells("02_modules")["RunningNorm"] + '''
    def __getstate__(self):
        state = dict(self.__dict__)  # a copy: pickling must not change the module
        return state
'''
DUAL_TORCH_FUNCTION = solution_cells("04_overloaded_ops")["Dual"] + '''
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.sin and len(args) == 1:
            return Dual(torch.sin(args[0].value), torch.cos(args[0].value) * args[0].tangent)
        return NotImplemented
'''
PUBLIC = {"02_modules": {"RunningNorm": RUNNING_NORM_STATE}, "04_overloaded_ops": {"Dual": DUAL_TORCH_FUNCTION}}


@pytest.mark.parametrize("chapter", PUBLIC)
def test_public_idioms_keep_full_marks_unflagged(tmp_path: Path, chapter: str) -> None:
    g = grade_fast(solved(tmp_path, chapter, **PUBLIC[chapter]))
    assert g.score == g.max_score and g.bonus == g.bonus_max, [(r.name, r.output) for r in g.results
                                                               if r.status != "passed"]
    assert not g.integrity and not any("Review:" in n for n in g.notes)


def test_a_flagged_submission_keeps_every_point_and_every_report_says_it_is_for_review(tmp_path: Path) -> None:
    # (01: a chapter without a rule read from the source; 07's rule asks for code the judge can read, and a flag
    # there breaks it: tests/judging/test_source_rules_redteam.py)
    reaching = "import gc\n\n_everything = gc.get_objects\n\n" + solution_cells("01_basics")["grad_of"]
    g = grade_fast(solved(tmp_path, "01_basics", grad_of=reaching))
    assert g.score == g.max_score, [(r.name, r.output) for r in g.results if r.status != "passed"]
    assert g.integrity and g.integrity[0].startswith("cell 'grad_of', line 1: import gc"), g.integrity
    result = gradescope(g)
    assert result["score"] == g.max_score + g.bonus_max and result["extra_data"]["integrity"] == g.integrity
    for page in (result["output"], text(g), feedback_html(result)):
        assert "Review:" in page and "costs no points" in page, page[:600]
