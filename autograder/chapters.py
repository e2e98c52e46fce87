"""The assignments the grader knows: ids, answer cells and the names they define."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CHECKS_DIR = Path(__file__).parent / "checks"


@dataclass(frozen=True)
class Chapter:
    id: str
    # nbgrader grade_id of each answer cell -> the names that cell must define
    answers: dict[str, tuple[str, ...]]
    # run before the answer cells, as the notebook's locked import cell does
    preamble: str = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def checks(self) -> Path:
        return CHECKS_DIR / f"ch{self.id}.py"

    @property
    def notebook_name(self) -> str:
        return f"{self.id}.ipynb"

    def cell_defining(self, name: str) -> str | None:
        return next((cell for cell, names in self.answers.items() if name in names), None)


CHAPTERS: dict[str, Chapter] = {
    c.id: c
    for c in [
        Chapter(
            "07_numerical_stability",
            {"softmax": ("softmax",), "softmax_cross_entropy": ("softmax_cross_entropy",)},
        ),
    ]
}
