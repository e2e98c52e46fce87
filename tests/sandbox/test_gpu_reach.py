"""What a box needs to reach a GPU, checked on any machine.

Measured on an H200 (scripts/gpu-check.sh, 2026-11-26): the zygote started without LD_LIBRARY_PATH, and under the
kit's Landlock rules cuInit failed (error 304) in every box, so every CUDA check was skipped with "no CUDA GPU".
These tests hold what the fixes rest on; the GPU run itself is scripts/gpu-check.sh.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.judging.judge import GraderError
from autograder.judging.student import _format_error
from autograder.sandbox import process
from autograder.sandbox.launcher import Zygote
from autograder.sandbox.runtime import isolation
from tests.kit import grade_fast, solved
from tests.sandbox.processes import until

CH = "07_numerical_stability"


def test_the_driver_folders_of_ld_library_path_are_visible_in_the_box(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{driver}:relative/lib::{tmp_path / 'absent'}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert isolation.gpu_env() == {"LD_LIBRARY_PATH": os.environ["LD_LIBRARY_PATH"], "CUDA_VISIBLE_DEVICES": "0"}
    paths = isolation._runtime_paths([])
    assert str(driver) in paths
    assert not any(p.endswith("relative/lib") or p.endswith("absent") for p in paths)  # the cwd never, nor a hole


def test_the_zygote_starts_with_the_gpu_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc reads LD_LIBRARY_PATH when a process starts: the zygote's, not the box's, decides where libcuda is."""
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")
    zygote = Zygote()
    environ = Path(f"/proc/{zygote.proc.pid}/environ")
    try:
        # While the zygote's exec sets up its new memory, its environ reads empty (seen under load): wait it out.
        assert until(lambda: environ.read_bytes() != b"", 10.0)
        variables = environ.read_bytes().split(b"\0")
    finally:
        zygote.proc.kill()
        zygote.proc.wait()
    assert b"LD_LIBRARY_PATH=/usr/local/nvidia/lib64" in variables


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")
def test_device_nodes_not_open_to_all_lend_their_group(tmp_path: Path) -> None:
    shared, grouped, root_only = (tmp_path / n for n in ("shared", "grouped", "root_only"))
    for f in (shared, grouped, root_only):
        f.touch()
    shared.chmod(0o666)
    grouped.chmod(0o660)
    root_only.chmod(0o600)
    os.chown(grouped, -1, 44)
    assert isolation.device_groups([str(shared), str(grouped), str(root_only), str(tmp_path / "gone")]) == [44]


def test_a_gpu_the_box_cannot_reach_is_a_grader_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipping every CUDA check on a machine that has a GPU would hand out 0/0 as if the student's: never."""
    monkeypatch.setattr(process, "_judge_sees_cuda", lambda: True)
    with pytest.raises(GraderError, match=r"has a CUDA GPU but the sandboxed process could not use it \(\w+Error: "):
        grade_fast(solved(tmp_path, CH), device="cuda")


def test_without_a_gpu_cuda_checks_are_skipped_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "_judge_sees_cuda", lambda: False)
    g = grade_fast(solved(tmp_path, CH), device="cuda")
    assert g.max_score == 0 and all(r.status == "skipped" for r in g.results)
    assert any("no CUDA GPU is available" in n for n in g.notes)


@pytest.mark.parametrize(("message", "cause"), [
    ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
     "device=x.device"),
    ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
     "numpy reads CPU memory only"),
])
def test_errors_only_a_gpu_shows_name_their_likely_cause(message: str, cause: str) -> None:
    text = _format_error({"type": "RuntimeError", "message": message, "where": "cell f, line 2"})
    assert text.startswith(f"RuntimeError: {message}\ncell f, line 2\nLikely cause: ")
    assert cause in text


def test_other_errors_get_no_device_hint() -> None:
    assert "Likely cause" not in _format_error({"type": "ValueError", "message": "shapes [2] and [3]"})
