"""Chapter 08_mixed_precision: Faster training with mixed precision."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig(loads_dynamo=True)
