"""What the gatekeeper reads: recorded tool invocations, indexed for citation lookup.

The check takes the executor's ``ToolInvocation`` records as the event carries
them; ``tracebound gatekeeper check`` parses its input into the same records
here, so the service and the CLI judge one shape.

Why validate the invocations but not the executor output: invocations come from
our own records, so a malformed one is unusable input (exit 2 in the CLI); the
executor output is what the gatekeeper judges, so its defects become rule
failures in the result rather than input errors. Only its top-level type
(object or null) is checked here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeGuard

from pydantic import BaseModel, ConfigDict, ValidationError

from tracebound.errors import InvalidInputError
from tracebound.events import EvidenceRef, RetrievalDetails, ToolInvocation
from tracebound.jsonio import json_objects, one_line


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
    """One tool invocation; its refs are indexed on first use.

    ``refs_of`` gives the ``(raw_path, text)`` pairs of the evidence refs, or is
    None for a legacy record (from before evidence_refs existed). It is called
    only when the refs are first needed, so an invocation nothing cites costs
    nothing more.
    """

    __slots__ = ("_refs", "_refs_of", "id", "tool_name")

    def __init__(
        self,
        invocation_id: int,
        tool_name: str,
        refs_of: Callable[[], Iterable[tuple[str, str]]] | None,
    ) -> None:
        self.id = invocation_id
        self.tool_name = tool_name
        self._refs_of = refs_of
        self._refs: dict[str, Ref] | None = None

    @classmethod
    def of_record(cls, record: ToolInvocation) -> Invocation:
        """The invocation of an event's ``ToolInvocation`` record."""
        details = record.retrieval_details
        refs_of = None if details is None else partial(_model_refs, details.evidence_refs)
        return cls(record.source_invocation_id, record.tool_name, refs_of)

    @classmethod
    def of_avro(cls, record: Mapping[str, Any]) -> Invocation:
        """The invocation of a ``ToolInvocation`` Avro record as fastavro reads it."""
        details = record["retrieval_details"]
        refs_of = None if details is None else partial(_avro_refs, details["evidence_refs"])
        return cls(record["source_invocation_id"], record["tool_name"], refs_of)

    @property
    def legacy(self) -> bool:
        """A record from before evidence_refs existed; it cannot be verified."""
        return self._refs_of is None

    @property
    def refs(self) -> dict[str, Ref]:
        if self._refs is None:
            self._refs = {}
            for raw_path, text in self._refs_of() if self._refs_of is not None else ():
                if raw_path not in self._refs:
                    self._refs[raw_path] = Ref(text)
        return self._refs


def _model_refs(refs: Iterable[EvidenceRef]) -> Iterator[tuple[str, str]]:
    return ((ref.raw_path, ref.text) for ref in refs)


def _avro_refs(refs: Iterable[Mapping[str, str]]) -> Iterator[tuple[str, str]]:
    return ((ref["raw_path"], ref["text"]) for ref in refs)


def index(invocations: Iterable[Invocation]) -> tuple[dict[int, Invocation], int]:
    """Invocations by id (first record wins); also how many duplicate ids were dropped."""
    by_id: dict[int, Invocation] = {}
    duplicates = 0
    for invocation in invocations:
        if invocation.id in by_id:
            duplicates += 1
            continue
        by_id[invocation.id] = invocation
    return by_id, duplicates


def index_invocations(
    tool_invocations: Sequence[ToolInvocation],
) -> tuple[dict[int, Invocation], int]:
    """:func:`index` of an event's ``ToolInvocation`` records."""
    return index(Invocation.of_record(record) for record in tool_invocations)


class GatekeeperInput(BaseModel):
    """One request of the CLI: the executor output (null allowed) and the invocations."""

    model_config = ConfigDict(extra="allow")

    executor_structured_output: dict[str, Any] | None
    tool_invocations: list[dict[str, Any]]


@dataclass(frozen=True)
class CheckRequest:
    """A parsed request; the executor output stays raw JSON so nothing is lost or coerced."""

    executor_structured_output: dict[str, Any] | None
    tool_invocations: tuple[ToolInvocation, ...]


def _known(model: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``raw`` the record declares; the CLI ignores any others."""
    return {key: value for key, value in raw.items() if key in model.model_fields}


def _record_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A CLI invocation in the record's field names.

    The CLI names the id ``id`` (``source_invocation_id`` is accepted too), may
    leave out what the gatekeeper does not read (parameters, output, duration,
    success, evidence status), and marks a legacy record by leaving out
    ``evidence_refs``; such a record has no retrieval details.
    """
    fields: dict[str, Any] = {"input_params": None, "output": None, "duration_ms": 0}
    fields |= _known(ToolInvocation, raw)
    if "id" in raw:
        fields["source_invocation_id"] = raw["id"]
    if fields.get("success") is None:
        fields["success"] = True
    details = raw.get("retrieval_details")
    if is_object(details):
        if details.get("evidence_refs") is None:
            fields["retrieval_details"] = None
        else:
            shown = _known(RetrievalDetails, details)
            if shown.get("evidence_status") is None:
                shown["evidence_status"] = "unknown"
            refs = details["evidence_refs"]
            if isinstance(refs, list):
                shown["evidence_refs"] = [
                    _known(EvidenceRef, ref) if is_object(ref) else ref for ref in refs
                ]
            fields["retrieval_details"] = shown
    return fields


def parse_invocation(raw: Mapping[str, Any]) -> ToolInvocation:
    """One CLI invocation as its record; field types are checked strictly (``"5"`` is no id)."""
    try:
        return ToolInvocation.model_validate_json(json.dumps(_record_fields(raw)), strict=True)
    except ValidationError as exc:
        message = one_line(exc)
        if "id" in raw and message.startswith("source_invocation_id"):
            message = "id" + message.removeprefix("source_invocation_id")
        raise InvalidInputError(message) from None


def _request(document: dict[str, Any]) -> CheckRequest:
    envelope = GatekeeperInput.model_validate(document)
    records = []
    seen: set[int] = set()
    for index, raw in enumerate(envelope.tool_invocations):
        try:
            record = parse_invocation(raw)
        except InvalidInputError as exc:
            raise InvalidInputError(f"tool_invocations[{index}].{exc}") from None
        if record.source_invocation_id in seen:
            raise InvalidInputError(
                f"tool_invocations holds id {record.source_invocation_id} more than once"
            )
        seen.add(record.source_invocation_id)
        records.append(record)
    return CheckRequest(envelope.executor_structured_output, tuple(records))


def parse_requests(text: str) -> list[CheckRequest]:
    """All requests of the input, in order; any structural defect raises InvalidInputError."""
    requests = []
    for label, document in json_objects(text):
        try:
            requests.append(_request(document))
        except ValidationError as exc:
            raise InvalidInputError(f"{label}{one_line(exc)}") from None
        except InvalidInputError as exc:
            raise InvalidInputError(f"{label}{exc}") from None
    return requests
