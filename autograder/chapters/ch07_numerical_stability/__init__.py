"""Chapter 07_numerical_stability: Numerical stability."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig()
