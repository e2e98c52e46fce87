"""Attacks on 07's rule read from the source (autograder/judging/static/rules.py), with the code in hand.

Each attack is a submission whose softmax (or cross entropy) calls a library softmax and that scored full marks
on that task at 7eaac52, the first commit of the rule: hidden from the judge's reading (a name it did not know,
code in another cell that it did not reach, a lookup it could not read) or from the rule check itself (an
error on the notebook's example, the kit's softmax kept from the cross entropy's grading). The reading of each
must now break the rule; a few go through a whole grading.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.chapters.ch07_numerical_stability.checks import rule_breaks
from autograder.course.reference import release_path
from autograder.judging.notebook import Submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.results import Outcome
from tests.kit import by_name, grade_fast, solution_cells, solved, task_scores

CHAPTER = "07_numerical_stability"


def submission(**cells: str) -> Submission:
    return Submission(Path("x.ipynb"), CHAPTERS[CHAPTER], [{"id": k, "source": v} for k, v in cells.items()])


def softmax_calling(body: str) -> str:
    return f"def softmax(logits, dim=-1):\n    return {body}\n"


def xent_calling(body: str) -> str:
    return f"def softmax_cross_entropy(labels, logits, dim=-1):\n    return {body}\n"


# Library functions that compute a softmax, its log or a cross entropy under names that were not on the list.
OTHER_NAMES = {
    "private torch": softmax_calling("torch._softmax(logits, dim, False)"),
    "aten's private op": softmax_calling("torch.ops.aten._log_softmax(logits, dim, False).exp()"),
    "masked": softmax_calling("torch._masked_softmax(logits, torch.zeros_like(logits, dtype=torch.bool), dim)"),
    "adaptive log softmax": "def softmax(logits, dim=-1):\n    m = torch.nn.AdaptiveLogSoftmaxWithLoss(4, 4, [2])\n"
                            "    return m.log_prob(logits).exp()\n",
    # attention is a softmax of scores: with identity keys and values, of the logits themselves (9 of 10 points)
    "attention": "def softmax(logits, dim=-1):\n    x = logits.movedim(dim, -1)\n"
                 "    eye = torch.eye(x.shape[-1], dtype=x.dtype)\n"
                 "    return F.scaled_dot_product_attention(x.unsqueeze(-2), eye, eye, scale=1.0).squeeze(-2)"
                 ".movedim(-1, dim)\n",
}
OTHER_LOSSES = {
    "the C loss": xent_calling("torch._C._nn.cross_entropy_loss(logits, labels, None, 0, -100, 0.0)"),
    "linear cross entropy": xent_calling("F.linear_cross_entropy(logits, torch.eye(logits.shape[-1]), labels)"),
}
# Another answer cell (the stretch task's, worth no core point) arranges what the task's own code calls: code
# that runs when that cell loads, or a definition the reading did not follow.
SACRIFICE = {
    "setattr on Tensor": (softmax_calling("logits.normalized(dim)"),
                          "setattr(torch.Tensor, 'normalized', torch.Tensor.softmax)\n"),
    "attribute assignment on Tensor": (softmax_calling("logits.normalized(dim)"),
                                       "torch.Tensor.normalized = torch.Tensor.softmax\n"),
    "a container filled later": ("OPS = {}\n\n\n" + softmax_calling("OPS['f'](logits, dim)"),
                                 "OPS.update(f=torch.softmax)\n"),
    "a name bound inside an if": (softmax_calling("helper(logits, dim)"), "if True:\n    helper = torch.softmax\n"),
    "a name bound by a for loop": (softmax_calling("helper(logits, dim)"),
                                   "for helper in [torch.softmax]:\n    pass\n"),
    "a name bound by a walrus": (softmax_calling("helper(logits, dim)"), "(helper := torch.softmax)\n"),
    "a name bound by with": (softmax_calling("helper(logits, dim)"),
                             "import contextlib\n\nwith contextlib.nullcontext(F.softmax) as helper:\n    pass\n"),
    "a global set by a function run at load": (softmax_calling("helper(logits, dim)"),
                                               "def _install():\n    global helper\n    helper = F.softmax\n\n\n"
                                               "_install()\n"),
    "the task redefined later": (softmax_calling("logits"), softmax_calling("torch.softmax(logits, dim)")),
    "a class body run at load": (softmax_calling("logits.normalized(dim)"),
                                 "class _Installer:\n    torch.Tensor.normalized = torch.Tensor.softmax\n"),
    "a default argument run at load": (softmax_calling("logits.normalized(dim)"),
                                       "def _unused(x=setattr(torch.Tensor, 'normalized', torch.Tensor.softmax)):\n"
                                       "    pass\n"),
    "a decorator run at load": (softmax_calling("logits.normalized(dim)"),
                                "@lambda f: setattr(torch.Tensor, 'normalized', torch.Tensor.softmax)\n"
                                "def _unused():\n    pass\n"),
    "a global forward hook": ("class Norm(torch.nn.Module):\n    def forward(self, x, dim):\n        return x\n\n\n"
                              "_norm = Norm()\n\n\n" + softmax_calling("_norm(logits, dim)"),
                              "torch.nn.modules.module.register_module_forward_hook(\n"
                              "    lambda m, a, out: F.softmax(a[0], a[1]))\n"),
    "a star import rebinding the task": (softmax_calling("logits"), "from torch.special import *\n"),
}
# Lookups by a name in a string, or names the reading could not see.
UNREAD = {
    "star import": "from torch import *\n\n\n" + softmax_calling("log_softmax(logits, dim).exp()"),
    "getattr passed as a value": softmax_calling("next(map(getattr, [torch], ['softmax']))(logits, dim)"),
    "reduce over getattr": "import functools\n\n\n"
                           + softmax_calling("functools.reduce(getattr, ['nn', 'functional', 'softmax'], torch)"
                                             "(logits, dim)"),
    "an op namespace's __getattr__": softmax_calling("torch.ops.aten.__getattr__('softmax')(logits, dim)"),
    "pickle": "import pickle\n\n\n" + softmax_calling("pickle.loads(b'ctorch\\nsoftmax\\n.')(logits, dim)"),
    "pydoc": "import pydoc\n\n\n" + softmax_calling("pydoc.locate('torch.softmax')(logits, dim)"),
    "pkgutil": "import pkgutil\n\n\n" + softmax_calling("pkgutil.resolve_name('torch:softmax')(logits, dim)"),
    "getattr_static": "import inspect\n\n\n" + softmax_calling("inspect.getattr_static(torch, 'softmax')(logits, dim)"),
    "getmembers": "import inspect\n\n\n"
                  + softmax_calling("dict(inspect.getmembers(torch))['soft' + 'max'](logits, dim)"),
    "type hints": "import typing\n\n\ndef _h(x: typing.ForwardRef(''.join(reversed('xamtfos.hcrot')))):\n    pass\n\n\n"
                  + softmax_calling("typing.get_type_hints(_h)['x'](logits, dim)"),
    "torch's catalogue of functions": softmax_calling(
        "[f for f in torch.overrides.get_overridable_functions()[torch] if f.__name__[::-1] == 'xamtfos'][0]"
        "(logits, dim)"),
    "a match on a keyword attribute": "def softmax(logits, dim=-1):\n    match torch:\n"
                                      "        case object(softmax=sm):\n            return sm(logits, dim)\n",
    "a match on __match_args__": "class T(torch.Tensor):\n    __match_args__ = ('softmax',)\n\n\n"
                                 "def softmax(logits, dim=-1):\n    match logits.as_subclass(T):\n"
                                 "        case T(sm):\n            return sm(dim).as_subclass(torch.Tensor)\n",
    "getattr on a plain function's self": "def _get(self, n):\n    return getattr(self, n)\n\n\n"
                                          + softmax_calling("_get(torch, 'softmax')(logits, dim)"),
    "getattr on a method's self, called from the class": "class K:\n    def get(self, n):\n"
                                                         "        return getattr(self, n)\n\n\n"
                                                         + softmax_calling("K.get(torch, 'softmax')(logits, dim)"),
    "getattr on the self of a Tensor subclass": "class T(torch.Tensor):\n    def get(self, n):\n"
                                                "        return getattr(self, n)\n\n\n"
                                                + softmax_calling("logits.as_subclass(T).get("
                                                                  "''.join(reversed('xamtfos')))(dim)"
                                                                  ".as_subclass(torch.Tensor)"),
    "a function's code object": "def _lib(x, d):\n    return x\n\n\n" + softmax_calling("_lib.__code__"),
}


# The cross entropy's reading stops at `softmax` (the kit's while it is graded), but not where the student's own
# softmax is taken at load, before the kit lends its own: that one runs during the cross entropy's grading.
CAPTURED = {
    "softmax": "def softmax(logits, dim=-1, log=False):\n"
               "    return F.log_softmax(logits, dim) if log else F.softmax(logits, dim)\n",
    "at load": "_mine = softmax\n\n\n" + xent_calling("-(labels * _mine(logits, dim, log=True)).sum(dim)"),
    "as a default": "def softmax_cross_entropy(labels, logits, dim=-1, _mine=softmax):\n"
                    "    return -(labels * _mine(logits, dim, log=True)).sum(dim)\n",
    "by a function run at load": "def _grab():\n    return softmax\n\n\n_mine = _grab()\n\n\n"
                                 + xent_calling("-(labels * _mine(logits, dim, log=True)).sum(dim)"),
}


@pytest.mark.parametrize("form", ["at load", "as a default", "by a function run at load"])
def test_the_students_own_softmax_taken_at_load_is_read_for_the_cross_entropy(form: str) -> None:
    cells = {**solution_cells(CHAPTER), "softmax": CAPTURED["softmax"], "softmax_cross_entropy": CAPTURED[form]}
    assert any(rule_breaks(submission(**cells), "softmax_cross_entropy")), form
    called = xent_calling("-(labels * softmax(logits, dim).log()).sum(dim)")  # the kit's, while graded
    assert not any(rule_breaks(submission(**{**cells, "softmax_cross_entropy": called}), "softmax_cross_entropy"))


def _cells(form: str) -> dict[str, str]:
    if form in SACRIFICE:
        own, other = SACRIFICE[form]
        return {"softmax": own, "log_softmax": other}
    if form in OTHER_LOSSES:
        return {"softmax_cross_entropy": OTHER_LOSSES[form]}
    return {"softmax": {**OTHER_NAMES, **UNREAD}[form]}


@pytest.mark.parametrize("form", [*OTHER_NAMES, *OTHER_LOSSES, *SACRIFICE, *UNREAD])
def test_a_library_softmax_the_reading_missed_breaks_the_rule(form: str) -> None:
    cells = {**solution_cells(CHAPTER), **_cells(form)}
    task = "softmax_cross_entropy" if form in OTHER_LOSSES else "softmax"
    assert any(rule_breaks(submission(**cells), task)), form


def test_another_cells_library_code_at_load_reaches_every_task_but_its_unused_definitions_do_not() -> None:
    own, other = SACRIFICE["setattr on Tensor"]
    cells = {**solution_cells(CHAPTER), "softmax": own, "log_softmax": other}
    assert any(rule_breaks(submission(**cells), "softmax_cross_entropy"))  # it runs before every task is graded
    unused = "def _compare(x):\n    return torch.softmax(x, -1)\n"
    cells = {**solution_cells(CHAPTER), "log_softmax": solution_cells(CHAPTER)["log_softmax"] + "\n\n" + unused}
    assert not any(rule_breaks(submission(**cells), "softmax"))
    assert any(rule_breaks(submission(**cells), "log_softmax"))


# Whole gradings: the attack's points on the softmax task at 7eaac52 -> now (the rule's own point stays with code that
# keeps it), and whether the cross entropy keeps its 10.
GRADED = {
    # the rule check ran the example first: an error there was the student's, and voided nothing
    "an error on the example only": ({"softmax": "def softmax(logits, dim=-1):\n"
                                                 "    if logits.shape == (2,) and float(logits[0]) == 1000.0:\n"
                                                 "        raise ValueError('no')\n"
                                                 "    return torch.softmax(logits, dim)\n"}, 0, True),  # 8 -> 0
    # the kit's softmax, lent to the cross entropy while it is graded, kept for the softmax task's checks
    "the kit's softmax kept": ({"softmax": "_box = []\n\n\n"
                                           + softmax_calling("_box[0](logits, dim) if _box else logits"),
                                "softmax_cross_entropy": "def softmax_cross_entropy(labels, logits, dim=-1):\n"
                                                         "    _box.append(softmax)\n"
                                                         "    return -(labels * (logits - torch.logsumexp(logits, dim, "
                                                         "keepdim=True))).sum(dim)\n"}, 1, True),  # 10 -> 1
    # code that runs at load counts for every task: the star import and the unread cell cost the cross entropy too
    "a star import": ({"softmax": UNREAD["star import"]}, 0, False),  # 10 -> 0
    "the stretch cell's setattr": (_cells("setattr on Tensor"), 0, False),  # 10 -> 0
    # a line nested deeper than the judge's recursive reading: the scan crashed the whole grading
    "code nested too deeply to read": ({"softmax": softmax_calling("torch.softmax(logits, dim)")
                                        + "\n_pad = getattr(torch, 'exp' + " + " + ".join(['""'] * 1200) + ")\n"},
                                       0, False),  # RecursionError -> 0
}


@pytest.mark.parametrize("form", GRADED)
def test_the_attack_scores_nothing_on_its_task(tmp_path: Path, form: str) -> None:
    cells, most, others_kept = GRADED[form]
    g = grade_fast(solved(tmp_path, CHAPTER, **cells))
    scores = task_scores(g)
    assert scores["softmax"] <= most, [(r.name, r.outcome, r.output[:200]) for r in g.results if r.task == "softmax"]
    assert (scores["softmax_cross_entropy"] == 6) == others_kept, [
        (r.name, r.output[:300]) for r in g.results if r.task == "softmax_cross_entropy"]


# Honest code the reading must not count against the rule (false positives).
HAND = ("def softmax(logits, dim=-1):\n"
        "    shifted = logits - logits.amax(dim=dim, keepdim=True)\n"
        "    e = shifted.exp()\n"
        "    return e / e.sum(dim=dim, keepdim=True)\n")
HONEST = {
    "the library named in a docstring and a comment": {
        "softmax": 'def softmax(logits, dim=-1):\n    """Like torch.softmax, without calling it."""\n'
                   "    # not F.softmax: subtract the max first\n" + HAND.split("\n", 1)[1]},
    "messages naming softmax": {
        "softmax": HAND + "\n\nassert softmax(torch.zeros(2)).sum() == 1, 'softmax must sum to 1'\n"
                   "print(f'softmax: {softmax(torch.zeros(3))}')\n"},
    "the stretch task's own log_softmax used by the cross entropy": {
        "softmax_cross_entropy": xent_calling("-(labels * log_softmax(logits, dim)).sum(dim)")},
    "a local named distributions": {
        "softmax": "def softmax(logits, dim=-1):\n    distributions = (logits - logits.amax(dim, keepdim=True)).exp()\n"
                   "    return distributions / distributions.sum(dim, keepdim=True)\n"},
    "getattr with a constant name": {
        "softmax": "def softmax(logits, dim=-1):\n    e = getattr(torch, 'exp')(logits - logits.amax(dim, True))\n"
                   "    return e / e.sum(dim, keepdim=True)\n"},
    "getattr over a literal tuple of names": {
        "softmax": HAND + "\n\nfor name in ('amax', 'exp'):\n    assert hasattr(torch, name), getattr(torch, name)\n"},
    "typing and future annotations": {
        "softmax": "from __future__ import annotations\n\nfrom typing import Optional\n\n\n"
                   "def softmax(logits: torch.Tensor, dim: Optional[int] = -1) -> torch.Tensor:\n"
                   + HAND.split("\n", 1)[1]},
    "other tensor functions with soft or log in their names": {
        "softmax_cross_entropy": xent_calling("-(labels * (logits - torch.special.logsumexp(logits, dim, keepdim=True)"
                                              ")).sum(dim) + 0 * F.softplus(logits).sum(dim)")},
    "test code at load in every cell": {
        "softmax": HAND + "\n\nx = torch.randn(3)\nprint(softmax(x), softmax(x).sum())\n",
        "softmax_cross_entropy": solution_cells(CHAPTER)["softmax_cross_entropy"]
        + "\n\nprint(softmax_cross_entropy(torch.full((2,), 0.5), torch.tensor([1000.0, 0.0])))\n",
        "log_softmax": solution_cells(CHAPTER)["log_softmax"] + "\n\nprint(log_softmax(torch.randn(4)))\n"},
    "numpy and math": {
        "softmax": "import numpy as np\n\n\n" + HAND + "\n\nassert math.isclose(float(np.exp(0.0)), 1.0)\n"},
    "a class of the student's own": {
        "softmax": "class Stable(torch.nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
                   "        self.dim = dim\n        self.register_buffer('shift', torch.zeros(()))\n\n"
                   "    def forward(self, logits):\n        e = (logits - logits.amax(self.dim, keepdim=True)).exp()\n"
                   "        return e / e.sum(self.dim, keepdim=True)\n\n\n"
                   "def softmax(logits, dim=-1):\n    return Stable(dim)(logits)\n"},
}


@pytest.mark.parametrize("form", HONEST)
def test_honest_code_keeps_the_rule(form: str) -> None:
    cells = {**solution_cells(CHAPTER), **HONEST[form]}
    for task in ("softmax", "softmax_cross_entropy", "log_softmax"):
        used, hidden = rule_breaks(submission(**cells), task)
        assert not used and not hidden, (task, [str(u) for u in used + hidden])


def test_the_stretch_task_as_released_is_not_implemented_and_a_stub_entry_with_autograd_breaks_the_rule(
        tmp_path: Path) -> None:
    released = next("".join(c["source"]) for c in json.loads(release_path(CHAPTER).read_text())["cells"]
                    if c["metadata"].get("nbgrader", {}).get("grade_id") == "log_softmax")
    g = grade_fast(solved(tmp_path, CHAPTER, log_softmax=released))
    stretch = [r for r in g.results if r.task == "log_softmax"]
    assert {r.outcome for r in stretch} == {Outcome.NOT_IMPLEMENTED}, [(r.name, r.outcome) for r in stretch]
    # the entry a stub, the name bound again to autograd's version: implemented, and not a Function of its own
    later = ("\n\nlog_softmax = lambda logits, dim=-1: (logits - logits.amax(dim, keepdim=True)) - torch.logsumexp("
             "logits - logits.amax(dim, keepdim=True), dim, keepdim=True)\n")
    g = grade_fast(solved(tmp_path, CHAPTER, log_softmax=released + later))
    assert g.bonus == 0 and by_name(g)["check_log_softmax_own_backward"].outcome is Outcome.WRONG


def test_each_tasks_rule_check_runs_just_before_its_checks(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CHAPTER))
    tasks = [r.task for r in g.results]
    groups = [t for i, t in enumerate(tasks) if i == 0 or tasks[i - 1] != t]
    assert groups == ["softmax", "softmax_cross_entropy", "log_softmax", "robust_loss"], tasks  # rules first ran
    # all three first; robust_loss is graded from outcomes alone, with no rule check
    assert all(r.rule == (i == 0 or g.results[i - 1].task != r.task) for i, r in enumerate(g.results)
               if r.task != "robust_loss"), [(r.task, r.rule) for r in g.results]
    assert not [r for r in g.results if r.task == "robust_loss" and r.rule]
