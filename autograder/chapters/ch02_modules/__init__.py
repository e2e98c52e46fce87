"""Chapter 02_modules: Encapsulate your model with Modules."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig(loads_dynamo=True, trains=True, judge_loads_dynamo=True)
