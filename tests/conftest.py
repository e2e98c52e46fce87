"""The order of a test run: the slowest files first, so that `make test`'s pytest-xdist workers (one per core,
whole files each: --dist loadfile) start the long ones at once and finish together."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: each file keeps its order
