"""How a chapter's cases.py is read (autograder/course/cases.py): a function's body is an answer cell's code,
and loading refuses, before anything is graded, a case that does not fit its chapter."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autograder.course.cases import CaseError, Cases, edit, load, mutant, mutants
from autograder.course.cases import cases as cases_of
from autograder.course.reference import solution_cells
from autograder.judging.registry import CHAPTERS

CH = "07_numerical_stability"
HEAD = "import torch\n\nfrom autograder.judging.authoring import cell, right, wrong\n"


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


# -- edits of the reference --------------------------------------------------------------------------------------

REFERENCE = solution_cells(CH)["log_softmax"]  # class LogSoftmax (forward, backward), then def log_softmax
NO_SUM = "return grad_out - out.exp(), None"


def _tree(code: str) -> str:
    return ast.dump(ast.parse(code))


def test_an_edit_replaces_a_method_and_leaves_the_rest_of_the_reference_as_it_is(tmp_path: Path) -> None:
    found = _load(tmp_path, f'''

@wrong("backward without the sum", fails={{"check_log_softmax_gradient": "sums to 1"}}, edits="log_softmax")
def backward_without_the_sum():
    """The case's description: no part of the cell."""
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            {NO_SUM}
''')
    (case,) = found.wrong
    assert list(case.cells) == ["log_softmax"]
    old = "return grad_out - out.exp() * grad_out.sum(dim=ctx.dim, keepdim=True), None"
    assert REFERENCE.count(old) == 1
    assert _tree(case.cells["log_softmax"]) == _tree(REFERENCE.replace(old, NO_SUM))  # docstrings and all
    assert '"""log softmax along `dim`, with a backward pass of your own."""' in case.cells["log_softmax"]


def test_an_edit_deletes_members_and_appends_new_ones(tmp_path: Path) -> None:
    found = _load(tmp_path, '''

@right("setup_context", only="log_softmax", bonus=4, edits="log_softmax")
def setup_context():
    class LogSoftmax(torch.autograd.Function):
        del forward  # noqa: F821

        @staticmethod
        def forward(logits, dim):
            shifted = logits - logits.amax(dim, keepdim=True)
            return shifted - torch.logsumexp(shifted, dim, keepdim=True)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.dim = inputs[1]
            ctx.save_for_backward(output)

    def log_softmax_of_floats(logits, dim=-1):
        return log_softmax(logits.float(), dim)  # noqa: F821
''')
    (case,) = found.right
    tree = ast.parse(case.cells["log_softmax"])
    assert [_name(node) for node in tree.body] == ["LogSoftmax", "log_softmax", "log_softmax_of_floats"]
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    # the docstring stays; forward, deleted and defined anew, comes after backward; setup_context is appended
    assert [_name(member) for member in cls.body] == [None, "backward", "forward", "setup_context"]


def _name(node: ast.stmt) -> str | None:
    return node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None


def test_a_case_edits_another_case_or_cell_declared_above(tmp_path: Path) -> None:
    found = _load(tmp_path, f'''

@cell(edits="log_softmax")
def unannotated():
    def log_softmax(logits, dim=-1):
        return LogSoftmax.apply(logits, dim)  # noqa: F821


@wrong("backward without the sum", fails={{"check_log_softmax_gradient": "sums to 1"}}, edits=unannotated)
def backward_without_the_sum():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            {NO_SUM}


@wrong("no gradient for dim either", fails={{"check_log_softmax_gradient": "gradients"}},
       edits=backward_without_the_sum)
def no_gradient_for_dim_either():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            return grad_out - out.exp()
''')
    first, second = found.wrong  # the @cell is no case of its own
    for case in (first, second):
        code = case.cells["log_softmax"]
        assert "def log_softmax(logits, dim=-1):" in code and "def forward(ctx, logits, dim):" in code
    unparsed = ast.unparse(ast.parse(NO_SUM))  # the code is the edited tree, unparsed
    assert unparsed in first.cells["log_softmax"]
    assert unparsed not in second.cells["log_softmax"]
    assert "return grad_out - out.exp()\n" in second.cells["log_softmax"]


def test_edit_keeps_docstrings_and_drops_comments() -> None:
    code = edit('"""The cell."""\n\n\ndef f(x):\n    """f."""\n    return x  # the identity\n\n\ndef g():\n    pass\n',
                "def g():\n    return 1\n")
    assert code == '"""The cell."""\n\ndef f(x):\n    """f."""\n    return x\n\ndef g():\n    return 1\n'


EDIT = "@wrong('edit', fails={'check_log_softmax_gradient': 'sums to 1'}, edits='log_softmax')\ndef f():\n"


@pytest.mark.parametrize(("body", "refusal"), [
    (EDIT + "    class LogSoftmax(torch.autograd.Function):\n        del backwards  # noqa: F821\n",
     "'edit' edits the reference of cell 'log_softmax': cannot delete backwards: class LogSoftmax has no backwards"),
    (EDIT + "    class LogSoftmx(torch.autograd.Function):\n        del backward  # noqa: F821\n",
     "cannot delete from class LogSoftmx: the cell has no class LogSoftmx"),
    (EDIT + "    del log_softmaxx  # noqa: F821\n", "cannot delete log_softmaxx: the cell has no log_softmaxx"),
    (EDIT + "    class LogSoftmax:\n        pass\n",
     "class LogSoftmax: an edit changes its members, not its header: write it as "
     "'class LogSoftmax(torch.autograd.Function):'"),
    (EDIT + "    EPS = 1e-6\n", "an edit of the cell holds only defs, classes and `del`, not 'EPS = 1e-06'"),
    (EDIT + "    class LogSoftmax(torch.autograd.Function):\n        print('hello')\n",
     "an edit of class LogSoftmax holds only methods, class-level assignments and `del`, not \"print('hello')\""),
    ("@wrong('edit', fails={'check_log_softmax_gradient': 'sums to 1'}, edits='log_softmaxx')\ndef f():\n"
     "    def log_softmax(x):\n        return x\n",
     "edits cell 'log_softmaxx', which 07_numerical_stability does not have"),
    ("@wrong('edit', fails={'check_log_softmax_gradient': 'sums to 1'}, edits='log_softmax', cell='log_softmax')\n"
     "def f():\n    def log_softmax(x):\n        return x\n", "edits= names the cell it replaces: leave out cell="),
])
def test_an_edit_that_does_not_fit_the_code_it_edits_is_refused(tmp_path: Path, body: str, refusal: str) -> None:
    with pytest.raises(CaseError, match=re.escape(refusal)) as info:
        _load(tmp_path, "\n\n" + body)
    assert f"{tmp_path / 'cases.py'}:6" in str(info.value)  # where the case is


def test_edit_refuses_to_guess_which_of_two_definitions_it_replaces() -> None:
    base = ("class C:\n    @property\n    def x(self):\n        return 1\n\n"
            "    @x.setter\n    def x(self, v):\n        pass\n")
    with pytest.raises(CaseError, match="class C defines x 2 times: an edit cannot tell which it replaces"):
        edit(base, "class C:\n    def x(self):\n        return 2\n")


def test_a_wrong_case_names_the_devices_whose_grading_shows_it() -> None:
    from autograder.judging.authoring import wrong

    assert mutant("08_mixed_precision", "float16 on the CPU").devices == ("cpu",)
    assert mutant("07_numerical_stability", mutants("07_numerical_stability")[0].name).devices == ("cpu", "cuda")
    for devices in (["tpu"], []):
        with pytest.raises(CaseError, match="devices="):
            wrong("x", fails={"check_x": "y"}, devices=devices)


def test_cases_and_cells_declared_for_a_student_of_the_example_class(tmp_path: Path) -> None:
    """What examples.py hands in for ben and dev: the cells of every case and @cell declared for them."""
    from autograder.judging.authoring import cell

    found = _load(tmp_path, '''

@wrong("no max", fails={"check_softmax_huge_and_infinite_logits": "nan"}, example="ben")
def no_max():
    def softmax(logits, dim=-1):
        return torch.exp(logits) / torch.exp(logits).sum(dim=dim, keepdim=True)


@cell("log_softmax", example="ben")
def stray():
    raise SystemExit
''')
    assert list(found.examples) == ["ben"] and list(found.examples["ben"]) == ["softmax", "log_softmax"]
    assert found.examples["ben"]["log_softmax"] == "raise SystemExit\n"
    assert cases_of(CH).examples["dev"].keys() == {"softmax", "softmax_cross_entropy"}
    with pytest.raises(CaseError, match="example= names a student of the example class: ben or dev"):
        cell("softmax", example="zed")  # type: ignore[arg-type]
    with pytest.raises(CaseError, match="replaces a cell of ben's example notebook that another case"):
        _load(tmp_path, '''

@wrong("no max", fails={"check_softmax_huge_and_infinite_logits": "nan"}, example="ben")
def no_max():
    def softmax(logits, dim=-1):
        return torch.exp(logits) / torch.exp(logits).sum(dim=dim, keepdim=True)


@cell("softmax", example="ben")
def other():
    raise SystemExit
''')
