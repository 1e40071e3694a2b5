"""The local development stack: one Kafka broker and one PostgreSQL cluster on loopback.

``tracebound up`` runs the real server binaries (no containers) so the pipeline is
exercised against the same software it meets in production, while keeping every byte
of state in one folder that ``tracebound down --purge`` can wipe.

Modules: :mod:`paths` (where things live), :mod:`process` (pid files, signals, ports),
:mod:`kafka` and :mod:`postgres` (one server each), :mod:`topics` (topic creation),
:mod:`stack` (orchestration and the status model) and :mod:`cli` (the sub-commands).
"""

from __future__ import annotations

import sys


def progress(message: str) -> None:
    """Tell the user about a step that may take a while.

    Goes to stderr so that ``tracebound status --json`` and friends keep a clean stdout.
    """
    print(f"tracebound: {message}", file=sys.stderr, flush=True)
