"""The incident suite: MANIFEST, format and renderings (pure, no services).

The held-out test split is loaded for validation only; assertions about it are
computed first and asserted as booleans, so a failure names no detail of it.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest
import yaml

from evals.incidents import model, render
from evals.incidents.model import Incident, Series, load_split
from tests.support.incident_splits import Sealed, by_id, sealed

END = 1_764_950_400.0  # a multiple of 15 s
CATEGORIES = set(model.Category.__args__)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def dev() -> list[Incident]:
    return sealed("dev")


@pytest.fixture(scope="module")
def held() -> list[Incident]:
    return sealed("test")


@pytest.fixture(scope="module")
def every(dev: list[Incident], held: list[Incident]) -> list[Incident]:
    return Sealed([*dev, *held])


# --- MANIFEST and format --------------------------------------------------------------


def test_manifest_lists_exactly_the_files() -> None:
    listed = set(model.read_manifest())
    on_disk = {f"{s}/{p.name}" for s in model.SPLITS for p in (model.ROOT / s).glob("*.json")}
    assert listed == on_disk
    assert len([x for x in listed if x.startswith("dev/")]) == 134
    assert len([x for x in listed if x.startswith("test/")]) == 60


def _copy_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(model.ROOT / "dev", tmp_path / "dev")
    (tmp_path / "test").mkdir()
    monkeypatch.setattr(model, "ROOT", tmp_path)
    monkeypatch.setattr(model, "MANIFEST", tmp_path / "MANIFEST")
    model.write_manifest()
    return tmp_path


def test_load_split_rejects_a_changed_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy_split(tmp_path, monkeypatch)
    assert len(load_split("dev")) == 134
    victim = sorted((root / "dev").glob("*.json"))[0]
    victim.write_bytes(victim.read_bytes() + b"\n")
    with pytest.raises(ValueError, match="sha256 mismatch"):
        load_split("dev")


def test_load_split_rejects_missing_and_unlisted_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy_split(tmp_path, monkeypatch)
    files = sorted((root / "dev").glob("*.json"))
    shutil.copy(files[0], root / "dev" / "extra.json")
    with pytest.raises(ValueError, match="not listed"):
        load_split("dev")
    (root / "dev" / "extra.json").unlink()
    files[1].unlink()
    with pytest.raises(ValueError, match="missing"):
        load_split("dev")


def test_dev_split_covers_every_category(dev: list[Incident]) -> None:
    assert {i.category for i in dev} == CATEGORIES
    assert all(i.key.cause.category == i.category for i in dev)
    # a second stack per category: other exporters, runtimes and naming conventions
    assert all(sum(i.category == c for i in dev) <= 18 for c in CATEGORIES)


def test_test_split_is_distinct_from_dev(dev: list[Incident], held: list[Incident]) -> None:
    cats = [i.category for i in held]
    dev_services = {i.scope.service for i in dev}
    dev_namespaces = {i.scope.namespace for i in dev}
    ok = (
        len(held) == 60
        and set(cats) == CATEGORIES
        and not {i.scope.service for i in held} & dev_services
        and not {i.scope.namespace for i in held} & dev_namespaces
        and not {i.id for i in held} & {i.id for i in dev}
    )
    # alert names may repeat: the standard mixins' alerts fire for many services
    assert ok, "the test split must hold 60 incidents covering every category on new services"


def test_every_incident_is_complete(every: list[Incident]) -> None:
    problems = 0
    for inc in every:
        problems += not 8 <= len(inc.series) <= 20
        problems += not 5 <= len(inc.logs) <= 30
        problems += not all(-120 <= line.minute <= 0 for line in inc.logs)
        problems += not all(s.points[0][0] <= -120 for s in inc.series)
        problems += not 3 <= len(inc.key.facts) <= 5
        problems += not 2 <= len(inc.key.false) <= 4
        problems += not any(f.scope == "cause" for f in inc.key.false)
        problems += inc.alert.labels.get("service") != inc.scope.service
        problems += inc.alert.labels.get("namespace") != inc.scope.namespace
        problems += not inc.alert.annotations.get("description")
        problems += not inc.alert.annotations.get("runbook_url", "").startswith("https://")
        problems += int(inc.alert.for_.rstrip("s") or 0) > 30
        for pattern in _patterns(inc):
            re.compile(pattern)
    assert problems == 0


def _patterns(inc: Incident) -> list[str]:
    key = inc.key
    return [
        *key.cause.patterns,
        *(p for f in key.facts for p in f.patterns),
        *(p for f in key.false for p in f.patterns),
    ]


def test_series_labels_are_merged_over_the_scope(every: list[Incident]) -> None:
    # a series may live in another namespace (a broker's), never in another incident's
    scopes = {inc.scope.namespace for inc in every}
    ok = all(
        {"namespace", "service", "job", "instance"} <= set(s.labels)
        and (s.labels["namespace"] == inc.scope.namespace or s.labels["namespace"] not in scopes)
        and s.seed.startswith(inc.id)
        for inc in every
        for s in inc.series
    )
    assert ok


def test_invalid_series_are_rejected() -> None:
    with pytest.raises(ValueError, match="_total"):
        Series(name="requests", type="counter", points=((-120.0, 1.0),))
    with pytest.raises(ValueError, match="increasing minute"):
        Series(name="x", type="gauge", points=((0.0, 1.0), (-10.0, 1.0)))
    with pytest.raises(ValueError, match="p50"):
        Series(name="lat", type="histogram", points=((-120.0, 1.0),), buckets=(0.1, 1.0))
    with pytest.raises(ValueError, match="counters only"):
        Series(name="g", type="gauge", points=((-120.0, 1.0),), resets=(-5.0,))


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


_PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "rate", "irate", "increase", "by", "without", "on",
    "ignoring", "group_left", "group_right", "and", "or", "unless", "histogram_quantile",
    "predict_linear", "abs", "clamp_min", "clamp_max", "offset", "bool", "delta", "deriv",
    "topk", "bottomk", "avg_over_time", "max_over_time", "min_over_time", "time", "vector",
}  # fmt: skip


def _metric_names(expr: str) -> set[str]:
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set(re.findall(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)", expr))
    return {n for n in names if n not in _PROMQL_WORDS and not re.fullmatch(r"\d+[smhdwy]", n)}


def _sample_names(inc: Incident) -> set[str]:
    names: set[str] = set()
    for s in inc.series:
        names.add(s.name)
        if s.type == "histogram":
            names |= {f"{s.name}_bucket", f"{s.name}_sum", f"{s.name}_count"}
    return names


def test_rule_expressions_name_only_defined_metrics(every: list[Incident]) -> None:
    assert _metric_names('sum by (le) (rate(a_bucket{x="y"}[5m])) > (0.9 * 100)') == {"a_bucket"}
    ok = all(
        _metric_names(i.alert.expr) and _metric_names(i.alert.expr) <= _sample_names(i)
        for i in every
    )
    assert ok


def test_rules_yaml_is_one_group_per_incident(every: list[Incident]) -> None:
    doc = yaml.safe_load(render.rules_yaml(every))
    groups = doc["groups"]
    assert len(groups) == len(every)
    for inc, group in zip(every, groups, strict=True):
        (rule,) = group["rules"]
        ok = (
            rule["alert"] == inc.alert.alert
            and rule["expr"] == inc.alert.expr
            and rule["for"] == inc.alert.for_
            and rule["labels"]["service"] == inc.scope.service
            and rule["labels"]["namespace"] == inc.scope.namespace
            and rule["annotations"] == inc.alert.annotations
        )
        assert ok


def test_log_lines_are_victorialogs_records(every: list[Incident]) -> None:
    records = render.log_lines(every, END)
    counted = len(records) == sum(len(i.logs) for i in every)
    assert counted
    times = [r["_time"] for r in records]
    in_order = times == sorted(times)
    assert in_order
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    ok = all(
        stamp.match(r["_time"]) and r["_msg"] and {"service", "namespace", "pod", "level"} <= set(r)
        for r in records
    )
    assert ok
    first = render.log_lines([by_id(every, "parcel-router-rollout-panic")], END)[-1]
    assert first["_time"] == "2025-12-05T15:59:24.000Z"
    assert first["version"] == "5.13.0"
    assert first["service"] == "parcel-router"


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
