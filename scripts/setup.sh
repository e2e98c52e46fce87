#!/usr/bin/env bash
# Make .venv/ with the pinned CPU build of torch, then the kit and its dev tools at the versions in
# requirements.lock (made by scripts/lock.sh). uv installs; pip only installs uv.
# Override the torch build:  TORCH_SPEC="torch==2.11.0"  TORCH_INDEX_URL=<a wheel index>
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
stamp=.venv/.kit-installed
[ -x .venv/bin/python ] || "$python" -m venv .venv
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ] \
        || [ scripts/overrides.txt -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
    uv=(.venv/bin/uv pip install --quiet --python .venv/bin/python)
    # torch first and pinned: a bare "torch" would pull the newest CUDA build (several GB). uv reads none of
    # pip's settings, so the folder of wheels on this machine (PIP_FIND_LINKS: the CPU build) is passed on.
    "${uv[@]}" "${TORCH_SPEC:-torch==2.13.0}" ${PIP_FIND_LINKS:+--find-links "$PIP_FIND_LINKS"} \
        ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
    # torch is not in the lock: it never replaces the build installed above. The overrides keep out what the
    # lock leaves out, which a package's own requirements would otherwise bring back (scripts/overrides.txt).
    "${uv[@]}" -r requirements.lock --override scripts/overrides.txt
    "${uv[@]}" --no-deps -e .
    # uv writes no .pyc (its --compile-bytecode left most packages uncompiled here), and where
    # PYTHONDONTWRITEBYTECODE is set (as on the kit's build machines) Python writes none either, so every process
    # compiled nbgrader, SQLAlchemy, matplotlib... from source again: `import nbgrader.apps` 1.9 s, 0.8 s once
    # compiled. compileall writes them whatever that setting (about 14 s on 2 cores, once); it exits 1 for the
    # few files that packages ship uncompilable on purpose (test data), which is no failure here.
    .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
        > /dev/null || true
    touch "$stamp"
fi
# nbgrader run from a folder inside the course reads the course's settings (scripts/venv_nbgrader_config.py)
mkdir -p .venv/etc/jupyter
cp scripts/venv_nbgrader_config.py .venv/etc/jupyter/nbgrader_config.py
