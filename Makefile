# Quick start targets; scripts/setup.sh makes .venv/ with the pinned CPU torch.
PY := .venv/bin/python

.PHONY: setup demo test lint
setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m autograder demo

test: setup
	$(PY) -m ruff check .
	$(PY) -m pytest

lint: setup
	$(PY) -m ruff check .
