"""What 09_capstone alone needs: the judge's run of the kit's loop, which a CUDA grading runs in a clean child of
kit code (checks.reference), gives there what it gives in the judge's process; checked on the CPU, where both
must agree bit for bit, so that the wire carries the case and the run whole."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from autograder.chapters.ch09_capstone.checks import Api, _resume_case
from autograder.chapters.ch09_capstone.harness import reference_run
from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.judging.timing import reference_process
from tests.kit import TRAINING, solved, zygote

CH = "09_capstone"


def test_the_clean_childs_reference_run_is_the_judges(tmp_path: Path) -> None:
    case = _resume_case(torch.Generator().manual_seed(3), "cpu")
    student = Student(load_submission(solved(tmp_path, CH)), "cpu", TRAINING, time.monotonic() + 120, zygote())
    try:
        with reference_process(student, "# kit code only") as ref:
            theirs = Api(ref).reference_run(case)
            forgetful = Api(ref).reference_run(case, "rng")
    finally:
        student.close()
    with torch.random.fork_rng(devices=[]):
        ours = reference_run(case)
    assert (theirs["scale"], theirs["tracker"], theirs["losses"]) == (ours["scale"], ours["tracker"], ours["losses"])
    assert all(torch.equal(theirs["state"][k], v) for k, v in ours["state"].items())
    assert not torch.equal(forgetful["state"]["out.weight"], ours["state"]["out.weight"])  # dropout masks matter
