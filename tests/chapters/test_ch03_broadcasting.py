"""Chapter 03 alone: "never builds the tiled tensor" rests on evidence the submission cannot shape.

Each attack builds the tiled copy in a way that an operator trace recorded in the student's process does not
see (numpy on a .numpy() view, another thread, torch's dispatch-mode stack switched off). The checks must still
take the points away. Its cases are graded in tests/chapters/test_every_chapter.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autograder.chapters.ch03_broadcasting.checks import paired_sums_oracle, squeezed_everything
from autograder.sandbox import control
from tests.kit import by_name, grade_fast, limits_for, solved

CH = "03_broadcasting"

MERGE_HEAD = """
class Merge(nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear1 = nn.Linear(in_features1, out_features)
        self.linear2 = nn.Linear(in_features2, out_features)
        self.activation = activation

    def forward(self, a, b):
        tiled = tile(b, a)
        c = self.linear1(a) + self.linear2(tiled)
        return c if self.activation is None else self.activation(c)
"""

# Each builds b tiled to a's shape, out of sight of a dispatch trace in its own thread.
MERGE_TILERS = {
    "numpy copy": """
import numpy as np
def tile(b, a):
    shape = (*a.shape[:-1], b.shape[-1])
    return torch.from_numpy(np.ascontiguousarray(np.broadcast_to(b.detach().numpy(), shape)))
""",
    "another thread": """
import threading
def tile(b, a):
    out = []
    worker = threading.Thread(target=lambda: out.append(b.expand(*a.shape[:-1], b.shape[-1]).contiguous()))
    worker.start()
    worker.join()
    return out[0]
""",
    "dispatch modes switched off": """
from torch.utils._python_dispatch import _disable_current_modes
def tile(b, a):
    with _disable_current_modes():
        return b.repeat(*[n // m for n, m in zip(a.shape[:-1], b.shape[:-1])], 1)
""",
}

ADDITIVE_TILERS = {
    "pairs concatenated in another thread": """
import threading
def additive_scores(q, k, lengths, w_q, w_k, v):
    B, N, M = q.shape[0], q.shape[1], k.shape[1]
    out = []
    def pairs():
        pairs = torch.cat([q[:, :, None].expand(B, N, M, -1), k[:, None].expand(B, N, M, -1)], dim=-1)
        out.append(pairs @ torch.cat([w_q, w_k], dim=1).T)
    worker = threading.Thread(target=pairs)
    worker.start()
    worker.join()
    s = torch.tanh(out[0]) @ v
    real = torch.arange(M, device=k.device) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
""",
    "pairs concatenated in numpy": """
import numpy as np
def additive_scores(q, k, lengths, w_q, w_k, v):
    B, N, M = q.shape[0], q.shape[1], k.shape[1]
    qn, kn = q.detach().numpy(), k.detach().numpy()
    pairs = np.concatenate([np.broadcast_to(qn[:, :, None], (B, N, M, qn.shape[-1])),
                            np.broadcast_to(kn[:, None], (B, N, M, kn.shape[-1]))], axis=-1)
    w = np.concatenate([w_q.detach().numpy(), w_k.detach().numpy()], axis=1)
    s = torch.tanh(torch.from_numpy(pairs @ w.T)) @ v
    real = torch.arange(M, device=k.device) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
""",
    "padding filled in a loop, in another thread": """
import threading
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
    s = s.clone()
    def fill():
        for b in range(len(lengths)):
            s[b, :, int(lengths[b]):] = float("-inf")
    worker = threading.Thread(target=fill)
    worker.start()
    worker.join()
    return s
""",
}


@pytest.mark.parametrize("tiler", MERGE_TILERS)
def test_merge_tiled_out_of_the_traces_sight_loses_never_tiles(tmp_path: Path, tiler: str) -> None:
    path = solved(tmp_path, CH, Merge=MERGE_TILERS[tiler] + MERGE_HEAD)
    result = by_name(grade_fast(path, limits=limits_for(CH), only="check_merge_never_tiles"))
    r = result["check_merge_never_tiles"]
    assert r.score == 0, r.output
    assert "tiled" in r.output, r.output


@pytest.mark.parametrize("tiler", ADDITIVE_TILERS)
def test_additive_scores_tiled_or_looped_out_of_sight_loses_never_tiles(tmp_path: Path, tiler: str) -> None:
    path = solved(tmp_path, CH, additive_scores=ADDITIVE_TILERS[tiler])
    result = by_name(grade_fast(path, limits=limits_for(CH), only="check_additive_scores_never_tiles"))
    r = result["check_additive_scores_never_tiles"]
    assert r.score == 0, r.output


# Memory reserved and touched when the cell runs, then the tiled copy written into it: the measured call's memory
# does not rise, so only the input whose tiled copy no memory can hold takes the points away.
PREALLOCATED = """
import numpy as np
RESERVED = np.ones(1 << 27, dtype=np.float32)  # 512 MiB, every page touched now
def tile(b, a):
    n, width = int(np.prod(a.shape[:-1])), b.shape[-1]
    if n * width > RESERVED.size:
        return b.expand(*a.shape[:-1], width).contiguous()
    out = RESERVED[:n * width].reshape(*a.shape[:-1], width)
    np.copyto(out, b.detach().numpy())
    return torch.from_numpy(out)
"""


def test_merge_tiled_into_memory_reserved_beforehand_loses_never_tiles(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, Merge=PREALLOCATED + MERGE_HEAD)
    r = by_name(grade_fast(path, limits=limits_for(CH), only="check_merge_never_tiles"))["check_merge_never_tiles"]
    assert r.score == 0 and "more memory than any grading has" in r.output, r.output


def _without_memory_group(monkeypatch: pytest.MonkeyPatch) -> None:
    roles = control.machine()
    monkeypatch.setattr(control, "machine", lambda: {**roles, "memory": None})


@pytest.mark.parametrize("accounting", ["VmHWM", "none"])
def test_without_a_memory_group_tiling_still_loses_and_broadcasting_keeps_its_points(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accounting: str) -> None:
    """No memory group: each process's VmHWM measures; nothing readable at all: the out-of-reach input decides."""
    _without_memory_group(monkeypatch)
    if accounting == "none":
        monkeypatch.setattr(control.BoxControl, "_start_peak", lambda self: None)
    checks = "check_merge_never_tiles or check_additive_scores_never_tiles"
    honest = by_name(grade_fast(solved(tmp_path, CH), limits=limits_for(CH), only=checks))
    assert [r.score for r in honest.values()] == [1, 1], [r.output for r in honest.values()]
    for r in honest.values():
        assert ("VmHWM" in r.output) == (accounting == "VmHWM"), r.output
    tiled = solved(tmp_path, CH, Merge=MERGE_TILERS["another thread"] + MERGE_HEAD,
                   additive_scores=ADDITIVE_TILERS["pairs concatenated in another thread"])
    for r in by_name(grade_fast(tiled, limits=limits_for(CH), only=checks)).values():
        assert r.score == 0, r.output
        assert ("rose by" in r.output) == (accounting == "VmHWM"), r.output


def test_without_a_v2_group_the_loop_is_read_from_each_processs_cpu_time(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """No v2 group (the only one here is the freezer's): /proc's per-thread CPU time, a loop in a thread that has
    ended by the time the call returns included."""
    roles = control.machine()
    monkeypatch.setattr(control, "machine", lambda: {**roles, "freezer": None})
    check = "check_additive_scores_never_tiles"
    honest = by_name(grade_fast(solved(tmp_path, CH), limits=limits_for(CH), only=check))[check]
    assert honest.score == 1 and "/proc" in honest.output, honest.output
    looped = solved(tmp_path, CH, additive_scores=ADDITIVE_TILERS["padding filled in a loop, in another thread"])
    r = by_name(grade_fast(looped, limits=limits_for(CH), only=check))[check]
    assert r.score == 0 and "loops in Python" in r.output, r.output


def test_squeeze_without_a_dim_is_caught_only_by_the_batch(tmp_path: Path) -> None:
    """Section 4 warns that squeeze() drops an axis at N = 1. Without a batch, `a.squeeze() + b` is right at every
    N (b's [1] puts the axis back), so only the batched N = 1 case can fail it: it loses that check's point alone,
    with a message that names squeeze(), and keeps the other four."""
    a, b = torch.randn(1, 1), torch.randn(1)
    unbatched = squeezed_everything(a, b)
    assert unbatched is not None and torch.equal(unbatched, paired_sums_oracle(a, b))  # the trap cannot show
    squeezed = solved(tmp_path, CH, paired_sums="def paired_sums(a, b):\n    return a.squeeze() + b\n")
    results = by_name(grade_fast(squeezed, only="paired_sums"))
    lost = {name: r.output for name, r in results.items() if r.status != "passed"}
    assert list(lost) == ["check_paired_sums_single_pair"], lost
    assert "squeeze() without a dim" in lost["check_paired_sums_single_pair"]
