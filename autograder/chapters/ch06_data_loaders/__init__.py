"""Chapter 06_data_loaders: Efficient custom data loaders."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig()
