"""Markers given by a test's folder, so no test file has to repeat them."""

from __future__ import annotations

from pathlib import Path

import pytest


def mark_folder(items: list[pytest.Item], folder: Path, *marks: pytest.MarkDecorator) -> None:
    """Add ``marks`` to every collected test that lives under ``folder``.

    Called from a folder's ``conftest.py`` hook, which sees the whole session's items.
    """
    for item in items:
        if item.path.is_relative_to(folder):
            for mark in marks:
                item.add_marker(mark)
