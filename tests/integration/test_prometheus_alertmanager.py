"""Real Prometheus and Alertmanager alerts, through the ingest, answered truthfully.

Debian's ``prometheus`` and ``prometheus-alertmanager`` run on loopback (see
``tests/support/prometheus.py``) with alerting rules over constant expressions for
checkout-service, a service the demo data does not know. Alertmanager's webhook
goes to a real ``python -m services.ingest``; the five roles answer. Each test's
alerts carry their own ``tb_test`` label, so fingerprints, Alertmanager groups
and runs never mix with another test's or an earlier session's.

The alert group is one rule firing for two pods of checkout-service, as real
CPU alerts do. The rule carries neither threshold nor unit: both must come from
its expression (``checkout_cpu_usage_percent > 90``: 90, percent). One rule means
one notification batch from Prometheus, so both alerts reach Alertmanager in the
same group wait (two rules are sent separately and, on a loaded machine, may not);
``for: 2s`` puts the firing evaluation well after the reload that loaded the rule,
whose own evaluation's notifications a reload can drop.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.executor.tools.settings import ToolSettings
from tests.support.ingest_process import ingest_server
from tests.support.kafka_io import TopicTail
from tests.support.pipeline import running_pipeline
from tests.support.projection import ProjectionFactory, topic_ends
from tests.support.prometheus import Monitoring, free_port, running_monitoring
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.events import Answer, DiagnosisRequested, Event, EvidenceProduced, Verdict
from tracebound.topics import topic_table

SERVICE = "checkout-service"
THRESHOLD = "90"
PODS = {"checkout-service-5f7d9c-a1b2c": "97", "checkout-service-5f7d9c-d3e4f": "93"}
ANSWER_TIMEOUT_S = 180.0

RECORD = """\
      - record: checkout_cpu_usage_percent
        expr: vector({value})
        labels: {{service: {service}, pod: {pod}, tb_test: "{tag}"}}
"""
ALERT = """\
      - alert: HighCPUUsage
        expr: checkout_cpu_usage_percent{{tb_test="{tag}"}} > {threshold}
        for: 2s
        labels: {{severity: critical}}
        annotations:
          summary: "{service} CPU busy at {{{{ $value }}}} on {{{{ $labels.pod }}}}"
"""


def rules(tag: str, *, firing: bool) -> str:
    """The rule file of one test: the pods' CPU above the threshold, or below it."""
    fields = {"tag": tag, "service": SERVICE, "threshold": THRESHOLD}
    records = "".join(
        RECORD.format(pod=pod, value=value if firing else "50", **fields)
        for pod, value in PODS.items()
    )
    return (
        f"groups:\n  - name: checkout-{tag}\n    interval: 1s\n    rules:\n"
        + records
        + ALERT.format(**fields)
    )


def demo_strings() -> set[str]:
    """What only the demo environment says: its date, pod names and alert values.

    Strings the project's own runbooks also contain (a runbook's example figure)
    are knowledge, not demo data, and are left out.
    """
    s = ToolSettings()
    alerts = json.loads((s.demo_data_dir / "alerts.json").read_text())["alerts"]
    logs = json.loads((s.demo_data_dir / "logs.json").read_text())["logs"]
    found = {s.demo_now.date().isoformat()}
    found |= {a["labels"]["pod"] for a in alerts if a["labels"].get("pod")}
    found |= {a["current_value"] for a in alerts}
    found |= {r["instance"] for r in logs if r.get("instance")}
    runbooks = " ".join(p.read_text() for p in s.runbooks_dir.glob("*.md"))
    return {text for text in found if text not in runbooks}


@pytest.fixture(scope="session")
def monitoring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Monitoring, int]]:
    """The pair for the session, and the port the ingest must listen on for its webhook."""
    port = free_port()
    folder = tmp_path_factory.mktemp("monitoring")
    with running_monitoring(folder, f"http://127.0.0.1:{port}/api/v1/alerts") as pair:
        try:
            yield pair, port
        finally:
            print(pair.logs())  # shown by pytest when a test failed


class RunEvents:
    """Every event on the run topics from now on (dead letters aside)."""

    def __init__(self, stack: StackHandle) -> None:
        names = [t.name for t in topic_table() if t.name != topics.DEAD_LETTERS]
        self.tails = [TopicTail(stack.kafka, name) for name in names]

    def all(self) -> list[Event]:
        return [e for tail in self.tails for e in tail.snapshot()]

    def runs_of(self, tag: str) -> list[str]:
        """Run ids of the requests whose alerts carry ``tb_test=tag``, in arrival order."""
        return [
            e.run_id
            for e in self.all()
            if isinstance(e, DiagnosisRequested)
            and any(a.labels.get("tb_test") == tag for a in e.request.alerts)
        ]

    def alert_pods(self, run_id: str) -> list[str]:
        return [
            a.labels.get("pod", "")
            for e in self.of_run(run_id)
            if isinstance(e, DiagnosisRequested)
            for a in e.request.alerts
        ]

    def of_run(self, run_id: str) -> list[Event]:
        return [e for e in self.all() if e.run_id == run_id]

    def close(self) -> None:
        for tail in self.tails:
            tail.close()


LETTERS = str.maketrans("0123456789", "ghijklmnop")


@pytest.fixture
def alerting(monitoring: tuple[Monitoring, int]) -> Iterator[tuple[Monitoring, int, str]]:
    """The pair, the ingest port and this test's tag; the test's rules removed afterwards."""
    mon, port = monitoring
    # Letters only: the tag reaches the events URL-encoded in the alerts' generatorURL
    # (``…a5d3256a92%22``), where a tag ending in digits could spell a demo value ("92%").
    tag = uuid.uuid4().hex[:10].translate(LETTERS)
    try:
        yield mon, port, tag
    finally:
        mon.set_rules("groups: []\n")


@pytest.fixture
def run_events(stack: StackHandle) -> Iterator[RunEvents]:
    events = RunEvents(stack)
    try:
        yield events
    finally:
        events.close()


def first_run(mon: Monitoring, events: RunEvents, tag: str) -> str:
    """Fire the test's alerts; the one run their group started."""
    mon.set_rules(rules(tag, firing=True))
    mon.wait(
        "both alerts firing in Prometheus",
        lambda: True if mon.alert_states() == ["firing"] * len(PODS) else None,
    )
    [run_id, *_] = mon.wait("a run of the alert group", lambda: events.runs_of(tag) or None)
    return run_id


def answered(events: RunEvents, run_id: str) -> Answer:
    """The run's answer, as the tails that were reading before the run began saw it (a
    reader made now could start past an answer that came quickly)."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        run = events.of_run(run_id)
        if found := [e for e in run if isinstance(e, Answer)]:
            return found[0]
        if time.monotonic() >= deadline:
            reached = [type(e).__name__ for e in run]  # where a stalled run stopped
            raise AssertionError(
                f"run {run_id} was not answered within {ANSWER_TIMEOUT_S:.0f}s;"
                f" its events: {reached}"
            )
        time.sleep(0.2)


def resolution_of(client: httpx.Client, run_id: str) -> Any:
    """The run's resolved alerts as the trace API shows them (None: nothing recorded yet)."""
    run = client.get(f"/api/v1/runs/{run_id}/trace").json().get("run") or {}
    return run.get("resolved_alerts") if run.get("resolved_at") else None


def demo_leaks(events: list[Event]) -> list[str]:
    text = "\n".join(e.model_dump_json() for e in events)
    return sorted(s for s in demo_strings() if s in text)


def test_alert_groups_become_truthful_runs(
    stack: StackHandle,
    alerting: tuple[Monitoring, int, str],
    projection: ProjectionFactory,
    run_events: RunEvents,
    tmp_path: Path,
) -> None:
    mon, port, tag = alerting
    model = projection(start=topic_ends(stack))
    model.start()
    problems: list[str] = []  # every unmet promise of one (costly) flow, reported together
    with (
        ingest_server(model.env(), tmp_path / "ingest.log", port) as url,
        httpx.Client(base_url=url, timeout=30, trust_env=False) as client,
        running_pipeline(stack, tmp_path / "pipeline", demo=False),  # a fresh install's tools
    ):
        run_id = first_run(mon, run_events, tag)
        answer = answered(run_events, run_id)
        time.sleep(2)  # a repeat of the notification would show as a second run by now
        if len(runs := run_events.runs_of(tag)) > 1:
            named = {r: run_events.alert_pods(r) for r in runs}
            problems.append(f"one alert group made several runs (run: its alerts): {named}")
        text = answer.user_facing_answer
        for fact in (*PODS.values(), f"{THRESHOLD}%"):
            if fact not in text:
                problems.append(f"the answer does not state {fact!r}: {text!r}")
        if leaks := demo_leaks(run_events.of_run(run_id)):
            problems.append(f"demo data in the run's events: {leaks}")

        before = set(run_events.runs_of(tag))
        sent = mon.webhook_notifications()
        mon.set_rules(rules(tag, firing=False))
        mon.wait(
            "the alerts resolved in Prometheus", lambda: True if not mon.alert_states() else None
        )
        mon.wait(
            "Alertmanager's resolved notification",
            lambda: True if mon.webhook_notifications() > sent else None,
        )
        mon.set_rules(rules(tag, firing=True))
        try:
            mon.wait(
                "a new run after the alerts fired again",
                lambda: [r for r in run_events.runs_of(tag) if r not in before] or None,
                timeout_s=30,
            )
        except AssertionError as exc:
            problems.append(str(exc).splitlines()[0])
        model.wait_caught_up()
        if resolution_of(client, run_id) is None:
            problems.append(f"the resolution does not show on run {run_id}")
    assert not problems, "\n".join(problems)


def test_prometheus_backend_claims_cite_prometheus(
    stack: StackHandle,
    alerting: tuple[Monitoring, int, str],
    run_events: RunEvents,
    tmp_path: Path,
) -> None:
    mon, port, tag = alerting
    backend = {
        "TRACEBOUND_TOOLS_METRICS_BACKEND": "prometheus",
        "TRACEBOUND_TOOLS_PROMETHEUS_URL": mon.prometheus_url,
    }
    with (
        ingest_server(stack.env(), tmp_path / "ingest.log", port),
        running_pipeline(stack, tmp_path / "pipeline", env=backend, demo=False),
    ):
        run_id = first_run(mon, run_events, tag)
        answer = answered(run_events, run_id)
        live = mon.prometheus(
            "/api/v1/query", query=f'checkout_cpu_usage_percent{{tb_test="{tag}"}}'
        )
        [rule] = [
            r
            for g in mon.prometheus("/api/v1/rules", type="alert")["groups"]
            if g["name"] == f"checkout-{tag}"
            for r in g["rules"]
            if r["name"] == "HighCPUUsage"
        ]
    [evidence, *_] = [e for e in run_events.of_run(run_id) if isinstance(e, EvidenceProduced)]
    calls = {i.source_invocation_id: i for i in evidence.tool_trace}
    output = evidence.executor_structured_output
    assert isinstance(output, dict)
    cited = [
        (b, calls[b["source_invocation_id"]])
        for c in output["claims"]
        for b in c["evidence_bindings"]
        if calls[b["source_invocation_id"]].tool_name == "query_metrics"
        and b["raw_path"].startswith("$.alerts[")
    ]
    by_pod = {
        inv.output["alerts"][int(b["raw_path"][9:-1])]["labels"].get("pod"): (b, inv)
        for b, inv in cited
    }
    assert set(by_pod) == set(PODS), f"not every alert is cited: {output['claims']}"
    live_values = {s["metric"]["pod"]: s["value"][1] for s in live["result"]}
    assert live_values == PODS
    for pod, (binding, invocation) in by_pod.items():
        assert invocation.retrieval_layer == "prometheus"
        item = invocation.output["alerts"][int(binding["raw_path"][9:-1])]
        # The recorded tool output is Prometheus' answer: the live value of the
        # alert's own series, and its rule's threshold, unit and hold time.
        assert item["current_value"] == live_values[pod]
        assert item["expr"] == rule["query"] and item["threshold"] == THRESHOLD
        assert (item["unit"], item["comparison"], item["for"]) == ("percent", ">", "2s")
        ref = {r.raw_path: r.text for r in invocation.retrieval_details.evidence_refs}  # type: ignore[union-attr]
        assert binding["evidence_excerpt"] in ref[binding["raw_path"]]
        stated = f"current={PODS[pod]}%, threshold={THRESHOLD}%"
        assert stated in binding["evidence_excerpt"]
        assert f"current {PODS[pod]}%, threshold {THRESHOLD}%" in answer.user_facing_answer


CPU_DESCRIPTION = "CPU usage of {{ $labels.instance }} is {{ $value }}% (threshold 80%)"
DESCRIBED = """\
groups:
  - name: described-{tag}
    interval: 1s
    rules:
      - record: node_cpu_busy
        expr: vector(93)
        labels: {{service: {service}, instance: "web-{tag}:9100", tb_test: "{tag}"}}
      - alert: HighCPUUsage
        expr: node_cpu_busy{{tb_test="{tag}"}} > 80
        for: 2s
        labels: {{severity: critical}}
        annotations:
          description: "{description}"
          runbook_url: "https://runbooks.example.com/high-cpu"
"""


def test_a_value_stated_only_in_the_description_is_answered(
    stack: StackHandle,
    alerting: tuple[Monitoring, int, str],
    run_events: RunEvents,
    tmp_path: Path,
) -> None:
    """No value annotation, no unit in the metric's name: the description states both figures."""
    mon, port, tag = alerting
    with (
        ingest_server(stack.env(), tmp_path / "ingest.log", port),
        running_pipeline(stack, tmp_path / "pipeline", demo=False),
    ):
        mon.set_rules(DESCRIBED.format(tag=tag, service=SERVICE, description=CPU_DESCRIPTION))
        mon.wait("the alert firing", lambda: True if mon.alert_states() == ["firing"] else None)
        [run_id, *_] = mon.wait("a run of the alert", lambda: run_events.runs_of(tag) or None)
        answer = answered(run_events, run_id)
    [verdict, *_] = [e for e in run_events.of_run(run_id) if isinstance(e, Verdict)]
    text = answer.user_facing_answer
    assert verdict.verdict == "PASS", (verdict.rationale, text)
    assert "current 93%, threshold 80%" in text, text
    assert f'description "CPU usage of web-{tag}:9100 is 93% (threshold 80%)"' in text
    assert "value 93%, threshold 80%" in text  # the opening line reads the same words
    assert "runbook https://runbooks.example.com/high-cpu" in text
    assert "unstated" not in text
