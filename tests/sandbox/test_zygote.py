"""The zygote handle the entry points own and hand to every sandbox: it outlives the process behind it."""

from __future__ import annotations

from pathlib import Path

from autograder.sandbox.launcher import Zygote
from tests.kit import grade_fast, solved

CH = "07_numerical_stability"


def test_a_zygote_that_died_is_started_again_by_the_next_spawn(tmp_path: Path) -> None:
    """Killed between two gradings (from outside, or by the kernel's OOM killer), the zygote comes back: the
    handle a Student holds still grades, with every point."""
    with Zygote() as zygote:
        first = zygote.proc
        first.kill()
        first.wait()
        g = grade_fast(solved(tmp_path, CH), zygote=zygote)
        assert zygote.proc is not first and zygote.alive()
        assert g.score == g.max_score > 0, [r.output for r in g.results if r.status != "passed"]
