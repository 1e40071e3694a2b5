"""The package layering of the HTTP surface: web → ingest core and read models, never back.

``services.ingest`` (the ingest core) must import without the read models or the
HTTP stack, ``projections`` must not reach into ``services`` or ``web``, and
``web`` is imported only by the entry points that start it.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import projections
import services.ingest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tracebound", "services", "projections", "replay", "bench", "web")
# The only modules outside web that may import it: the ones that start the server.
WEB_STARTERS = {"services/ingest/__main__.py", "services/ingest/cli.py"}


def _loaded_after_importing(modules: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after importing ``modules``."""
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def _submodules(package: object) -> list[str]:
    path = package.__path__  # type: ignore[attr-defined]
    prefix = f"{package.__name__}."  # type: ignore[attr-defined]
    return [m.name for m in pkgutil.iter_modules(path, prefix) if not m.name.endswith("__main__")]


def _top(names: set[str], package: str) -> set[str]:
    return {n for n in names if n == package or n.startswith(f"{package}.")}


@pytest.mark.slow
def test_the_ingest_core_imports_without_read_models_or_http() -> None:
    assert _top(_loaded_after_importing(["services.ingest"]), "projections") == set()
    modules = _submodules(services.ingest)
    assert "services.ingest.alertmanager" in modules and "services.ingest.cli" in modules
    loaded = _loaded_after_importing(modules)
    assert set(modules) <= loaded
    assert _top(loaded, "projections") == set()
    assert _top(loaded, "web") == set()


@pytest.mark.slow
def test_the_read_models_import_nothing_from_services_or_web() -> None:
    loaded = _loaded_after_importing(_submodules(projections))
    assert "projections.trace" in loaded
    assert _top(loaded, "services") == set()
    assert _top(loaded, "web") == set()


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_entry_points_import_web() -> None:
    importers = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        if package != "web"
        for path in (ROOT / package).rglob("*.py")
        if any(n == "web" or n.startswith("web.") for n in _imported(path))
    }
    assert importers == WEB_STARTERS
