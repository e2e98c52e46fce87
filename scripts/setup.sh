#!/usr/bin/env bash
# Make .venv/ with the pinned CPU build of torch, then the kit and its dev tools.
# Override the torch build:  TORCH_SPEC="torch==2.11.0"  TORCH_INDEX_URL=<a wheel index>
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
stamp=.venv/.kit-installed
[ -x .venv/bin/python ] || "$python" -m venv .venv
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
    # torch first and pinned: a bare "torch" would pull the newest CUDA build (several GB).
    "${pip[@]}" "${TORCH_SPEC:-torch==2.13.0}" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
    "${pip[@]}" -e ".[dev]"
    touch "$stamp"
fi
