"""The rules 09_capstone.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, SOURCE = Evidence.OUTCOME, Evidence.SOURCE

RULES: list[Rule] = []

NOT_RULES = [*HOW_GRADED]
