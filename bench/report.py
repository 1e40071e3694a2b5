"""Shared pieces of the benchmark: figures, medians, the printed table, the JSON file."""

from __future__ import annotations

import cProfile
import io
import json
import math
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench-results"


@dataclass
class Figure:
    """One line of the table: a name, the headline value and its target."""

    name: str
    text: str  # the value part of the line, e.g. "240.5 requests/s"
    target: str = ""  # e.g. ">= 200 requests/s"
    ok: bool | None = None  # None: no target, or not measured
    note: str = ""  # how it was measured (median of N, …)
    data: dict[str, Any] = field(default_factory=dict)

    def line(self, width: int) -> str:
        mark = {True: "✓", False: "✗", None: " "}[self.ok]
        target = f"[{mark} target {self.target}]" if self.target else ""
        parts = [f"{self.name + ':':<{width}} {self.text}", target, self.note]
        return "  ".join(p for p in parts if p)


def median(values: Iterable[float]) -> float:
    items = [v for v in values if not math.isnan(v)]
    return statistics.median(items) if items else math.nan


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "cores": os.cpu_count() or 1,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in load],
    }


def table(figures: Sequence[Figure]) -> list[str]:
    width = max((len(f.name) for f in figures), default=0) + 1
    return [f.line(width) for f in figures]


def save(report: dict[str, Any], results: Path = RESULTS) -> Path:
    results.mkdir(exist_ok=True)
    path = results / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:,.{digits}f}"


def log(message: str) -> None:
    """Progress goes to stderr so stdout stays the table."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


def dump_profiles(profilers: Sequence[cProfile.Profile], path: Path, top: int = 30) -> str:
    """Merge cProfile runs into ``path`` (pstats) and a readable ``.txt``; return the latter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    stats = pstats.Stats(profilers[0], stream=text)
    for extra in profilers[1:]:
        stats.add(extra)
    stats.dump_stats(str(path))
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    readable = path.with_suffix(".txt")
    readable.write_text(text.getvalue(), encoding="utf-8")
    log(f"profile written to {readable}")
    return str(readable)
