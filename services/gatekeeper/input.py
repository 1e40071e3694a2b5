"""What the gatekeeper reads: the request envelope and the invocation index.

Why validate the envelope but not the executor output: tool invocations come
from our own records, so a malformed one is unusable input (exit 2 in the CLI);
the executor output is what the gatekeeper judges, so its defects become rule
failures in the result rather than input errors. Only its top-level type
(object or null) is checked here.

The index is what a check looks invocations up in. It tolerates records the
envelope models would refuse (a service may call the check with raw event
data): such records simply cannot be cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from tracebound.jsonio import parse_each


class EvidenceRefIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    raw_path: StrictStr
    text: StrictStr


class RetrievalDetailsIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    evidence_status: StrictStr | None = None
    evidence_refs: list[EvidenceRefIn] | None = None


class ToolInvocationIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: StrictInt
    tool_name: StrictStr
    success: StrictBool | None = None
    retrieval_details: RetrievalDetailsIn | None = None


class GatekeeperInput(BaseModel):
    """One request: the executor output (null allowed) and the session's invocations."""

    model_config = ConfigDict(extra="allow")

    executor_structured_output: dict[str, Any] | None
    tool_invocations: list[ToolInvocationIn]

    @model_validator(mode="after")
    def _unique_ids(self) -> GatekeeperInput:
        seen: set[int] = set()
        for invocation in self.tool_invocations:
            if invocation.id in seen:
                raise ValueError(f"tool_invocations holds id {invocation.id} more than once")
            seen.add(invocation.id)
        return self


@dataclass(frozen=True)
class CheckRequest:
    """A validated request; the raw dicts go to the check so nothing is lost or coerced."""

    executor_structured_output: dict[str, Any] | None
    tool_invocations: list[dict[str, Any]]


def is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # decoded JSON objects are dicts; the Mapping fallback is the slow, rare path
    return type(value) is dict or isinstance(value, Mapping)


class Ref:
    """One evidence ref; ``norm`` caches its normalised text for one check."""

    __slots__ = ("norm", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.norm: str | None = None


class Invocation:
    """One tool invocation; its refs are indexed on first use."""

    __slots__ = ("_raw_refs", "_refs", "id", "tool_name")

    def __init__(self, inv_id: int, tool_name: str, raw_refs: Any) -> None:
        self.id = inv_id
        self.tool_name = tool_name
        self._raw_refs = raw_refs
        self._refs: dict[str, Ref] | None = None

    @property
    def legacy(self) -> bool:
        """A record from before evidence_refs existed; it cannot be verified."""
        return type(self._raw_refs) is not list

    @property
    def refs(self) -> dict[str, Ref]:
        if self._refs is None:
            self._refs = {}
            for ref in self._raw_refs if type(self._raw_refs) is list else ():
                if is_object(ref):
                    path, text = ref.get("raw_path"), ref.get("text")
                    if type(path) is str and type(text) is str:
                        self._refs.setdefault(path, Ref(text))
        return self._refs


def index_invocations(tool_invocations: Sequence[Any]) -> tuple[dict[int, Invocation], int]:
    """Invocations by id (first record wins); also how many duplicate ids were dropped."""
    by_id: dict[int, Invocation] = {}
    duplicates = 0
    for raw in tool_invocations:
        if not is_object(raw):
            continue
        inv_id = raw.get("id")
        if type(inv_id) is not int:
            continue
        if inv_id in by_id:
            duplicates += 1
            continue
        tool = raw.get("tool_name")
        details = raw.get("retrieval_details")
        raw_refs = details.get("evidence_refs") if is_object(details) else None
        by_id[inv_id] = Invocation(inv_id, tool if type(tool) is str else "", raw_refs)
    return by_id, duplicates


def parse_requests(text: str) -> list[CheckRequest]:
    """All requests of the input, in order; any structural defect raises InvalidInputError."""
    return [
        CheckRequest(raw["executor_structured_output"], raw["tool_invocations"])
        for raw, _model in parse_each(text, GatekeeperInput)
    ]
