"""The incident suite: MANIFEST, format and renderings (pure, no services).

The held-out test split is loaded for validation only; assertions about it are
computed first and asserted as booleans, so a failure names no detail of it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from evals.incidents import model, render
from evals.incidents.model import Incident, Series, load_split
from tests.support.incident_splits import by_id

END = 1_764_950_400.0  # a multiple of 15 s
CATEGORIES = set(model.Category.__args__)  # type: ignore[attr-defined]


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
