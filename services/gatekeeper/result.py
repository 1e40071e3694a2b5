"""The result a check builds: its ``checked_bindings`` entries and the back-filled output.

Why apart from the rules: the check decides, this module only records. Entries
stay mutable while the binding's checks run and become ``CheckedBinding``
records once at the end; the executor output is copied only where a binding
was back-filled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.gatekeeper.input import is_object
from tracebound.events import CheckedBinding, GatekeeperOutcome


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """The ``gatekeeper_result`` record plus the (back-filled) executor output."""

    result: GatekeeperOutcome
    structured_output: dict[str, Any] | None


def shown(value: Any) -> str | None:
    """A model-supplied binding field as the record holds it: strings as they are, else JSON.

    Only a binding that fails ``binding.fields`` carries a non-string here; the
    result still shows what the model wrote.
    """
    if value is None or type(value) is str:
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class Binding:
    """One ``checked_bindings`` entry while its checks run (status and fields change)."""

    __slots__ = (
        "binding_index",
        "claim_id",
        "matched_text",
        "raw_path",
        "reason",
        "rule",
        "source_invocation_id",
        "status",
        "tool_name",
    )

    def __init__(self, claim_id: str, binding_index: int, tool: Any, sid: Any, path: Any) -> None:
        self.claim_id = claim_id
        self.binding_index = binding_index
        self.tool_name = shown(tool)
        self.source_invocation_id = sid if type(sid) is int else None
        self.raw_path = shown(path)
        self.matched_text: str | None = None
        self.status = "pass"
        self.rule: str | None = None
        self.reason: str | None = None

    def record(self) -> CheckedBinding:
        # Every field was set above from typed values (``shown`` makes strings, the id
        # an int or None), so the record is built without validating it again: this
        # runs for every binding of every claim.
        return CheckedBinding.model_construct(
            claim_id=self.claim_id,
            binding_index=self.binding_index,
            tool_name=self.tool_name,
            source_invocation_id=self.source_invocation_id,
            raw_path=self.raw_path,
            matched_text=self.matched_text,
            status=self.status,
            rule=self.rule,
            reason=self.reason,
        )


def with_fills(so: Any, fills: list[tuple[int, int, int, str]]) -> dict[str, Any] | None:
    """A new output dict with the back-filled bindings replaced.

    Only the containers on a back-filled path are copied; every other value is
    shared with the input, which the gatekeeper never mutates. Treat both as
    read-only downstream.
    """
    if not is_object(so):
        return None
    copy: dict[str, Any] = dict(so)
    if fills:
        claims = copy["claims"] = list(copy["claims"])
        for c_index, b_index, inv_id, path in fills:
            claim = claims[c_index] = dict(claims[c_index])
            bindings = claim["evidence_bindings"] = list(claim["evidence_bindings"])
            bindings[b_index] = dict(bindings[b_index], source_invocation_id=inv_id, raw_path=path)
    return copy
