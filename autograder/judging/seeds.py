"""The secret seed of a grading: which random inputs the checks draw (each check's generator comes from it).

HMAC(course secret, what is graded): students cannot know it, and regrading gives the same inputs. The
student, when known, comes from grade-all's folder name, --student, or Gradescope's submission metadata.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import secrets
import tokenize
from pathlib import Path

from autograder import CHECKOUT
from autograder.judging.notebook import Submission

SECRET_FILE = CHECKOUT / ".autograder-secret"


def course_secret() -> bytes:
    """The course's grading secret: $AUTOGRADER_SECRET, else a random one kept in .autograder-secret (0600)."""
    if os.environ.get("AUTOGRADER_SECRET"):
        return os.environ["AUTOGRADER_SECRET"].encode()
    if not SECRET_FILE.exists():
        fd = os.open(SECRET_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return SECRET_FILE.read_bytes().strip()


def normalized_code(source: str) -> str:
    """Python code without its comments, blank lines and spacing (its tokens), so that editing those changes
    nothing; the source with comment lines and trailing spaces dropped when it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        lines = (line.rstrip() for line in source.splitlines())
        return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#"))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    blank = {tokenize.NEWLINE, tokenize.INDENT}  # their text is spacing only
    return "\x1f".join(f"{t.type}:{'' if t.type in blank else t.string}" for t in tokens if t.type not in skip)


def secret_seed(sub: Submission, student: str | None = None) -> int:
    """HMAC(course secret, what is graded) for a loaded submission.

    With the student known (grade-all's folder name, Gradescope's metadata, --student) it is the student
    and the assignment: no edit of the notebook rerolls the inputs. Otherwise it is the assignment and the
    answer cells' code without comments, blank lines or spacing, so editing a comment rerolls nothing;
    the notebook's bytes when its cells cannot be read (`sub.error`).
    """
    if student:
        # surrogateescape: a folder name that is not UTF-8 counts as the bytes the file system holds
        material = f"student\0{sub.chapter.id}\0{student}".encode("utf-8", "surrogateescape")
    elif sub.error is None:
        cells = sorted((c["id"], normalized_code(c["source"])) for c in sub.cells)
        material = "\0".join(["code", sub.chapter.id, *(f"{cid}\0{code}" for cid, code in cells)]).encode()
    else:
        try:
            material = b"bytes\0" + sub.path.read_bytes()
        except OSError:
            material = b"bytes\0"
    return int.from_bytes(hmac.new(course_secret(), material, hashlib.sha256).digest()[:8], "little") >> 2


def student_from_gradescope(metadata: Path) -> str | None:
    """The submitter in Gradescope's submission_metadata.json: the first user's sid, else their email."""
    try:
        users = json.loads(metadata.read_text()).get("users") or []
    except (OSError, ValueError, AttributeError):
        return None
    first = users[0] if users and isinstance(users[0], dict) else {}
    return str(first.get("sid") or first.get("email") or "") or None
