"""Tracing: W3C headers read strictly, one step span per input, off means untouched."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.testclient import TestClient

from projections import runs, trace
from services.ingest.alertmanager import build_chat_request
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from services.ingest.traced import run_span
from tests.unit.test_ingest_http import NoDedup, NoPublisher
from tests.unit.test_runtime_inflight import CODEC, IN, OUT, FakeMessage, request, spec, step
from tests.unit.test_trace_assemble import sample_rows
from tracebound import tracing
from tracebound.events import DiagnosisRequested, Event
from tracebound.runtime.batch import CrashedOnce, transform
from tracebound.runtime.inflight import InFlight
from tracebound.tracing.context import carrier_of, record_headers, trace_id_of
from tracebound.tracing.link import TraceLinkSettings
from tracebound.tracing.otel import OtelTracing
from web import trace_page
from web.app import Ports, create_app

TRACE, SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
PARENT = f"00-{TRACE}-{SPAN}-01"


@dataclass
class TracedMessage(FakeMessage):
    _headers: list[tuple[str, bytes]] | None = None

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([("traceparent", PARENT.encode())], {"traceparent": PARENT}),
        (
            [("TraceParent", PARENT), ("tracestate", "k=v")],
            {"traceparent": PARENT, "tracestate": "k=v"},
        ),
        ([("traceparent", b"00-" + b"0" * 32 + b"-" + SPAN.encode() + b"-01")], {}),
        ([("traceparent", b"not a traceparent"), ("tracestate", b"k=v")], {}),
        ([("traceparent", PARENT), ("tracestate", "x" * 600)], {"traceparent": PARENT}),
        ([("other", b"1")], {}),
        (None, {}),
    ],
)
def test_only_a_valid_traceparent_is_carried(
    pairs: list[tuple[str, str | bytes | None]] | None, expected: dict[str, str]
) -> None:
    assert carrier_of(pairs) == expected


def test_trace_id_and_record_headers() -> None:
    assert trace_id_of({"traceparent": PARENT}) == TRACE
    assert trace_id_of({}) is None
    assert record_headers({}) is None
    assert record_headers({"traceparent": PARENT}) == [("traceparent", PARENT.encode())]


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
)
def test_exporting_needs_an_endpoint(environ: dict[str, str], on: bool) -> None:
    assert tracing.endpoint_configured(environ) is on


@pytest.mark.slow
def test_off_the_runtime_never_imports_the_sdk() -> None:
    code = (
        "import sys, tracebound.runtime, tracebound.tracing, services.executor.gate, web.app\n"
        "from tracebound import tracing\n"
        "assert tracing.configure('planner') is tracing.NO_TRACING\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "."}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"


def test_off_outputs_carry_no_headers() -> None:
    batch = [TracedMessage(CODEC.encode(request("q", "r1"), IN), b"r1", 0, _headers=None)]
    outputs, _ = transform(spec(lambda e: [step(e, "a")]), CODEC, batch)
    assert [o.headers for o in outputs] == [None]


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    otel = OtelTracing("test", exporter)
    monkeypatch.setattr(tracing, "_active", otel)
    yield exporter
    otel.shutdown()


def test_a_step_continues_its_input_trace_and_parents_its_outputs(
    exported: InMemorySpanExporter,
) -> None:
    def handler(event: Event) -> list[Event]:
        with tracing.span("model call", {"gen_ai.request.model": "m"}):
            return [step(event, "a")]

    batch = [
        TracedMessage(
            CODEC.encode(request("q", "r1"), IN),
            b"r1",
            7,
            _headers=[("traceparent", PARENT.encode())],
        ),
        TracedMessage(CODEC.encode(request("q", "r2"), IN), b"r2", 8, _headers=None),
    ]
    pool = InFlight(2)
    try:
        outputs, _ = transform(spec(handler), CODEC, batch, pool)
    finally:
        pool.shutdown()
    tracing.shutdown()
    finished = exported.get_finished_spans()
    steps = {
        dict(s.attributes or {})["tracebound.run_id"]: s for s in finished if s.name == "test step"
    }
    first, second = steps["r1"], steps["r2"]
    attributes = dict(first.attributes or {})
    assert first.context.trace_id == int(TRACE, 16)
    assert first.parent is not None and first.parent.span_id == int(SPAN, 16)
    assert second.parent is None  # no trace context in: a new trace
    assert attributes["messaging.kafka.offset"] == 7
    assert attributes["tracebound.mode"] == "CHAT"
    assert attributes["tracebound.outputs"] == "AgentStep"
    # A call below the handler is a child of its step, on whichever thread it ran.
    children = [s for s in finished if s.name == "model call"]
    assert sorted(c.parent.span_id for c in children if c.parent) == sorted(
        [first.context.span_id, second.context.span_id]
    )
    headers = [dict(o.headers or []) for o in outputs]
    assert [trace_id_of(carrier_of(h.items())) for h in headers] == [
        TRACE,
        f"{second.context.trace_id:032x}",
    ]
    assert headers[0]["traceparent"] == f"00-{TRACE}-{first.context.span_id:016x}-01".encode()
    assert all(o.topic == OUT for o in outputs)


def test_a_failing_step_records_the_exception_type_only(exported: InMemorySpanExporter) -> None:
    def handler(event: Event) -> list[Event]:
        raise ValueError("secret alert text")

    batch = [TracedMessage(CODEC.encode(request("q", "r1"), IN), b"r1", 0)]
    with pytest.raises(CrashedOnce) as raised:
        transform(spec(handler), CODEC, batch)
    assert isinstance(raised.value.crashed[0][1].__cause__, ValueError)
    tracing.shutdown()
    (failed,) = exported.get_finished_spans()
    assert failed.status.description == "ValueError"
    assert not failed.events  # no exception event with its message


def test_trace_link_template() -> None:
    link = TraceLinkSettings(url_template="https://jaeger.example/trace/{trace_id}")
    assert link.url(TRACE) == f"https://jaeger.example/trace/{TRACE}"
    assert link.url("<script>") is None
    assert TraceLinkSettings().url(TRACE) is None
    with pytest.raises(ValueError, match="trace_id"):
        TraceLinkSettings(url_template="https://jaeger.example/trace/")
    with pytest.raises(ValueError, match="http"):
        TraceLinkSettings(url_template="javascript:{trace_id}")


def test_the_chat_caller_s_trace_reaches_the_request(exported: InMemorySpanExporter) -> None:
    publisher = NoPublisher()
    ports = Ports(publisher=publisher, dedup=NoDedup(), runs=RunBuffer(100))
    app = create_app(IngestSettings(token=None), ports)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        reply = client.post(
            "/api/v1/chat",
            json={"session_id": "s1", "question": "why is checkout slow?"},
            headers={"traceparent": PARENT},
        )
    assert reply.status_code == 200
    (published,) = publisher.published
    assert isinstance(published, DiagnosisRequested) and published.trace_id == TRACE
    tracing.shutdown()
    spans = {s.name: s for s in exported.get_finished_spans()}
    chat, run = spans["ingest chat"], spans["ingest run"]
    assert chat.parent is not None and chat.parent.span_id == int(SPAN, 16)
    assert run.parent is not None and run.parent.span_id == chat.context.span_id
    assert dict(run.attributes or {})["tracebound.run_id"] == published.run_id


def test_off_the_request_has_no_trace_id() -> None:
    request = build_chat_request("why?", "s1", None)
    with run_span(request) as (stamped, _span):
        assert stamped is request and stamped.trace_id is None


def test_the_read_model_keeps_the_request_s_trace_id_and_the_page_links_it() -> None:
    traced = build_chat_request("why?", "s1", None).model_copy(update={"trace_id": TRACE})
    carried = runs.apply(None, traced)
    assert carried["request"]["value"]["trace_id"] == TRACE
    assert runs.row(traced.run_id, carried)["request"]["trace_id"] == TRACE
    untraced = build_chat_request("why?", "s1", None)
    assert "trace_id" not in runs.apply(None, untraced)["request"]["value"]

    run, invocations, steps = sample_rows()
    run = {**run, "request": {**run["request"], "trace_id": TRACE}}
    document = trace.assemble_trace(run, invocations, steps).document()
    assert document["run"]["trace_id"] == TRACE
    url = f"https://jaeger.example/trace/{TRACE}"
    assert f'<a href="{url}" rel="noreferrer"><code>{TRACE}</code></a>' in trace_page.render_page(
        document, url
    )
    assert f"<code>{TRACE}</code>" in trace_page.render_page(document)
