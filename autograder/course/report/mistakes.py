"""Failures grouped by the mistake they name, without this student's inputs and values.

A failed check records its problem and hint as fields (autograder/judging/expect.py's CheckFailure, written
into each test's extra_data), and the key is made from them; a failure with none (an error of the student's
code, an assert, a result file written before the fields existed) is keyed from its message (normalize).
"""

from __future__ import annotations

import re

from autograder.course.report.read import text
from autograder.judging.results import TestResult

# Lines of a judge's message that show this student's inputs and outputs (autograder/judging/expect.py).
_DETAIL_LINES = ("Call:", "Expected:", "Got:", "Timing:")
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
# A number, with or without a unit (4x, 3.1ms), that is not part of a name: float32, 02_modules keep their digits.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
                     r"(?=(?:x|s|ms|us|µs|ns|[KMG]i?B|B|%)?(?!\w))")
_LONG_LIST = re.compile(r"#(?:,\s*#){4,}(?:,\s*(?:\.\.\.|…))?")
_SPACE = re.compile(r"\s+")
_ERROR_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")
# File names (random in chapter 06's checks), then a list of them of any length.
_FILE = re.compile(r"[\w./-]*\w\.(?:png|jpe?g|bmp|tar|gz|zip|txt|npy|npz|pt|pth|ipynb|csv|json)\b")
# An argument in a call's description (autograder/judging/student.py): its shape is the input's, not the mistake.
_TENSOR_ARG = re.compile(r"tensor\(shape=\[[\d, ]*\]")
_FILES = re.compile(r"<file>(?: x\d+)?(?:, <file>(?: x\d+)?)+")  # "a.png x2, b.png x2": duplicates
MAX_KEY = 240


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def _mistake(problem: str, hint: str) -> str:
    """The first sentence of a failure's problem and of its hint (each the first line, as the message shows it)."""
    text = first_sentence(problem.strip().splitlines()[0] if problem.strip() else "")
    hint = hint.strip().splitlines()[0].strip() if hint.strip() else ""
    return text + (" Hint: " + first_sentence(hint) if hint else "")


def failure_key(test: TestResult) -> str:
    """The mistake a failed check names, without this student's inputs and values: from the problem and hint
    the check recorded as fields (a test's extra_data), or, for a failure that has none (an error of the
    student's code, an assert, a result file written before checks recorded them), from its message."""
    extra = test.get("extra_data", {})
    problem = text(extra.get("problem"))
    if problem.strip():
        return _general(_mistake(problem, text(extra.get("hint"))))
    return normalize(text(test["output"]))


def normalize(message: str) -> str:
    """The mistake a failure message names, without this student's inputs and values: the fallback of
    failure_key for failures that recorded no problem as a field.

    A judge's message in a result file written before failures kept their problem and hint as fields
    (autograder/judging/expect.py's layout: Call/Expected/Got, then Problem and Hint) is read back from its
    labelled lines: the key is the first sentence of Problem and of Hint. Other messages keep the first
    sentence of their prose up to the exception they report ("ValueError: ..."). Then, as for every key
    (_general), this student's file names and numbers are generalised.
    """
    lines = [line.rstrip() for line in message.splitlines()]
    tagged = {tag: line.removeprefix(tag).strip() for line in lines for tag in ("Problem:", "Hint:")
              if line.startswith(tag)}
    if "Problem:" in tagged:
        text = _mistake(tagged["Problem:"], tagged.get("Hint:", ""))
    else:
        prose = [line.strip() for line in lines
                 if line.strip() and not line.startswith(_DETAIL_LINES) and not line[:1].isspace()][:3]
        ends = [i for i, line in enumerate(prose) if _ERROR_LINE.match(line)]  # "ValueError: ..." ends the story
        text = first_sentence(" ".join(prose[:ends[0] + 1] if ends else prose[:2]))
    return _general(text)


def _general(text: str) -> str:
    """`text` without what differs between students' random inputs: file names become <file>, numbers #, and
    lists of either "<file>, …" or "#, …", so the same mistake on different inputs reads the same."""
    text = _SPACE.sub(" ", text[:2000])
    text = _FILES.sub("<file>, …", _FILE.sub("<file>", _TENSOR_ARG.sub("tensor(shape=[…]", text)))
    text = _LONG_LIST.sub("#, …", _HEX.sub("0x#", _NUMBER.sub("#", text)))
    return text[:MAX_KEY] + ("…" if len(text) > MAX_KEY else "")

