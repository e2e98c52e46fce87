"""Kept for courses whose nbgrader_config.py names `autograder.nbgrader_autograde.KitAutograde`.

The preprocessor lives in autograder/course/nbgrader/autograde.py.
"""

from autograder.course.nbgrader.autograde import KitAutograde

__all__ = ["KitAutograde"]
