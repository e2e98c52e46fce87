"""A puzzle's rule, read by the judge (autograder/judging/static/rules.py, puzzle_breaks): one `return` of one
expression over the stated operations, and nothing the judge cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.judging.notebook import Submission
from autograder.judging.registry import CHAPTERS
from autograder.judging.static.rules import puzzle_breaks, task_code

ALLOWED = frozenset({"torch.arange", "torch.where", ".shape", "ones", "len"})


def breaks(source: str, name: str) -> list[str]:
    sub = Submission(Path("x.ipynb"), CHAPTERS["03_broadcasting"], [{"id": "p", "source": source}])
    return [u.text for u in puzzle_breaks(task_code(sub, "p"), name, ALLOWED)]


@pytest.mark.parametrize("source", [
    "def ones(n):\n    '''A docstring is fine.'''\n    return torch.arange(n) * 0 + 1\n",
    "def eye(n):\n    return torch.where(torch.arange(n)[:, None] == torch.arange(n), 1, 0) * ones(n)\n",
    "def ones(x):\n    return (x.shape[0] + torch.arange(3)) @ torch.arange(3) ** 2 // 1 % 7\n",
    "import torch as t\ndef ones(n):\n    return t.arange(n)[::-1]\n",
    "def ones(n: torch.Tensor, k: int = 2) -> torch.Tensor:\n    return torch.arange(n) * k\n",
    "from torch import arange\ndef ones(n):\n    return arange(n)\n",  # a bare name for an allowed function
    "ar = torch.arange\ndef ones(n):\n    return ar(n)\n",
])
def test_allowed_forms_break_nothing(source: str) -> None:
    name = source.split("def ")[1].split("(")[0]
    assert breaks(source, name) == []


@pytest.mark.parametrize(("source", "named"), [
    ("def ones(n):\n    return torch.ones(n)\n", "torch.ones"),
    ("def ones(n):\n    return torch.nn.functional.pad(n, (1, 1))\n", "torch.nn.functional.pad"),
    ("def ones(x):\n    return (x > 0).sum()\n", ".sum"),
    ("def ones(n):\n    return [1 for _ in range(n)]\n", "not allowed in a puzzle"),
    ("def ones(n):\n    return n if n else n\n", "not allowed in a puzzle"),
    ("def ones(n):\n    return (lambda: n)()\n", "not allowed in a puzzle"),
    ("def ones(n):\n    x = torch.arange(n)\n    return x\n", "not one `return <expression>`"),
    ("def ones(n):\n    return getattr(torch, 'ones')(n)\n", "getattr"),
    ("HELP = 1\ndef ones(n):\n    return torch.arange(n) + HELP\n", "HELP"),
    ("def ones(n):\n    return torch.arange(n)\ndef ones(n):\n    return n\n", "2 definitions"),
    ("def other(n):\n    return n\n", "0 definitions"),
    ("def ones(n, k=torch.ones(1)):\n    return torch.arange(n) * k\n", "torch.ones"),
    ("@torch.jit.script\ndef ones(n):\n    return torch.arange(n)\n", "torch.jit.script"),
    # a bare name stands for what an import or an assignment at load bound it to
    ("from torch import ones as o\ndef ones(n):\n    return o(n)\n", "o = torch.ones"),
    ("full = torch.ones\ndef ones(n):\n    return full(n)\n", "full = torch.ones"),
    ("import torch.nn.functional as F\ndef ones(n):\n    return F.pad(n, (1, 1))\n", "torch.nn.functional.pad"),
    # every binding of the name counts: the alias map kept the assignment, the later import runs
    ("ar = torch.arange\nfrom torch import ones as ar\ndef ones(n):\n    return ar(n)\n", "ar: bound 2 times"),
    ("def setup():\n    global ar\n    ar = torch.ones\nsetup()\ndef ones(n):\n    return ar(n)\n", "ar: not among"),
    ("class torch:\n    arange = 1\ndef ones(n):\n    return torch.arange(n)\n", "torch: bound 2 times"),
    ("len = torch.ones\ndef ones(n):\n    return len(n)\n", "len = torch.ones"),  # an allowed plain name rebound
    # an allowed operation patched at load is no longer the one the rule allows
    ("torch.arange = torch.ones\ndef ones(n):\n    return torch.arange(n)\n", "patches a library"),
    ("torch.Tensor.shape = property(torch.ones_like)\ndef ones(x):\n    return x.shape\n", "patches a library"),
])
def test_each_way_out_of_the_rule_is_named(source: str, named: str) -> None:
    found = breaks(source, "ones")
    assert any(named in text for text in found), found
