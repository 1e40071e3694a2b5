"""``tracebound/`` is infrastructure: it imports no role, read model or replay code.

The CLI names its subcommand modules as strings (its entry table), loaded only
when the command runs; nothing else in the package may reach upwards.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tracebound.resources import ROOT as REPO_ROOT

UPPER_LAYERS = ("services", "projections", "replay")


def _imported(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def test_the_core_imports_nothing_from_the_layers_above() -> None:
    offending = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for path in sorted((REPO_ROOT / "tracebound").rglob("*.py"))
        for name in _imported(path)
        if name.split(".")[0] in UPPER_LAYERS
    ]
    assert offending == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from services.planner.skills import Skill\nimport replay.cli\n")
    assert _imported(module) == ["services.planner.skills", "replay.cli"]
