"""Kept for courses whose nbgrader_config.py names `autograder.nbgrader_autograde.KitAutograde`.

The preprocessor lives in autograder/course/nbgrader_autograde.py.
"""

from autograder.course.nbgrader_autograde import KitAutograde

__all__ = ["KitAutograde"]
