"""The incident suite's renderings: counter and histogram values, OpenMetrics backfill
and the live exposition (pure, no services)."""

from __future__ import annotations

import math
import re

import pytest

from evals.incidents import render
from evals.incidents.model import Incident, Series
from tests.support.incident_splits import by_id

END = 1_764_950_400.0  # a multiple of 15 s


# --- values ---------------------------------------------------------------------------


def test_counters_are_monotonic_except_at_resets(every: list[Incident]) -> None:
    minutes = [-120 + k * 0.25 for k in range(4 * 150)]  # past minute 0 as well
    broken = 0
    for inc in every:
        for s in inc.series:
            if s.type == "gauge":
                continue
            for name, _labels, fn in render._tracks(s, minutes[-1]):
                values = [fn(m) for m in minutes]
                for (m0, v0), (m1, v1) in zip(
                    zip(minutes, values, strict=True),
                    zip(minutes[1:], values[1:], strict=True),
                    strict=False,
                ):
                    # a counter restarts in the slot its reset minute falls in
                    reset = any(
                        render._slot(m0) < render._slot(r) <= render._slot(m1) for r in s.resets
                    )
                    broken += v1 < v0 and not reset
                    broken += reset and v1 > v0
                # a counter that restarted may end below where it began
                broken += (
                    name.endswith("_total")
                    and not s.resets
                    and values[-1] <= values[0]
                    and s.points[-1][1] > 0
                )
    assert broken == 0


def test_declared_reset_drops_the_counter() -> None:
    s = Series(name="x_total", type="counter", points=((-120.0, 2.0),), resets=(-30.0,), seed="t")
    assert render.value_at(s, -30.0) == 0.0
    assert render.value_at(s, -29.0) == 120.0
    assert render.value_at(s, -31.0) > 10_000.0


def test_histograms_have_cumulative_buckets(every: list[Incident]) -> None:
    broken = 0
    for inc in every:
        for s in (s for s in inc.series if s.type == "histogram"):
            samples = render.samples_at(s, 0.0)
            buckets = [v for n, _, v in samples if n.endswith("_bucket")]
            count = next(v for n, _, v in samples if n.endswith("_count"))
            broken += buckets != sorted(buckets) or buckets[-1] != count
            broken += count != render.value_at(s, 0.0)
    assert broken == 0


def test_pulses_give_whole_restarts(dev: list[Incident]) -> None:
    inc = by_id(dev, "quarry-billing-cache-leak")
    restarts = next(s for s in inc.series if s.name == "kube_pod_container_status_restarts_total")
    assert render.value_at(restarts, -90.0) == 0.0
    assert render.value_at(restarts, -60.0) == 1.0
    assert render.value_at(restarts, 0.0) == 2.0
    assert render.value_at(restarts, 30.0) == 2.0


# --- text formats ---------------------------------------------------------------------

_SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+)(?: (\S+))?$'
)
Parsed = tuple[str, str, float, float | None]


def _parse(text: str) -> tuple[list[Parsed], int]:
    """The samples of ``text`` and the number of malformed lines (never the lines)."""
    out: list[Parsed] = []
    malformed = 0
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = _SAMPLE.match(line)
        if m is None:
            malformed += 1
            continue
        ts = float(m.group(4)) if m.group(4) else None
        out.append((m.group(1), m.group(2) or "", float(m.group(3)), ts))
    return out, malformed


def test_openmetrics_structure(every: list[Incident]) -> None:
    text = render.openmetrics(every, END, step_s=15, minutes=10)
    assert text.endswith("# EOF\n")
    assert text.count("# EOF") == 1
    families: list[str] = []
    current = ""
    bad = 0
    last_ts: dict[tuple[str, str], float] = {}
    for line in text.splitlines()[:-1]:
        if line.startswith("# TYPE "):
            current = line.split()[2]
            bad += current in families
            families.append(current)
            continue
        parsed, malformed = _parse(line)
        bad += malformed
        if not parsed:
            continue
        name, labels, _value, ts = parsed[0]
        bad += not name.startswith(current) or ts is None
        bad += 'job="' not in labels or 'instance="' not in labels
        if ts is not None:
            bad += ts >= END or ts < END - 600
            bad += last_ts.get((name, labels), -math.inf) >= ts
            last_ts[(name, labels)] = ts
    assert bad == 0
    counter_families = [line for line in text.splitlines() if line.endswith(" counter")]
    assert all(not line.split()[2].endswith("_total") for line in counter_families)


def test_exposition_continues_the_backfill(every: list[Incident]) -> None:
    om, bad_om = _parse(render.openmetrics(every, END, minutes=2))
    at_zero, bad_zero = _parse(render.exposition(every, END, END))
    later, bad_later = _parse(render.exposition(every, END + 900, END))
    assert bad_om + bad_zero + bad_later == 0
    om_last = {(n, lab): v for n, lab, v, _ in om}
    zero = {(n, lab): v for n, lab, v, _ in at_zero}
    after = {(n, lab): v for n, lab, v, _ in later}
    same_series = set(om_last) == set(zero) == set(after)
    assert same_series
    expected = {}
    counters = []
    for inc in every:
        for s in inc.series:
            for name, labels, value in render.samples_at(s, 0.0):
                expected[(name, render._labels(labels))] = value
                if s.type != "gauge":
                    counters.append((name, render._labels(labels)))
    assert counters
    continued = all(om_last[k] <= zero[k] <= after[k] for k in counters)
    assert continued
    equal = len(expected) == len(zero) and all(
        math.isclose(zero[k], v, rel_tol=1e-6, abs_tol=1e-6) for k, v in expected.items()
    )
    assert equal


def test_exposition_declares_types(dev: list[Incident]) -> None:
    text = render.exposition(dev, END, END)
    assert "# TYPE http_requests_total counter" in text
    assert "# TYPE http_request_duration_seconds histogram" in text
    assert 'le="+Inf"' in text


def test_conflicting_family_types_are_refused(dev: list[Incident]) -> None:
    inc = next(i for i in dev if any(s.name == "http_requests_total" for s in i.series))
    clash = inc.model_copy(
        update={
            "id": "clash",
            "series": (
                Series(
                    name="http_requests", type="gauge", points=((-120.0, 1.0),), labels={"a": "b"}
                ),
            ),
        }
    )
    with pytest.raises(ValueError, match="both"):
        render.openmetrics([inc, clash], END, minutes=1)


def test_a_live_rendering_is_quick_and_its_counters_never_depend_on_when_they_were_cached(
    dev: list[Incident],
) -> None:
    counter = next(s for inc in dev for s in inc.series if s.type == "counter")
    # a first value past the hour the tracks are computed ahead, then earlier ones
    late = render.value_at(counter, 90.0)
    early = render.value_at(counter, 1.0)
    render._TRACKS.clear()
    assert render.value_at(counter, 1.0) == early
    assert render.value_at(counter, 90.0) == late
    # with the same origin, the backfill's last sample is the exposition's 15 s earlier
    backfill = {
        (n, lab): (v, ts)
        for n, lab, v, ts in _parse(render.openmetrics(dev[:1], END, minutes=2))[0]
    }
    live = {(n, lab): v for n, lab, v, _ in _parse(render.exposition(dev[:1], END - 15, END))[0]}
    assert all(ts == END - 15 and live[k] == v for k, (v, ts) in backfill.items())
