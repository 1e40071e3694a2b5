"""The HTTP API as one ASGI app: webhook, chat, answers, event streams, runs and traces.

Handlers validate first and publish last; blocking work (PostgreSQL, waiting
for Kafka acks) runs in the thread pool, and waiting for answers costs no thread
(see :mod:`services.ingest.runs`). The ports are injected so the refusal paths
can be tested without a broker. The runs and trace routes are in
:mod:`web.trace_routes`, the dashboard and its sign-in in :mod:`web.dash_routes`,
the replay and eval reports in :mod:`web.report_routes`; every ``/api/v1`` route
sits behind the token check.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from services.ingest import alertmanager
from services.ingest.alert_topic import AlertTopicReader
from services.ingest.dedup import DedupStore
from services.ingest.intake import Dedup, Intake
from services.ingest.models import AlertmanagerWebhook, ChatRequest, validation_details
from services.ingest.runs import EventReader, RunBuffer
from services.ingest.settings import IngestSettings
from services.ingest.traced import run_span
from tracebound.codec import make_codec
from tracebound.errors import RecordTooLarge, TransientError
from tracebound.events import DiagnosisRequested, Event
from tracebound.publisher import KafkaPublisher, Publisher
from tracebound.settings import KafkaSettings, PostgresSettings
from tracebound.tracing import Carrier, carrier_of
from tracebound.tracing import active as active_tracing
from web import dash_routes, live, report_routes, stream, trace_routes
from web.guard import EdgeGuard, HostRule
from web.http import (
    ApiError,
    BearerAuth,
    api_error_handler,
    http_error_handler,
    query_seconds,
    read_json,
    run_id_param,
)
from web.openapi import build_document

log = logging.getLogger(__name__)
MAX_WAIT_S = 120.0
M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class Ports:
    publisher: Publisher
    dedup: Dedup
    runs: RunBuffer
    reader: EventReader | None = None
    alert_topic: AlertTopicReader | None = None


def default_ports(settings: IngestSettings) -> Ports:
    kafka = KafkaSettings()
    runs = RunBuffer(settings.max_runs, settings.max_buffer_mb << 20, make_codec(kafka))
    publisher = KafkaPublisher(kafka)
    alert_topic = None
    if settings.alerts_topic:
        alert_topic = AlertTopicReader(
            kafka, settings.alerts_topic, settings.max_body_bytes, publisher.publish
        )
    return Ports(
        publisher=publisher,
        dedup=DedupStore(PostgresSettings().dsn.get_secret_value(), settings.dedup_window_s),
        runs=runs,
        reader=EventReader(kafka, runs, settings.lookback_s),
        alert_topic=alert_topic,
    )


def _validate(model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(422, "the body does not match the schema", validation_details(exc)) from None


def _too_large(exc: RecordTooLarge) -> ApiError:
    """A 413, not a 503: a 503 would be retried for ever."""
    log.warning("request too large for Kafka: %s", exc)
    return ApiError(
        413, "the request is too large for one Kafka message; send fewer or smaller alerts"
    )


def _unavailable(exc: TransientError) -> ApiError:
    log.warning("request not accepted: %s", exc)
    return ApiError(503, f"not accepted, retry later: {exc}", headers={"Retry-After": "5"})


async def _accepted(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run a publishing ``call`` in the thread pool; a record too large is a 413, a broker
    that does not take it now a 503."""
    try:
        return await run_in_threadpool(call, *args, **kwargs)
    except RecordTooLarge as exc:
        raise _too_large(exc) from None
    except TransientError as exc:
        raise _unavailable(exc) from None


def _lifespan(
    ports: Ports, intake: Intake
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """Start the readers with the app; stop them, then close the publisher, after it."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            await run_in_threadpool(ports.dedup.ensure_schema)
        except TransientError as exc:  # the first webhook tries again
            log.warning("dedup tables not ready yet: %s", exc)
        if ports.reader is not None:
            ports.reader.start()
        if ports.alert_topic is not None:
            ports.alert_topic.start(intake)
        try:
            yield
        finally:
            if ports.alert_topic is not None:
                await run_in_threadpool(ports.alert_topic.stop)
            if ports.reader is not None:
                await run_in_threadpool(ports.reader.stop)
            await run_in_threadpool(ports.publisher.close)

    return lifespan


def create_app(settings: IngestSettings | None = None, ports: Ports | None = None) -> Starlette:
    settings = settings or IngestSettings()
    ports = ports or default_ports(settings)
    max_wait = min(MAX_WAIT_S, max(settings.answer_wait_s, 1.0) * 4)
    document = build_document(max_wait)

    def publish(events: list[Event]) -> None:
        # Acknowledged means readable: buffer it now, so a run's stream starts with its
        # request even when the reader reaches the requests topic after later stages.
        ports.publisher.publish(events)
        for event in events:
            ports.runs.add(event)

    intake = Intake(ports.dedup, publish, settings.group_by, settings.language)

    def publish_chat(event: DiagnosisRequested, parent: Carrier) -> None:
        attributes = {"tracebound.role": "ingest", "tracebound.source": "chat"}
        with active_tracing().step("ingest chat", parent, attributes), run_span(event) as traced:
            publish([traced[0]])

    async def alerts(request: Request) -> Response:
        payload = _validate(AlertmanagerWebhook, await read_json(request, settings.max_body_bytes))
        parent = carrier_of(request.headers.items())  # the caller's traceparent
        return JSONResponse(await _accepted(intake.accept, payload, "webhook", parent))

    async def chat(request: Request) -> Response:
        body = _validate(ChatRequest, await read_json(request, settings.max_body_bytes))
        event = alertmanager.build_chat_request(body.question, body.session_id, body.language)
        await _accepted(publish_chat, event, carrier_of(request.headers.items()))
        log.info(
            "chat session %s: run %s",
            body.session_id[:40],
            event.run_id,
            extra={"run_id": event.run_id},
        )
        return JSONResponse({"run_id": event.run_id})

    async def answer(request: Request) -> Response:
        run_id = run_id_param(request)
        wait = query_seconds(request, settings.answer_wait_s, max_wait)
        found, seen = await ports.runs.wait_answer(run_id, wait)
        if found is not None:
            return JSONResponse(found.to_json())
        if seen:
            return JSONResponse({"run_id": run_id, "status": "running", "events": seen}, 202)
        raise ApiError(404, f"no events of run {run_id} within {wait:g}s")

    async def events(request: Request) -> Response:
        run_id = run_id_param(request)
        wait = query_seconds(request, max_wait, max_wait)
        return StreamingResponse(
            stream.run_events(ports.runs, run_id, wait),
            media_type="text/event-stream",
            headers=stream.HEADERS,
        )

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def openapi(_request: Request) -> Response:
        return JSONResponse(document)

    return Starlette(
        routes=[
            Route("/api/v1/alerts", alerts, methods=["POST"]),
            Route("/api/v1/chat", chat, methods=["POST"]),
            Route("/api/v1/runs/{run_id}/answer", answer, methods=["GET"]),
            Route("/api/v1/runs/{run_id}/events", events, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            *trace_routes.routes(settings.token),
            *dash_routes.routes(settings.token),
            *report_routes.routes(settings.token),
            *live.routes(),
        ],
        middleware=[
            Middleware(
                EdgeGuard, rule=HostRule.of(settings.host, settings.port, settings.host_list)
            ),
            Middleware(BearerAuth, token=settings.token),
        ],
        exception_handlers={ApiError: api_error_handler, HTTPException: http_error_handler},
        lifespan=_lifespan(ports, intake),
    )
