"""Attacks on evidence that the student's own process makes: each gained points on d532b0b, and gains none now.

- The timed run's outputs: the child used to send the judge a fingerprint of each output (shape, sums, 16
  samples), computed by a function that lives in the student's interpreter. A submission that replaced it
  could return garbage at once and forge the fingerprint: a slicing loop earned the speed points.
- "Vectorized" from a trace of torch's operators: work done outside them (numpy on .numpy() views, plain
  Python) was invisible, so a loop in numpy scored as vectorized; numpy's lower cost per row also cleared the
  bars set against torch loops (row_sum 4x, batch_gather 3.5x).

Now every timed output is compared whole in the judge, a bar against the vectorized reference on the judge's
clock decides "vectorized", and pairwise_sq_distances' "no torch.cdist" is read from its cell's source.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.chapters.ch04_overloaded_ops.checks import library_distances
from autograder.judging.notebook import Submission
from autograder.judging.registry import CHAPTERS
from tests.kit import by_name, grade_fast, solved

# The slicing loop, as slow as the loop it is timed against, made to look fast: while the child serves a timed
# request it returns garbage at once, and the fingerprint the child sends is that of the right answer.
FORGED_DIGEST = '''
import sys

_child = sys.modules["autograder.sandbox.runtime.child"]
_inputs = []
_timing = [False]


def row_sum(x):
    if _timing[0]:
        _inputs.append(x)
        return torch.empty(x.shape[1], dtype=x.dtype)
    z = torch.zeros_like(x[0])
    for i in range(x.shape[0]):
        z = z + x[i]
    return z


def _run(self, req, run=_child.Child.run):
    _timing[0] = True
    try:
        return run(self, req)
    finally:
        _timing[0] = False


def _digest(out, digest=getattr(_child, "digest", None)):
    return digest(_inputs.pop(0).sum(0) if _inputs else out)


_child.Child.run = _run
_child.digest = _digest
'''


def test_a_forged_fingerprint_of_the_timed_outputs_earns_no_speed_points(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, "04_overloaded_ops", row_sum=FORGED_DIGEST), only="check_row_sum_speed")
    result = by_name(g)["check_row_sum_speed"]
    assert result.status == "failed", result.output
    assert "wrong results during the timed run" in result.output


NUMPY_ROW_LOOP = '''
import numpy as np


def row_sum(x):
    a = x.numpy()
    z = np.zeros(a.shape[1], dtype=a.dtype)
    for i in range(a.shape[0]):
        z += a[i]
    return torch.from_numpy(z)
'''

NUMPY_PAIRWISE_LOOP = '''
import numpy as np


def pairwise_sq_distances(x, y):
    a, b = x.detach().numpy(), y.detach().numpy()
    return torch.from_numpy(np.stack([((b - row) ** 2).sum(axis=1) for row in a]))
'''

NUMPY_GATHER_LOOP = '''
import numpy as np


def batch_gather(tensor, indices):
    t, i = tensor.numpy(), indices.numpy()
    if ((i < 0) | (i >= t.shape[1])).any():
        raise IndexError(f"index {int(i[(i < 0) | (i >= t.shape[1])][0])} is out of range")
    return torch.from_numpy(np.stack([t[b].take(i[b], axis=0) for b in range(t.shape[0])]))
'''

PYTHON_GATHER_LOOP = '''
def batch_gather(tensor, indices):
    rows, index = tensor.tolist(), indices.tolist()
    return torch.tensor([[row[k] for k in ks] if isinstance(ks, list) else row[ks] for row, ks in zip(rows, index)],
                        dtype=tensor.dtype)
'''

NUMPY_SCATTER_LOOP = '''
import numpy as np


def batch_scatter_add(values, indices, n):
    v, idx = values.numpy(), indices.numpy()
    trailing = v.shape[idx.ndim:]
    out = np.zeros((v.shape[0], n, *trailing), dtype=v.dtype)
    for b in range(v.shape[0]):
        np.add.at(out[b], idx[b].reshape(-1), v[b].reshape(-1, *trailing))
    return torch.from_numpy(out)
'''

# (chapter, cell, code, the checks it must fail). On d532b0b each earned points: the row_sum and batch_gather
# loops in numpy passed check_*_vectorized (traces) and check_*_speed (bars against torch loops), now one clock
# check_*_speed; the Python loop over batch_gather's numbers passed check_batch_gather_vectorized; the pairwise
# and scatter_add loops passed their check_*_vectorized.
LOOPS = {
    "row_sum numpy loop": ("04_overloaded_ops", "row_sum", NUMPY_ROW_LOOP, ("check_row_sum_speed",)),
    "pairwise numpy rows": ("04_overloaded_ops", "pairwise_sq_distances", NUMPY_PAIRWISE_LOOP,
                            ("check_pairwise_vectorized",)),
    "batch_gather numpy loop": ("05_batch_gather", "batch_gather", NUMPY_GATHER_LOOP, ("check_batch_gather_speed",)),
    "batch_gather python loop": ("05_batch_gather", "batch_gather", PYTHON_GATHER_LOOP,
                                 ("check_batch_gather_speed",)),
    "scatter_add numpy loop": ("05_batch_gather", "batch_scatter_add", NUMPY_SCATTER_LOOP,
                               ("check_scatter_add_vectorized",)),
}


@pytest.mark.parametrize("case", LOOPS)
def test_a_loop_outside_torch_earns_no_vectorized_or_speed_points(tmp_path: Path, case: str) -> None:
    chapter, cell, code, checks = LOOPS[case]
    g = grade_fast(solved(tmp_path, chapter, **{cell: code}), only=" or ".join(checks))
    results = by_name(g)
    assert sorted(results) == sorted(checks)
    for name in checks:
        assert results[name].status == "failed", (name, results[name].output)


# The library rule of pairwise_sq_distances is read from the source of its own cell (no trace decides it).
NAMES_CDIST = {
    "a call": "def pairwise_sq_distances(x, y):\n    return torch.cdist(x, y) ** 2\n",
    "an import": "from torch import cdist\n\n\ndef pairwise_sq_distances(x, y):\n    return cdist(x, y) ** 2\n",
    "a name as a string": 'def pairwise_sq_distances(x, y):\n    return getattr(torch, "cdist")(x, y) ** 2\n',
    "pdist's kernel": "def pairwise_sq_distances(x, y):\n    return torch._cdist_forward(x, y, 2.0, None) ** 2\n",
}
HONEST = {
    "a docstring that names it": 'def pairwise_sq_distances(x, y):\n    """torch.cdist(x, y) ** 2, by hand."""\n'
                                 "    return ((x[:, None] - y[None]) ** 2).sum(-1)\n",
    "a comment": "def pairwise_sq_distances(x, y):\n    # unlike cdist, no square root\n"
                 "    return ((x[:, None] - y[None]) ** 2).sum(-1)\n",
}


def _distances(cells: dict[str, str]) -> list[str]:
    sub = Submission(Path("x.ipynb"), CHAPTERS["04_overloaded_ops"], [{"id": k, "source": v} for k, v in cells.items()])
    return library_distances(sub, "pairwise_sq_distances")


# An alias bound in another answer cell stands for what it names (the task reaches that cell's names).
IN_ANOTHER_CELL = {"row_sum": "from torch import cdist as d\n\n\ndef row_sum(x):\n    return x.sum(0)\n",
                   "pairwise_sq_distances": "def pairwise_sq_distances(x, y):\n    return d(x, y) ** 2\n"}


@pytest.mark.parametrize("case", NAMES_CDIST)
def test_a_cell_that_names_the_library_distance_is_found(case: str) -> None:
    assert _distances({"pairwise_sq_distances": NAMES_CDIST[case]})


def test_the_library_distance_under_an_alias_from_another_cell_is_found() -> None:
    found = _distances(IN_ANOTHER_CELL)
    assert any("torch.cdist" in f and "line 2" in f for f in found), found


@pytest.mark.parametrize("case", HONEST)
def test_a_cell_that_only_mentions_it_in_prose_is_not(case: str) -> None:
    assert not _distances({"pairwise_sq_distances": HONEST[case]})
    # another task's own use is that task's business
    assert not _distances({"row_sum": "def row_sum(x):\n    return torch.cdist(x, x).sum(0)\n",
                           "pairwise_sq_distances": HONEST[case]})
