"""What the gatekeeper replay reads of recorded evidence and results, and nothing more.

Why: re-judging one round needs the executor's structured output and the evidence
refs of its tool invocations; comparing needs the recorded result's status,
severity, failed rules and rule-set version. Decoding whole events (≈ 6–7 KB each,
with every tool's parameters and output parsed as JSON into nested models) cost
several times the judging itself. So, with the single-object codec, each message
is read by fastavro with a *reader schema* that keeps only those fields: the
others are skipped in the bytes without building any object. The reader schemas
are the current ones with fields left out, so every writer version the codec reads
resolves the same way, and a message the codec could not decode is counted as
undecodable here too. With a schema registry, or from an in-memory
:class:`~replay.recorded.Recording` (``--from-file``, tests), whole events are
decoded and the same records are taken from them, so both paths judge one shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

from fastavro import parse_schema

from projections.history import Slice
from replay.recorded import Recording, Selection, group_batches
from services.gatekeeper.input import Invocation
from tracebound import fastjson
from tracebound import kafka as edge
from tracebound.codec import make_codec, schemas
from tracebound.codec.schemas import plain_uuids
from tracebound.codec.single_object import read_record
from tracebound.errors import DecodeError
from tracebound.events import EvidenceProduced, GatekeeperResult
from tracebound.settings import KafkaSettings

Keep = Mapping[str, "Keep | None"]  # fields kept; a nested record's own kept fields
_ENVELOPE: Keep = {"event_id": None, "run_id": None, "occurred_at": None, "causation_id": None}
_EVIDENCE: Keep = {
    **_ENVELOPE,
    "executor_structured_output": None,
    "round": None,
    "tool_trace": {
        "source_invocation_id": None,
        "tool_name": None,
        "retrieval_details": {"evidence_refs": None},
    },
}
_RESULT: Keep = {
    **_ENVELOPE,
    "gatekeeper_result": {
        "status": None,
        "severity": None,
        "rule_set_version": None,
        "failed_rules": None,
    },
}
_KEPT: dict[str, Keep] = {"EvidenceProduced": _EVIDENCE, "GatekeeperResult": _RESULT}


@dataclass(frozen=True, slots=True)
class Evidence:
    """One recorded ``EvidenceProduced``, as the gatekeeper judges it."""

    event_id: str
    run_id: str
    occurred_at: datetime
    round: int
    structured_output: Any
    invocations: tuple[Invocation, ...]

    @classmethod
    def of_event(cls, event: EvidenceProduced) -> Evidence:
        invocations = tuple(Invocation.of_record(r) for r in event.tool_trace)
        return cls(
            event.event_id,
            event.run_id,
            event.occurred_at,
            event.round,
            event.executor_structured_output,
            invocations,
        )

    @classmethod
    def of_avro(cls, record: Mapping[str, Any]) -> Evidence:
        text = record["executor_structured_output"]
        return cls(
            record["event_id"],
            record["run_id"],
            record["occurred_at"],
            record["round"],
            fastjson.loads(text) if isinstance(text, str) else None,
            tuple(Invocation.of_avro(r) for r in record["tool_trace"]),
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a recorded ``GatekeeperResult`` decided, and the evidence event it answered."""

    causation_id: str | None
    status: str
    severity: str
    failed_rules: tuple[str, ...]
    rule_set_version: str

    @classmethod
    def of_event(cls, event: GatekeeperResult) -> Outcome:
        result = event.gatekeeper_result
        return cls(
            event.causation_id,
            result.status,
            result.severity,
            result.failed_rules,
            result.rule_set_version,
        )

    @classmethod
    def of_avro(cls, record: Mapping[str, Any]) -> Outcome:
        result = record["gatekeeper_result"]
        return cls(
            record["causation_id"],
            result["status"],
            result["severity"],
            tuple(result["failed_rules"]),
            result["rule_set_version"],
        )


@dataclass
class GateGroup:
    """A partition group's evidence, in topic order, and the recorded outcome of each."""

    evidence: list[Evidence] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # the first per evidence id
    undecodable: int = 0

    def add(self, item: Evidence | Outcome) -> None:
        if isinstance(item, Evidence):
            self.evidence.append(item)
        elif item.causation_id is not None:
            self.outcomes.setdefault(item.causation_id, item)

    def inputs(self) -> Iterator[tuple[Evidence, Outcome | None]]:
        return ((e, self.outcomes.get(e.event_id)) for e in self.evidence)

    @classmethod
    def of(cls, recording: Recording) -> GateGroup:
        group = cls(undecodable=recording.undecodable)
        for event in recording.events:
            if isinstance(event, EvidenceProduced):
                group.add(Evidence.of_event(event))
            elif isinstance(event, GatekeeperResult):
                group.add(Outcome.of_event(event))
        return group


def _pruned(avro: Any, keep: Keep) -> Any:
    """``avro`` with only the ``keep`` fields in its records (through unions and arrays)."""
    if isinstance(avro, list):
        return [_pruned(branch, keep) for branch in avro]
    if isinstance(avro, dict) and avro.get("type") == "array":
        return {**avro, "items": _pruned(avro["items"], keep)}
    if isinstance(avro, dict) and avro.get("type") == "record":
        fields = []
        for f in avro["fields"]:
            if f["name"] in keep:
                inner = keep[f["name"]]
                fields.append(f if inner is None else {**f, "type": _pruned(f["type"], inner)})
        return {**avro, "fields": fields}
    return avro


@cache
def readers() -> dict[bytes, tuple[str, Any, Any]]:
    """Fingerprint → (event, writer schema, reader schema) of the events read here.

    Ids are read as plain strings, as the codec reads them (``plain_uuids``).
    """
    readers = {
        event: parse_schema(plain_uuids(_pruned(schemas.current(event).expanded, keep)))
        for event, keep in _KEPT.items()
    }
    return {
        fingerprint: (version.event, version.parsed, readers[version.event])
        for fingerprint, version in schemas.all_versions().items()
        if version.event in readers
    }


def decode(data: bytes | None) -> Evidence | Outcome | None:
    """The record of one message; None for any other event, ``DecodeError`` if unreadable."""
    read = read_record(data, readers())
    if read is None:
        return None  # an event this stage does not read
    event, record = read
    try:
        return Evidence.of_avro(record) if event == "EvidenceProduced" else Outcome.of_avro(record)
    except (ValueError, TypeError, KeyError) as exc:
        raise DecodeError(f"invalid {event}: {exc}") from exc


def read_gate_group(
    kafka: KafkaSettings,
    group: Slice,
    selection: Selection,
    consumer: Any,
    on_read: Callable[[int], None],
) -> GateGroup:
    """One partition group of the gatekeeper stage's topics (read as
    :func:`replay.recorded.group_batches` reads it), each message decoded only as far
    as the replay needs."""
    batches = group_batches(kafka, group, selection, consumer, on_read)
    if kafka.schema_registry_url:  # Confluent framing: whole events, then their records
        codec = make_codec(kafka)
        recording = Recording()
        for batch in batches:
            recording.events += edge.decoded(codec, batch)
        return GateGroup.of(recording)
    gate = GateGroup()
    for batch in batches:
        for message in batch:
            if message.error() is not None or message.value() is None:
                continue
            try:
                item = decode(message.value())
            except DecodeError:
                gate.undecodable += 1
                continue
            if item is not None:
                gate.add(item)
    return gate


def gate_groups(recorded: Recording | Iterable[Recording | GateGroup]) -> Iterator[GateGroup]:
    """Whatever the replay was given, as gate groups, one at a time."""
    items = (recorded,) if isinstance(recorded, Recording) else recorded
    for item in items:
        yield item if isinstance(item, GateGroup) else GateGroup.of(item)
