"""Markers of the fault-injection scenarios, set once for the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.markers import mark_folder


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each scenario restarts or kills parts of the real stack: slow, and integration too."""
    mark_folder(
        items, Path(__file__).parent, pytest.mark.faults, pytest.mark.integration, pytest.mark.slow
    )
