"""The assignments the grader knows: ids, answer cells and the names they define."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHECKS_DIR = Path(__file__).parent / "checks"
HARNESS_DIR = Path(__file__).parent / "harness"


@dataclass(frozen=True)
class Chapter:
    id: str
    # nbgrader grade_id of each answer cell -> the names that cell must define
    answers: dict[str, tuple[str, ...]]
    # run before the answer cells, as the notebook's locked import cell does
    preamble: str = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    # its grading imports torch._dynamo (1-2 s): operator traces (TorchDispatchMode), an optimizer's first
    # step, torch.func. The zygote then imports it once, before forking, instead of every child on its own.
    loads_dynamo: bool = False

    @property
    def checks(self) -> Path:
        return CHECKS_DIR / f"ch{self.id}.py"

    def harness_source(self) -> str:
        """Kit code run in the student's process before the answer cells (no secrets in it)."""
        path = HARNESS_DIR / f"ch{self.id}.py"
        return path.read_text() if path.exists() else ""

    def cell_defining(self, name: str) -> str | None:
        return next((cell for cell, names in self.answers.items() if name in names), None)


CHAPTERS: dict[str, Chapter] = {
    c.id: c
    for c in [
        Chapter("01_basics", {"grad_of": ("grad_of",), "fit_polynomial": ("fit_polynomial",)}, loads_dynamo=True),
        Chapter(
            "02_modules",
            {
                "AffineScalar": ("AffineScalar",),
                "LinearRegressor": ("LinearRegressor",),
                "make_mlp": ("make_mlp",),
                "train": ("train",),
            },
            loads_dynamo=True,
        ),
        Chapter("03_broadcasting", {"Merge": ("Merge",), "paired_sums": ("paired_sums",)}, loads_dynamo=True),
        Chapter(
            "04_overloaded_ops",
            {"row_sum": ("row_sum",), "pairwise_sq_distances": ("pairwise_sq_distances",)},
            loads_dynamo=True,
        ),
        Chapter("05_batch_gather", {"batch_gather": ("batch_gather",)}, loads_dynamo=True),
        Chapter(
            "06_data_loaders",
            {"ImageDirectoryDataset": ("ImageDirectoryDataset",), "TarImageDataset": ("TarImageDataset",)},
            preamble=(
                "import glob\nimport io\nimport os\nimport tarfile\nimport tempfile\nimport time\n"
                "from collections import Counter\nfrom collections.abc import Iterator\n\n"
                "import cv2\nimport numpy as np\nimport torch\n"
                "from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info\n"
            ),
        ),
        Chapter(
            "07_numerical_stability",
            {"softmax": ("softmax",), "softmax_cross_entropy": ("softmax_cross_entropy",)},
        ),
        Chapter(
            "08_mixed_precision",
            {"amp_train_step": ("amp_train_step",), "train_checkerboard": ("train_checkerboard",)},
            loads_dynamo=True,
        ),
    ]
}
