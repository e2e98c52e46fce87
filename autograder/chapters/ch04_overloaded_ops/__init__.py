"""Chapter 04_overloaded_ops: Take advantage of the overloaded operators."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig()
