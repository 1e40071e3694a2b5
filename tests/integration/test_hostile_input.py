"""Hostile and careless input against the real pipeline: the HTTP edge refuses what the
pipeline cannot carry with a 4xx naming the problem, and what reaches Kafka anyway costs
one dead letter and a failed answer, never a role, a partition or a read model.

Every row of the table the API and the runtime are held to is sent to a real stack
(broker, PostgreSQL, the five roles, a projection process and the ingest); then a
normal alert must still be answered, no role may have restarted, and the dead letters
must hold the poison with its reason.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from psycopg.rows import dict_row

from tests.support.ingest_process import ingest_server
from tests.support.kafka_io import Collector
from tests.support.pipeline import ROLES, running_pipeline
from tests.support.projection import ProjectionFactory, topic_ends
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, publish
from tracebound.events import Alert, DeadLetter, DiagnosisRequest, DiagnosisRequested
from tracebound.events import Producer as ProducerRef
from tracebound.stack.services import ServiceState, service_states

ANSWER_S = 120.0
NOW = "2026-12-05T13:00:00Z"


def _webhook(
    description: str = "CPU usage is 93% (threshold 80%)",
    *,
    alertname: str = "HostileInputCheck",
    status: str = "firing",
    starts: str = NOW,
    ends: str = "0001-01-01T00:00:00Z",
    group_key: str = '{}:{alertname="HostileInputCheck"}',
) -> dict[str, Any]:
    return {
        "version": "4",
        "status": status,
        "receiver": "hostile",
        "groupKey": group_key,
        "alerts": [
            {
                "status": status,
                "labels": {"alertname": alertname, "service": "ledger-api"},
                "annotations": {"description": description},
                "startsAt": starts,
                "endsAt": ends,
            }
        ],
    }


def _request(
    run_id: str, *, query: str = "q", alerts: tuple[Alert, ...] = ()
) -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id=run_id,
        producer=ProducerRef(service="hostile-client"),
        request=DiagnosisRequest(
            mode="AIOPS" if alerts else "CHAT",
            query=query,
            alerts=alerts,
            requested_at=datetime.now(UTC),
        ),
    )


def _refusals(url: str) -> list[tuple[str, int, str]]:
    """Each HTTP row of the table: (row, status, error)."""
    client = httpx.Client(base_url=url, timeout=60, trust_env=False)
    rows: list[tuple[str, httpx.Response]] = []

    def post(row: str, body: Any, **kwargs: Any) -> None:
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
        rows.append((row, client.post("/api/v1/alerts", content=body, headers=headers, **kwargs)))

    post("annotation of 900 KB", _webhook("x" * 900_000))
    body = json.dumps(_webhook("y" * 1_047_800)).encode()
    post(f"webhook of {len(body):,} bytes", body)
    post("JSON nested 2,500 deep", b"[" * 2500 + b"]" * 2500)
    post("NUL in a resolved alertname", _webhook(alertname="Bad\x00Name", status="resolved"))
    post("NUL in groupKey", _webhook(group_key="g\x00k"))
    post("startsAt 0001-01-01T00:00:00+14:00", _webhook(starts="0001-01-01T00:00:00+14:00"))
    post(
        "endsAt 9999-12-31T23:59:59-14:00",
        _webhook(status="resolved", ends="9999-12-31T23:59:59-14:00"),
    )
    post("JSON as text/plain", _webhook(), headers={"Content-Type": "text/plain"})
    post(
        "JSON as a form",
        _webhook(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    rows.append(
        ("JSON without a content type", client.post("/api/v1/alerts", content=b"{}", headers={}))
    )
    post("Origin https://evil.example", _webhook(), headers={"Origin": "https://evil.example"})
    post("Host evil.example", _webhook(), headers={"Host": "evil.example"})
    chat = {"session_id": "s", "question": "why is \x00 slow"}
    rows.append(("NUL in a chat question", client.post("/api/v1/chat", json=chat)))
    rows.append(("NUL in q= of the runs list", client.get("/api/v1/runs", params={"q": "a\x00"})))
    rows.append(("NUL in q= of the dashboard", client.get("/", params={"q": "a\x00"})))
    client.close()
    return [(row, r.status_code, _error(r)) for row, r in rows]


def _error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", ""))
    except ValueError:
        return response.text[:200]


def _poison_on_kafka(stack: StackHandle) -> dict[str, DiagnosisRequested]:
    """What a producer that skips the API can publish: each is answered, none wedges a role."""
    huge = Alert(
        status="firing",
        labels={"alertname": "HugeAnnotation", "service": "ledger-api"},
        annotations={"description": "z" * 990_000},
        startsAt=NOW,
    )
    ancient = Alert(
        status="firing",
        labels={"alertname": "AncientStart", "service": "ledger-api"},
        startsAt="0001-01-01T00:00:00+14:00",
        endsAt="9999-12-31T23:59:59-14:00",
    )
    asked = {
        "huge": _request(str(uuid.uuid4()), query="huge", alerts=(huge,)),
        "ancient": _request(str(uuid.uuid4()), query="ancient", alerts=(ancient,)),
        "nul": _request(str(uuid.uuid4()), query="is ledger-api \x00 slow?"),
    }
    publish(stack.kafka, list(asked.values()))
    return asked


def _pids(states: list[ServiceState]) -> dict[str, int | None]:
    return {s.name: s.pid for s in states}


def test_hostile_input_costs_a_refusal_or_a_dead_letter_never_a_role(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    read_model = projection(start=topic_ends(stack))
    read_model.start()
    letters = Collector(stack.kafka, topics.DEAD_LETTERS, from_end=True)
    reader = AnswerReader(stack.kafka)
    try:
        with (
            running_pipeline(stack, tmp_path / "roles", roles=ROLES) as settings,
            ingest_server({**stack.env(), **read_model.env()}, tmp_path / "ingest.log") as url,
        ):
            before = _pids(service_states(settings, None))
            refused = _refusals(url)
            asked = _poison_on_kafka(stack)
            normal = _request(str(uuid.uuid4()), query="payment-service HighCPUUsage?")
            publish(stack.kafka, [normal])
            answers = reader.wait_for(
                {e.run_id for e in (*asked.values(), normal)}, timeout_s=ANSWER_S
            )
            read_model.wait_caught_up()
            after = service_states(settings, None)
            time.sleep(1)  # the dead letters committed with the answers are read by now
    finally:
        reader.close()
        letters.close()
    problems = [f"{row}: {status} {error!r}" for row, status, error in refused]
    assert all(400 <= status < 500 for _, status, _ in refused), "\n".join(problems)
    assert all(error for _, _, error in refused), "\n".join(problems)

    assert set(answers) == {e.run_id for e in (*asked.values(), normal)}, "every run answered"
    huge = answers[asked["huge"].run_id]
    assert (huge.verdict, huge.final_status) == ("REJECT", "failed")
    assert answers[asked["ancient"].run_id].final_status in ("answered", "degraded")
    assert answers[asked["nul"].run_id].final_status in ("answered", "degraded")
    assert answers[normal.run_id].final_status in ("answered", "degraded")

    dead = [e for e in letters.events if isinstance(e, DeadLetter)]
    poison = [d for d in dead if d.run_id == asked["huge"].run_id]
    assert poison, (
        f"no dead letter for the oversized run: {[(d.run_id, d.error_type) for d in dead]}"
    )
    assert poison[0].error_type == "OutputTooLarge" and "record limit" in poison[0].error_message

    gone = [s for s in after if s.pid != before.get(s.name)]
    assert not gone, "roles restarted or died:\n" + "\n".join(
        f"--- {s.name}\n" + "\n".join(Path(s.log).read_text().splitlines()[-15:]) for s in gone
    )
    assert not [s.problem for s in after if not s.healthy]

    with read_model.conn() as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT run_id, request FROM diagnosis_run WHERE run_id = %s",
            (asked["nul"].run_id,),
        )
        (row,) = cur.fetchall()
        assert row["request"]["query"] == "is ledger-api \ufffd slow?"
        cur.execute("SELECT error_type FROM dead_letter WHERE run_id = %s", (asked["huge"].run_id,))
        assert [r["error_type"] for r in cur.fetchall()] == ["OutputTooLarge"]
    assert read_model.terminate() == 0, read_model.log.read_text()
