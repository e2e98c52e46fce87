"""Chapter 05 alone: the device check's points rest on what comes back, never on the harness's device trace.

A CUDA round trip for CPU inputs, hidden from the trace (dispatch modes are per thread) or not, must score the same:
on a machine without a GPU both fail (the CUDA call raises); with one, neither can be told from the result, so the
trace only adds a note. On d532b0b, with a GPU, the hidden one kept the 2 points the visible one lost.
Its cases are graded in tests/chapters/test_every_chapter.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.kit import by_name, grade_fast, solved

CH = "05_batch_gather"

ROUND_TRIP = """
def gather(tensor, indices):
    on = tensor.cuda()
    rows = torch.arange(on.shape[0], device=on.device).reshape([-1] + [1] * (indices.dim() - 1))
    return on[rows, indices.cuda()].to(tensor.device)
"""
SHOWN = ROUND_TRIP + "\ndef batch_gather(tensor, indices):\n    return gather(tensor, indices)\n"
HIDDEN = ROUND_TRIP + """
import threading
def batch_gather(tensor, indices):
    out = []
    worker = threading.Thread(target=lambda: out.append(gather(tensor, indices)))
    worker.start()
    worker.join()
    return out[0]
"""


def test_hiding_a_cuda_round_trip_from_the_device_trace_gains_nothing(tmp_path: Path) -> None:
    scores = {}
    for name, code in (("shown", SHOWN), ("hidden", HIDDEN)):
        path = solved(tmp_path, CH, batch_gather=code)
        r = by_name(grade_fast(path, only="check_batch_gather_device"))["check_batch_gather_device"]
        scores[name] = (r.score, r.output)
    assert scores["shown"][0] == scores["hidden"][0], scores

