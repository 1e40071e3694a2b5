"""``tracebound demo``: the main job, end to end, through the ingest's HTTP API.

It starts the stack and every service with the evidence tools on the demo
environment (:data:`DEMO_ENV`: the demo is asked for here, and only here), posts
the demo alerts the way a real Alertmanager would (one webhook group), asks the
demo questions through the chat API, and waits for every answer through the same
API — so one command proves the whole path a user depends on. Every answer ends
with the demo note. Exit 0 only if every request was answered.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from services.ingest.alertmanager import label_fingerprint
from services.ingest.settings import IngestSettings
from tracebound.errors import StackError, TraceboundError
from tracebound.settings import StackSettings

DEMO_QUESTIONS = (
    "payment-service 当前是否有 HighCPUUsage 告警？",
    "inventory-service 是否有 HikariCP 连接池耗尽日志？",
    "Why is order-service using so much memory?",
)
DEMO_RECEIVER = "tracebound-demo"
HEALTH_WAIT_S = 60.0


def demo_webhook() -> dict[str, Any]:
    """The demo environment's firing alerts as one Alertmanager v4 group.

    Timestamps sit on the demo clock the evidence tools use, and fingerprints
    are Alertmanager's label fingerprints. Since the clock is fixed, every demo
    re-enacts the very same incidents; the group key names the demo run so each
    demo is a group of its own and gets a fresh run rather than the first one ever.
    """
    from services.executor.tools.demo_env import demo_alerts, iso_utc  # noqa: PLC0415
    from services.executor.tools.settings import ToolSettings  # noqa: PLC0415

    tools = ToolSettings()
    alerts = []
    for a in demo_alerts(tools.demo_data_dir):
        if a.state != "firing":
            continue
        labels = dict(a.labels)
        alerts.append(
            {
                "status": "firing",
                "labels": labels,
                "annotations": {"summary": a.description},
                "startsAt": iso_utc(tools.demo_now - timedelta(minutes=a.active_minutes_ago)),
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": f"http://prometheus.shop-prod:9090/graph?g0.expr={a.alert_name}",
                "fingerprint": label_fingerprint(labels),
            }
        )
    common = {"namespace": "shop-prod"}
    return {
        "version": "4",
        "groupKey": f'{{}}:{{namespace="shop-prod"}}/demo-{uuid.uuid4().hex[:8]}',
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": DEMO_RECEIVER,
        "groupLabels": common,
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.shop-prod:9093",
        "alerts": alerts,
    }


class IngestClient:
    """A tiny JSON client for the local ingest; never goes through a proxy."""

    def __init__(self, settings: IngestSettings) -> None:
        self.base = settings.base_url
        self._headers = {"Content-Type": "application/json"}
        if settings.token is not None:
            self._headers["Authorization"] = f"Bearer {settings.token.get_secret_value()}"
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        """(status, JSON body); connection failures raise ``OSError``."""
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        req = urllib.request.Request(  # noqa: S310 - our own loopback URL
            self.base + path, data=data, method=method, headers=self._headers
        )
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def send(self, path: str, body: Any, attempts: int = 5) -> Any:
        """POST like Alertmanager does: retry on 5xx and refused connections."""
        for attempt in range(attempts):
            try:
                status, reply = self.call("POST", path, body)
            except OSError as exc:
                status, reply = 0, {"error": str(exc)}
            if status == 200:
                return reply
            if 0 < status < 500 or attempt == attempts - 1:
                raise TraceboundError(f"ingest refused {path}: {status} {reply}")
            time.sleep(1 + attempt)
        raise AssertionError("unreachable")

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise StackError(f"the ingest did not answer {self.base}/healthz within {timeout_s:g}s")


@dataclass
class Item:
    label: str
    run_id: str
    note: str = ""
    answer: dict[str, Any] | None = None


def _wait(client: IngestClient, items: list[Item], wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(i.answer is None for i in items):
        for item in items:
            if item.answer is not None:
                continue
            try:
                status, body = client.call(
                    "GET", f"/api/v1/runs/{item.run_id}/answer?wait=1", timeout=10
                )
            except OSError:
                time.sleep(1)
                continue
            if status == 200:
                item.answer = body
        done = sum(i.answer is not None for i in items)
        print(f"\r{done}/{len(items)} answered…", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def _show(item: Item, settings: IngestSettings) -> None:
    print(f"── {item.label}")
    print(f"   run {item.run_id}{item.note}")
    if item.answer is None:
        print("   no answer within the wait")
    else:
        print(f"   verdict {item.answer['verdict']} ({item.answer['final_status']})")
        for line in str(item.answer["user_facing_answer"]).splitlines():
            print(f"   {line}")
        page = settings.page_url(f"/runs/{item.run_id}")
        print(f"   trace: tracebound trace {item.run_id}  (or {page})")
    print()


def _cmd_demo(args: argparse.Namespace) -> int:
    from tracebound.stack import stack  # noqa: PLC0415 - heavy, demo-only

    settings = IngestSettings()
    print("starting the local stack and every service…", file=sys.stderr)
    from services.executor.tools.settings import DEMO_ENV  # noqa: PLC0415

    status = stack.up(StackSettings(), services=True, env=DEMO_ENV)
    if not status.healthy:
        raise StackError("the stack is not healthy; see `tracebound status`")
    client = IngestClient(settings)
    client.wait_healthy(HEALTH_WAIT_S)
    webhook = demo_webhook()
    reply = client.send("/api/v1/alerts", webhook)
    names = ", ".join(
        f"{a['labels']['alertname']} on {a['labels']['service']}" for a in webhook["alerts"]
    )
    items = [
        Item(
            f"alert group: {names}",
            run["run_id"],
            " (re-sent group: the earlier run)" if run["deduplicated"] else "",
        )
        for run in reply["runs"]
    ]
    session = f"demo-{uuid.uuid4().hex[:8]}"
    for question in DEMO_QUESTIONS:
        run = client.send("/api/v1/chat", {"session_id": session, "question": question})
        items.append(Item(question, run["run_id"]))
    print(f"published {len(items)} request(s); waiting up to {args.wait:g}s…", file=sys.stderr)
    _wait(client, items, args.wait)
    if args.json:
        out = [{"request": i.label, "run_id": i.run_id, "answer": i.answer} for i in items]
        print(json.dumps(out, ensure_ascii=False, default=str))
    else:
        for item in items:
            _show(item, settings)
    missing = [i.run_id for i in items if i.answer is None]
    if missing:
        print(f"tracebound: no answer for {len(missing)} run(s)", file=sys.stderr)
        return 1
    return 0


def register(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="start everything, publish the demo alerts and questions, print every answer",
    )
    demo.add_argument("--wait", type=float, default=180.0, help="seconds to wait (default 180)")
    demo.add_argument("--json", action="store_true", help="print the answers as one JSON list")
    demo.set_defaults(handler=_cmd_demo)
