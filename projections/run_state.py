"""A run's merge state: the one declaration every ``diagnosis_run`` module uses.

The state is a JSON object (it is stored as ``jsonb`` with the row) keyed by slot:

- ``request``, ``plan``, ``status``, ``evidence``, ``gatekeeper``, ``verdict``,
  ``answer``: ``{"rank": [...], "value": ...}``, the value of the event with the
  highest rank (:mod:`projections.runs`);
- the stage timings (first and last event time of each stage) and the agent
  steps' token counts by step event id;
- ``resolved``: the resolved alerts by incident (:mod:`projections.resolutions`);
- ``from_row``: the entries left out of a stored state because the row's columns
  hold them (:mod:`projections.stored_state`).

Slots are read and written by name computed at run time (the reducer joins any
slot the same way), so the state is a JSON mapping rather than a fixed record.
"""

from __future__ import annotations

from typing import Any, TypeAlias

RunState: TypeAlias = dict[str, Any]

__all__ = ["RunState"]
