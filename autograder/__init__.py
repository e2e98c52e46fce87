"""Autograder for the Effective PyTorch course kit, in three layers and the chapters they grade.

The engine moves one way: load the notebook (judging.notebook) -> run it in
isolation (sandbox) -> judge it with pytest (judging.plugin and each chapter's
checks) -> report (judging.report, then course/ for a class).

- sandbox/: runs code in isolation; knows no notebooks, chapters or pytest.
  sandbox/runtime/ is the only kit code that runs beside student code.
- judging/: one notebook -> one Grade, with torch, numpy and pytest only.
- course/: many submissions and the outside tools (nbgrader, Gradescope, the
  class report, the self-test); judging/ never imports it.
- chapters/: one folder per chapter, all of it the grader needs.
"""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent  # the course checkout: source/, release/, the grading secret
