"""`grade-all --shard auto`: the shard from a Slurm job array or a Kubernetes Indexed Job, or a clear refusal.

The Slurm environments are what sbatch 22.05 set in real array tasks (tests/slurm runs a cluster), e.g.
--array=0,1,5,6 gave SLURM_ARRAY_TASK_MIN=0, _MAX=6, _STEP=1, _COUNT=4 and --array=2 gave a one-task array.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from autograder.cli import main
from autograder.course.shards import Shard, ShardError, from_environment, parse, resolve
from tests.kit import ROOT


def slurm(task: int, low: int, high: int, step: int = 1, count: int | None = None) -> dict[str, str]:
    """A Slurm array task's variables; `count` defaults to what sbatch sets for the range."""
    count = (high - low) // step + 1 if count is None else count
    return {"SLURM_JOB_ID": "77", "SLURM_ARRAY_JOB_ID": "70", "SLURM_ARRAY_TASK_ID": str(task),
            "SLURM_ARRAY_TASK_MIN": str(low), "SLURM_ARRAY_TASK_MAX": str(high),
            "SLURM_ARRAY_TASK_STEP": str(step), "SLURM_ARRAY_TASK_COUNT": str(count)}


FOUND = [  # (environment, --shard-count, the shard as i/n)
    (slurm(0, 0, 1), None, "1/2"),
    (slurm(1, 0, 1), None, "2/2"),
    (slurm(5, 1, 8), None, "5/8"),  # --array=1-8: ids from 1
    (slurm(6, 0, 14, step=2), None, "4/8"),  # --array=0-14:2
    (slurm(9, 3, 9, step=3), None, "3/3"),  # --array=3-9:3
    (slurm(2, 0, 3), None, "3/4"),  # --array=0-3%1 (the throttle is not in the environment)
    (slurm(0, 0, 0), None, "1/1"),  # --array=0: one shard, the whole class
    (slurm(3, 0, 3), 4, "4/4"),  # a count given that agrees
    ({k: v for k, v in slurm(1, 0, 2).items() if k != "SLURM_ARRAY_TASK_COUNT"}, None, "2/3"),
    ({"JOB_COMPLETION_INDEX": "0"}, 4, "1/4"),
    ({"JOB_COMPLETION_INDEX": "3", "AUTOGRADER_SHARD_COUNT": "4"}, None, "4/4"),
    ({"JOB_COMPLETION_INDEX": "2", "AUTOGRADER_SHARD_COUNT": "5"}, 5, "3/5"),
]

REFUSED = [  # (environment, --shard-count, words the message must hold)
    ({}, None, "found neither a Slurm job array"),
    ({"SLURM_JOB_ID": "12"}, None, "not an array: submit it with sbatch --array"),
    ({"PATH": "/usr/bin", "HOME": "/root"}, 3, "found neither"),
    (slurm(1, 0, 6, count=4), None, "a list of 4 tasks between 0 and 6, not a range"),  # --array=0,1,5,6
    (slurm(3, 1, 7, count=3), None, "--array=0-2"),  # --array=1,3,7
    (slurm(2, 2, 2), None, "the only task of its array (--array=2)"),  # a rerun of one task
    (slurm(3, 0, 14, step=2), None, "not on the array's step"),
    (slurm(9, 0, 3), None, "inconsistent"),
    (slurm(1, 0, 3), 2, "has 4 tasks (0-3:1) but the shard count given is 2"),
    ({k: v for k, v in slurm(1, 0, 3).items() if k != "SLURM_ARRAY_TASK_MAX"}, None,
     "SLURM_ARRAY_TASK_MAX is not set"),
    ({**slurm(0, 0, 1), "SLURM_ARRAY_TASK_ID": "one"}, None, "SLURM_ARRAY_TASK_ID='one': expected a whole number"),
    ({**slurm(0, 0, 1), "JOB_COMPLETION_INDEX": "0"}, 2, "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX"),
    ({"JOB_COMPLETION_INDEX": "1"}, None, "give --shard-count N or set AUTOGRADER_SHARD_COUNT"),
    ({"JOB_COMPLETION_INDEX": "4", "AUTOGRADER_SHARD_COUNT": "4"}, None, "outside 0..3"),
    ({"JOB_COMPLETION_INDEX": "0", "AUTOGRADER_SHARD_COUNT": "4"}, 3, "--shard-count 3 and AUTOGRADER_SHARD_COUNT=4"),
    ({"JOB_COMPLETION_INDEX": "0"}, 0, "need at least 1"),
    ({"JOB_COMPLETION_INDEX": "-1", "AUTOGRADER_SHARD_COUNT": "2"}, None, "JOB_COMPLETION_INDEX='-1'"),
]


@pytest.mark.parametrize(("env", "count", "expected"), FOUND)
def test_auto_finds_the_shard(env: dict[str, str], count: int | None, expected: str) -> None:
    assert from_environment(env, count).spec == expected


@pytest.mark.parametrize(("env", "count", "words"), REFUSED)
def test_auto_refuses_what_it_cannot_tell_for_sure(env: dict[str, str], count: int | None, words: str) -> None:
    with pytest.raises(ShardError) as refused:
        from_environment(env, count)
    assert words in str(refused.value)


@given(low=st.integers(0, 50), step=st.integers(1, 5), tasks=st.integers(1, 12))
def test_the_tasks_of_any_range_array_are_the_shards_each_once(low: int, step: int, tasks: int) -> None:
    if tasks == 1:
        low = 0  # a one-task array is shard 1/1 only as --array=0 (else: refused, a rerun of one task)
    high = low + step * (tasks - 1)
    found = [from_environment(slurm(t, low, high, step)) for t in range(low, high + 1, step)]
    assert sorted(s.index for s in found) == list(range(1, tasks + 1))
    assert {s.count for s in found} == {tasks}


@pytest.mark.parametrize(("spec", "words"), [("2/1", "need 1 <= i <= n"), ("0/3", "need 1 <= i <= n"),
                                             ("three", "give i/n"), ("1/2/3", "give i/n"), ("-1/2", "give i/n")])
def test_a_bad_shard_is_refused(spec: str, words: str) -> None:
    with pytest.raises(ShardError) as refused:
        parse(spec)
    assert words in str(refused.value)


def test_the_count_goes_only_with_auto() -> None:
    assert resolve("2/3", {}) == Shard(2, 3, "--shard") and resolve(None, {}) is None
    with pytest.raises(ShardError, match="--shard-count goes with --shard auto"):
        resolve("2/3", {}, 3)


@pytest.mark.parametrize(("args", "env", "words"), [
    (["--shard", "auto"], {}, "found neither a Slurm job array"),
    (["--shard", "auto"], {"JOB_COMPLETION_INDEX": "0"}, "no shard count"),
    (["--shard", "half"], {}, "give i/n"),
])
def test_grade_all_says_why_it_grades_nothing(args: list[str], env: dict[str, str], words: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """On main, `--shard auto` and `--shard half` ended in a ValueError traceback."""
    for name in ("SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX", "AUTOGRADER_SHARD_COUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "course" / "submitted").mkdir(parents=True)
    assert main(["grade-all", str(tmp_path / "course"), "--out", str(tmp_path / "graded"), *args]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "graded").exists()


def test_grade_all_says_which_shard_auto_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in slurm(3, 2, 5).items():
        monkeypatch.setenv(name, value)
    (tmp_path / "course" / "submitted").mkdir(parents=True)  # an empty class: nothing to grade, fast
    assert main(["grade-all", str(tmp_path / "course"), "--out", str(tmp_path / "graded"), "--shard", "auto"]) == 0
    assert "shard 2/4: Slurm array task 3 of 2-5:1" in capsys.readouterr().err


def test_the_kubernetes_manifests_shard_and_merge_the_class() -> None:
    """deploy/kubernetes: each pod of the Indexed Job is one shard, each shard once, and the merge joins them all."""
    folder = ROOT / "deploy" / "kubernetes"
    grade = yaml.safe_load((folder / "grade-shards.yaml").read_text())
    spec = grade["spec"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == spec["completions"]
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["AUTOGRADER_SHARD_COUNT"]) == spec["completions"]  # Kubernetes does not pass completions
    command = " ".join(container["args"])
    assert "--shard auto" in command and '--out "/class/parts/shard-$JOB_COMPLETION_INDEX"' in command
    found = [from_environment({"JOB_COMPLETION_INDEX": str(i), **env}) for i in range(spec["completions"])]
    assert sorted(s.index for s in found) == list(range(1, spec["completions"] + 1))
    merge = yaml.safe_load((folder / "merge.yaml").read_text())["spec"]["template"]["spec"]["containers"][0]
    assert "merge /class/parts/shard-* --out /class/graded" in " ".join(merge["args"])
    run = (folder / "run.sh").read_text()
    assert run.index("wait --for=condition=complete --timeout=\"$timeout\" job/kit-grade") < run.index("merge.yaml")


def test_the_slurm_scripts_parse_and_say_how_to_submit() -> None:
    """deploy/slurm (run for real by tests/slurm, `make slurm-test`)."""
    folder = ROOT / "deploy" / "slurm"
    for script in sorted(folder.glob("*.s*")):
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, script
    usage = subprocess.run(["bash", str(folder / "submit.sh")], capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and "submit.sh [--gpu] [--shards N]" in usage.stderr
    gpu = (folder / "grade-gpu.sbatch").read_text()
    assert "#SBATCH --gres=gpu:1" in gpu and gpu.index("selftest --device cuda") < gpu.index("grade-all")
    assert "--dependency=\"afterok:$array\"" in (folder / "submit.sh").read_text()
