"""Where tracebound finds its application folders and data files.

In a checkout the application lives in the repository's top-level folders
(``services/``, ``projections/``, ``schemas/``, ``rules/`` …). A wheel cannot put
those generic names into site-packages, so it ships them under the ``tracebound``
package as ``tracebound/_app/<folder>`` (see ``setup.py``). :data:`ROOT` is the one
place that tells the two layouts apart; every data lookup goes through it, so the
same code reads ``rules/gatekeeper-rules.json`` from either.

The application packages (``services``, ``projections``, ``web``, ``replay``,
``bench``) are importable under their own names only inside tracebound's processes:
the CLI entry point calls :func:`make_importable`, and the role processes it starts
get :data:`ROOT` on their ``PYTHONPATH`` (:func:`child_env`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_INSTALLED = _PACKAGE / "_app"

# The folder holding the application folders: ``tracebound/_app`` in an installed
# wheel, the repository root in a checkout (where ``tracebound/_app`` never exists).
ROOT = _INSTALLED if _INSTALLED.is_dir() else _PACKAGE.parent


def path(*parts: str) -> Path:
    """A file or folder of the application, e.g. ``path("rules", "scope-rules.json")``."""
    return ROOT.joinpath(*parts)


def make_importable() -> None:
    """Let this process import the application packages (``services`` …) by name."""
    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`ROOT` first on ``PYTHONPATH``: a child can run ``-m services.<role>``."""
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), *rest])}
