"""A run's merge state is declared once (:mod:`projections.run_state`)."""

from __future__ import annotations

import re
from pathlib import Path

PROJECTIONS = Path(__file__).resolve().parents[2] / "projections"
ALIAS = re.compile(r"^\w*State\s*(:\s*TypeAlias\s*)?=\s*dict\[", re.M)


def test_no_projections_module_declares_its_own_run_state() -> None:
    declared = [p.name for p in sorted(PROJECTIONS.glob("*.py")) if ALIAS.search(p.read_text())]
    assert declared == ["run_state.py"]
