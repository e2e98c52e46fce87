"""Kept for courses whose nbgrader_config.py names `autograder.course.missing_cells.MissingCells` (the kit's config
of 2026-11-27). The preprocessor lives in autograder/course/nbgrader/missing_cells.py.
"""

from autograder.course.nbgrader.missing_cells import MissingCells

__all__ = ["MissingCells"]
