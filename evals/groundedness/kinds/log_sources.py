"""What the log kinds share: log lines as Loki returns them."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from evals.groundedness import evidence
from evals.groundedness.core import (
    Values,
    View,
)
from evals.groundedness.kinds.alert_sources import base_view

# -- logs through Loki ---------------------------------------------------------------------

DAY_NS = int(datetime(2026, 11, 18).timestamp()) * 10**9


def _ns(at: str, sec: int) -> str:
    hh, mm = (int(x) for x in at.split(":"))
    return str(DAY_NS + (hh * 3600 + mm * 60 + sec) * 10**9 + 123_000_000)


def _at(rng: random.Random) -> dict[str, Any]:
    return {
        "at": f"{rng.choice((8, 9))}:{rng.randint(0, 29):02d}".zfill(5),
        "s": rng.randint(0, 59),
    }


def _at_view(v: Values) -> View:
    return {**base_view(v), "ts": f"{v['at']}:{int(v['s']):02d}"}


def loki(run_id: str, v: Values, stream: dict[str, str], line: str, query: str) -> dict[str, Any]:
    streams = [
        {
            "stream": {"topic": "application-logs", **stream},
            "values": [[_ns(v["at"], int(v["s"])), line]],
        }
    ]
    return evidence.loki_logs(run_id, streams, {"log_topic": "application-logs", "query": query})
