#!/usr/bin/env bash
# The browser test's extras on top of scripts/setup.sh: Playwright for Python (the "e2e" group) and
# Debian's chromium, which the test launches itself (Playwright's own browser download is never used).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
stamp=.venv/.e2e-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # Only the extra's packages are added: what setup.sh installed already satisfies the rest.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[e2e]"
    touch "$stamp"
fi
if [ ! -x /usr/bin/chromium ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
fi
