"""The keeper's note of a role's crashes, beside its pid file: written by the keeper,
read by ``tracebound status``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def crashes_path(folder: Path, unit: str) -> Path:
    return folder / f"{unit}.crashes.json"


def read_crashes(folder: Path, unit: str) -> dict[str, Any] | None:
    """What the keeper wrote about ``unit`` (None: it never crashed)."""
    try:
        value = json.loads(crashes_path(folder, unit).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
