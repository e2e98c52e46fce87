"""Chapter 09_capstone: Capstone: train a sequence classifier end to end."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig(loads_dynamo=True, trains=True)
