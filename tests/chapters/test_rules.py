"""A rule the notebook states is a rule the grader keeps (autograder/judging/rules.py).

Read statically: for each chapter, the markdown of its graded tasks (the "How this notebook is graded" cell, and
for each answer cell the markdown cells above it back to its section's heading) is split into sentences and
bullets; a sentence with a rule word (must, only, no, never, not, exactly, at most, ...) is a rule sentence, and
the chapter's rules.py must cover it with a Rule, which names the checks that keep it, or a NotARule, which says
why it is none. Rules no check keeps yet are listed in UNCHECKED and expected to fail until a check is added.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from autograder.judging.plugin import CheckSpec, declared_checks
from autograder.judging.registry import CHAPTERS, SOURCE
from autograder.judging.rules import Evidence, NotARule, Rule

RULE_WORDS = re.compile(r"\b(must|only|no|never|not|exactly|at most|at least|without|allowed|cannot|can't|don't|"
                        r"doesn't)\b|\bat (learning rate|`?lr`?)", re.IGNORECASE)
FENCED = re.compile(r"```.*?```", re.DOTALL)
HTML = re.compile(r"</?(details|summary)>|<summary>.*?</summary>")
ITEM = re.compile(r"\n(?=\s*(?:[-*+]|\d+\.)\s)")  # a new bullet or numbered item
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z`*(\"_])")
GRADED_HEADING = "### How this notebook is graded"

# Rules no check can fail yet, by chapter: each is an expected failure of test_every_rule_has_a_check, which
# fails loudly (strict) once the rule gets a check: then take it off this list.
UNCHECKED: dict[str, tuple[str, ...]] = {}


def sentences(markdown: str) -> list[str]:
    """The sentences and bullets of a markdown cell, each on one line; headings and fenced code left out."""
    text = HTML.sub(" ", FENCED.sub(" ", markdown))
    found = []
    for block in re.split(r"\n\s*\n", text):
        for item in ITEM.split(block):
            if item.lstrip().startswith("#"):
                continue
            found += [s for s in SENTENCE_END.split(" ".join(item.split())) if s]
    return found


def graded_markdown(cells: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """The markdown that states graded tasks, each with its task: above each answer cell, the markdown back to its
    section's heading (code cells between are the guide's and are skipped); and, of no task, how grading works."""
    def text(cell: dict[str, Any]) -> str:
        return "".join(cell["source"])

    def nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
        return dict(cell.get("metadata", {}).get("nbgrader", {}))

    keep: dict[int, str | None] = {i: None for i, c in enumerate(cells)
                                   if c["cell_type"] == "markdown" and text(c).startswith(GRADED_HEADING)}
    for i, cell in enumerate(cells):
        if not nbgrader(cell).get("solution"):
            continue
        for j in range(i - 1, -1, -1):
            above = cells[j]
            if nbgrader(above).get("solution") or nbgrader(above).get("grade"):
                break
            if above["cell_type"] == "markdown":
                keep[j] = nbgrader(cell)["grade_id"]
                if text(above).lstrip().startswith("#"):
                    break
    return [(keep[i], text(cells[i])) for i in sorted(keep)]


def rule_sentences(cells: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """Each rule sentence of the graded markdown, with the task whose statement holds it."""
    return [(task, s) for task, md in graded_markdown(cells) for s in sentences(md) if RULE_WORDS.search(s)]


def covers(entry: Rule | NotARule, task: str | None, sentence: str) -> bool:
    """A Rule covers a sentence of its own task's statement; a NotARule, a sentence anywhere."""
    return entry.says in sentence and (isinstance(entry, NotARule) or entry.task == task)


def problems(found: Iterable[tuple[str | None, str]], entries: Iterable[Rule | NotARule],
             checks: Mapping[str, CheckSpec], where: str) -> list[str]:
    """What the audit at `where` (a chapter's rules.py) gets wrong about the rule sentences `found`: a sentence
    no entry covers, an entry that covers no sentence, a Rule naming a check the chapter does not declare for its
    task. A Rule without checks is left to test_every_rule_has_a_check."""
    found, entries = list(found), list(entries)
    out = [f"uncovered ({task or 'how grading works'}): {s!r}\n  add Rule({task!r}, {s[:60]!r}, checks=(...), "
           f"evidence=(...)) or NotARule({s[:60]!r}, why) to {where}"
           for task, s in found if not any(covers(e, task, s) for e in entries)]
    out += [f"stale: {e.says!r} ({where}) is in no rule sentence of "
            + ("the notebook" if isinstance(e, NotARule) else f"{e.task}'s statement") for e in entries
            if not any(covers(e, task, s) for task, s in found)]
    for rule in (e for e in entries if isinstance(e, Rule)):
        tasks = (rule.task, *rule.also)
        for name in rule.checks:
            spec = checks.get(name)
            if spec is None:
                out.append(f"{where}: {rule.says!r} names {name}, which the chapter does not declare")
            elif spec.task not in tasks:
                out.append(f"{where}: {rule.says!r} is a rule of {', '.join(tasks)}, {name} grades {spec.task}")
        graded = {checks[n].task for n in rule.checks if n in checks}
        out += [f"{where}: {rule.says!r} holds for {task} too, and none of its checks grades {task}"
                for task in rule.also if rule.checks and task not in graded]
    return out


def audit(chapter: str) -> tuple[list[Rule | NotARule], dict[str, CheckSpec], str]:
    folder = CHAPTERS[chapter].folder
    rules = importlib.import_module(f"autograder.chapters.{folder.name}.rules")
    checks = importlib.import_module(f"autograder.chapters.{folder.name}.checks")
    return [*rules.RULES, *rules.NOT_RULES], declared_checks(checks), f"{folder.name}/rules.py"


def notebook(chapter: str) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads((SOURCE / chapter / f"{chapter}.ipynb").read_text())["cells"]
    return cells


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_rule_sentence_is_mapped(chapter: str) -> None:
    entries, checks, where = audit(chapter)
    assert problems(rule_sentences(notebook(chapter)), entries, checks, where) == []
    assert all({r.task, *r.also} <= set(CHAPTERS[chapter].tasks) for r in entries if isinstance(r, Rule))


def every_rule() -> list[Any]:
    params = []
    for chapter in CHAPTERS:
        for rule in audit(chapter)[0]:
            if isinstance(rule, Rule):
                marks = ([pytest.mark.xfail(strict=True, reason="no check keeps this rule yet")]
                         if rule.says in UNCHECKED.get(chapter, ()) else [])
                params.append(pytest.param(rule, id=f"{chapter}/{rule.task}/{rule.says[:40]}", marks=marks))
    return params


@pytest.mark.parametrize("rule", every_rule())
def test_every_rule_has_a_check(rule: Rule) -> None:
    assert rule.checks, f"no check keeps {rule.says!r} ({rule.task}): add one, or list it in UNCHECKED"


def test_every_unchecked_rule_is_in_the_audit() -> None:
    """UNCHECKED names only rules the audits hold, so taking one off a rules.py takes it off here too."""
    held = {(c, e.says) for c in CHAPTERS for e in audit(c)[0] if isinstance(e, Rule)}
    assert [(c, s) for c, says in UNCHECKED.items() for s in says if (c, s) not in held] == []


def test_the_audit_catches_an_unmapped_rule() -> None:
    """The check can fail: a new "must" sentence in a task's statement, a phrase gone from the notebook, a check
    the chapter does not declare, a check of another task and a task the rule also holds for with no check of
    its own are each reported."""
    statement = "### Exercise 1 — `f(x)`\n\nReturn `x`. You must not copy it."
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "source": [statement]},
        {"cell_type": "code", "source": ["def f(x): ..."],
         "metadata": {"nbgrader": {"solution": True, "grade_id": "f"}}}]
    checks = {"check_f": CheckSpec("f", 1.0), "check_g": CheckSpec("g", 1.0)}
    found = rule_sentences(cells)
    assert found == [("f", "You must not copy it.")]
    assert problems(found, [Rule("f", "must not copy", ("check_f",), (Evidence.OUTCOME,))], checks, "x") == []
    [uncovered] = problems(found, [], checks, "x")
    assert uncovered.startswith("uncovered (f): 'You must not copy it.'")
    assert problems(found, [NotARule("must not copy", "prose"), NotARule("may", "gone")], checks, "x") == [
        "stale: 'may' (x) is in no rule sentence of the notebook"]
    assert problems(found, [Rule("f", "must not", ("check_g",), (Evidence.OUTCOME,))], checks, "x") == [
        "x: 'must not' is a rule of f, check_g grades g"]
    assert problems(found, [Rule("f", "must not", ("check_h",), (Evidence.OUTCOME,))], checks, "x") == [
        "x: 'must not' names check_h, which the chapter does not declare"]
    # a rule that also holds for g may name g's checks, and must name one
    assert problems(found, [Rule("f", "must not", ("check_f", "check_g"), (Evidence.OUTCOME,) * 2, also=("g",))],
                    checks, "x") == []
    assert problems(found, [Rule("f", "must not", ("check_f",), (Evidence.OUTCOME,), also=("g",))], checks, "x") == [
        "x: 'must not' holds for g too, and none of its checks grades g"]
    # a Rule covers its own task's sentences only
    [uncovered, stale] = problems(found, [Rule("g", "must not", ("check_g",), (Evidence.OUTCOME,))], checks, "x")
    assert uncovered.startswith("uncovered (f)")
    assert stale == "stale: 'must not' (x) is in no rule sentence of g's statement"
