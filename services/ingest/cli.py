"""``tracebound serve`` and ``tracebound publish``; ``demo`` lives in :mod:`.demo`.

``serve`` starts the HTTP API of :mod:`web`, imported only when the command runs.

``publish`` goes straight to Kafka (no HTTP, no dedup): it is for files an
operator hands in on purpose, so every run of it is a new request. It cuts the
file into runs with the very code the webhook uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from services.ingest import alertmanager, demo
from services.ingest.settings import IngestSettings, load_settings
from tracebound.client import publish
from tracebound.errors import InvalidInputError
from tracebound.settings import KafkaSettings


def _cmd_serve(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.host:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    from web.server import serve  # noqa: PLC0415 - only this command needs the HTTP stack

    return serve(load_settings(**overrides))


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {name}: {exc.strerror or exc}") from exc


def _cmd_publish(args: argparse.Namespace) -> int:
    settings = IngestSettings()
    payload = alertmanager.load_document(_read(args.file), receiver=args.receiver)
    planned = alertmanager.requests_for(
        payload, args.group_by or settings.group_by, args.language or settings.language
    )
    resolved = len(alertmanager.resolved_alerts(payload))
    if planned:
        publish(KafkaSettings(), [event for _, event in planned])
    if args.json:
        runs = [
            {
                "run_id": event.run_id,
                "alerts": [a.labels.get("alertname", "") for a in group.alerts],
            }
            for group, event in planned
        ]
        print(json.dumps({"runs": runs, "resolved": resolved}, ensure_ascii=False))
    else:
        for _, event in planned:
            print(event.run_id)
        if not planned:
            print("no firing alerts: nothing published", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    serve_p = sub.add_parser(
        "serve", help="run the HTTP API (Alertmanager webhook, chat) in the foreground"
    )
    serve_p.add_argument("--host", help="bind address (default TRACEBOUND_INGEST_HOST)")
    serve_p.add_argument("--port", type=int, help="port (default TRACEBOUND_INGEST_PORT)")
    serve_p.set_defaults(handler=_cmd_serve)

    pub = sub.add_parser(
        "publish",
        help="publish an Alertmanager webhook JSON (or a list of alerts) as requests",
        description="Validate FILE like the webhook does and publish one request per alert "
        "group straight to Kafka; prints the run ids. Exit 2 on invalid input.",
    )
    pub.add_argument("file", metavar="FILE", help="JSON file, or - for stdin")
    pub.add_argument("--json", action="store_true", help="print one JSON object")
    pub.add_argument("--group-by", choices=("group", "alert"), help="one run per group or alert")
    pub.add_argument("--language", choices=("zh", "en"), help="answer language of alert runs")
    pub.add_argument("--receiver", default="cli", help="receiver name for a bare alert list")
    pub.set_defaults(handler=_cmd_publish)
    demo.register(sub)
