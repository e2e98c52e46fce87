"""Chapter 01_basics: PyTorch basics."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig(loads_dynamo=True, trains=True, judge_loads_dynamo=True)
