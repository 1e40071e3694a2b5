"""Reading recorded events: from the topics, or from a JSON Lines export of them.

Why an assign-only consumer: a replay must not join (or create offsets for) any
consumer group the services use, and must see a fixed slice of history. Every
partition is assigned explicitly from its first offset (or the offset of
``--since`` via ``offsets_for_times``) and read, ``read_committed``, up to the end
offsets taken when the read started; events published meanwhile are left for
the next replay. The Python client insists on a ``group.id``, so a throw-away one
is set, but it is never joined and nothing is ever committed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from projections import history
from projections.history import read_slice, take_slice
from tracebound import kafka as edge
from tracebound.codec import make_codec
from tracebound.errors import InvalidInputError, PoisonInput
from tracebound.events import EVENT_TYPES, Event
from tracebound.settings import KafkaSettings

E = TypeVar("E", bound=Event)
Progress = Callable[[str], None]
READ_TIMEOUT_S = 120.0  # without a message from the broker


def stderr_progress(message: str) -> None:
    """Progress for long work goes to stderr, so stdout stays the report."""
    print(f"replay: {message}", file=sys.stderr, flush=True)


def quiet(_message: str) -> None:
    """Progress sink for tests and library callers that want silence."""


class Stamped(Protocol):
    """What a selection looks at: an event, or a record a stage reads of one."""

    @property
    def run_id(self) -> str: ...

    @property
    def occurred_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Selection:
    """Which recorded history a replay looks at: all, a time window, or chosen runs."""

    since: datetime | None = None
    until: datetime | None = None
    run_ids: frozenset[str] = frozenset()

    def keeps_run(self, event: Stamped) -> bool:
        return not self.run_ids or event.run_id in self.run_ids

    def keeps(self, event: Stamped) -> bool:
        """Whether a stage *input* is selected; outputs are matched wherever they fall."""
        if self.run_ids and event.run_id not in self.run_ids:
            return False
        if self.since is not None and event.occurred_at < self.since:
            return False
        return self.until is None or event.occurred_at <= self.until

    def describe(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "run_ids": sorted(self.run_ids),
        }


@dataclass
class Recording:
    """Recorded events in topic order per partition, plus what could not be decoded."""

    events: list[Event] = field(default_factory=list)
    undecodable: int = 0
    _indexes: dict[str, tuple[int, dict[str, list[Event]]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def caused_by(self, event_id: str) -> list[Event]:
        """Events whose ``causation_id`` names ``event_id``: what reacted to it."""
        return self._index("causation_id").get(event_id, [])

    def for_run(self, run_id: str) -> list[Event]:
        return self._index("run_id").get(run_id, [])

    def reactions(self, event: Event) -> list[Event]:
        return self.caused_by(event.event_id)

    def run_of(self, event: Event) -> list[Event]:
        return self.for_run(event.run_id)

    def _index(self, attribute: str) -> dict[str, list[Event]]:
        """Events grouped by ``attribute``, built once (and again if events were added)."""
        cached = self._indexes.get(attribute)
        if cached is not None and cached[0] == len(self.events):
            return cached[1]
        grouped: dict[str, list[Event]] = {}
        for event in self.events:
            key = getattr(event, attribute)
            if key is not None:
                grouped.setdefault(key, []).append(event)
        self._indexes[attribute] = (len(self.events), grouped)
        return grouped


Recorded = Recording | Iterable[Recording]  # the whole history, or its partition groups


def inputs(
    recorded: Recorded,
    kind: type[Any],
    related: Callable[[Recording, Event], list[Event]],
    selection: Selection,
    progress: Progress,
    *,
    label: str,
    every: int,
) -> Iterator[tuple[Any, list[Event]]]:
    """Each selected input of ``kind`` with its ``related`` recorded events.

    Only events are handed out, never the group: a group is let go before the next
    one is read, so no more than one is held at a time.
    """
    groups = iter((recorded,) if isinstance(recorded, Recording) else recorded)
    count = 0
    recording: Recording | None
    while (recording := next(groups, None)) is not None:
        for event in recording.of(kind):
            if selection.keeps(event):
                count += 1
                if count % every == 0:
                    progress(f"{label}: {count} re-run")
                yield event, related(recording, event)
        recording = None
    progress(f"{label}: {count} re-run")


def read_groups(
    kafka: KafkaSettings,
    topic_names: Iterable[str],
    selection: Selection,
    progress: Progress = quiet,
    timeout_s: float = READ_TIMEOUT_S,
) -> Iterator[Recording]:
    """Every committed event of ``topic_names`` inside ``selection``, one partition group
    at a time (see :func:`message_groups`), decoded into a :class:`Recording`."""
    codec = make_codec(kafka)
    keeps = selection.keeps_run
    read = 0
    for batches in message_groups(kafka, topic_names, selection, progress, timeout_s):
        recording = Recording()

        def undecodable(_message: Any, _exc: PoisonInput, into: Recording = recording) -> None:
            into.undecodable += 1

        for batch in batches:
            events = edge.decoded(codec, batch, undecodable)
            recording.events += [e for e in events if keeps(e)] if selection.run_ids else events
        read += len(recording.events)
        yield recording
    progress(f"read {read} event(s)")


def message_groups(
    kafka: KafkaSettings,
    topic_names: Iterable[str],
    selection: Selection,
    progress: Progress = quiet,
    timeout_s: float = READ_TIMEOUT_S,
) -> Iterator[Iterator[list[Any]]]:
    """The committed messages of ``topic_names``, one partition group at a time (see
    :func:`partition_groups`), in batches, read with one consumer.

    The caller reads a group's batches, handles the group, lets it go and gets the
    next, so at most one group is held in memory. Progress with events/s and the
    time left goes to stderr unless ``progress`` is :func:`quiet`.
    """
    groups = partition_groups(kafka, topic_names, selection, progress)
    meter = reading_meter(groups, progress)
    consumer = replay_consumer(kafka)
    try:
        for group in groups:
            yield group_batches(kafka, group, selection, consumer, meter.add, timeout_s=timeout_s)
    finally:
        consumer.close()


def partition_groups(
    kafka: KafkaSettings, topic_names: Iterable[str], selection: Selection, progress: Progress
) -> list[history.Slice]:
    """The partition groups of ``topic_names`` with something to read, up to the end
    offsets taken now (events published meanwhile are left for the next replay).

    Runs are co-partitioned by run id on every topic, so a group holds every event of
    its runs, and a stage input finds its recorded reaction in the same group. Each
    group is partition ``n`` of every topic, read in offset order in the rebuild's
    batches (:mod:`projections.history`).
    """
    names = list(topic_names)
    since_ms = None if selection.since is None else int(selection.since.timestamp() * 1000)
    part = take_slice(kafka, names, since_ms=since_ms, required=True)
    count = 1 + max((p for _t, p in part.ends), default=0)
    progress(f"reading {len(part.reading())} partition(s) of {len(names)} topic(s)")
    groups = (part.group(index, count) for index in range(count))
    return [group for group in groups if group.reading()]


def reading_meter(groups: Iterable[history.Slice], progress: Progress) -> history.Progress:
    """Events read, events/s and the time left on stderr (nowhere when ``progress`` is quiet)."""
    total = sum(group.total for group in groups)
    return history.Progress("replay: reading", total, None if progress is quiet else sys.stderr)


def replay_consumer(kafka: KafkaSettings) -> Any:
    """An assign-only consumer for :func:`group_batches` (close it when done)."""
    return edge.consumer(kafka, "history", config=history.HISTORY_READ)


def group_batches(
    kafka: KafkaSettings,
    group: history.Slice,
    selection: Selection,
    consumer: Any,
    on_read: Callable[[int], None],
    *,
    timeout_s: float = READ_TIMEOUT_S,
) -> Iterator[list[Any]]:
    """The messages of one partition group in batches; ``on_read`` hears each batch's size.

    With ``--run`` ids, other runs' messages (every event is keyed by its run id) are
    left out before anything is decoded.
    """
    wanted = {run_id.encode() for run_id in selection.run_ids}
    for batch, _finished in read_slice(kafka, group, timeout_s=timeout_s, consumer=consumer):
        on_read(len(batch))
        yield [m for m in batch if m.key() is None or m.key() in wanted] if wanted else batch


def export_jsonl(events: Iterable[Event], path: Path) -> int:
    """Write events as JSON Lines (``event_type`` + the event's JSON form)."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for event in events:
            line = {"event_type": event.schema_name, **event.to_json()}
            out.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    return count


def load_jsonl(path: Path, selection: Selection | None = None) -> Recording:
    """A recording exported by :func:`export_jsonl` (``replay --export``)."""
    recording = Recording()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read recording {path}: {exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            kind = EVENT_TYPES[data.pop("event_type")]
            event = kind.model_validate(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{path}:{number}: not a recorded event: {exc}") from None
        if selection is None or selection.keeps_run(event):
            recording.events.append(event)
    return recording
