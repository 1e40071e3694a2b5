"""A tiny local HTTP server with recorded Prometheus and Loki answers.

The adapters under test run their real HTTP code against it. The first path
segment picks the behaviour: ``/ok`` serves the recordings below, ``/empty``
successful answers without alerts or streams, ``/fail`` HTTP 500, ``/badjson``
a body that is not JSON, ``/error`` a JSON ``status: error`` answer, and
``/rulesfail`` the recorded alerts but HTTP 500 for rules and queries. Every
request's path and query parameters are kept for assertions.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMETHEUS_ALERTS: dict[str, Any] = {
    "status": "success",
    "data": {
        "alerts": [
            {
                "labels": {
                    "alertname": "SlowResponse",
                    "service": "user-service",
                    "pod": "pod-user-service-6b7c8d9e0-m3n8r",
                    "severity": "warning",
                },
                "annotations": {
                    "summary": "user-service P99 latency above 3s",
                    "description": "P99 latency of user-service is 4.2s, above the 3s threshold",
                    "threshold": "3s",
                    "current_value": "4.2s",
                },
                "state": "firing",
                "activeAt": "2026-07-08T23:00:00.482913775Z",
                "value": "4.2e+00",
            },
            {
                "labels": {
                    "alertname": "HighCPUUsage",
                    "service": "payment-service",
                    "pod": "pod-payment-service-7d8f9c6b5-x2k4m",
                    "severity": "critical",
                },
                "annotations": {
                    "description": "CPU usage of payment-service is 92%, above the 80% threshold",
                    "threshold": "80%",
                },
                "state": "firing",
                "activeAt": "2026-07-08T22:45:00.113802631Z",
                "value": "9.2e+01",
            },
            {
                "labels": {
                    "alertname": "HighCPUUsage",
                    "service": "payment-service",
                    "pod": "pod-payment-service-7d8f9c6b5-p9w3z",
                    "severity": "critical",
                },
                "annotations": {"description": "CPU usage of payment-service is high"},
                "state": "firing",
                "activeAt": "2026-07-08T22:50:00Z",
                "value": "8.8e+01",
            },
            {
                "labels": {
                    "alertname": "HighDiskUsage",
                    "job": "mysql",
                    "instance": "mysql-primary-0",
                    "severity": "warning",
                },
                "annotations": {"summary": "Disk of mysql-primary-0 above 85%"},
                "state": "pending",
                "activeAt": "2026-07-08T23:07:00Z",
                "value": "86.25",
            },
        ]
    },
}

CPU_LHS = "max by (service, pod) (container_cpu_usage_percent)"
DISK_LHS = "100 * (1 - node_filesystem_avail_bytes / node_filesystem_size_bytes)"
SLOW_EXPR = (
    "histogram_quantile(0.99, sum by (le, service) "
    "(rate(http_request_duration_seconds_bucket[5m]))) > bool 3"
)


def _rule(name: str, query: str, duration: float, **annotations: str) -> dict[str, Any]:
    return {
        "name": name,
        "query": query,
        "duration": duration,
        "labels": {},
        "annotations": annotations,
        "alerts": [],
        "health": "ok",
        "type": "alerting",
    }


# /api/v1/rules?type=alert: the rules behind the alerts above. The CPU rule is a
# plain comparison, the disk rule compares arithmetic with a number (threshold
# known, unit not), the latency rule uses ``bool`` (threshold unknown).
PROMETHEUS_RULES: dict[str, Any] = {
    "status": "success",
    "data": {
        "groups": [
            {
                "name": "services",
                "file": "/etc/prometheus/rules/services.yml",
                "rules": [
                    _rule("HighCPUUsage", f"{CPU_LHS} > 80", 300),
                    _rule("SlowResponse", SLOW_EXPR, 120),
                    _rule("HighDiskUsage", f"{DISK_LHS} > 85", 0, unit="percent"),
                ],
                "interval": 15,
            }
        ]
    },
}

# /api/v1/query answers by expression: the live values of the left-hand sides.
PROMETHEUS_QUERIES: dict[str, Any] = {
    CPU_LHS: [
        {
            "metric": {"service": "payment-service", "pod": "pod-payment-service-7d8f9c6b5-x2k4m"},
            "value": [1783552200, "93.5"],
        },
        {
            "metric": {"service": "payment-service", "pod": "pod-payment-service-7d8f9c6b5-p9w3z"},
            "value": [1783552200, "88.25"],
        },
    ],
    DISK_LHS: [{"metric": {"instance": "mysql-primary-0"}, "value": [1783552200, "86.5"]}],
}


def _ns(hms: str) -> str:
    h, m, s = (int(x) for x in hms.split(":"))
    moment = datetime(2026, 7, 8, h, m, s, tzinfo=UTC)
    return str(int(moment.timestamp()) * 1_000_000_000)


LOKI_QUERY_RANGE: dict[str, Any] = {
    "status": "success",
    "data": {
        "resultType": "streams",
        "result": [
            {
                "stream": {
                    "topic": "application-logs",
                    "service": "order-service",
                    "pod": "pod-order-service-5c9d7b8f4-q7n2p",
                    "level": "error",
                },
                "values": [
                    [
                        _ns("23:05:28"),
                        "HikariPool-1 - Connection is not available, request timed out "
                        "after 30000ms",
                    ],
                    [_ns("22:58:02"), "HikariPool-1 - Connection is not available (waiting=7)"],
                ],
            },
            {
                "stream": {
                    "topic": "application-logs",
                    "service_name": "order-service",
                    "instance": "pod-order-service-5c9d7b8f4-z4t6v",
                    "detected_level": "warn",
                },
                "values": [
                    [
                        _ns("23:05:44"),
                        "HikariPool-1 - Pool stats (total=50, active=50, idle=0, waiting=23)",
                    ]
                ],
            },
        ],
        "stats": {},
    },
}

EMPTY: dict[str, dict[str, Any]] = {
    "alerts": {"status": "success", "data": {"alerts": []}},
    "rules": {"status": "success", "data": {"groups": []}},
    "query": {"status": "success", "data": {"resultType": "vector", "result": []}},
    "query_range": {"status": "success", "data": {"resultType": "streams", "result": []}},
}


@dataclass
class Recorded:
    path: str
    params: dict[str, str]


@dataclass
class FixtureServer:
    base_url: str
    requests: list[Recorded] = field(default_factory=list)

    def url(self, mode: str) -> str:
        """Base URL of one behaviour: ok, empty, fail, badjson, error."""
        return f"{self.base_url}/{mode}"


KINDS = {
    "api/v1/alerts": "alerts",
    "api/v1/rules": "rules",
    "api/v1/query": "query",
    "loki/api/v1/query_range": "query_range",
}


def _answer(kind: str, params: dict[str, str]) -> dict[str, Any]:
    if kind == "query":
        result = PROMETHEUS_QUERIES.get(params.get("query", ""), [])
        return {"status": "success", "data": {"resultType": "vector", "result": result}}
    return {"alerts": PROMETHEUS_ALERTS, "rules": PROMETHEUS_RULES}.get(kind, LOKI_QUERY_RANGE)


def _handler(server_state: FixtureServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(parsed.query))
            server_state.requests.append(Recorded(parsed.path, params))
            mode, _, rest = parsed.path.lstrip("/").partition("/")
            kind = KINDS.get(rest)
            if kind is None:
                self._send(404, b'{"status":"error","error":"not found"}')
            elif mode == "fail" or (mode == "rulesfail" and kind != "alerts"):
                self._send(500, b"internal server error")
            elif mode == "badjson":
                self._send(200, b'{"status": "success", "data": [truncated')
            elif mode == "error":
                self._send(200, b'{"status":"error","errorType":"bad_data","error":"parse error"}')
            elif mode == "empty":
                self._send(200, json.dumps(EMPTY[kind]).encode())
            else:
                self._send(200, json.dumps(_answer(kind, params)).encode())

    return Handler


@contextlib.contextmanager
def serve() -> Iterator[FixtureServer]:
    """Run the fixture server on 127.0.0.1 and an ephemeral port."""
    state = FixtureServer(base_url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    host, port = httpd.server_address[:2]
    state.base_url = f"http://{host!s}:{port}"
    # a short poll interval: shutdown() waits for the loop to notice, 0.5 s by default
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
