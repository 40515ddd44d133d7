"""Every test in tests/chaos is marked ``chaos``: ``pytest -m chaos`` runs the suite alone, and it
runs with the rest by default."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.chaos)
