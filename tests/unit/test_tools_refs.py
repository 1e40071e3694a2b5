"""Evidence-ref texts: built by code from the tool output, in the gatekeeper's format."""

from __future__ import annotations

from services.executor.tools import refs
from tests.support import demo_evidence


def test_alert_text_merges_fields_in_order() -> None:
    alert = {
        "alert_name": "HighCPUUsage",
        "service": "payment-service",
        "state": "firing",
        "current_value": "92%",
        "threshold": "80%",
        "duration": "25m",
        "active_at": "2026-07-08T22:45:00Z",
        "description": "",
        "labels": {"pod": "pod-payment-service-7d8f9c6b5-x2k4m", "severity": "critical"},
    }
    assert refs.alert_text(alert) == (
        "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
        "duration=25m, pod=pod-payment-service-7d8f9c6b5-x2k4m, active_at=2026-07-08T22:45:00Z"
    )


def test_alert_text_states_an_absent_threshold_and_appends_description() -> None:
    alert = {
        "alert_name": "HighDiskUsage",
        "service": None,
        "state": "pending",
        "current_value": "86.25",
        "threshold": None,
        "labels": {"instance": "mysql-primary-0"},
        "description": "Disk above 85%",
    }
    assert refs.alert_text(alert) == (
        "HighDiskUsage, state=pending, current=86.25, threshold=unstated, "
        "instance=mysql-primary-0; Disk above 85%"
    )


def test_alert_text_joins_value_and_unit_and_both_notes() -> None:
    alert = {
        "alert_name": "HighCPUUsage",
        "service": "checkout-service",
        "state": "firing",
        "current_value": "97",
        "threshold": "80",
        "unit": "%",
        "duration": "2s",
        "summary": "CPU high",
        "description": "CPU above 80% on checkout-service",
    }
    assert refs.alert_text(alert) == (
        "HighCPUUsage, service=checkout-service, state=firing, current=97%, threshold=80%, "
        "duration=2s; CPU high; CPU above 80% on checkout-service"
    )
    assert refs.with_unit("4.2", "s") == "4.2 s"
    assert refs.with_unit("92%", "%") == "92%"
    assert refs.with_unit("97", "percent") == "97%"
    assert refs.alert_figures({"alert_name": "X"}) == {
        "current": refs.UNSTATED,
        "threshold": refs.UNSTATED,
    }


def test_log_text_has_timestamp_level_service_instance_message_and_metrics() -> None:
    record = {
        "timestamp": "2026-07-08 23:05:28",
        "level": "ERROR",
        "service": "order-service",
        "instance": "pod-order-service-5c9d7b8f4-q7n2p",
        "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms",
        "metrics": {"active": "50/50", "waiting": 23},
    }
    assert refs.log_text(record) == (
        "2026-07-08 23:05:28 ERROR order-service pod-order-service-5c9d7b8f4-q7n2p "
        "HikariPool-1 - Connection is not available, request timed out after 30000ms; "
        "active=50/50, waiting=23"
    )


def test_log_text_without_metrics_or_instance() -> None:
    record = {"timestamp": "t", "level": "INFO", "service": "s", "instance": "", "message": "m"}
    assert refs.log_text(record) == "t INFO s m"


def test_whole_float_metrics_print_as_integers() -> None:
    record = {"timestamp": "t", "level": "W", "service": "s", "message": "m", "metrics": {"x": 4.0}}
    assert refs.log_text(record).endswith("; x=4")


def test_no_evidence_text_is_the_gatekeeper_fixture_format() -> None:
    details = refs.no_evidence(
        "query_logs", "inventory-service HikariCP", "application-logs", "no matching logs"
    )
    assert details.evidence_status == "no_evidence"
    assert [r.raw_path for r in details.evidence_refs] == ["$.no_evidence"]
    assert details.evidence_refs[0].text == demo_evidence.NO_EVIDENCE_TEXT


def test_no_evidence_without_topic_uses_dash() -> None:
    text = refs.no_evidence("query_metrics", "state=firing", None, "no matching alerts")
    assert "; topic=-; total=0;" in text.evidence_refs[0].text


def test_deduped_names_the_documents() -> None:
    details = refs.deduped("lookup_knowledge", "q", "already returned", ["a", "b"])
    assert details.evidence_status == "deduped"
    assert details.dedup_reason == "documents already returned in this run: a, b"
    (ref,) = details.evidence_refs
    assert ref.raw_path == "$.no_evidence"
    assert ref.text.startswith("lookup_knowledge returned no new evidence; evidence_status=deduped")


def test_item_refs_index_every_item() -> None:
    items = refs.item_refs("logs", ["a", "b", "c"])
    assert [r.raw_path for r in items] == ["$.logs[0]", "$.logs[1]", "$.logs[2]"]
    assert refs.supported(items).relevance_level is None


def test_trim_sentences_cuts_after_a_sentence() -> None:
    text = "First sentence is here. " * 30
    trimmed = refs.trim_sentences(text, 100)
    assert len(trimmed) <= 100
    assert trimmed.endswith(".")


def test_trim_sentences_falls_back_to_a_word_boundary() -> None:
    text = "word " * 200
    trimmed = refs.trim_sentences(text, 50)
    assert trimmed.endswith("…")
    assert len(trimmed) <= 51


def test_knowledge_text_format() -> None:
    block = {"title": "T", "heading": "Checks", "content": "Do this.\n\n- and that."}
    assert refs.knowledge_text(block) == "T / Checks: Do this. - and that."
