"""The PromQL templates ``query_prometheus`` may run, and how each is scoped.

Why templates and not PromQL: a query a model writes could read any series of
the server, and a query a person writes per alert does not generalise. The
catalogue (``rules/prometheus-queries.json``) names each query by id, with its
PromQL, its unit and how to scope it; skills name the ids (or named sets) to run
for an alert type, and a model may only choose among ids.

Scoping: ``SCOPE`` in a template becomes label matchers built from the run's
own alert labels (service, namespace, pod, instance, job). A scope is a list of
alternatives such as ``namespace,pod~service`` (``namespace="<ns>"`` and
``pod=~"<service>-.*"``), tried in order until one returns series; an
alternative with a label the alert lacks is skipped, so no query ever runs
unscoped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from services.executor.tools.promrules import mask
from tracebound import resources
from tracebound.errors import ConfigError

CATALOGUE_PATH = resources.path("rules", "prometheus-queries.json")
SCOPE_WORD = "SCOPE"
SCOPE_LABELS = ("namespace", "service", "job", "instance", "pod")
_TERM = re.compile(r"^([a-z_][a-z0-9_]*)(?:([=~])([a-z_]+))?$")
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_TOP_OR = re.compile(r" or ")
# labels that name the workload itself: without ``namespace`` they stay in the alert's
_WORKLOAD_KEYS = frozenset(
    {
        "service",
        "job",
        "pod",
        "deployment",
        "statefulset",
        "horizontalpodautoscaler",
        "persistentvolumeclaim",
    }
)


class Query(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    what: str = Field(min_length=1, max_length=80)
    promql: str = Field(min_length=1, max_length=8000)
    scope: str
    unit: str
    # the smallest change, as a share of the level before, that counts as one
    # (a deployment generation 31 → 32 is a change; a request rate 106 → 110 is not)
    min_change: float = Field(default=0.25, gt=0, le=10)
    # stated even when steady: what changed (or did not) around the alert
    always: bool = False
    # the queries of this usage's limit, in order: the share of the first that returned
    # a series is stated at the onset (a pool's maximum, else its open connections)
    of: tuple[str, ...] = ()
    # a level that accumulates (memory, lag, free space): state its change per minute
    trend: bool = False
    # a level that runs out at zero (free space): say when, at the recent rate
    empties: bool = False
    # read every alternative (``or``) and take the largest at each step: a family
    # that counts only some requests (one status, one route) never stands for all
    largest: bool = False
    # a ratio read from the alternative with the most events at each step (the one
    # whose denominator is largest): a family of one route's requests never stands
    # for the service's error ratio
    busiest: bool = False

    @model_validator(mode="after")
    def _ratios(self) -> Query:
        if self.busiest and (self.largest or not all(map(_denominator, alternatives(self.promql)))):
            raise ValueError("a busiest query is a ratio in every alternative, and not largest")
        return self


class Sweep(BaseModel):
    """The catalogue's ``sweep``: the service's other metrics (:mod:`promql_sweep`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = ""
    scope: str
    # a name is swept when one of its words (split at ``_``) is one of these; the
    # earlier a name's first such word stands in this list, the sooner it is read
    words: tuple[str, ...] = Field(min_length=1)
    skip_endings: tuple[str, ...] = ()
    # labels summed away: the scope's own and the scrape's, which tell nothing new
    drop_labels: tuple[str, ...] = ()
    max_names: int = Field(default=12, ge=1, le=40)
    max_series: int = Field(default=8, ge=1, le=20)
    # a swept series is kept when its change began this long before the onset, or after
    lead_minutes: float = Field(default=75.0, gt=0)
    grace_minutes: float = Field(default=2.0, ge=0)


class Catalogue(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    description: str = ""
    scopes: dict[str, tuple[str, ...]]
    sets: dict[str, tuple[str, ...]]
    queries: dict[str, Query]
    sweep: Sweep | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Catalogue:
        for name, query in self.queries.items():
            if SCOPE_WORD not in query.promql:
                raise ValueError(f"query {name}: its PromQL has no {SCOPE_WORD}")
            if query.scope not in self.scopes:
                raise ValueError(f"query {name}: unknown scope {query.scope!r}")
            unknown_limits = [limit for limit in query.of if limit not in self.queries]
            if unknown_limits:
                raise ValueError(f"query {name}: unknown limit queries {unknown_limits}")
        for name, ids in self.sets.items():
            if name in self.queries:
                raise ValueError(f"set {name}: a query has the same name")
            unknown = [i for i in ids if i not in self.queries]
            if unknown:
                raise ValueError(f"set {name}: unknown queries {unknown}")
        for name, alternatives in self.scopes.items():
            for alternative in alternatives:
                for term in alternative.split(","):
                    if not _TERM.match(term.strip()):
                        raise ValueError(f"scope {name}: bad term {term!r}")
        return self

    @model_validator(mode="after")
    def _sweep_scope(self) -> Catalogue:
        if self.sweep is not None and self.sweep.scope not in self.scopes:
            raise ValueError(f"sweep: unknown scope {self.sweep.scope!r}")
        return self

    def expand(self, names: str) -> tuple[str, ...]:
        """Query ids of a space- or comma-separated list of ids and set names, in order."""
        ids: list[str] = []
        for name in re.split(r"[\s,]+", names.strip()):
            if not name:
                continue
            if name in self.sets:
                ids.extend(self.sets[name])
            elif name in self.queries:
                ids.append(name)
            else:
                raise KeyError(name)
        return tuple(dict.fromkeys(ids))


@cache
def catalogue(path: Path = CATALOGUE_PATH) -> Catalogue:
    try:
        return Catalogue.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"PromQL templates {path} are unusable: {exc}") from exc


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _escaped(value: str) -> str:
    """``value`` as a literal in a RE2 regular expression."""
    return _RE2_SPECIAL.sub(r"\\\1", value)


def matchers(alternative: str, labels: Mapping[str, str]) -> str | None:
    """``namespace,pod~service`` → ``namespace="shop",pod=~"cart-.*"``; None if a value is missing.

    ``key`` matches the label's own value, ``key=other`` the value of the
    alert's label ``other``, ``key~other`` names that start with it followed by
    ``-`` (a deployment's pods, a service's consumer groups).

    An alternative that names the workload without its namespace still keeps to the
    alert's namespace or to series without one: a service of the same name in another
    namespace is another service.
    """
    out: list[str] = []
    keys: set[str] = set()
    for raw in alternative.split(","):
        found = _TERM.match(raw.strip())
        if found is None:
            return None
        key, op, source = found.group(1), found.group(2), found.group(3) or found.group(1)
        keys.add(key)
        value = labels.get(source, "")
        if not value:
            return None
        if op == "~":
            pattern = _escaped(value) + "(-.*)?"
            out.append(f"{key}=~{_quoted(pattern)}")
            if key != "service":
                # a pod named after the service may be a sibling workload's
                # (cart-worker-…); a series labelled as that workload is not the service's
                out.append(f"service!~{_quoted(_escaped(value) + '-.+')}")
        else:
            out.append(f"{key}={_quoted(value)}")
    namespace = labels.get("namespace", "")
    if namespace and keys <= _WORKLOAD_KEYS:
        out.insert(0, f"namespace=~{_quoted(_escaped(namespace) + '|')}")
    return ",".join(out)


def alternatives(promql: str) -> list[str]:
    """``promql`` split at its top-level ``or`` (:func:`promrules.mask` hides what is
    inside brackets and strings)."""
    cuts = [m.start() for m in _TOP_OR.finditer(mask(promql))]
    bounds = zip([0, *(c + len(" or ") for c in cuts)], [*cuts, len(promql)], strict=True)
    return [promql[a:b].strip() for a, b in bounds]


def _denominator(ratio: str) -> str:
    """What ``ratio`` divides by: the text after its last top-level ``/`` ("" if none)."""
    cut = mask(ratio).rfind("/")
    return ratio[cut + 1 :].strip() if cut >= 0 else ""


def _told_apart(texts: Sequence[str]) -> str:
    """The alternatives, each labelled ``alternative="<n>"``, joined with ``or``."""
    return " or ".join(
        f'label_replace({text}, "alternative", "{n}", "", "")'
        for n, text in enumerate(texts, start=1)
    )


def render(query: Query, selector: str) -> str:
    """The template with ``SCOPE`` replaced by ``selector``. A ``largest`` query takes the
    largest of its alternatives at each step; a ``busiest`` one the ratio of the
    alternative whose denominator is largest (``topk`` on the denominators, matched by
    the ``alternative`` label each alternative is told apart by)."""
    promql = query.promql.replace(SCOPE_WORD, selector)
    if query.largest:
        return f"max ({_told_apart(alternatives(promql))})"
    if query.busiest:
        legs = alternatives(promql)
        events = _told_apart([_denominator(leg) for leg in legs])
        return (
            f"max without (alternative) (({_told_apart(legs)})"
            f" and on (alternative) topk (1, {events}))"
        )
    return promql
