"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.markers import mark_folder
from tests.support.projection import ProjectionFactory, projections_in_private_schemas
from tests.support.stack import StackHandle


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here needs the real stack; marked once here (before ``-m`` selects)."""
    mark_folder(items, Path(__file__).parent, pytest.mark.integration)


@pytest.fixture
def projection(stack: StackHandle, tmp_path: Path) -> Iterator[ProjectionFactory]:
    """Projections into private schemas, stopped and dropped afterwards."""
    yield from projections_in_private_schemas(stack, tmp_path)
