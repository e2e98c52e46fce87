# Quick start targets; scripts/setup.sh makes .venv/ with the pinned CPU torch.
PY := .venv/bin/python
# Jupyter's per-user state of these runs (kernel connection files, IPython's profile, notebook signatures) goes
# into .venv/home/, never ~/.local/share/jupyter or ~/.ipython (the tests also keep theirs in a temporary folder).
KIT_HOME := $(CURDIR)/.venv/home
demo test e2e: export JUPYTER_DATA_DIR := $(KIT_HOME)/jupyter
demo test e2e: export JUPYTER_RUNTIME_DIR := $(KIT_HOME)/jupyter/runtime
demo test e2e: export IPYTHONDIR := $(KIT_HOME)/ipython
# Compiled bytecode of the checkout (the kit, its tests) goes to .venv/home/pycache, so each of the runs' many
# Python processes reads it instead of compiling the kit again, even where PYTHONDONTWRITEBYTECODE is set (as on
# the kit's build machines); the checkout itself gets no __pycache__. The environment's own is compiled at setup.
demo test e2e: export PYTHONDONTWRITEBYTECODE :=
demo test e2e: export PYTHONPYCACHEPREFIX := $(KIT_HOME)/pycache

.PHONY: setup demo test lint device-sweep e2e-setup e2e slurm-setup slurm-test
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m autograder demo

test: setup
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n auto --dist worksteal --durations=15

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

# Every wrong form of cases.py graded on the fake GPU too (tests/devices/fakegpu.py): about a minute more on 2 cores,
# so `make test` grades every correct form and one wrong form a chapter.
device-sweep: setup
	$(PY) -m pytest tests/devices -m device_sweep -n auto --dist worksteal

# The browser test (JupyterLab and Formgrader in chromium): minutes, so not part of `make test`.
e2e-setup:
	bash scripts/setup-e2e.sh

e2e: e2e-setup
	$(PY) -m pytest tests/e2e -m e2e --timeout 900

# The Slurm path for real (root): Debian's slurm-wlm and munge, a one-node cluster, an array of shards and the
# merge against a one-machine grade-all (tests/slurm). About 2.5 minutes on 2 busy cores; not part of `make test`.
slurm-setup:
	command -v slurmd munged >/dev/null 2>&1 || PATH="$$PATH:/usr/sbin" command -v slurmd munged >/dev/null 2>&1 || \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge)

slurm-test: setup slurm-setup
	$(PY) -m pytest tests/slurm -m slurm -p no:cacheprovider -s
