"""Similar answers (autograder/course/similarity.py): copies found and honest pairs flagged, per class size.

    .venv/bin/python benchmarks/similarity_calibration.py [--sizes 5 10 25 50 100 200] [--copies 20]
                                                           [--chapters 05_batch_gather 07_numerical_stability]

A class of N students hands in every chapter of the course (or those of --chapters), each task one of the kit's
own forms of it: the reference, its @right and its @wrong forms (autograder/chapters/*/cases.py). Forms the
step scores alike are one family (a @wrong case is mostly an edit of the reference), and families are dealt
as independent authors would write: while there are enough, each student a family of their own; the rest of the
class one family together (the reference's), if they are a tenth of the class and five at least, the class's
common way, which the step leaves out. Where a task has too few families for that (small classes), students
have to share one: those pairs are "forced" and counted apart, since no detector can tell them from a copy.
One student in ten (one at least) copies the whole notebook of a classmate with code of their own, where there is
one, and hides it (`hide`): one local variable inlined and one expression pulled out into a helper function in
every task, then every name of their own renamed, the definitions reordered, comments replaced. The other
notebooks of a copier are their own.

For each size it prints: the copies flagged (a task, the pair's whole notebook or their whole course), and
those a task alone flags (the step before whole submissions were compared); the honest pairs flagged (any pair
but a copier and the one they copied, forced pairs apart, and two copiers of one notebook, whose same edits make
them alike), and by a task alone; the step's time per class (wall, and CPU: the machine is shared); the highest
score of an honest pair of whole notebooks and the lowest of a copy of a notebook with MIN_MATCH characters of
tokens or more of its own (a copy of the class's common code has nothing to find), against WHOLE_THRESHOLD.
Classes are drawn again with new seeds until --copies copies have been planted at each size.

Measured on the kit's 2-core machine shared with seven other jobs (2026-11-29, load about 11; 8 notebooks, 49
tasks, 273 families; 20 copies per size; 9.5 minutes of wall time, 85 s of CPU, in all):

    class  copies found  by a task alone  honest pairs flagged  by a task alone  forced flagged  s per class (CPU)
        5    19/20 95%      11/20 55%        6/132   4.5%        6/132   4.5%      19/48 40%        3.7 (0.4)
       10    13/20 65%       9/20 45%        0/880                0/880                             4.7 (0.7)
       25    10/20 50%       4/20 20%        0/2979               0/2979                           10.0 (1.7)
       50     6/20 30%       3/20 15%        0/4876               0/4876                           24.1 (3.4)
      100     4/20 20%       3/20 15%        0/9867               0/9867                           44.2 (6.8)
      200     9/20 45%       9/20 45%        0/19859              0/19859                          31.0 (12.2)

No honest pair was flagged by the whole notebooks that a task did not flag; the 6 of the class of 5 are each a
copier's hidden copy against a third student whose form of the same long task (06's TarImageDataset, 04's Dual,
08's train_checkerboard) is close to the one copied. The highest honest score of whole notebooks was 0.63 (class
of 10), the lowest copy's 0.53, so no bar parts them all: with --whole-threshold 0.6 the copies found rise to
100, 95, 60, 35 and 30% (classes of 5 to 100) and one honest pair in 880 is flagged (class of 10). Copies are
harder to find in larger classes because fewer students write a form of their own there (the rest write the
class's common form, left out), so a notebook has less of its own to copy. The step's time is the tokenizing:
a profile of the class of 200 puts 82% of it in pygments (copydetect's filter_code), once per answer (9,947
answers), and under 5% in the comparisons.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import math
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from autograder.course import similarity
from autograder.course.cases import correct_forms, mutants
from autograder.course.reference import solution_cells
from autograder.judging.registry import CHAPTERS
from benchmarks.similarity import disguise


def pool(chapter: str) -> dict[str, list[str]]:
    """task -> the kit's distinct forms of it: the reference, then each @right and each @wrong case's code."""
    out = {task: [code] for task, code in solution_cells(chapter).items()}
    for cells in [c.cells for c in correct_forms(chapter)] + [m.cells for m in mutants(chapter)]:
        for task, code in cells.items():
            if task in out and code not in out[task]:
                out[task].append(code)
    return out


def families(chapter: str, task: str, forms: list[str]) -> list[str]:
    """One form of each family: forms the step scores THRESHOLD or more alike, at any size (a @wrong case is
    mostly an edit of the reference), are one way of writing the task, not two authors."""
    saved = similarity.MIN_MATCH, similarity.COMMON_MIN
    similarity.MIN_MATCH, similarity.COMMON_MIN = 0, len(forms) + 1
    try:
        alike = list(similarity.task_pairs(chapter, task, {f"{i:03d}": code for i, code in enumerate(forms)},
                                           similarity.starter_cells(chapter).get(task, "")))
    finally:
        similarity.MIN_MATCH, similarity.COMMON_MIN = saved
    head = list(range(len(forms)))

    def root(i: int) -> int:
        while head[i] != i:
            i = head[i]
        return i

    for p in alike:
        a, b = sorted((root(int(p.students[0])), root(int(p.students[1]))))
        head[b] = a
    return [forms[i] for i in range(len(forms)) if root(i) == i]


def _functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _inline(tree: ast.Module, rng: random.Random) -> None:
    """One local variable assigned once and read once, replaced by its value where it is read."""
    found = []
    for fn in _functions(tree):
        for i, stmt in enumerate(fn.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                later = [n for s in fn.body[i + 1:] for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name]
                if len(later) == 1 and isinstance(later[0].ctx, ast.Load):
                    found.append((fn, stmt, later[0]))
    if found:
        fn, stmt, use = rng.choice(found)
        value = stmt.value

        class _Put(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.expr:
                return value if node is use else node

        fn.body = [_Put().visit(s) for s in fn.body if s is not stmt]


def _extract(tree: ast.Module, rng: random.Random) -> None:
    """One returned or assigned expression moved into a new helper function of the names it reads."""
    found = [(fn, s) for fn in _functions(tree) for s in fn.body
             if isinstance(s, (ast.Return, ast.Assign)) and isinstance(s.value, (ast.Call, ast.BinOp))]
    if not found:
        return
    _, stmt = rng.choice(found)
    assert stmt.value is not None
    reads = sorted({n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)} - {"torch", "F", "nn", "math"})
    helper = ast.parse(f"def part_{rng.randrange(100)}({', '.join(reads)}):\n    return 0").body[0]
    assert isinstance(helper, ast.FunctionDef) and isinstance(helper.body[0], ast.Return)
    helper.body[0].value = stmt.value
    stmt.value = ast.Call(ast.Name(helper.name, ast.Load()), [ast.Name(r, ast.Load()) for r in reads], [])
    tree.body.insert(0, helper)


def hide(code: str, keep: set[str], seed: int) -> str:
    """A copy of `code` behind inlining, a helper pulled out, renames, reordering and new comments."""
    rng = random.Random(seed)
    try:
        tree = ast.parse(code)
        _inline(tree, rng)
        _extract(tree, rng)
        return disguise(ast.unparse(ast.fix_missing_locations(tree)), keep, seed)
    except (SyntaxError, ValueError):
        return code


@dataclass
class Class:
    answers: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # student -> assignment -> task
    copies: list[tuple[str, str, str]] = field(default_factory=list)  # (copier, copied, assignment)
    forced: set[frozenset[str]] = field(default_factory=set)  # honest pairs the kit's forms made write alike
    own: dict[tuple[str, str], float] = field(default_factory=dict)  # (student, assignment) -> code of their own


def _deal(students: list[str], ways: list[str], limit: int, rng: random.Random) -> dict[str, int]:
    """Which family each student writes: one of their own while there are enough, the others one family
    together, if they are `limit` or more (the class's common way); else families go round (shared: forced)."""
    order, n, g = rng.sample(students, len(students)), len(students), len(ways)
    if n <= g:
        return {s: i for i, s in enumerate(order)}
    own = min(g - 1, n - limit)
    if own >= 0:
        return {s: i + 1 if i < own else 0 for i, s in enumerate(order)}
    return {s: i % g for i, s in enumerate(order)}


@functools.cache
def _size(chapter: str, task: str, code: str) -> float:
    """Characters of tokenized code that the step fingerprints in `code`, the starter code left out."""
    starter = similarity.starter_cells(chapter).get(task, "")
    return sum(fp.token_coverage for fp in similarity._prints(similarity._copydetect(), {"x": code}, starter).values())


def make_class(size: int, seed: int, ways: dict[str, dict[str, list[str]]]) -> Class:
    rng = random.Random(seed)
    out = Class()
    students = [f"s{i:03d}" for i in range(size)]
    copiers = rng.sample(students, max(1, size // 10))
    plan = {copier: rng.choice(sorted(ways)) for copier in copiers}
    limit = max(similarity.COMMON_MIN, math.ceil(similarity.COMMON_SHARE * size))
    out.answers = {s: {ch: {} for ch in ways} for s in students}
    for chapter, tasks in ways.items():
        writers = [s for s in students if plan.get(s) != chapter]
        for task, forms in tasks.items():
            dealt = _deal(writers, forms, limit, rng)
            for student, i in dealt.items():
                out.answers[student][chapter][task] = forms[i]
            groups = Counter(dealt.values())
            for student, i in dealt.items():  # a family of their own, and not the chapter's solution
                if i and groups[i] == 1:
                    mine = out.own.get((student, chapter), 0.0)
                    out.own[(student, chapter)] = mine + _size(chapter, task, forms[i])
            out.forced |= {frozenset(p) for p in combinations(dealt, 2)
                           if dealt[p[0]] == dealt[p[1]] and groups[dealt[p[0]]] < limit}
    for copier, chapter in plan.items():  # a classmate with code of their own, where there is one
        others = [s for s in students if s not in copiers]
        telling = [s for s in others if out.own.get((s, chapter), 0.0) >= similarity.MIN_MATCH]
        copied = rng.choice(telling or others)
        keep = set(CHAPTERS[chapter].answers)
        out.answers[copier][chapter] = {task: hide(code, keep, rng.randrange(10**6))
                                        for task, code in out.answers[copied][chapter].items()}
        out.copies.append((copier, copied, chapter))
    return out


@dataclass
class Rates:
    copies: int = 0
    found: int = 0  # copies flagged by the step
    found_by_task: int = 0  # copies a task alone flags
    honest: int = 0
    flagged: int = 0  # honest pairs flagged by the step
    flagged_by_task: int = 0
    forced: int = 0  # honest pairs that had to write one task alike (the kit has too few families of it)
    forced_flagged: int = 0
    classes: int = 0
    honest_high: float = 0.0  # the highest score of an honest pair of whole notebooks (MIN_MATCH shared or more)
    copy_low: float = 1.0  # the lowest score of a copy of a notebook with code of its own, as a whole notebook
    seconds: float = 0.0  # the step's own time (find), over all classes
    cpu: float = 0.0  # and its CPU time (the machine is shared: wall time is not the step's alone)


def judge(cls: Class, rates: Rates) -> None:
    """Run the step on the class, as grade-all leaves it, and count."""
    with tempfile.TemporaryDirectory() as tmp:
        graded = Path(tmp)
        for student, assignments in cls.answers.items():
            for chapter, cells in assignments.items():
                for folder, text in (("answers", json.dumps({"assignment": chapter, "cells": cells})),
                                     ("results", "{}")):
                    path = graded / folder / student / f"{chapter}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text)
        started, cpu, bar = time.perf_counter(), time.process_time(), similarity.WHOLE_THRESHOLD
        similarity.WHOLE_THRESHOLD = 0.0  # every pair of whole notebooks sharing MIN_MATCH, to see its score
        try:
            found = similarity.find(graded)
        finally:
            similarity.WHOLE_THRESHOLD = bar
        rates.seconds += time.perf_counter() - started
        rates.cpu += time.process_time() - cpu
    rates.classes += 1
    by_task = {frozenset(p.students) for p in found.pairs}
    anyhow = by_task | {frozenset(w.students) for w in found.wholes if w.score >= bar}
    copied = {frozenset((a, b)) for a, b, _ in cls.copies}
    copiers = {(a, chapter) for a, _, chapter in cls.copies}

    def honest(pair: frozenset[str]) -> bool:  # not a copy, not forced, not two copies of one notebook
        a, b = tuple(pair)
        return pair not in copied and pair not in cls.forced and not any(
            (a, ch) in copiers and (b, ch) in copiers for ch in cls.answers[a])

    for copier, victim, chapter in cls.copies:
        if cls.own.get((victim, chapter), 0.0) >= similarity.MIN_MATCH:
            rates.copy_low = min([rates.copy_low] + [w.score for w in found.wholes if w.scope == chapter
                                                     and set(w.students) == {copier, victim}] or [0.0])
    for w in found.wholes:
        if honest(frozenset(w.students)):
            rates.honest_high = max(rates.honest_high, w.score)
    for pair in map(frozenset, combinations(cls.answers, 2)):
        if pair in copied:
            rates.copies += 1
            rates.found += pair in anyhow
            rates.found_by_task += pair in by_task
        elif pair in cls.forced:
            rates.forced += 1
            rates.forced_flagged += pair in anyhow
        elif honest(pair):
            rates.honest += 1
            rates.flagged += pair in anyhow
            rates.flagged_by_task += pair in by_task


def measure(size: int, copies: int, ways: dict[str, dict[str, list[str]]]) -> Rates:
    rates = Rates()
    while rates.copies < copies:
        judge(make_class(size, 1000 * size + rates.classes, ways), rates)
    return rates


def _rate(n: int, of: int) -> str:
    return f"{n}/{of} ({n / of:.1%})" if of else "-"


def table(sizes: Iterable[int], copies: int, chapters: list[str]) -> None:
    started = time.perf_counter()
    ways = {ch: {task: families(ch, task, forms) for task, forms in pool(ch).items()} for ch in chapters}
    print(f"{len(chapters)} assignment(s), {sum(map(len, ways.values()))} tasks, "
          f"{sum(len(f) for t in ways.values() for f in t.values())} families of forms "
          f"({time.perf_counter() - started:.0f} s to sort them); one copier in ten per class")
    print(f"{'class':>5}  {'copies found':>14}  {'by a task alone':>15}  "
          f"{'honest pairs flagged':>22}  {'by a task alone':>18}  {'forced pairs flagged':>20}  "
          "s per class (CPU)  whole notebooks: highest honest / lowest copy")
    for size in sizes:
        r = measure(size, copies, ways)
        print(f"{size:>5}  {_rate(r.found, r.copies):>14}  {_rate(r.found_by_task, r.copies):>15}  "
              f"{_rate(r.flagged, r.honest):>22}  {_rate(r.flagged_by_task, r.honest):>18}  "
              f"{_rate(r.forced_flagged, r.forced):>20}  {r.seconds / r.classes:>5.1f} ({r.cpu / r.classes:.1f})  "
              f"{r.honest_high:.2f} / {r.copy_low:.2f}", flush=True)

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 25, 50, 100, 200])
    parser.add_argument("--copies", type=int, default=20, help="copies planted per size, over as many classes")
    parser.add_argument("--whole-threshold", type=float, default=similarity.WHOLE_THRESHOLD)
    parser.add_argument("--chapters", nargs="+", default=sorted(CHAPTERS), choices=sorted(CHAPTERS))
    args = parser.parse_args()
    similarity.WHOLE_THRESHOLD = args.whole_threshold
    table(args.sizes, args.copies, args.chapters)


if __name__ == "__main__":
    main()
