"""The zygote handle the entry points own and hand to every sandbox: it outlives the process behind it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.judging.registry import CHAPTERS
from autograder.sandbox.launcher import Zygote
from tests.kit import ROOT, grade_fast, solved

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


def test_the_kits_traces_leave_torch_dynamo_to_the_chapters_that_need_it() -> None:
    """A dispatch mode's first use imported torch._dynamo (0.7-3 s) in every child that traced, unless the zygote
    had imported it: the kit's traces (child.Trace, 05's DeviceTrace) opt out of torch's wrapper, and the zygote's
    warm-up imports what a gradient with an output gradient needs, once, before any fork."""
    from torch.utils._python_dispatch import TorchDispatchMode

    if not hasattr(TorchDispatchMode, "_should_skip_dynamo"):
        pytest.skip("this torch has no hook to opt out: the zygote's warm-up imports torch._dynamo once instead")
    probe = textwrap.dedent(f"""
        import json, sys
        import torch
        from autograder.sandbox.runtime import child, zygote
        zygote.warm_up(torch, child)
        harness = {{"__name__": "__harness__", "student": {{}}}}
        exec(open({str(CHAPTERS["05_batch_gather"].harness)!r}).read(), harness)
        with harness["DeviceTrace"]() as trace:
            torch.ones(2).mul(3)
        print(json.dumps({{"devices": sorted(trace.devices), "dynamo": "torch._dynamo" in sys.modules,
                           "shapes": "torch.fx.experimental.symbolic_shapes" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{probe}"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == {"devices": ["cpu"], "dynamo": False, "shapes": True}, done.stderr
    for chapter in CHAPTERS.values():  # a chapter's own mode must opt out as well
        if chapter.harness is not None:
            assert "TorchDispatchMode" not in chapter.harness_source(), f"{chapter.id}: subclass child.Trace"
