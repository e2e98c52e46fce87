"""Rules only the source can show, read by the judge (autograder/judging/static/rules.py), cost their task alone.

The issue's attack: a notebook whose softmax called torch.softmax and whose cross entropy called
F.log_softmax scored 20/20 on the main of issue 23, although the notebook forbids both. Now each task's
rule check reads its code and, broken, voids that task's checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.judging.notebook import Submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.results import Outcome
from autograder.judging.static.rules import names_used, task_code, unreadable
from tests.kit import by_name, grade_fast, solved

FORBIDDEN = ("softmax", "log_softmax", "cross_entropy", "Softmax", "distributions")


def submission(**cells: str) -> Submission:
    return Submission(Path("x.ipynb"), CHAPTERS["07_numerical_stability"],
                      [{"id": k, "source": v} for k, v in cells.items()])


def test_the_library_everywhere_it_was_used_scores_nothing(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "07_numerical_stability",
                          softmax="def softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n",
                          softmax_cross_entropy="def softmax_cross_entropy(labels, logits, dim=-1):\n"
                                                "    return -(labels * F.log_softmax(logits, dim)).sum(dim)\n"))
    broken = {"softmax", "softmax_cross_entropy"}
    assert not [(r.name, r.outcome, r.output[:200]) for r in g.results if r.score and r.task in broken]  # 20/20 once
    checks = by_name(g)
    assert "cell 'softmax_cross_entropy', line 2: F.log_softmax" in checks["check_xent_by_hand"].output
    assert all(r.outcome is Outcome.NOT_SCORED for r in g.results if r.task in broken and not r.rule)
    assert all(r.outcome is Outcome.PASSED for r in g.results if r.task not in broken)  # each task its own


USES = {
    "function": "y = torch.softmax(x, 0)",
    "method": "y = x.softmax(0)",
    "functional alias": "import torch.nn.functional as G\ny = G.log_softmax(x, 0)",
    "from import renamed": "from torch.nn.functional import softmax as s\ny = s(x, 0)",
    "module": "y = nn.Softmax(dim=0)(x)",
    "loss": "y = F.cross_entropy(x, t)",
    "distributions": "y = torch.distributions.Categorical(logits=x).probs",
    "getattr of a constant": "y = getattr(torch, 'soft' + 'max')(x, 0)",
    "attrgetter": "import operator\ny = operator.attrgetter('softmax')(torch)(x, 0)",
}


@pytest.mark.parametrize("form", USES)
def test_every_way_of_naming_the_library_is_read(form: str) -> None:
    code = task_code(submission(softmax=f"def softmax(x, dim=-1):\n    {USES[form].replace(chr(10), chr(10) + '    ')}"
                                        "\n    return y\n"), "softmax")
    assert names_used(code, FORBIDDEN), form


HIDDEN = {
    "computed getattr": "name = input()\ny = getattr(torch, name)(x)",
    "eval": "y = eval('torch.exp')(x)",
    "exec": "exec('y = 1')",
    "import by name": "m = __import__('torch')",
    "importlib": "import importlib\nm = importlib.import_module('torch')",
    "namespace dict": "f = torch.__dict__['exp']",
    "vars": "f = vars(torch)['exp']",
    "attrgetter imported by another name": "from operator import attrgetter as ag\nf = ag(input())(torch)",
    "code run from a string by a profiler": "import cProfile\ncProfile.run('y = 1')",
    "typing's own evaluation of a string": "import typing\n"
                                           "f = typing._type_convert('torch.exp')._evaluate({}, None, set())",
    "an annotation bound to a computed string": "import functools\nK = ''.join(reversed('xamtfos.hcrot'))\n"
                                               "@functools.singledispatch\ndef f(a):\n    return a\n"
                                               "@f.register\ndef _(a: K):\n    return a",
}


@pytest.mark.parametrize("form", HIDDEN)
def test_names_the_judge_cannot_read_are_found(form: str) -> None:
    code = task_code(submission(softmax=HIDDEN[form]), "softmax")
    assert unreadable(code), form


def test_the_students_own_names_docstrings_and_self_lookups_are_not_the_library() -> None:
    own = '''
def softmax(logits, dim=-1):
    """Not torch.softmax: a stable softmax."""
    e = (logits - logits.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


class Holder:
    def get(self, name):
        return getattr(self, name)
'''
    xent = "def softmax_cross_entropy(labels, logits, dim=-1):\n    return softmax(logits, dim)\n"
    code = task_code(submission(softmax=own, softmax_cross_entropy=xent), "softmax_cross_entropy")
    assert not names_used(code, FORBIDDEN) and not unreadable(code)


def test_a_task_reaches_the_definitions_it_uses_in_other_cells_and_no_more() -> None:
    softmax = ("def softmax(x, dim=-1):\n    return x\n\n\ndef helper(x):\n    return x.log_softmax(0)\n\n\n"
               "def unused(x):\n    return torch.softmax(x, 0)\n")
    xent = "def softmax_cross_entropy(labels, logits, dim=-1):\n    return helper(logits)\n"
    code = task_code(submission(softmax=softmax, softmax_cross_entropy=xent), "softmax_cross_entropy")
    assert [str(u) for u in names_used(code, FORBIDDEN)] == ["cell 'softmax', line 6: x.log_softmax"]
    # names the grading replaces are not followed (07's cross entropy runs with the kit's softmax)
    code = task_code(submission(softmax=softmax, softmax_cross_entropy=xent.replace("helper", "softmax")),
                     "softmax_cross_entropy", stop={"softmax"})
    assert not names_used(code, FORBIDDEN)


def test_annotations_that_only_name_types_are_no_use_but_code_in_them_is() -> None:
    """02's checkpoint cell annotated `optimizer: torch.optim.Optimizer`: read as code run at load, it broke
    sgd_momentum_step's no-torch.optim rule for an honest notebook. A call hidden in an annotation still runs."""
    named = ("def helper(model: nn.Module, optimizer: torch.optim.Optimizer | None = None,\n"
             "           extra: list['torch.optim.SGD'] = ()) -> dict[str, torch.Tensor]:\n    return {}\n")
    xent = "def softmax_cross_entropy(labels, logits, dim=-1):\n    return logits\n"
    code = task_code(submission(softmax_cross_entropy=xent, helper=named), "softmax_cross_entropy")
    assert not names_used(code, ("optim",))
    hidden = "def helper(x: torch.optim.SGD([torch.zeros(1)], lr=1.0).step()):\n    return x\n"
    code = task_code(submission(softmax_cross_entropy=xent, helper=hidden), "softmax_cross_entropy")
    assert [str(u) for u in names_used(code, ("optim",))] == ["cell 'helper', line 1: torch.optim"]


SPELLED = {
    "a concatenated string": "def _(kind: 'torch.nn.' + 'Softmax'):\n    return kind",
    "a string in a variable": "KIND = 'torch.nn.' + 'Softmax'\ndef _(kind: KIND):\n    return kind",
    "a string in a type alias": "KIND = list['torch.nn.Softmax']\ndef _(kind: KIND):\n    return kind",
    "a string in a class body": "class H:\n    KIND = 'torch.nn.Softmax'\n\n"
                                "    def _(self, kind: KIND):\n        return kind",
}


@pytest.mark.parametrize("form", SPELLED)
def test_strings_an_annotation_evaluates_are_read_as_the_code_they_spell(form: str) -> None:
    """functools.singledispatch's register evaluates a string annotation and keeps the class it names; so do
    typing.get_type_hints and friends. The string's code is read as if written (issue 34)."""
    code = task_code(submission(softmax=SPELLED[form] + "\ndef softmax(x, dim=-1):\n    return x\n"), "softmax")
    assert "torch.nn.Softmax" in [u.text for u in names_used(code, FORBIDDEN)], form


def test_type_variables_and_aliases_in_annotations_are_readable() -> None:
    honest = ("import typing\nT = typing.TypeVar('T')\nVec = list[float]\n"
              "def softmax(x: T, dim: int = -1, sizes: Vec = ()) -> T:\n"
              "    e = (x - x.amax(dim, keepdim=True)).exp()\n    return e / e.sum(dim, keepdim=True)\n")
    code = task_code(submission(softmax=honest), "softmax")
    assert not names_used(code, FORBIDDEN) and not unreadable(code)
