"""The incident format (pydantic v2, frozen) and the split loader checked against MANIFEST.

One JSON file holds one incident. Minutes are relative to the alert (0 = now). A
series' ``labels`` are merged over the scope's namespace, service, job and instance
when the file is loaded, so every loaded ``Series`` carries its complete label set,
and its ``seed`` (incident id, name, position) drives the deterministic noise.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ROOT = Path(__file__).resolve().parent
MANIFEST = ROOT / "MANIFEST"
SPLITS: tuple[str, ...] = ("dev", "test")

Category = Literal[
    "traffic_surge",
    "memory_leak_oom",
    "deploy_regression",
    "pool_exhaustion",
    "dependency_failure",
    "disk_full_logs",
    "gc_pressure",
    "slow_consumer",
]
Point = tuple[float, float]
FieldValue = str | int | float | bool

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Scope(_Frozen):
    namespace: str
    service: str
    job: str
    instance: str


def _sorted_points(points: tuple[Point, ...]) -> tuple[Point, ...]:
    if not points:
        raise ValueError("a series needs at least one point")
    minutes = [m for m, _ in points]
    if minutes != sorted(minutes) or len(set(minutes)) != len(minutes):
        raise ValueError("points must be in strictly increasing minute order")
    return points


class Series(_Frozen):
    name: str
    type: Literal["counter", "gauge", "histogram"]
    labels: dict[str, str] = Field(default_factory=dict)
    points: tuple[Point, ...]
    shape: Literal["linear", "step"] = "linear"
    noise: float = Field(default=0.0, ge=0.0, le=0.5)
    resets: tuple[float, ...] = ()
    buckets: tuple[float, ...] | None = None
    p50: tuple[Point, ...] | None = None
    p99: tuple[Point, ...] | None = None
    seed: str = ""

    @field_validator("points", "p50", "p99")
    @classmethod
    def _ordered(cls, v: tuple[Point, ...] | None) -> tuple[Point, ...] | None:
        return None if v is None else _sorted_points(v)

    @field_validator("name")
    @classmethod
    def _metric_name(cls, v: str) -> str:
        if not v or v[0].isdigit() or set(v) - _NAME_CHARS:
            raise ValueError(f"invalid metric name {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Series:
        if "le" in self.labels or "__name__" in self.labels:
            raise ValueError("reserved label")
        if self.type == "histogram":
            self._histogram()
        elif self.buckets is not None or self.p50 is not None or self.p99 is not None:
            raise ValueError("buckets/p50/p99 are for histograms only")
        if self.type == "counter":
            if not self.name.endswith("_total"):
                raise ValueError(f"counter {self.name} must be named *_total")
            if any(v < 0 for _, v in self.points):
                raise ValueError(f"counter {self.name} has a negative rate")
        elif self.resets:
            raise ValueError("resets are for counters only")
        return self

    def _histogram(self) -> None:
        if not self.buckets or list(self.buckets) != sorted(set(self.buckets)):
            raise ValueError(f"histogram {self.name} needs increasing buckets")
        if self.p50 is None or self.p99 is None:
            raise ValueError(f"histogram {self.name} needs p50 and p99")
        if any(v <= 0 for _, v in (*self.p50, *self.p99)):
            raise ValueError("quantiles must be positive")
        if any(v < 0 for _, v in self.points):
            raise ValueError("request rates must not be negative")
        if self.name.endswith(("_bucket", "_sum", "_count")):
            raise ValueError("histogram names are the family name")


class LogLine(_Frozen):
    minute: float
    level: Literal["debug", "info", "warn", "warning", "error", "fatal"]
    pod: str
    message: str
    fields: dict[str, FieldValue] = Field(default_factory=dict)


class Alert(_Frozen):
    alert: str
    expr: str
    for_: str = Field(alias="for", pattern=r"^(\d+s|0s?)$")
    labels: dict[str, str]
    annotations: dict[str, str]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("for_")
    @classmethod
    def _short(cls, v: str) -> str:
        if int(v.rstrip("s") or 0) > 30:
            raise ValueError("'for' must be 30s or less")
        return v


class Pattern(_Frozen):
    id: str
    text: str
    patterns: tuple[str, ...] = Field(min_length=1)


class FalseStatement(Pattern):
    scope: Literal["cause", "any"]


class Cause(_Frozen):
    category: Category
    text: str
    patterns: tuple[str, ...] = Field(min_length=1)


class Key(_Frozen):
    cause: Cause
    facts: tuple[Pattern, ...] = Field(min_length=3, max_length=5)
    false: tuple[FalseStatement, ...] = Field(min_length=2, max_length=4)


class Incident(_Frozen):
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    title: str
    category: Category
    scope: Scope
    series: tuple[Series, ...] = Field(min_length=8, max_length=20)
    logs: tuple[LogLine, ...] = Field(min_length=5, max_length=30)
    alert: Alert
    red_herring: str
    key: Key

    @model_validator(mode="before")
    @classmethod
    def _merge_scope(cls, data: Any) -> Any:
        """Merge each series' labels over the scope's and give it its noise seed."""
        if not isinstance(data, dict):
            return data
        scope = data.get("scope")
        series = data.get("series")
        if not isinstance(scope, dict) or not isinstance(series, list | tuple):
            return data
        base = {k: scope[k] for k in ("namespace", "service", "job", "instance") if k in scope}
        merged: list[Any] = []
        for i, raw in enumerate(series):
            item = raw
            if isinstance(raw, dict):
                item = {**raw, "labels": {**base, **raw.get("labels", {})}}
                item.setdefault("seed", f"{data.get('id', '')}/{raw.get('name', '')}/{i}")
            merged.append(item)
        return {**data, "series": merged}

    @model_validator(mode="after")
    def _checks(self) -> Incident:
        if self.key.cause.category != self.category:
            raise ValueError("key.cause.category must equal category")
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for s in self.series:
            ident = (s.name, tuple(sorted(s.labels.items())))
            if ident in seen:
                raise ValueError(f"duplicate series {s.name} {s.labels}")
            seen.add(ident)
        for k in ("service", "namespace"):
            if self.alert.labels.get(k) != getattr(self.scope, k):
                raise ValueError(f"alert label {k} must equal the scope's")
        return self


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _split_files(split: str) -> list[Path]:
    return sorted((ROOT / split).glob("*.json"))


def read_manifest() -> dict[str, str]:
    """``{"<split>/<file>": sha256}`` from MANIFEST."""
    entries: dict[str, str] = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        digest, _, rel = line.partition("  ")
        entries[rel.strip()] = digest.strip()
    return entries


def write_manifest() -> str:
    """Write MANIFEST from the files of every split; returns its text."""
    lines = [f"{_sha256(p)}  {split}/{p.name}" for split in SPLITS for p in _split_files(split)]
    text = "\n".join(lines) + "\n"
    MANIFEST.write_text(text, encoding="utf-8")
    return text


def load_split(split: Literal["dev", "test"]) -> list[Incident]:
    """Every incident of ``split``, each file checked against MANIFEST first."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    manifest = {k: v for k, v in read_manifest().items() if k.startswith(f"{split}/")}
    files = {f"{split}/{p.name}": p for p in _split_files(split)}
    if not manifest:
        raise ValueError(f"MANIFEST lists no file of split {split}")
    if missing := sorted(set(manifest) - set(files)):
        raise ValueError(f"files listed in MANIFEST are missing: {missing}")
    if unlisted := sorted(set(files) - set(manifest)):
        raise ValueError(f"files not listed in MANIFEST: {unlisted}")
    incidents: list[Incident] = []
    for rel, path in sorted(files.items()):
        if _sha256(path) != manifest[rel]:
            raise ValueError(f"sha256 mismatch for {rel}")
        incidents.append(Incident.model_validate_json(path.read_bytes()))
    return incidents


def main(argv: list[str]) -> int:
    if argv == ["--write-manifest"]:
        sys.stdout.write(write_manifest())
        return 0
    sys.stderr.write("usage: python -m evals.incidents.model --write-manifest\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
