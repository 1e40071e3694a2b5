"""Tracing end to end: one run is one trace, from the webhook's caller to the answer.

A local OTLP/HTTP receiver (:mod:`tests.support.otlp`) stands for the collector.
The five roles run in rules mode, a real ``python -m services.ingest`` takes an
Alertmanager webhook that carries the caller's ``traceparent``, and a projection
writes the read models. Every role's step span for the run must arrive with the
caller's trace id, each parented on the step of the role it read from, and the
run's trace page must link the trace.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx

from tests.integration.test_ingest import unique_group
from tests.support.ingest_process import ingest_server
from tests.support.otlp import ReceivedSpan, otlp_receiver
from tests.support.pipeline import ROLES, running_pipeline
from tests.support.projection import Projection, ProjectionFactory, topic_ends
from tests.support.stack import StackHandle

# The roles whose records a role's step reads (the executor also reads retries).
UPSTREAM = {
    "planner": {"ingest"},
    "executor": {"planner", "verifier"},
    "gatekeeper": {"executor"},
    "verifier": {"gatekeeper"},
    "composer": {"verifier"},
}
TEMPLATE = "https://traces.example/trace/{trace_id}"


def steps_of(spans: list[ReceivedSpan], run_id: str) -> dict[str, list[ReceivedSpan]]:
    """The run's spans by role: the roles' steps and the ingest's span of the run."""
    found: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        if span.attributes.get("tracebound.run_id") != run_id:
            continue
        if span.name in (f"{span.attributes.get('tracebound.role')} step", "ingest run"):
            found.setdefault(str(span.attributes["tracebound.role"]), []).append(span)
    return found


def wait_answered(model: Projection, run_id: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while model.answered([run_id]) < 1:
        assert time.monotonic() < deadline, "the projection never showed the run answered"
        time.sleep(0.3)


def test_one_run_is_one_trace_across_every_role(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    caller_trace, caller_span = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    firing, _tag = unique_group("firing_group.json")
    model = projection(start=topic_ends(stack))
    with otlp_receiver() as receiver:
        otel = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "TRACEBOUND_TRACE_URL_TEMPLATE": TEMPLATE,
        }
        with (
            running_pipeline(stack, tmp_path / "pipeline", env=otel),
            ingest_server({**model.env(), **otel}, tmp_path / "ingest.log") as url,
            httpx.Client(base_url=url, timeout=30, trust_env=False) as client,
        ):
            model.start()
            traceparent = f"00-{caller_trace}-{caller_span}-01"
            reply = client.post("/api/v1/alerts", json=firing, headers={"traceparent": traceparent})
            assert reply.status_code == 200, reply.text
            run_id = reply.json()["runs"][0]["run_id"]
            wait_answered(model, run_id)
            spans = receiver.wait_for(
                lambda got: set(steps_of(got, run_id)) >= {"ingest", *ROLES}, timeout_s=60
            )
            page = client.get(f"/runs/{run_id}")
            trace_doc = client.get(f"/api/v1/runs/{run_id}/trace").json()

    steps = steps_of(spans, run_id)
    services = {span.service for role in steps for span in steps[role]}
    assert services == {f"tracebound-{role}" for role in ("ingest", *ROLES)}
    # One trace: the caller's, continued by the ingest and carried by every record.
    run_spans = [s for s in spans if s.trace_id == caller_trace]
    assert {s.trace_id for role in steps for s in steps[role]} == {caller_trace}
    by_id = {s.span_id: s for s in run_spans}
    (ingest_run,) = steps["ingest"]
    assert by_id[ingest_run.parent_id].name == "ingest alerts"
    assert by_id[ingest_run.parent_id].parent_id == caller_span
    # Parent-linked across services: each step's parent is a step of its upstream role.
    for role, upstream in UPSTREAM.items():
        for step in steps[role]:
            parent = by_id.get(step.parent_id)
            assert parent is not None, f"{role} step's parent never arrived"
            assert parent.attributes.get("tracebound.role") in upstream, (role, parent)
    (answer,) = [s for s in steps["composer"] if "Answer" in s.attributes["tracebound.outputs"]]
    assert answer.attributes["tracebound.verdict"]
    # Tool calls are children of the executor's step, named and with their backend.
    tools = [s for s in run_spans if s.name == "tool call"]
    assert tools and all(by_id[t.parent_id] in steps["executor"] for t in tools)
    assert all(
        t.attributes["tracebound.tool"] and t.attributes["tracebound.backend"] for t in tools
    )
    # No alert text leaves in a span: only ids and enumerations.
    query_words = {w for a in firing["alerts"] for w in a["annotations"].values() if len(w) > 20}
    assert not any(str(v) in query_words for s in run_spans for v in s.attributes.values())
    # The read model keeps the trace id; the page links it through the template.
    assert trace_doc["run"]["trace_id"] == caller_trace
    assert page.status_code == 200
    assert f'href="{TEMPLATE.format(trace_id=caller_trace)}"' in page.text
