"""The HTTP edge under test: ports that record, refuse or crash, and a client over them.

No broker and no database: the app is built with injected ports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import SecretStr
from starlette.testclient import TestClient

from services.ingest.alertmanager import AlertGroup
from services.ingest.dedup import Claimed
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from tests.unit.test_ingest_http import FIRING, TOKEN, NoDedup, NoPublisher
from tracebound.errors import RecordTooLarge, TransientError
from tracebound.events import Alert, AlertsResolved, DiagnosisRequested, Event
from web.app import Ports, create_app

CHAT = {"session_id": "s-1", "question": "payment-service HighCPUUsage?"}


class Recorder(NoPublisher):
    """Acknowledges everything and keeps it."""


class Refusing(NoPublisher):
    """A broker that refuses with ``error``, the way the Kafka publisher reports it."""

    def __init__(self, error: TransientError | RecordTooLarge) -> None:
        super().__init__()
        self.error = error

    def publish(self, events: Sequence[Event]) -> None:
        raise self.error


class Crashing(NoPublisher):
    def publish(self, events: Sequence[Event]) -> None:
        raise RuntimeError("a bug")


class Claiming(NoDedup):
    """Every group is new: its request is published."""

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed:
        publish(request)
        return Claimed(request.run_id, deduplicated=False)

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int:
        return len(alerts)


def edge_client(publisher: NoPublisher | None = None, **settings: Any) -> TestClient:
    ports = Ports(publisher=publisher or NoPublisher(), dedup=Claiming(), runs=RunBuffer(100))
    app = create_app(IngestSettings(**{"token": SecretStr(TOKEN), **settings}), ports)
    return TestClient(app, base_url="http://127.0.0.1")


def firing() -> dict[str, Any]:
    return copy.deepcopy(json.loads(FIRING))


def locs(reply: Any) -> list[list[Any]]:
    return [d["loc"] for d in reply.json()["detail"]]
