"""Text from student code, made safe once where it enters the judge.

Student text enters at two places: the replies of the child that runs the code (autograder/judging/student.py,
its load report and every reply frame) and the notebook file with its name (autograder/judging/notebook.py);
grade-all adds the submission folders' names (autograder/course/batch.py). Each passes its text through
`safe_text` there, so everything downstream (results.json, terminals, summary.csv, the class report) holds
valid UTF-8 that no terminal acts on, of bounded size.

This module imports nothing of the kit: grade-all's coordinator and the class report use it without torch.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT = 2000  # characters kept of one string from the child (its messages are cut there already)

# C0 controls but tab and newline, DEL, C1 controls, the bidirectional overrides, and lone surrogates
# (JSON's "\ud800" escapes decode to them; no UTF-8 file can hold one).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# In code, only what no UTF-8 file can hold and what drives a terminal (ESC, CSI); every other control character
# is left as the student wrote it, since an escape would change a raw string or a form feed's indentation.
# In a name printed on one line (a file's, a folder's), newline and tab too.
_UNSAFE_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_IN_CODE = re.compile("[\x1b\x9b\ud800-\udfff]")


def _escape(char: str) -> str:
    return repr(char)[1:-1]  # \x1b, \x00, \ud800, \u202e


def safe_text(text: str, limit: int | None = MAX_TEXT) -> str:
    """`text` with every unsafe character (terminal controls but newline and tab, bidi overrides, lone
    surrogates) shown as its escape, \\x1b or \\ud800; with a `limit`, cut to at most that many characters,
    whole escapes only, and a note of how many characters of `text` were cut."""
    head = text if limit is None else text[:limit]
    shown = _UNSAFE.sub(lambda m: _escape(m.group()), head)
    if limit is None or (len(shown) <= limit and len(head) == len(text)):
        return shown
    kept, width = 0, 0
    for char in head:  # escapes are wider than their character: keep those that fit
        width += len(_escape(char)) if _UNSAFE.match(char) else 1
        if width > limit:
            break
        kept += 1
    return _UNSAFE.sub(lambda m: _escape(m.group()), text[:kept]) + f" [... {len(text) - kept} more characters cut]"


def safe_name(name: str) -> str:
    """A file's or a folder's name for one line: every control character escaped, newline and tab included (a
    name with newlines would print lines of its own, such as a forged score)."""
    return _UNSAFE_IN_NAME.sub(lambda m: _escape(m.group()), name)


def safe_code(code: str) -> str:
    """A cell's source with lone surrogates and terminal escapes shown as escapes; any other character, kept."""
    return _UNSAFE_IN_CODE.sub(lambda m: _escape(m.group()), code)


def safe_json(value: Any) -> Any:
    """A decoded JSON value with every string in it, keys included, made `safe_text`."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [safe_json(v) for v in value]
    if isinstance(value, dict):
        return {safe_text(str(k)): safe_json(v) for k, v in value.items()}
    return value
