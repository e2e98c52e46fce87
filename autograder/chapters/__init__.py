"""The chapters, one folder each: ch<id>/ holds all of that chapter the grader needs.

- __init__.py: its CONFIG (a ChapterConfig: its settings), torch-free;
- checks.py: its declared API (class Api) and its checks (@check), pytest collects them;
- inputs.py and oracles.py, where the chapter is large: generate_input and the reference answers;
- harness.py (optional): kit code run in the student's process before the answer cells;
- cases.py: its named wrong and correct implementations, for the self-test and the kit's tests.

chapters.json, beside them, is generated from the source notebooks (python -m autograder.judging.registry).
Nothing of this goes beside the notebooks in source/: nbgrader would release it to students.
"""
