"""Deterministic tool-invocation ids.

The contracts cite invocations by number (``source_invocation_id: 517``). An id
derived from (run, round, call index) is unique without a database sequence, and
re-processing the same plan after a crash yields the same ids, so a citation
never points at an invocation that was rolled back and re-run under another id.
48 bits keep it exact in JSON and JavaScript.
"""

from __future__ import annotations

import hashlib


def invocation_id(run_id: str, round_no: int, index: int) -> int:
    digest = hashlib.sha256(f"{run_id}:{round_no}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big") or 1
