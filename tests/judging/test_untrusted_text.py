"""Text from student code is made safe once, where it enters the judge: valid UTF-8, no character a terminal
acts on, bounded in size. Issue 22, item 5: before, a lone surrogate in an error message or a name made
results.json unreadable as strict UTF-8 (and summary.csv and the class report crash), and a cell of flagged
constructs made a results.json of megabytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from autograder.course.reference import release_path
from autograder.judging import results as fmt
from autograder.judging.notebook import MAX_ANSWER_BYTES, Submission, load_submission
from autograder.judging.plugin import MAX_OUTPUT
from autograder.judging.report import gradescope, text
from autograder.judging.untrusted import MAX_TEXT, safe_json, safe_text
from tests.kit import UNSAFE, by_name, grade_fast, solution_cells, solved, strings, unsafe, unsafe_code

CH = "07_numerical_stability"
HOSTILE = chr(0xD800) + chr(0) + "\x1b[2J" + chr(0x202E) + "<script>alert(1)</script>"

RAISES = f'''
def softmax(logits, dim=-1):
    raise ValueError("bad " + {HOSTILE!r})
'''

# 400 functions with names of 2,000 NULs (4.8 MB of the load report), one with a terminal escape and a lone
# surrogate, and no softmax: the message that softmax is missing lists what the cell defines.
ODD_NAMES = '''
globals()["evil\\x1b[2J" + chr(0xD800)] = lambda: 0
for i in range(400):
    globals()[f"f{i}" + chr(0) * 2000] = lambda: 0
'''


def test_safe_text_shows_what_a_terminal_acts_on_as_escapes_and_keeps_the_rest() -> None:
    assert safe_text("a\tb\nc é 中 <x> \\x1b") == "a\tb\nc é 中 <x> \\x1b"
    assert safe_text(HOSTILE) == "\\ud800\\x00\\x1b[2J\\u202e<script>alert(1)</script>"
    assert safe_text(safe_text(HOSTILE)) == safe_text(HOSTILE)
    assert safe_json({"\x1b": ["\ud800", 1, None]}) == {"\\x1b": ["\\ud800", 1, None]}


def test_safe_text_cuts_at_whole_escapes_and_says_how_much() -> None:
    assert safe_text("x" * 10, limit=4) == "xxxx [... 6 more characters cut]"
    assert safe_text("ab\x00\x00", limit=4) == "ab [... 2 more characters cut]"  # an escape is 4 characters
    assert len(safe_text("\ud800" * 10**6)) <= MAX_TEXT + 40
    assert safe_text("y" * 10**6, limit=None) == "y" * 10**6


def _results(path: Path, g: Any) -> dict[str, Any]:
    """The results file as grading writes it, read back as strict UTF-8."""
    path.write_text(fmt.dumps(gradescope(g)), encoding="utf-8")
    data = json.loads(path.read_bytes().decode("utf-8"))
    for s in strings(data):
        s.encode("utf-8")  # strict: a lone surrogate raises
    return data


def test_an_error_message_with_surrogates_nul_and_escapes_is_shown_escaped(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=RAISES), only="check_softmax_guide_example")
    results = _results(tmp_path / "results.json", g)
    assert not unsafe(results)
    out = by_name(g)["check_softmax_guide_example"].output
    assert "ValueError: bad \\ud800\\x00\\x1b[2J\\u202e<script>" in out, out
    assert not UNSAFE.search(text(g))


def test_names_with_odd_characters_are_shown_escaped_and_bounded(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=ODD_NAMES), only="check_softmax_guide_example")
    results = _results(tmp_path / "results.json", g)
    assert not unsafe(results)
    out = by_name(g)["check_softmax_guide_example"].output
    assert "is not defined by your answer cell" in out and "evil\\x1b[2J\\ud800" in out, out
    assert (tmp_path / "results.json").stat().st_size < 100_000


# A correct softmax whose cell holds a raw escape character and a lone surrogate inside a string, and
# Windows line ends: text that is escaped at the loader is the same code.
RAW_IN_CODE = ('def softmax(logits, dim=-1):\r\n    note = "\x1b[2J' + chr(0xD800) + '"  # \x1b[31m red\r\n'
               "    assert len(note) == 5\r\n" + solution_cells(CH)["softmax"].split("\n", 1)[1].replace("\n", "\r\n"))


# Control characters that are code: a form feed in the indentation, a bell inside a raw string.
KEPT_IN_CODE = ('def softmax(logits, dim=-1):\n\x0c    bell = r"\x07"\n    assert bell == chr(7)\n'
                + solution_cells(CH)["softmax"].split("\n", 1)[1])


def test_control_characters_that_are_code_are_kept(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, softmax=KEPT_IN_CODE)
    assert load_submission(path).cells[0]["source"].startswith(KEPT_IN_CODE[:40])
    g = grade_fast(path, only="check_softmax_guide_example")
    assert g.score == 1, by_name(g)["check_softmax_guide_example"].output


def test_control_characters_in_a_cell_are_escaped_and_the_code_still_runs(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, softmax=RAW_IN_CODE)
    sub = load_submission(path)
    assert not unsafe_code([c["source"] for c in sub.cells]) and "\r" not in sub.cells[0]["source"]
    g = grade_fast(path, only="check_softmax_guide_example")
    assert g.score == 1, by_name(g)["check_softmax_guide_example"].output


def test_a_megabyte_of_flagged_constructs_keeps_the_results_small(tmp_path: Path) -> None:
    lines = (1 << 20) // len("import gc\n")
    cell = "import gc\n" * lines + solution_cells(CH)["softmax"]
    g = grade_fast(solved(tmp_path, CH, softmax=cell), only="check_softmax_guide_example")
    results = _results(tmp_path / "results.json", g)
    assert (tmp_path / "results.json").stat().st_size < 100_000
    assert len(results["extra_data"]["integrity"]) <= 20 and results["extra_data"]["integrity_count"] == lines
    assert f"and {lines - 20} more" in results["output"]


HUGE_VALUE = "def softmax(logits, dim=-1):\n    return list(range(500_000))\n"


def test_a_huge_returned_value_keeps_the_message_small(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=HUGE_VALUE), only="check_softmax_guide_example")
    out = by_name(g)["check_softmax_guide_example"].output
    assert "Problem:  returned list, not a torch.Tensor" in out and len(out) <= MAX_OUTPUT + 50, out[-300:]
    _results(tmp_path / "results.json", g)
    assert (tmp_path / "results.json").stat().st_size < 100_000


# Code that rewrites the harness's record of its graph in the child (flagged, so not scored): half a million
# node names, which the check's message lists.
FORGES_A_HUGE_RECORD = solution_cells(CH)["log_softmax"] + '''
import autograder.sandbox.runtime.wire as _wire
_encode = _wire.encode
def _huge(obj, keep=None):
    value = obj.get("value") if isinstance(obj, dict) else None
    if isinstance(value, dict) and "nodes" in value:
        obj = {**obj, "value": {**value, "nodes": ["Node"] * 500_000, "custom": False}}
    return _encode(obj, keep)
_wire.encode = _huge
'''


# -- the loader, fuzzed ------------------------------------------------------------------------

RELEASE = json.loads(release_path(CH).read_text())
texts = st.text(st.characters(codec=None, exclude_categories=()) | st.sampled_from(list(HOSTILE + "\r\n\t")),
                max_size=40)
FILE_NAMES = [f"{CH}.ipynb", "=HYPERLINK(\"x\",\"y\").ipynb", "\x1b[2J\x07.ipynb", "\udcff\udcfe.ipynb",
              "@SUM(A1)\u202e.ipynb"]


@st.composite
def notebooks(draw: st.DrawFn) -> bytes:
    """A notebook's bytes: the release with hostile sources, metadata and fields, or garbage."""
    kind = draw(st.sampled_from(["release", "fields", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    nb = json.loads(json.dumps(RELEASE))
    for cell in nb["cells"]:
        if draw(st.booleans()):
            cell["source"] = draw(texts | st.lists(texts, max_size=3))
    if kind == "fields":
        field = draw(st.sampled_from(["nbformat", "metadata", "cells", "cell_type", "grade_id"]))
        value = draw(st.none() | texts | st.integers() | st.lists(texts, max_size=2)
                     | st.dictionaries(texts, texts, max_size=2))
        target = nb if field in ("nbformat", "metadata", "cells") else nb["cells"][-1]
        if field == "grade_id":
            target = target["metadata"].setdefault("nbgrader", {})
        target[field] = value
    return json.dumps(nb).encode()  # lone surrogates travel as \\ud800 escapes, as JSON allows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notebooks(), st.sampled_from(FILE_NAMES))
def test_the_loader_returns_a_safe_submission_for_any_file(tmp_path: Path, data: bytes, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    sub = load_submission(path, CH)
    assert isinstance(sub, Submission)
    shown = [sub.error or "", sub.missing]
    assert not unsafe(shown), unsafe(shown)
    assert not unsafe_code(sub.cells), unsafe_code(sub.cells)
    assert len(sub.error or "") <= 5000
    assert len(json.dumps([c["source"] for c in sub.cells])) <= MAX_ANSWER_BYTES


@pytest.mark.parametrize("name", FILE_NAMES)
def test_a_file_name_is_shown_escaped_in_the_loader_messages(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xff not json")
    sub = load_submission(path, CH)
    assert sub.error and "not valid notebook JSON" in sub.error and not UNSAFE.search(sub.error), sub.error
