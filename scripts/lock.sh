#!/usr/bin/env bash
# Pin every package of the kit and its dev tools in requirements.lock: one set for every machine of the kit's
# kind (Linux x86_64, Python 3.11: these machines and the CI runners).
# torch, and what only torch needs, is left out: setup.sh installs it first with pip, pinned by TORCH_SPEC, so
# that the CPU build is taken (a resolver that saw PyPI's torch would lock its several GB of CUDA packages).
# scripts/overrides.txt names it, and the one other package left out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/uv pip compile pyproject.toml --extra dev --override scripts/overrides.txt \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --custom-compile-command "bash scripts/lock.sh" --quiet -o requirements.lock
