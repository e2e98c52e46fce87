"""Kept for courses whose nbgrader_config.py names `autograder.course.nbgrader_autograde.KitAutograde` (the kit's
config of 2026-11-26 and 27). The preprocessor lives in autograder/course/nbgrader/autograde.py.
"""

from autograder.course.nbgrader.autograde import KitAutograde

__all__ = ["KitAutograde"]
