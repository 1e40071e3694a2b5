"""``query_prometheus``: declared PromQL range queries, scoped to the alert, as citable series.

Why: the alert says that something is wrong; the first ten minutes at the
console say why — restarts and their reason, a new version, the error ratio by
version, the pool, the lag. Each query is a template of the catalogue
(:mod:`promql`), scoped to the run's alert labels, bounded in series, points and
time. Every returned series becomes one item ``$.series[i]`` with its labels and
its facts computed in code (:mod:`series_facts`), and one ref whose text states
exactly those facts with their units, so a claim worded from it is checked
number by number.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from services.executor.tools import (
    dependency_names,
    promql_alert,
    promql_names,
    promql_sweep,
    refs,
)
from services.executor.tools.base import (
    RunContext,
    ToolBackendError,
    ToolOutcome,
    coerce_params,
    failed_outcome,
    preview,
)
from services.executor.tools.httpjson import get_json
from services.executor.tools.prometheus_scope import (
    WORKLOAD_LABELS,
    QueryPrometheusParams,
    relevant_alerts,
    scope_labels,
)
from services.executor.tools.promql import Catalogue, catalogue, matchers, render
from services.executor.tools.promql_names import Listings
from services.executor.tools.promql_sweep import SWEEP_ID
from services.executor.tools.series_items import Reading, Span, series_items
from services.executor.tools.series_shares import add_shares
from services.executor.tools.series_text import labels_text, series_text
from tracebound.events import Alert, ToolBackend
from tracebound.rfc3339 import parse_time

TOOL_NAME = "query_prometheus"
MAX_QUERIES = 96
MAX_SERIES = 60
MAX_POINTS = 240
MIN_STEP_S = 15
# Queries start only within this many seconds of the call (under the executor's
# default 10 s call timeout), so a slow server costs the rest, not the whole call.
BUDGET_S = 7.0
# a query id naming a breakdown (``latency_p99_by_version``)
BY_LABEL = "_by_"
NO_SCOPE = "no service, namespace, pod, instance or job label to scope the queries to"
NO_PROMETHEUS = "no Prometheus configured (TRACEBOUND_TOOLS_PROMETHEUS_URL)"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call cannot run at all, and the layer it is recorded with."""

    reason: str
    layer: str


def _step(window_minutes: int) -> int:
    """Seconds between points: at most :data:`MAX_POINTS` over the window."""
    return max(MIN_STEP_S, math.ceil(window_minutes * 60 / MAX_POINTS))


def wall_clock() -> datetime:
    return datetime.now(UTC)


class QueryPrometheusTool:
    """Run declared PromQL range queries; each series becomes ``$.series[i]``."""

    name = TOOL_NAME
    params_model: type[BaseModel] = QueryPrometheusParams

    def __init__(
        self,
        url: str,
        timeout_s: float,
        backend: ToolBackend,
        *,
        book: Catalogue | None = None,
        now: Callable[[], datetime] = wall_clock,
        budget_s: float = BUDGET_S,
    ) -> None:
        self._url = url.rstrip("/")
        self._timeout_s = timeout_s
        self.backend = backend
        self._book = book or catalogue()
        self._now = now
        self._budget_s = budget_s
        # The sets only: they cover every query, and the whole id list would cost the
        # model ~200 tokens per turn. A single query id (as a skill step names) still runs.
        sets = ", ".join(self._book.sets)
        self.description = (
            "Declared PromQL range queries scoped to the alert's labels; queries: "
            f"space-separated sets ({sets}) or query ids. Each series is $.series[i] "
            "(last, min, max, mean, values at onset and an hour before, direction of "
            "change); sweep=true also reads the service's other metrics that changed near "
            "the onset; else $.no_evidence."
        )

    def _range(self, promql: str, start: datetime, end: datetime, step: int) -> list[Any]:
        """``data.result`` of a range query (POSTed as a form)."""
        params = {"query": promql, "start": f"{start.timestamp():.3f}"}
        params |= {"end": f"{end.timestamp():.3f}", "step": str(step)}
        url = f"{self._url}/api/v1/query_range"
        data = get_json("prometheus", url, params, self._timeout_s, form=True).get("data")
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise ToolBackendError("prometheus: query_range response has no data.result list")
        return [r for r in result if isinstance(r, dict)]

    def _listing(self, selector: str, span: Span, listings: Listings) -> frozenset[str] | None:
        """The metric names under ``selector`` in the window, listed once per call."""
        if selector not in listings:
            listings[selector] = promql_names.listing(self._url, selector, span, self._timeout_s)
        return listings[selector]

    def _run_one(
        self, qid: str, labels: Mapping[str, str], span: Span, listings: Listings
    ) -> tuple[str | None, list[Any]]:
        """The first scope alternative that returns series, and its series; None when
        no alternative ran.

        An alternative whose scope exports none of the query's metric names is not
        run: the listing already says it would return nothing.
        """
        query = self._book.queries[qid]
        chosen = promql_names.selects(query.promql)
        tried: str | None = None
        for alternative in self._book.scopes[query.scope]:
            selector = matchers(alternative, labels)
            if selector is None:
                continue
            available = self._listing(selector, span, listings)
            if available is not None and not chosen.any_of(available):
                continue
            tried = render(query, selector)
            found = self._range(tried, *span)
            if found:
                return tried, found
        return tried, []

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        p = coerce_params(params, QueryPrometheusParams)
        envelope: dict[str, Any] = {"success": True, "series": [], "queries": [], "message": ""}
        planned = self._planned(p, ctx)
        if isinstance(planned, Refusal):
            return failed_outcome(envelope, planned.reason, planned.layer)
        ids, labels, onset_text = planned
        try:
            items = self._collect(ids, labels, p, ctx, onset_text=onset_text, envelope=envelope)
        except ToolBackendError as exc:
            return failed_outcome(envelope, str(exc), "prometheus")
        add_shares(items, self._book)
        query_text = f"{p.queries} scope {labels_text(labels) or '-'}"
        if not envelope["queries"] and not envelope.get("absent"):
            return failed_outcome(envelope, "no query ran within the time budget", "prometheus")
        if not items:
            message = "no series matched"
            envelope["message"] = message
            return ToolOutcome(
                output=envelope,
                retrieval_details=refs.no_evidence(TOOL_NAME, query_text, None, message),
                success=True,
                retrieval_layer="prometheus",
                output_preview=preview(f"no series for {query_text}"),
            )
        message = f"found {len(items)} series ({query_text})"
        if envelope.get("not_run"):
            message += f"; not run (time budget or series cap): {' '.join(envelope['not_run'])}"
        failed = len(envelope.get("query_errors", ())) + len(envelope.get("sweep_errors", ()))
        if failed:
            message += f"; {failed} queries failed (query_errors, sweep_errors)"
        envelope.update(series=items, message=message)
        return ToolOutcome(
            output=envelope,
            retrieval_details=refs.supported(
                refs.item_refs("series", [series_text(i) for i in items])
            ),
            success=True,
            retrieval_layer="prometheus",
            output_preview=preview(f"{message.removeprefix('found ')}: {', '.join(ids)}"),
        )

    def _planned(
        self, p: QueryPrometheusParams, ctx: RunContext
    ) -> Refusal | tuple[tuple[str, ...], dict[str, str], str]:
        """The query ids, scope labels and onset of the call, or why it cannot run."""
        if not self._url:
            return Refusal(NO_PROMETHEUS, "none")
        try:
            ids = self._book.expand(p.queries)[:MAX_QUERIES]
        except KeyError as exc:
            return Refusal(f"unknown query or set {exc.args[0]!r}", "prometheus")
        labels, onset_text = scope_labels(ctx.alerts, p)
        if not labels:
            return Refusal(NO_SCOPE, "prometheus")
        return ids, labels, onset_text

    def _collect(
        self,
        ids: Sequence[str],
        labels: Mapping[str, str],
        p: QueryPrometheusParams,
        ctx: RunContext,
        *,
        onset_text: str,
        envelope: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """Every series of ``ids`` in order, within the time budget and the series cap.

        A query Prometheus refuses is recorded (``query_errors``) and skipped: the
        other queries' evidence stands. When every query failed, the call fails.
        """
        end = ctx.requested_at if ctx.requested_at.year > 1970 else self._now()
        span = (end - timedelta(minutes=p.window_minutes), end, _step(p.window_minutes))
        onset = parse_time(onset_text) if onset_text else None
        items: list[dict[str, Any]] = []
        errors: list[str] = []
        # queries whose metrics the scope does not export: not run, and said so
        absent: list[str] = []
        listings: Listings = {}
        deadline = time.monotonic() + self._budget_s
        dependency = p.dependency
        if dependency:
            labels = self._dependency_scope(labels, span, relevant_alerts(ctx.alerts, p))
            dependency = labels["service"]
            if dependency != p.dependency:
                envelope["dependency"] = {"named": p.dependency, "workload": dependency}
        else:
            items += self._alert_series(relevant_alerts(ctx.alerts, p), span, onset, p, envelope)
        for position, qid in enumerate(ids):
            if len(items) >= MAX_SERIES or time.monotonic() > deadline:
                # what was found stays evidence; what was not run is said, not hidden
                envelope["not_run"] = list(ids[position:])
                break
            try:
                promql, found = self._run_one(qid, labels, span, listings)
            except ToolBackendError as exc:
                errors.append(f"{qid}: {exc}")
                continue
            if promql is None:
                absent.append(qid)
                continue
            envelope["queries"].append({"id": qid, "promql": promql, "series": len(found)})
            items.extend(
                self._items(qid, found, span, onset, p.window_minutes, dependency=dependency)
            )
        if absent:
            envelope["absent"] = absent
        if errors:
            envelope["query_errors"] = errors[:5]
            if not envelope["queries"]:
                raise ToolBackendError(errors[0])
        if p.sweep and "not_run" in envelope:
            envelope["not_run"].append(SWEEP_ID)
        elif p.sweep and not p.dependency and len(items) < MAX_SERIES:
            swept = self._sweep(
                labels,
                span,
                onset,
                window_min=p.window_minutes,
                deadline=deadline,
                envelope=envelope,
                listings=listings,
            )
            items.extend(swept[: MAX_SERIES - len(items)])
        return items[:MAX_SERIES]

    def _dependency_scope(
        self, labels: Mapping[str, str], span: Span, alerts: Sequence[Alert]
    ) -> dict[str, str]:
        """``labels`` with the dependency's name (a client's name for it) replaced by the
        workload of the namespace it means (:mod:`dependency_names`)."""
        named = labels["service"]
        namespace = labels.get("namespace", "")
        selector = matchers("namespace", labels) or ""
        found: set[str] = set()
        for label in WORKLOAD_LABELS:
            values = promql_names.label_values(self._url, label, selector, span, self._timeout_s)
            found |= values or frozenset()
        own = {a.labels.get("service") or "" for a in alerts}
        resolved = dependency_names.workload(
            named, found, namespace=namespace, own=own.pop() if len(own) == 1 else ""
        )
        return {**labels, "service": resolved}

    def _alert_series(
        self,
        alerts: Sequence[Alert],
        span: Span,
        onset: datetime | None,
        p: QueryPrometheusParams,
        envelope: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """The alert's own expression over the window (:mod:`promql_alert`)."""
        if len(alerts) != 1:
            return []
        rules = promql_alert.Rules(self._url, self._timeout_s)
        window = (span, onset, p.window_minutes)
        return promql_alert.alert_items(rules, alerts[0], self._range, window, envelope)

    def _sweep(
        self,
        labels: Mapping[str, str],
        span: Span,
        onset: datetime | None,
        *,
        window_min: int,
        deadline: float,
        envelope: dict[str, Any],
        listings: Listings,
    ) -> list[dict[str, Any]]:
        """The service's other metrics that changed near the onset (:mod:`promql_sweep`)."""
        sweep = self._book.sweep
        if sweep is None or onset is None:
            return []
        if time.monotonic() > deadline:
            envelope["not_run"] = [SWEEP_ID]
            return []
        try:
            selector, names = self._names(sweep.scope, labels, span, listings)
        except ToolBackendError as exc:
            envelope["sweep_errors"] = [str(exc)]
            return []
        read = promql_sweep.Swept(self._book, sweep, self._range, span, onset, window_min)
        return read.items(selector, names, deadline, envelope)

    def _names(
        self, scope: str, labels: Mapping[str, str], span: Span, listings: Listings
    ) -> tuple[str, list[str]]:
        """The first scope alternative with metrics, and their names."""
        for alternative in self._book.scopes[scope]:
            selector = matchers(alternative, labels)
            if selector is None:
                continue
            names = self._listing(selector, span, listings)
            if names is None:
                raise ToolBackendError("prometheus: the metric names could not be listed")
            if names:
                return selector, sorted(names)
        return "", []

    def _items(
        self,
        qid: str,
        found: list[Any],
        span: Span,
        onset: datetime | None,
        window_min: int,
        *,
        dependency: str | None = None,
    ) -> list[dict[str, Any]]:
        q = self._book.queries[qid]
        if BY_LABEL in qid:
            # "by version" without a version label repeats the overall series: not stated twice
            found = [r for r in found if isinstance(r, dict) and r.get("metric")]
        what = f"{q.what} of {dependency}" if dependency else q.what
        reading = Reading(what, qid, q.unit, least=q.min_change, trend=q.trend, empties=q.empties)
        items = series_items(reading, found, span, onset, window_min)
        for item in items if dependency else ():
            item["dependency"] = dependency
        return items
