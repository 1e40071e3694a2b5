"""Alertmanager payloads: what is accepted, how alerts become runs, what a request says."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from services.ingest import alertmanager
from services.ingest.alertmanager import (
    build_chat_request,
    build_request,
    firing_groups,
    label_fingerprint,
    load_document,
    resolved_alerts,
)
from services.ingest.models import AlertmanagerWebhook, ChatRequest, validation_details
from tracebound.errors import InvalidInputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def webhook(name: str = "firing_group.json") -> AlertmanagerWebhook:
    return AlertmanagerWebhook.model_validate(fixture(name))


def test_real_shaped_payloads_validate() -> None:
    for name in ("firing_group.json", "firing_group_grown.json", "resolved_group.json"):
        payload = webhook(name)
        assert payload.version == "4" and payload.alerts


def test_unknown_fields_of_newer_alertmanagers_are_ignored() -> None:
    data = fixture("firing_group.json")
    data["someFutureField"] = {"x": 1}
    data["alerts"][0]["silenceURL"] = "http://am/silence"
    assert webhook().model_dump() == AlertmanagerWebhook.model_validate(data).model_dump()


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.pop("alerts"), ["alerts"]),
        (lambda d: d.update(alerts=[]), ["alerts"]),
        (lambda d: d.update(alerts="HighCPUUsage"), ["alerts"]),
        (lambda d: d.update(status="pending"), ["status"]),
        (lambda d: d.update(version="3"), ["version"]),
        (lambda d: d.update(truncatedAlerts="many"), ["truncatedAlerts"]),
        (lambda d: d["alerts"][0].update(labels={"service": "x"}), ["alerts", 0, "labels"]),
        (
            lambda d: d["alerts"][0]["labels"].update(severity=3),
            ["alerts", 0, "labels", "severity"],
        ),
        (lambda d: d["alerts"][1].update(startsAt="yesterday"), ["alerts", 1, "startsAt"]),
        (lambda d: d["alerts"][1].update(fingerprint="not hex!"), ["alerts", 1, "fingerprint"]),
        (lambda d: d.pop("receiver"), ["receiver"]),
    ],
)
def test_invalid_payloads_name_the_problem(mutate: Any, where: list[Any]) -> None:
    data = copy.deepcopy(fixture("firing_group.json"))
    mutate(data)
    with pytest.raises(ValidationError) as caught:
        AlertmanagerWebhook.model_validate(data)
    locs = [d["loc"][: len(where)] for d in validation_details(caught.value)]
    assert where in locs
    assert all(set(d) == {"loc", "msg"} for d in validation_details(caught.value))


def test_one_run_per_group_by_default() -> None:
    [group] = firing_groups(webhook())
    assert [a.labels["alertname"] for a in group.alerts] == ["HighCPUUsage", "PodRestarting"]
    assert group.receiver == "tracebound"


def test_one_run_per_firing_alert_when_configured() -> None:
    groups = firing_groups(webhook(), group_by="alert")
    assert [len(g.alerts) for g in groups] == [1, 1]
    assert len({g.dedup_key for g in groups}) == 2


def test_resolved_alerts_never_start_a_run() -> None:
    payload = webhook("resolved_group.json")
    assert firing_groups(payload) == []
    assert [a.fingerprint for a in resolved_alerts(payload)] == [
        "5b1e7c3a9d0f2468",
        "a03f44c1e2b7d915",
    ]


def test_a_mixed_group_diagnoses_only_what_fires() -> None:
    data = fixture("firing_group.json")
    data["alerts"][1]["status"] = "resolved"
    payload = AlertmanagerWebhook.model_validate(data)
    [group] = firing_groups(payload)
    assert [a.labels["alertname"] for a in group.alerts] == ["HighCPUUsage"]
    assert len(resolved_alerts(payload)) == 1


def test_incidents_are_stable_for_a_resend_and_change_with_a_new_alert_or_start() -> None:
    [first] = firing_groups(webhook())
    reordered = fixture("firing_group.json")
    reordered["alerts"].reverse()  # a repeat_interval re-send keeps each startsAt
    [again] = firing_groups(AlertmanagerWebhook.model_validate(reordered))
    [grown] = firing_groups(webhook("firing_group_grown.json"))
    assert again.incidents == first.incidents and again.dedup_key == first.dedup_key
    assert set(first.incidents) < set(grown.incidents)
    refired = fixture("firing_group.json")
    refired["alerts"][0]["startsAt"] = "2026-07-08T23:59:00Z"  # resolved, then firing again
    [later] = firing_groups(AlertmanagerWebhook.model_validate(refired))
    assert [fp for fp, _ in later.incidents] == [fp for fp, _ in first.incidents]
    assert later.incidents != first.incidents and later.dedup_key != first.dedup_key
    other = fixture("firing_group.json")
    other["groupKey"] = '{}:{service="other"}'
    [elsewhere] = firing_groups(AlertmanagerWebhook.model_validate(other))
    assert elsewhere.dedup_key != first.dedup_key


def test_alert_request_carries_the_alerts_and_summarises_them() -> None:
    [group] = firing_groups(webhook())
    event = build_request(group, "en")
    req = event.request
    assert req.mode == "AIOPS" and req.language == "en"
    assert req.requested_by == "alertmanager:tracebound"
    assert req.query.startswith(
        "Diagnose firing alerts: HighCPUUsage on payment-service (CPU usage of payment-service"
        " is 92%"
    )
    assert "PodRestarting on payment-service" in req.query
    assert req.alerts == group.alerts
    assert req.alerts[0].fingerprint == "5b1e7c3a9d0f2468"
    assert req.alerts[0].startsAt == "2026-07-08T22:45:00.123456789Z"
    assert event.producer.service == "ingest"
    assert build_request(group, "en").run_id != event.run_id


def test_truncated_alerts_are_mentioned() -> None:
    data = fixture("firing_group.json")
    data["truncatedAlerts"] = 7
    [group] = firing_groups(AlertmanagerWebhook.model_validate(data))
    assert "7 more alerts truncated" in build_request(group, "en").request.query


def test_missing_fingerprints_come_from_the_labels() -> None:
    labels = {"alertname": "HighCPUUsage", "service": "payment-service"}
    assert label_fingerprint(labels) == label_fingerprint(dict(reversed(labels.items())))
    assert label_fingerprint(labels) != label_fingerprint({**labels, "pod": "p"})
    assert len(label_fingerprint(labels)) == 16


def test_a_bare_alert_list_is_one_firing_group() -> None:
    payload = load_document((FIXTURES / "alert_list.json").read_bytes())
    [group] = firing_groups(payload)
    assert payload.receiver == "cli"
    assert [a.labels["alertname"] for a in group.alerts] == ["HighCPUUsage", "SlowResponse"]
    assert all(len(a.fingerprint) == 16 for a in group.alerts)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not JSON"),
        ('"a string"', "expected an Alertmanager webhook"),
        ('{"status": "firing", "receiver": "r"}', "alerts: Field required"),
        ('[{"labels": {"alertname": 5}}]', "0.labels.alertname"),
    ],
)
def test_load_document_gives_one_line_reasons(text: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        load_document(text)


def test_chat_requests_detect_their_language() -> None:
    zh = build_chat_request("payment-service 当前是否有 HighCPUUsage 告警？", "s1", None)
    en = build_chat_request("Why is order-service using so much memory?", "s1", None)
    forced = build_chat_request("Why?", "s1", "zh")
    assert (zh.request.language, en.request.language, forced.request.language) == (
        "zh",
        "en",
        "zh",
    )
    assert zh.session_id == "s1" and zh.request.mode == "CHAT"


@pytest.mark.parametrize(
    "body",
    [
        {"session_id": "s", "question": ""},
        {"session_id": "s", "question": "   "},
        {"session_id": "", "question": "q"},
        {"session_id": "s" * 201, "question": "q"},
        {"session_id": "s", "question": "q" * 4001},
        {"session_id": "s", "question": "q", "language": "fr"},
        {"session_id": "s", "question": 42},
        {"session_id": "s", "question": "q", "extra": 1},
        {"question": "q"},
    ],
)
def test_chat_body_limits(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ChatRequest.model_validate(body)


def test_requests_for_builds_one_request_per_group() -> None:
    planned = alertmanager.requests_for(webhook(), "group", "zh")
    assert len(planned) == 1 and planned[0][1].request.language == "zh"
