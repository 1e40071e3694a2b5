"""One path from an Alertmanager payload to runs, for the webhook and the alerts topic.

Both doors must cut alerts into runs and deduplicate incidents the same way, so
both call :meth:`Intake.accept`: the firing groups are claimed (a known incident
returns its run), then the resolved alerts are recorded on the runs they
resolve. Every publish goes through the one ``publish`` callable the process
gives, which returns only once Kafka acknowledged; any failure is a
``TransientError`` and the sender (Alertmanager, or the topic reader) retries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.ingest import alertmanager
from services.ingest.alertmanager import AlertGroup, GroupBy
from services.ingest.dedup import Claimed
from services.ingest.models import AlertmanagerWebhook
from services.ingest.traced import run_span
from tracebound.events import Alert, AlertsResolved, DiagnosisRequested, Event
from tracebound.tracing import Carrier
from tracebound.tracing import active as active_tracing

log = logging.getLogger(__name__)


class Dedup(Protocol):
    def ensure_schema(self) -> None: ...

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed: ...

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class Intake:
    dedup: Dedup
    publish: Callable[[list[Event]], None]
    group_by: GroupBy
    language: str

    def accept(
        self, payload: AlertmanagerWebhook, source: str = "webhook", parent: Carrier | None = None
    ) -> dict[str, Any]:
        """``{"runs": [{run_id, deduplicated}], "resolved": n}``: what the payload made.

        ``parent`` is the sender's W3C trace context: with tracing on, the payload is
        one span continuing it, and each run it starts is a child span of its own.
        """
        tracing = active_tracing()
        attributes = {"tracebound.role": "ingest", "tracebound.source": source[:80]}
        with tracing.step("ingest alerts", parent or {}, attributes):
            return self._accept(payload, source)

    def _accept(self, payload: AlertmanagerWebhook, source: str) -> dict[str, Any]:
        runs = []
        for group in alertmanager.firing_groups(payload, self.group_by):
            with run_span(alertmanager.build_request(group, self.language)) as (request, span):
                claimed = self.dedup.claim(group, request, lambda e: self.publish([e]))
                span.set(
                    {
                        "tracebound.run_id": claimed.run_id,
                        "tracebound.deduplicated": claimed.deduplicated,
                    }
                )
            log.info(
                "alert group %s from %s (%s): run %s%s",
                group.dedup_key[:12],
                payload.receiver,
                source,
                claimed.run_id,
                " (deduplicated)" if claimed.deduplicated else "",
                extra={"run_id": claimed.run_id},
            )
            runs.append({"run_id": claimed.run_id, "deduplicated": claimed.deduplicated})
        resolved = self.dedup.record_resolved(
            alertmanager.resolved_alerts(payload),
            f"alertmanager:{payload.receiver}",
            lambda events: self.publish(list(events)),
        )
        return {"runs": runs, "resolved": resolved}
