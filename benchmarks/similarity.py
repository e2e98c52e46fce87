"""Similar answers (autograder/course/similarity.py): its calibration on the kit's correct forms, and its time.

    .venv/bin/python benchmarks/similarity.py [--students 200] [--assignment 05_batch_gather] [--worst-case]

Measured on the kit's 2-core machine, shared with seven other jobs (2026-11-26): 200 submissions of
05_batch_gather, 5.6-6.2 s of CPU (25-42 s of wall time on the loaded machine), no pair flagged; --worst-case,
29.7 s of CPU (220 s of wall time), 23 288 pairs flagged.

1. Calibration: for every task of every chapter, every pair of different correct forms (the reference and the
   @right cases of autograder/chapters/*/cases.py) is an honest pair; each form against a copy of itself behind
   renamed names, reordered definitions and new comments is a copy. It prints the highest honest score and the
   lowest copy score, and which pairs the step would flag: no honest pair, every copy long enough to judge.
2. Time: a class of N submissions of one assignment, each task one of its correct forms behind a student's own
   renames and comments, through the whole step (find, and writing pairs.json and pairs.csv); then the same class
   with nothing counted as common code (--worst-case): every pair of students with the same form is compared in
   full and flagged.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import tempfile
import time
from pathlib import Path

from autograder.course import similarity
from autograder.course.cases import correct_forms
from autograder.course.reference import solution_cells
from autograder.judging.registry import CHAPTERS


class _Rename(ast.NodeTransformer):
    """Every name the code binds (arguments, locals, helpers) but those in `keep`, renamed with `prefix`."""

    def __init__(self, bound: set[str], prefix: str) -> None:
        self.bound, self.prefix = bound, prefix

    def _new(self, name: str) -> str:
        return f"{self.prefix}{name}" if name in self.bound else name

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._new(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self._new(node.arg)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self._new(node.name)
        self.generic_visit(node)
        return node


def disguise(code: str, keep: set[str], seed: int) -> str:
    """`code` as a copier hands it in: its own names renamed (not the task's, which the grader calls), the
    definitions of each body in reverse order, the comments gone and new ones written."""
    tree = ast.parse(code)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in n.posonlyargs + n.args + n.kwonlyargs + [x for x in (n.vararg, n.kwarg) if x]}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    bound -= keep | {"self", "cls", "__init__", "forward", "__iter__", "__len__", "__getitem__"}
    bound -= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("__")}
    tree = _Rename(bound, random.Random(seed).choice(["my_", "tmp_", "z", "val_"])).visit(tree)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            defs = [i for i, s in enumerate(body) if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
            moved = [body[i] for i in defs][::-1]
            for i, s in zip(defs, moved, strict=True):
                body[i] = s
    lines = ast.unparse(tree).splitlines()
    return "\n".join(f"{line}  # step {i}" if line.strip() and i % 3 == 0 else line for i, line in enumerate(lines))


def forms(chapter: str) -> dict[str, list[tuple[str, str]]]:
    """task -> [(form name, code)]: the reference first, then each @right case of that task."""
    out = {task: [("reference", code)] for task, code in solution_cells(chapter).items()}
    for form in correct_forms(chapter):
        for task, code in form.cells.items():
            out.setdefault(task, []).append((form.name, code))
    return out


def scores(assignment: str, task: str, answers: dict[str, str], starter: str) -> list[similarity.Pair]:
    """Every pair as the step compares it, flagged or not (its bars lowered to see them all)."""
    saved = similarity.THRESHOLD, similarity.MIN_MATCH
    similarity.THRESHOLD, similarity.MIN_MATCH = 0.0, 0
    try:
        return list(similarity.task_pairs(assignment, task, answers, starter))
    finally:
        similarity.THRESHOLD, similarity.MIN_MATCH = saved


def _flagged(p: similarity.Pair) -> bool:
    return p.score >= similarity.THRESHOLD and p.matched >= similarity.MIN_MATCH


def calibrate() -> None:
    honest: list[similarity.Pair] = []
    copies: list[tuple[str, similarity.Pair | None]] = []
    for chapter in CHAPTERS:
        starter = similarity.starter_cells(chapter)
        for task, variants in forms(chapter).items():
            answers = {f"{i}:{name}": code for i, (name, code) in enumerate(variants)}
            honest += scores(chapter, task, answers, starter.get(task, ""))
            for i, (key, code) in enumerate(answers.items()):
                copy = disguise(code, {task} | set(CHAPTERS[chapter].answers), i)
                found = scores(chapter, task, {key: code, "copy": copy}, starter.get(task, ""))
                copies.append((f"{chapter}/{task} {key}", found[0] if found else None))
    line = "{:.2f} of {:4d} chars: {}".format
    print(f"honest pairs (different correct forms of one task): {len(honest)}, flagged "
          f"{sum(map(_flagged, honest))}; the highest scores:")
    for p in sorted(honest, key=lambda p: -p.score)[:6]:
        print("  " + line(p.score, p.matched, f"{p.assignment}/{p.task} {' ~ '.join(p.students)}")
              + (" FLAGGED" if _flagged(p) else ""))
    long = [(w, p) for w, p in copies if p is not None and p.matched >= similarity.MIN_MATCH]
    print(f"disguised copies: {len(copies)}, {len(long)} sharing at least MIN_MATCH = {similarity.MIN_MATCH} "
          f"characters of tokens, flagged {sum(_flagged(p) for _, p in long)}; the lowest scores of those:")
    for w, p in sorted(long, key=lambda wp: wp[1].score)[:4]:
        print("  " + line(p.score, p.matched, w))
    short = [w for w, p in copies if p is None or p.matched < similarity.MIN_MATCH]
    print(f"copies too short to judge (a task whose honest answers are as alike): {len(short)}, e.g. "
          + "; ".join(short[:4]))


def timed_class(assignment: str, students: int) -> None:
    variants = forms(assignment)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        graded = Path(tmp)
        for i in range(students):
            cells = {task: disguise(rng.choice(v)[1], {task} | set(CHAPTERS[assignment].answers), rng.randrange(9))
                     for task, v in variants.items()}
            path = graded / similarity.ANSWERS / f"s{i:03d}" / f"{assignment}.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps({"sha256": "", "assignment": assignment, "cells": cells}))
            result = graded / "results" / f"s{i:03d}" / f"{assignment}.json"  # graded: its answers count
            result.parent.mkdir(parents=True)
            result.write_text("{}")
        started, cpu = time.perf_counter(), time.process_time()
        found = similarity.write(graded)
        took, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"{students} submissions of {assignment} ({len(variants)} tasks; {sum(map(len, variants.values()))} correct "
          f"forms in all, behind each student's renames): {took:.1f} s ({cpu:.1f} s of CPU), {len(found.pairs)} pairs "
          "flagged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--assignment", default="05_batch_gather", choices=sorted(CHAPTERS))
    parser.add_argument("--skip-calibration", action="store_true")
    parser.add_argument("--worst-case", action="store_true", help="also time the class with no common code")
    args = parser.parse_args()
    if not args.skip_calibration:
        calibrate()
    timed_class(args.assignment, args.students)
    if args.worst_case:  # no code common to the class: every pair with the same form is compared and flagged
        similarity.COMMON_MIN = args.students + 1
        print("without the class's common code left out: ", end="")
        timed_class(args.assignment, args.students)


if __name__ == "__main__":
    main()
