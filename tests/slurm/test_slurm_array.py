"""The Slurm path for real: deploy/slurm/submit.sh on a one-node cluster (two CPUs) grades a class as an array of
two shards (`grade-all --shard auto`) and a merge job (--dependency=afterok), and the merged results equal a
one-machine grade-all of the same class. Run by `make slurm-test` (which installs slurm-wlm and munge; root);
not part of the default run (marker `slurm`). It stops every process it started, jobs and daemons."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kit import ROOT
from tests.slurm.cluster import Cluster, missing_programs

pytestmark = pytest.mark.slurm

CH = "07_numerical_stability"  # no speed checks: the same scores on a loaded machine
WAIT_SECONDS = 900.0


def _class(root: Path) -> Path:
    """The example class's submissions of one chapter, a notebook that is not JSON and a folder without one."""
    sub = root / "course" / "submitted"
    for folder in sorted((ROOT / "examples" / "submitted").glob(f"*/{CH}")):
        shutil.copytree(folder, sub / folder.parent.name / CH)
    (sub / "fay" / CH).mkdir(parents=True)
    (sub / "fay" / CH / f"{CH}.ipynb").write_text("{ not json")
    (sub / "gus" / CH).mkdir(parents=True)
    return root / "course"


def _graded(out: Path) -> dict[str, Any]:
    """What a grading decided, per submission: the row (less its seconds) and every check's points and status."""
    rows = {f"{r['student']}/{r['assignment']}": {k: v for k, v in r.items() if k != "seconds"}
            for r in json.loads((out / "summary.json").read_text())}
    checks = {}
    for path in sorted((out / "results").glob("*/*.json")):
        result = json.loads(path.read_text())
        checks[f"{path.parent.name}/{path.stem}"] = [(t["name"], t["score"], t["status"]) for t in result["tests"]]
    return {"rows": rows, "checks": checks}


def _wait(cluster: Cluster, job: str, logs: Path) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while (state := cluster.job_state(job)) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        if time.monotonic() > deadline:
            break
        time.sleep(2)
    if state != "COMPLETED":
        jobs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(logs.glob("*")))
        pytest.fail(f"the merge job {job} ended {state}, not COMPLETED\n{jobs}\n{cluster.logs()}")
    return state


def test_an_array_of_shards_and_the_merge_equal_one_machine(tmp_path: Path) -> None:
    missing = missing_programs()
    if missing or os.geteuid() != 0:
        pytest.fail(f"needs root and Debian's slurm-wlm and munge (missing: {missing or 'none'}, uid "
                    f"{os.geteuid()}): run `make slurm-test`, which installs them")
    started = time.monotonic()
    course = _class(tmp_path)
    single = tmp_path / "single"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade-all", str(course), "--out", str(single),
                           "--workers", "2"], cwd=ROOT, capture_output=True, text=True, timeout=WAIT_SECONDS)
    assert done.returncode == 0, done.stderr
    one_machine = time.monotonic() - started

    cluster = Cluster(tmp_path / "cluster", cpus=2)
    try:
        cluster.start()
        out = tmp_path / "out"
        submit = cluster.run("bash", str(ROOT / "deploy" / "slurm" / "submit.sh"), "--shards", "2", "--cpus", "1",
                             str(course), str(out), "--chdir", str(tmp_path), check=False)
        assert submit.returncode == 0, submit.stdout + submit.stderr
        array, merge = submit.stdout.split()
        dependency = cluster.run("scontrol", "show", "job", merge, "--oneliner").stdout
        assert f"Dependency=afterok:{array}" in dependency
        _wait(cluster, merge, out / "logs")
        on_slurm = time.monotonic() - started - one_machine
        for task in (0, 1):  # each task found its own shard, and each shard had submissions to grade
            log = next((out / "logs").glob(f"kit-grade-{array}_{task}.out")).read_text()
            assert f"shard {task + 1}/2: Slurm array task {task} of 0-1:1" in log, log
            assert any((out / "parts" / f"shard-{task}" / "results").glob("*/*.json"))
        assert _graded(out / "graded") == _graded(single)
        assert len(_graded(single)["rows"]) == 7
        assert (out / "graded" / "report" / "report.html").exists()
    finally:
        cluster.stop()
    assert not cluster.leftovers(), "a process of the cluster outlived stop()"
    print(f"\none machine: {one_machine:.0f} s; Slurm (start, array of 2 shards, merge): {on_slurm:.0f} s")
