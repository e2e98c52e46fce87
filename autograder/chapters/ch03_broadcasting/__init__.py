"""Chapter 03_broadcasting: Broadcasting: the good and the ugly."""

from autograder.judging.chapter import ChapterConfig

CONFIG = ChapterConfig()
