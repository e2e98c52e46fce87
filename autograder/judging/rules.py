"""A rule the notebook states is a rule the grader keeps: each chapter's rules.py maps the sentences of its
notebook that state a rule of a graded task to the checks that can fail them, and the evidence each uses.

tests/chapters/test_rules.py finds the rule sentences in the notebook (a word such as must, only, never, not,
exactly) and fails on one no entry covers, on an entry no sentence holds any more, and on a Rule whose checks
the chapter does not declare for its task: a rule the notebook adds, or a check that goes, shows up there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Evidence(Enum):
    """What a check rests its verdict on: evidence the student cannot shape (judging/plugin.check)."""

    OUTCOME = "outcome"  # outcomes only the stated method gives: the judge's own model, data, optimiser or oracle
    CLOCK = "clock"  # the judge's clock: a ratio against a reference timed in the same run
    KERNEL = "kernel"  # the kernel's limits and accounting: memory, CPU time, address space
    SOURCE = "source"  # the judge's own reading of the student's source


@dataclass(frozen=True)
class Rule:
    """A rule of `task` the notebook states: `says` quotes its sentence (enough of it to find it), `checks` name
    the checks (of that task) that fail when it is broken, `evidence` what each of them rests on, in order.
    No checks: nothing in the grader keeps the rule yet (test_rules.py lists such rules as expected failures).
    `also` names other tasks whose statements say this rule holds there too ("the rule stated above Exercise 1
    holds here too"): the checks may grade them as well, and each of them needs one."""

    task: str
    says: str
    checks: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    also: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.says.strip():
            raise ValueError(f"Rule of {self.task}: `says` quotes the notebook's sentence")
        if len(self.checks) != len(self.evidence):
            raise ValueError(f"Rule {self.says!r}: one evidence per check ({self.checks} / {self.evidence})")


@dataclass(frozen=True)
class NotARule:
    """A sentence that reads like a rule and is none of a graded task's: `why` (lesson prose, the guide's own
    code, an instruction to the reader, how grading works)."""

    says: str
    why: str

    def __post_init__(self) -> None:
        if not (self.says.strip() and self.why.strip()):
            raise ValueError("NotARule: quote the sentence (`says`) and say why it is no rule (`why`)")


# The "How this notebook is graded" cell, the same in every notebook: it says how grading works, and each
# exercise whose rule is read from the code states that rule again, where its chapter's audit maps it.
HOW_GRADED = (
    NotARule("Every point comes from evidence the grader gathers itself", "how grading works"),
    NotARule("**a wrong result**: your functions run on fresh inputs", "how grading works"),
    NotARule("Lines of your answer cells that reach into code that is not yours are listed",
             "how grading works: listed lines cost no points"),
    NotARule("While your code or the reference is timed, the other is paused", "how grading works"),
    NotARule("The grader lists, for your instructor to read", "how grading works: listed lines cost no points"),
    NotARule("**A listed line costs no points**", "how grading works"),
    NotARule("such a line inside that exercise's code breaks the rule",
             "how grading works: each exercise whose rule is read from the code states it again"),
    NotARule("Ordinary Python on your own objects is never listed", "how grading works: what is never listed"),
)
