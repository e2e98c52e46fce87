# Quick start targets; scripts/setup.sh makes .venv/ with the pinned CPU torch.
PY := .venv/bin/python

.PHONY: setup demo test lint e2e-setup e2e
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m autograder demo

test: setup
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n auto --dist loadfile --durations=15

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

# The browser test (JupyterLab and Formgrader in chromium): minutes, so not part of `make test`.
e2e-setup:
	bash scripts/setup-e2e.sh

e2e: e2e-setup
	$(PY) -m pytest tests/e2e -m e2e --timeout 900
