"""How a chapter's cases.py is read (autograder/course/cases.py): a function's body is an answer cell's code,
and loading refuses, before anything is graded, a case that does not fit its chapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course.cases import CaseError, Cases, load, mutant, mutants
from autograder.judging.registry import CHAPTERS

CH = "07_numerical_stability"
HEAD = "import torch\n\nfrom autograder.course.cases import cell, right, wrong\n"


def _load(tmp_path: Path, body: str) -> Cases:
    path = tmp_path / "cases.py"
    path.write_text(HEAD + body)
    return load(CHAPTERS[CH], path)


def test_a_functions_body_is_the_cell_it_names_and_the_docstring_is_not(tmp_path: Path) -> None:
    found = _load(tmp_path, '''

@wrong("no max", fails={"check_softmax_huge_and_infinite_logits": "nan"})
def no_max():
    """What the case is about: no part of the cell."""
    # a comment of the cell's
    def softmax(logits, dim=-1):
        e = torch.exp(logits)
        return e / e.sum(dim=dim, keepdim=True)


@right("library", only="check_softmax", points=10)
def library():
    def softmax(logits, dim=-1):
        return torch.softmax(logits, dim)
''')
    (wrong_form,), (right_form,) = found.wrong, found.right
    assert wrong_form.cells == {"softmax": "# a comment of the cell's\ndef softmax(logits, dim=-1):\n"
                                           "    e = torch.exp(logits)\n    return e / e.sum(dim=dim, keepdim=True)\n"}
    assert wrong_form.fails == {"check_softmax_huge_and_infinite_logits": "nan"}
    assert wrong_form.id == f"{CH}/wrong/no max" and right_form.id == f"{CH}/right/library"
    assert (right_form.only, right_form.points, right_form.bonus) == ("check_softmax", 10.0, 0.0)


def test_a_misspelled_check_is_refused_when_the_cases_are_loaded(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match=r"'check_softmax_huge_and_infinte_logits', which "
                                        r"ch07_numerical_stability/checks.py does not declare") as info:
        _load(tmp_path, '''

@wrong("no max", fails={"check_softmax_huge_and_infinte_logits": "nan"})
def no_max():
    def softmax(logits, dim=-1):
        return torch.exp(logits) / torch.exp(logits).sum(dim=dim, keepdim=True)
''')
    assert f"{tmp_path / 'cases.py'}:6" in str(info.value)  # where the case is
    assert "(did you mean 'check_softmax_huge_and_infinite_logits'?)" in str(info.value)


@pytest.mark.parametrize(("body", "refusal"), [
    ("@wrong('helper only', fails={'check_softmax_other_dims': 'dim'})\ndef f():\n    def helper(x):\n"
     "        return x\n", "defines no answer cell: name the cell it replaces with cell="),
    ("@wrong('both', fails={'check_softmax_other_dims': 'dim'})\ndef f():\n    softmax = log_softmax = None\n",
     "defines the answer cells log_softmax, softmax"),
    ("@wrong('no such cell', fails={'check_softmax_other_dims': 'dim'}, cell='softmaxx')\ndef f():\n    pass\n",
     "replaces cell 'softmaxx', which 07_numerical_stability does not have"),
    ("@wrong('nothing named', fails={})\ndef f():\n    def softmax(x):\n        return x\n", "names no check"),
    ("@wrong('no phrase', fails={'check_softmax_other_dims': ''})\ndef f():\n    def softmax(x):\n        return x\n",
     "needs a phrase"),
    ("@right('worth nothing', only='softmax')\ndef f():\n    def softmax(x):\n        return x\n",
     "must be worth some points or bonus"),
    ("@right('no checks', only=' ', points=1)\ndef f():\n    def softmax(x):\n        return x\n", "needs only="),
    ("@wrong('twice', fails={'check_softmax_other_dims': 'dim'})\ndef f():\n    def softmax(x):\n        return x\n\n\n"
     "@wrong('twice', fails={'check_softmax_other_dims': 'dim'})\ndef g():\n    def softmax(x):\n"
     "        return 2 * x\n",
     "another case of 07_numerical_stability is named 'twice'"),
    ("@cell('softmax')\ndef part():\n    def softmax(x):\n        return x\n\n\n"
     "@wrong('softmax twice', fails={'check_softmax_other_dims': 'dim'}, also=[part])\ndef f():\n"
     "    def softmax(x):\n        return 2 * x\n", "replaces cell 'softmax' twice"),
])
def test_a_case_that_does_not_fit_its_chapter_is_refused(tmp_path: Path, body: str, refusal: str) -> None:
    with pytest.raises(CaseError, match=refusal.replace("(", r"\(")):
        _load(tmp_path, "\n\n" + body)


def test_a_case_that_replaces_several_cells_names_the_others_with_also(tmp_path: Path) -> None:
    found = _load(tmp_path, '''

@cell()
def plain_xent():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return -(labels * torch.log(softmax(logits, dim))).sum(dim=dim)


@wrong("no max, then its log", fails={"check_softmax_huge_and_infinite_logits": "nan"}, also=[plain_xent])
def no_max_then_log():
    def softmax(logits, dim=-1):
        return torch.exp(logits) / torch.exp(logits).sum(dim=dim, keepdim=True)
''')
    (case,) = found.wrong  # a @cell is no case of its own
    assert list(case.cells) == ["softmax", "softmax_cross_entropy"]
    assert case.cells["softmax_cross_entropy"].startswith("def softmax_cross_entropy(")


def test_a_case_is_a_function_without_arguments(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="a function without arguments"):
        _load(tmp_path, "\n\n@wrong('x', fails={'check_softmax_other_dims': 'dim'})\ndef f(x):\n    pass\n")


def test_a_chapter_without_cases_has_none(tmp_path: Path) -> None:
    assert load(CHAPTERS[CH], tmp_path / "cases.py") == Cases()


def test_the_registry_chapters_cases_come_from_their_folders() -> None:
    assert all((CHAPTERS[c].folder / "cases.py").is_file() and mutants(c) for c in CHAPTERS)
    assert mutant(CH, "no max subtraction").cells["softmax"].startswith("def softmax(logits, dim=-1):\n")
    with pytest.raises(KeyError, match="no wrong implementation named 'no such thing'"):
        mutant(CH, "no such thing")
