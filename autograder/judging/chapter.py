"""What the judge knows of one chapter: its registry entry (from the notebook) and its folder's settings.

Standard library only: the command line reads it before torch is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ChapterConfig:
    """A chapter's own settings, declared as CONFIG in autograder/chapters/ch<id>/__init__.py."""

    # Its student process imports torch._dynamo (1-2 s): an optimizer's first step, torch.func (the kit's operator
    # traces do not: sandbox/runtime/child.Trace). The zygote then imports it once, before forking, not every child.
    loads_dynamo: bool = False
    # A call into student code trains a model: short test limits keep the default call limit for it.
    trains: bool = False
    # Its checks' own oracles import torch._dynamo in the judge (torch.func, an optimizer's first step): the command
    # line imports it while the zygote starts, not in the first check that needs it.
    judge_loads_dynamo: bool = False


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    answers: tuple[str, ...]  # grade_ids of the answer cells; each defines the name it is called by
    points: dict[str, float]  # task (an answer cell) -> the points of its check cell
    preamble: str  # the notebook's locked imports cell, run before the answer cells
    checks: Path  # the checks module: the chapter's API declaration and its checks
    harness: Path | None = None  # kit code run in the student's process before the answer cells
    config: ChapterConfig = field(default_factory=ChapterConfig)
    # stretch tasks -> their bonus points (metadata kit.bonus of a 0-point check cell), shown apart from `points`
    bonus: dict[str, float] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.checks.parent

    @property
    def checks_name(self) -> str:
        """The checks module as messages name it: its folder and file (ch07_numerical_stability/checks.py)."""
        return f"{self.folder.name}/{self.checks.name}"

    @property
    def loads_dynamo(self) -> bool:
        return self.config.loads_dynamo

    @property
    def tasks(self) -> dict[str, float]:
        """Every task's points, stretch tasks included."""
        return {**self.points, **self.bonus}

    def harness_source(self) -> str:
        """Kit code run in the student's process before the answer cells (no secrets in it)."""
        return self.harness.read_text() if self.harness is not None else ""
