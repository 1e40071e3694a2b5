"""A history of the requested size: the recorded runs copied under new ids.

The projection and replay figures need more history than one pipeline run
records. :func:`fill` counts the events now on the topics the read models read
and, while there are fewer than asked, copies the recorded runs:

- every run-keyed topic the read models read is copied (the dead letters are not:
  a refused input is not part of a run);
- each copy gets new run, event, session and trace ids and new tool-invocation
  ids, consistently: a causation id, a citation of an invocation or a carried
  request names the copy's own events, never the original's;
- copies are written through the project's producer factory and codec, keyed by
  run id like the roles write them (so partitioned alike), and in the original
  messages' time order, so a copied run's events sit as close together across
  topics as the recorded run's did. Payloads and event times are kept as recorded;
- the roles must not run the copies again: afterwards every role's consumer group
  that had read its inputs to the end is moved past the copies (run it with the
  roles stopped, as the bench does; a running group is left alone and named).

An *event* is counted as the projection figures count it: one event applied to
one read model (a ``ToolInvoked`` counts for ``diagnosis_run`` and
``tool_invocation``).
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from bench.report import log
from projections.models import ALL_TOPICS, MODELS
from projections.rebuild import end_offsets
from tracebound import kafka as edge
from tracebound import topology
from tracebound.codec import Codec, make_codec
from tracebound.events import Event, ToolInvoked
from tracebound.settings import KafkaSettings

READ_TIMEOUT_S = 120.0
Offsets = edge.Offsets
# Topics whose events belong to runs: those of every model but the dead letters.
RUN_TOPICS: tuple[str, ...] = tuple(
    dict.fromkeys(t for m in MODELS.values() if m.name != "dead_letter" for t in m.topics)
)
# How many read models read each topic: the events one message counts for.
MODEL_WEIGHT: dict[str, int] = {
    topic: sum(topic in m.topics for m in MODELS.values()) for topic in ALL_TOPICS
}


@dataclass(frozen=True, slots=True)
class History:
    """The model events now on the topics, per model and distinct, and the end offsets."""

    per_model: dict[str, int]
    distinct: int
    ends: Offsets
    # just past each partition's last message; short of the end by any trailing
    # transaction markers, which a consumer's committed offset may not have passed
    data_ends: Offsets

    @property
    def events(self) -> int:
        return sum(self.per_model.values())


@dataclass(frozen=True, slots=True)
class FillReport:
    before: int
    after: History
    copies: int
    runs_copied: int
    left_alone: tuple[str, ...] = ()


def count(kafka: KafkaSettings) -> History:
    """Events per read model and distinct events now on the model topics, and the end offsets."""
    ends = end_offsets(kafka, ALL_TOPICS)
    counts: dict[str, int] = dict.fromkeys(ALL_TOPICS, 0)
    data_ends: Offsets = {}
    consumer = edge.consumer(kafka, "bench", config=edge.READ_TO_END)
    try:
        for messages in edge.read_range(consumer, {}, ends, timeout_s=READ_TIMEOUT_S):
            for message in messages:
                counts[message.topic()] += 1
                data_ends[(message.topic(), message.partition())] = message.offset() + 1
    finally:
        consumer.close()
    per_model = {m.name: sum(counts[t] for t in m.topics) for m in MODELS.values()}
    return History(per_model, sum(counts.values()), ends, data_ends)


@dataclass(slots=True)
class _Recorded:
    """The recorded run messages in time order, and the ids a copy must replace."""

    messages: list[tuple[int, str, bytes]]  # (timestamp, topic, value)
    runs: list[str]  # in order of their first message
    weight: dict[str, int]  # model events per run
    ids: set[str]
    invocations: set[int]


def _recorded(kafka: KafkaSettings, codec: Codec, ends: Offsets) -> _Recorded:
    """Read the run topics up to ``ends`` (values kept encoded; ids gathered once)."""
    wanted = {key: end for key, end in ends.items() if key[0] in RUN_TOPICS}
    rec = _Recorded([], [], {}, set(), set())
    consumer = edge.consumer(kafka, "bench", config=edge.READ_TO_END)
    try:
        for messages in edge.read_range(consumer, {}, wanted, timeout_s=READ_TIMEOUT_S):
            for message in messages:
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                rec.messages.append((message.timestamp()[1], message.topic(), value))
    finally:
        consumer.close()
    rec.messages.sort(key=lambda m: m[0])
    for _, topic, value in rec.messages:
        event = codec.decode(value, topic)
        if event.run_id not in rec.weight:
            rec.runs.append(event.run_id)
            rec.weight[event.run_id] = 0
        rec.weight[event.run_id] += MODEL_WEIGHT[topic]
        rec.ids.update(i for i in _ids_of(event) if i)
        if isinstance(event, ToolInvoked):
            rec.invocations.add(event.tool_invocation.source_invocation_id)
    return rec


def _ids_of(event: Event) -> Iterable[str | None]:
    return (event.event_id, event.run_id, event.session_id, getattr(event, "trace_id", None))


class _Renamer:
    """The ids of one copy: each recorded id mapped to a new one derived from the copy's tag."""

    def __init__(self, tag: str, ids: set[str], invocations: set[int]) -> None:
        self._tag, self._ids, self._invocations = tag, ids, invocations

    def _text(self, old: str) -> str:
        digest = hashlib.sha256(f"{self._tag}:{old}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    def _number(self, old: int) -> int:
        digest = hashlib.sha256(f"{self._tag}:{old}".encode()).digest()
        return int.from_bytes(digest[:6], "big") or 1

    def value(self, data: Any, key: str = "") -> Any:
        """``data`` with its ids replaced; an integer is an invocation id only under a key
        that names one (``source_invocation_id``, ``id``, ...)."""
        if isinstance(data, str):
            return self._text(data) if data in self._ids else data
        if isinstance(data, bool):
            return data
        if isinstance(data, int):
            named = key == "id" or "invocation" in key
            return self._number(data) if named and data in self._invocations else data
        if isinstance(data, dict):
            return {k: self.value(v, str(k)) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.value(v, key) for v in data]
        return data

    def event(self, event: Event) -> Event:
        return type(event).model_validate(self.value(event.model_dump(mode="python")))


def fill(kafka: KafkaSettings, wanted: int) -> FillReport:
    """Copy the recorded runs until the model topics hold at least ``wanted`` model events."""
    history = count(kafka)
    before = history.events
    if before >= wanted:
        return FillReport(before, history, 0, 0)
    codec = make_codec(kafka)
    rec = _recorded(kafka, codec, history.ends)
    per_copy = sum(rec.weight.values())
    if per_copy == 0:
        raise RuntimeError("no recorded runs to copy: run the pipeline figure first")
    copies = math.ceil((wanted - before) / per_copy)
    log(f"history: {before:,} model events, copying {len(rec.runs):,} runs {copies} time(s)")
    producer = edge.producer(
        kafka, "history-fill", config={"linger.ms": "20", "compression.type": "lz4"}
    )
    missing, copied = wanted - before, 0
    try:
        for number in range(copies):
            keep = _runs_needed(rec, missing)
            names = _Renamer(f"copy-{uuid.uuid4().hex}-{number}", rec.ids, rec.invocations)
            for _, topic, value in rec.messages:
                event = codec.decode(value, topic)
                if event.run_id not in keep:
                    continue
                new = names.event(event)
                edge.produce(producer, topic, new.run_id.encode(), codec.encode(new, topic))
            missing -= sum(rec.weight[r] for r in keep)
            copied += len(keep)
        if producer.flush(60) > 0:
            raise RuntimeError("the broker did not acknowledge every copied event")
    finally:
        producer.flush(5)
    after = count(kafka)
    left = _pass_over(kafka, history.data_ends, after.ends)
    for note in left:
        log(f"history: {note}")
    return FillReport(before, after, copies, copied, tuple(left))


def _pass_over(kafka: KafkaSettings, before: Offsets, after: Offsets) -> list[str]:
    """Move each role's group past the copies where it had read every message before them
    (``before``: just past each partition's last message then)."""
    notes: list[str] = []
    for role in topology.ROLES:
        if role.name == "projections":
            continue  # the read models are meant to project the copies
        topics = set(role.input_topics) | set(role.watched_topics)
        keys = sorted(k for k in after if k[0] in topics and k[0] in RUN_TOPICS)
        if not keys:
            continue
        consumer = edge.consumer(kafka, "history-fill", group=role.name)
        try:
            held = consumer.committed([TopicPartition(t, p) for t, p in keys], timeout=10)
            moves = [
                TopicPartition(tp.topic, tp.partition, after[(tp.topic, tp.partition)])
                for tp in held
                if tp.offset >= before.get((tp.topic, tp.partition), 0)
            ]
            if moves:
                consumer.commit(offsets=moves, asynchronous=False)
        except KafkaException as exc:
            notes.append(f"group {role.name} not moved past the copies: {exc}")
        finally:
            consumer.close()
    return notes


def _runs_needed(rec: _Recorded, missing: int) -> set[str]:
    """The first recorded runs whose events make up ``missing`` (all of them if short)."""
    keep: set[str] = set()
    total = 0
    for run_id in rec.runs:
        if total >= missing:
            break
        keep.add(run_id)
        total += rec.weight[run_id]
    return keep


__all__ = ["RUN_TOPICS", "FillReport", "History", "count", "fill"]
