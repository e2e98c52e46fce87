"""Build a Gradescope autograder bundle (setup.sh, run_autograder, the kit) for one assignment.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once when it
builds the image, and runs run_autograder for each submission, which must
write /autograder/results/results.json: exactly what `grade --out` writes.

The kit goes in whole but for each chapter's cases.py: named wrong implementations are no grading material.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder import CHECKOUT
from autograder.judging.registry import CHAPTERS

ROOT = CHECKOUT

TORCH_PIN = "torch==2.13.0"  # the build scripts/setup.sh installs (tests/course/test_bundle.py keeps them equal)
# PyPI's torch for Linux is the CUDA build (several GB of CUDA libraries Gradescope's CPU machines never use)
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"

SETUP = """#!/usr/bin/env bash
# Gradescope image setup: a venv with the pinned CPU torch, then the grader (torch, numpy, pytest only).
set -euo pipefail
TORCH_SPEC="${TORCH_SPEC:-%(pin)s}"
TORCH_INDEX_URL="${TORCH_INDEX_URL:-%(cpu)s}"   # the CPU build: PyPI's Linux torch is the CUDA one
apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
# The kit needs Python 3.11 or newer; Ubuntu 22.04 images have 3.10 as python3 and 3.11 as a package.
python=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    python=python3.11
fi
"$python" -m venv /autograder/venv
/autograder/venv/bin/pip install -q "$TORCH_SPEC" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
/autograder/venv/bin/pip install -q /autograder/source/kit
# Where the kernel refuses namespaces, file permissions alone keep the hidden checks from the sandbox uid.
installed=$(/autograder/venv/bin/python -c 'import autograder, os; print(os.path.dirname(autograder.__file__))')
chmod -R go-rwx /autograder/source "$installed"
"""

RUN = """#!/usr/bin/env bash
# Grade the submitted notebook into results/results.json (Gradescope's schema).
set -uo pipefail
AUTOGRADER_ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{PYTHON:-$AUTOGRADER_ROOT/venv/bin/python}}"
mkdir -p "$AUTOGRADER_ROOT/results"
submission="$AUTOGRADER_ROOT/submission"
# The first of these that is there, a link included: `grade` refuses a link (into this bundle, say) with a note.
# A glob, not ls: a name with a newline stays one name.
notebook=""
for candidate in "$submission/{assignment}.ipynb" "$submission"/*.ipynb; do
    if [ -e "$candidate" ] || [ -L "$candidate" ]; then
        notebook=$candidate
        break
    fi
done
if [ -z "$notebook" ]; then
    echo '{{"score": 0, "output": "No .ipynb file was submitted: upload {assignment}.ipynb.", "tests": []}}' \\
        > "$AUTOGRADER_ROOT/results/results.json"
    exit 0
fi
cd "$AUTOGRADER_ROOT/source/kit"
student=()  # Gradescope's submission metadata names the student, whose id seeds the hidden inputs
if [ -f "$AUTOGRADER_ROOT/submission_metadata.json" ]; then
    student=(--gradescope-metadata "$AUTOGRADER_ROOT/submission_metadata.json")
fi
"$PYTHON" -m autograder grade "$notebook" --assignment {assignment} --out "$AUTOGRADER_ROOT/results/results.json" \\
    "${{student[@]}}"
"""


def shipped(path: Path) -> bool:
    """Whether a file of the kit goes into the bundle: not a chapter's cases.py (its wrong implementations)."""
    return not (path.name == "cases.py" and path.parent.parent == ROOT / "autograder" / "chapters")


def build_bundle(assignment: str, out: Path) -> Path:
    if assignment not in CHAPTERS:
        raise SystemExit(f"unknown assignment {assignment}; known: {', '.join(CHAPTERS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP % {"pin": TORCH_PIN, "cpu": CPU_WHEELS}),
                           ("run_autograder", RUN.format(assignment=assignment))):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
        for path in sorted(p for ext in ("py", "ini", "json") for p in (ROOT / "autograder").rglob(f"*.{ext}")):
            if shipped(path):
                z.write(path, f"kit/{path.relative_to(ROOT)}")
        for name in ("pyproject.toml", "README.md"):
            z.write(ROOT / name, f"kit/{name}")
    return out
