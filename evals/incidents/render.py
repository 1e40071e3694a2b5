"""Pure renderings of incidents: metric values, OpenMetrics backfill, exposition, rules, logs.

Time runs on a grid of 15-second slots anchored at minute 0 (the alert). A counter's
points give its per-second rate; slot k adds ``rate(mid of slot) * (1 + noise) * 15``,
so the cumulative value only changes at slot starts, as a scraped counter does, and
counts (requests, restarts) stay whole numbers. A counter starts at ``GRID_START`` from
an offset of a few hours of its first rate (a process that has been up), falls to 0 at
each declared reset, and keeps increasing past the last point at the last rate, so the
live exposition continues the backfill. A gauge whose points are all whole numbers
(threads, connections, bytes) stays whole under noise. Histograms derive their cumulative buckets
from the request rate and a log-normal latency fitted to p50 and p99.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evals.incidents.model import Incident, Point, Series

SLOT_MIN = 0.25  # minutes per slot (15 s)
SLOT_S = SLOT_MIN * 60.0
GRID_START = -240.0  # minutes; values before it are those at it
_Z99 = 2.3263478740408408  # standard normal quantile of 0.99

Labels = dict[str, str]
Sample = tuple[str, Labels, float]


# --- piecewise functions ------------------------------------------------------------


def _interp(points: Sequence[Point], shape: str, minute: float) -> float:
    if minute <= points[0][0]:
        return points[0][1]
    if minute >= points[-1][0]:
        return points[-1][1]
    for (m0, v0), (m1, v1) in itertools.pairwise(points):
        if m0 <= minute < m1:
            if shape == "step":
                return v0
            return v0 + (v1 - v0) * (minute - m0) / (m1 - m0)
    return points[-1][1]  # pragma: no cover


def _unit(seed: str, slot: int) -> float:
    """Deterministic pseudo-random number in [-1, 1] for one slot of one series."""
    digest = hashlib.blake2b(f"{seed}#{slot}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / float(2**64 - 1) * 2.0 - 1.0


def _slot(minute: float) -> int:
    return max(0, math.floor((minute - GRID_START) / SLOT_MIN + 1e-9))


def _slot_mid(k: int) -> float:
    return GRID_START + (k + 0.5) * SLOT_MIN


def _uptime_hours(seed: str) -> float:
    digest = hashlib.blake2b(f"{seed}#uptime".encode(), digest_size=4).digest()
    return 6.0 + int.from_bytes(digest, "big") % 42


def _whole(name: str) -> bool:
    """Whether a counter counts events (whole numbers) rather than seconds or bytes."""
    return not name.endswith(("seconds_total", "bytes_total", "_sum"))


@dataclass(frozen=True)
class _Track:
    """A cumulative counter on the slot grid: ``values[k]`` is its value in slot k."""

    values: array[float]

    def at(self, minute: float) -> float:
        k = _slot(minute)
        return self.values[min(k, len(self.values) - 1)]


def _cumulate(
    increments: Iterable[float], base: float, reset_slots: set[int], whole: bool
) -> _Track:
    values: list[float] = []
    total = base
    for k, inc in enumerate(increments):
        if k in reset_slots:
            total = 0.0
        values.append(math.floor(total + 1e-9) if whole else total)
        total += inc
    return _Track(array("d", values))


def _rates(series: Series, slots: int) -> list[float]:
    return [
        max(0.0, _interp(series.points, series.shape, _slot_mid(k)))
        * (1.0 + series.noise * _unit(series.seed, k))
        for k in range(slots)
    ]


def _counter_track(series: Series, slots: int) -> _Track:
    rates = _rates(series, slots)
    base = series.points[0][1] * 3600.0 * _uptime_hours(series.seed)
    resets = {_slot(m) for m in series.resets}
    return _cumulate((r * SLOT_S for r in rates), base, resets, _whole(series.name))


def _lognormal(series: Series, minute: float) -> tuple[float, float]:
    assert series.p50 is not None and series.p99 is not None
    p50 = _interp(series.p50, series.shape, minute)
    p99 = max(_interp(series.p99, series.shape, minute), p50 * 1.0001)
    return math.log(p50), max(math.log(p99 / p50) / _Z99, 1e-3)


def _cdf(le: float, mu: float, sigma: float) -> float:
    return 0.5 * (1.0 + math.erf((math.log(le) - mu) / (sigma * math.sqrt(2.0))))


def _histogram_tracks(series: Series, slots: int) -> list[tuple[str, Labels, _Track]]:
    assert series.buckets is not None
    rates = _rates(series, slots)
    params = [_lognormal(series, _slot_mid(k)) for k in range(slots)]
    uptime_s = 3600.0 * _uptime_hours(series.seed)
    mu0, s0 = _lognormal(series, GRID_START)
    r0 = series.points[0][1]
    out: list[tuple[str, Labels, _Track]] = []
    for le in series.buckets:
        incs = (r * SLOT_S * _cdf(le, mu, s) for r, (mu, s) in zip(rates, params, strict=True))
        track = _cumulate(incs, r0 * uptime_s * _cdf(le, mu0, s0), set(), True)
        out.append((f"{series.name}_bucket", {**series.labels, "le": _num(le)}, track))
    count = _cumulate((r * SLOT_S for r in rates), r0 * uptime_s, set(), True)
    out.append((f"{series.name}_bucket", {**series.labels, "le": "+Inf"}, count))
    mean0 = math.exp(mu0 + s0 * s0 / 2.0)
    sums = (
        r * SLOT_S * math.exp(mu + s * s / 2.0) for r, (mu, s) in zip(rates, params, strict=True)
    )
    out.append(
        (
            f"{series.name}_sum",
            dict(series.labels),
            _cumulate(sums, r0 * uptime_s * mean0, set(), False),
        )
    )
    out.append((f"{series.name}_count", dict(series.labels), count))
    return out


# slots a counter's or histogram's tracks are computed beyond the minute asked for (an
# hour): a live exposition renders every few seconds, and recomputing four hours of
# slots each time made a busy machine's renders lag, so a counter seemed to pause
_AHEAD_SLOTS = 240
_TRACKS: dict[tuple[Any, ...], tuple[int, list[tuple[str, Labels, _Track]]]] = {}


def _key(series: Series) -> tuple[Any, ...]:
    fields = (series.points, series.shape, series.noise, series.resets, series.buckets)
    return (
        series.seed,
        series.name,
        series.type,
        tuple(series.labels.items()),
        *fields,
        series.p50,
        series.p99,
    )


def _cumulative(series: Series, slots: int) -> list[tuple[str, Labels, _Track]]:
    """The tracks of a counter or histogram, covering at least ``slots`` slots: a
    track's values never depend on how many slots follow them."""
    key = _key(series)
    cached = _TRACKS.get(key)
    if cached is None or cached[0] < slots:
        n = slots + _AHEAD_SLOTS
        if series.type == "counter":
            tracks = [(series.name, dict(series.labels), _counter_track(series, n))]
        else:
            tracks = _histogram_tracks(series, n)
        cached = _TRACKS[key] = (n, tracks)
    return cached[1]


def _tracks(
    series: Series, upto_minute: float
) -> list[tuple[str, Labels, Callable[[float], float]]]:
    """Every sample series ``series`` renders to, each with its value function."""
    slots = _slot(upto_minute) + 1
    if series.type == "gauge":
        whole = all(float(v).is_integer() for _, v in series.points)

        def gauge(minute: float) -> float:
            value = _interp(series.points, series.shape, minute)
            value *= 1.0 + series.noise * _unit(series.seed, _slot(minute))
            return float(round(value)) if whole else value

        return [(series.name, dict(series.labels), gauge)]
    return [(name, dict(labels), t.at) for name, labels, t in _cumulative(series, slots)]


# --- public values --------------------------------------------------------------------


def value_at(series: Series, minute: float) -> float:
    """The series' value at ``minute``: a counter's cumulative value, a gauge's value,
    a histogram's cumulative ``_count``."""
    tracks = _tracks(series, minute)
    return tracks[-1][2](minute)


def samples_at(series: Series, minute: float) -> list[Sample]:
    """Every sample (name, labels, value) the series exposes at ``minute``."""
    return [(name, labels, fn(minute)) for name, labels, fn in _tracks(series, minute)]


def family(series: Series) -> tuple[str, str]:
    """The OpenMetrics family name and type of a series."""
    if series.type == "counter":
        return series.name.removesuffix("_total"), "counter"
    return series.name, series.type


# --- text formats ---------------------------------------------------------------------


def _num(v: float) -> str:
    """A bucket bound as client libraries write it: ``0.05``, ``1.0``, ``+Inf``."""
    return "+Inf" if math.isinf(v) else repr(float(v))


def _fmt_value(v: float) -> str:
    r = round(v, 6)
    if r == int(r) and abs(r) < 1e15:
        return str(int(r))
    return repr(r)


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Labels) -> str:
    keys = sorted(k for k in labels if k != "le") + (["le"] if "le" in labels else [])
    return "{" + ",".join(f'{k}="{_escape(labels[k])}"' for k in keys) + "}"


def _families(incidents: Sequence[Incident]) -> dict[str, tuple[str, list[Series]]]:
    fams: dict[str, tuple[str, list[Series]]] = {}
    seen: set[tuple[str, str]] = set()
    for inc in incidents:
        for s in inc.series:
            name, typ = family(s)
            ident = (s.name, _labels(s.labels))
            if ident in seen:
                raise ValueError(f"series {s.name}{_labels(s.labels)} defined twice")
            seen.add(ident)
            if name in fams and fams[name][0] != typ:
                raise ValueError(f"family {name} is both {fams[name][0]} and {typ}")
            fams.setdefault(name, (typ, []))[1].append(s)
    return fams


def openmetrics(
    incidents: Sequence[Incident], end_unix: float, step_s: int = 15, minutes: int = 120
) -> str:
    """OpenMetrics text of every series from ``end_unix - minutes*60`` up to (excluding)
    ``end_unix``, one sample every ``step_s`` seconds; minute 0 is ``end_unix``."""
    if step_s <= 0 or minutes <= 0:
        raise ValueError("step_s and minutes must be positive")
    count = minutes * 60 // step_s
    start = end_unix - minutes * 60
    times = [start + j * step_s for j in range(count)]
    times = [t for t in times if t < end_unix]
    lines: list[str] = []
    for fam, (typ, members) in _families(incidents).items():
        lines.append(f"# TYPE {fam} {typ}")
        for s in members:
            for name, labels, fn in _tracks(s, 0.0):
                lab = _labels(labels)
                for t in times:
                    v = fn((t - end_unix) / 60.0)
                    lines.append(f"{name}{lab} {_fmt_value(v)} {t:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def exposition(incidents: Sequence[Incident], now_unix: float, origin_unix: float) -> str:
    """Prometheus text format (0.0.4) of every series' value at minute
    ``(now_unix - origin_unix) / 60``, labels ``job`` and ``instance`` included."""
    minute = (now_unix - origin_unix) / 60.0
    lines: list[str] = []
    for fam, (typ, members) in _families(incidents).items():
        name = f"{fam}_total" if typ == "counter" else fam
        lines.append(f"# HELP {name} {fam} of the incident suite.")
        lines.append(f"# TYPE {name} {typ}")
        for s in members:
            for sample, labels, value in samples_at(s, minute):
                lines.append(f"{sample}{_labels(labels)} {_fmt_value(value)}")
    return "\n".join(lines) + "\n"


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


def rules_yaml(incidents: Sequence[Incident]) -> str:
    """One Prometheus rule file: one group per incident holding its alerting rule."""
    out = ["groups:"]
    for inc in incidents:
        a = inc.alert
        out += [
            f"  - name: {_q('incident-' + inc.id)}",
            "    rules:",
            f"      - alert: {_q(a.alert)}",
            f"        expr: {_q(a.expr)}",
            f"        for: {a.for_}",
            "        labels:",
        ]
        out += [f"          {_q(k)}: {_q(v)}" for k, v in a.labels.items()]
        out.append("        annotations:")
        out += [f"          {_q(k)}: {_q(v)}" for k, v in a.annotations.items()]
    return "\n".join(out) + "\n"


def _rfc3339(ts: float) -> str:
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def log_lines(incidents: Sequence[Incident], origin_unix: float) -> list[dict[str, Any]]:
    """VictoriaLogs JSON-line records of every incident's logs, in time order."""
    records: list[tuple[float, dict[str, Any]]] = []
    for inc in incidents:
        for line in inc.logs:
            ts = origin_unix + line.minute * 60.0
            rec: dict[str, Any] = {
                "_time": _rfc3339(ts),
                "_msg": line.message,
                "service": inc.scope.service,
                "namespace": inc.scope.namespace,
                "pod": line.pod,
                "level": line.level,
            }
            rec.update({k: v for k, v in line.fields.items() if k not in rec})
            records.append((ts, rec))
    records.sort(key=lambda r: r[0])
    return [r for _, r in records]
