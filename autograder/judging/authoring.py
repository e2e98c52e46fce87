"""What a chapter's modules import from the kit: one surface, as CS336's tests/adapters.py is for its tests.

A chapter's checks.py, inputs.py, oracles.py, cases.py, rules.py and selftest.py import the kit from here and
nowhere else (tests/test_layers.py holds them to it); its torch-free __init__.py imports ChapterConfig from
judging.chapter. Each name is defined where it belongs; this module only gathers them, grouped by the job a check
author has.
"""

from __future__ import annotations

# the student's API, declared: the signature is the contract; the student's process, reached through it
from autograder.judging.api import Remote, StudentApi, answer, harness

# the expected answer, compared; a failure that teaches (input, expected, got, likely cause)
from autograder.judging.expect import (
    expect_tensor,
    fail,
    failure,
    nonfinite,
    number,
    output_shape_checked,
    show,
)

# the figures of the chapter's optional CUDA self-test (its folder's selftest.py)
from autograder.judging.figures import CudaFigures, Figure, Solution, cuda_ms, peak_bandwidth

# the named wrong and correct forms of cases.py
from autograder.judging.named_cases import cell, right, wrong

# the submission as the judge loaded it
from autograder.judging.notebook import Submission

# a check, declared with its points (fails closed)
from autograder.judging.plugin import check

# one-expression puzzles, declared as a table: their rule check and their random check
from autograder.judging.puzzles import (
    Puzzle,
    PuzzleRule,
    expect_puzzle,
    expect_puzzle_random,
    expect_puzzle_rule,
    mistake_id,
)

# measured figures a check records beside its outcome
from autograder.judging.results import (
    AMP_MEMORY_RATIO,
    LOOP_RATIO,
    MEMORY_BAR_MIB,
    MEMORY_MIB,
    NEEDED_RATIO,
    RATIO,
    REFERENCE_SECONDS,
    STUDENT_SECONDS,
    Measured,
    RecordProperty,
    record_measured,
    record_note,
)

# the rules each notebook states, mapped to the checks that keep them (chapter rules.py)
from autograder.judging.rules import HOW_GRADED, Evidence, NotARule, Rule

# the judge's reading of the student's source
from autograder.judging.static.parse import dotted, folded
from autograder.judging.static.rules import (
    TaskCode,
    Use,
    listed,
    names_used,
    only_raises_not_implemented,
    puzzle_breaks,
    python_loops,
    released_stub,
    subclasses,
    task_code,
    unreadable,
)
from autograder.judging.student import Student, StudentError, describe_call, origin, summarize

# speed: the student's code against the reference in the same run, as a ratio
from autograder.judging.timing import (
    Run,
    Spec,
    Speed,
    compare_speed,
    expect_within,
    interleave,
    operations_growth,
    randint,
    randn,
    reference_process,
)

# the kernel's accounting of the box, read from outside it
from autograder.sandbox.control import CpuTime, MemoryPeak

# a handle on an object that lives in the student's process
from autograder.sandbox.runtime.wire import RemoteObject

__all__ = [
    "AMP_MEMORY_RATIO", "HOW_GRADED", "LOOP_RATIO", "MEMORY_BAR_MIB", "MEMORY_MIB", "NEEDED_RATIO", "RATIO",
    "REFERENCE_SECONDS", "STUDENT_SECONDS", "CpuTime", "CudaFigures", "Evidence", "Figure", "Measured", "MemoryPeak",
    "NotARule", "Puzzle", "PuzzleRule", "RecordProperty", "Remote", "RemoteObject", "Rule", "Run", "Solution", "Spec",
    "Speed", "Student", "StudentApi", "StudentError", "Submission", "TaskCode", "Use", "answer", "cell", "check",
    "compare_speed", "cuda_ms", "describe_call", "dotted", "expect_puzzle", "expect_puzzle_random",
    "expect_puzzle_rule", "expect_tensor", "expect_within", "fail", "failure", "folded", "harness", "interleave",
    "listed", "mistake_id", "names_used", "nonfinite", "number", "only_raises_not_implemented", "operations_growth",
    "origin", "output_shape_checked", "peak_bandwidth", "puzzle_breaks", "python_loops", "randint", "randn",
    "record_measured", "record_note", "reference_process", "released_stub", "right", "show", "subclasses", "summarize",
    "task_code", "unreadable", "wrong"
]
