"""Chapter 05_batch_gather: From TorchScript to vectorized code."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig()
