"""A second metrics call, about the dependency the service's failing calls go to.

Why: when a service's outgoing calls fail, the first question at the console is
what happened to the other side: is it crash-looping, out of memory, scaled to
nothing, freshly deployed? The diagnosis rules that held name the dependency (a
label of the failing-call series, such as Envoy's cluster or a client's host),
and that name scopes one more ``query_prometheus`` call, in the alert's
namespace and with the alert's onset. Its series say whose they are, and rules
read them only through premises marked ``dependency``. A proxy's traffic surge asks
the same of its busiest backend, but only for its capacity (replicas, autoscaler,
CPU), so no failure is blamed on it.

The name comes from a metric label, so it is untrusted: it is cut to its host
(Envoy's cluster host, a ``host:port`` without the port), and only a plain name
is followed (the tool's parameter pattern), once per round. The tool maps it to
the namespace's workload it means (:mod:`dependency_names`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from services.executor.diagnosis import Finding, Series
from services.executor.tools.dependency_names import host
from services.executor.tools.prometheus_scope import DEPENDENCY_NAME
from services.executor.tools.query_prometheus import TOOL_NAME as SERIES_TOOL
from tracebound.events import PlannedCall, ToolInvocation

# the rule category whose premises may name a dependency, and what is read of it
CATEGORY = "dependency_failure"
QUERIES = "dependency_state"
CARRIED = ("service", "alert_name", "window_minutes")
# the queries of outgoing calls, whose series name the upstream they go to
CALL_QUERIES = frozenset(
    {"client_errors", "client_error_ratio", "client_latency_p99", "circuit_breakers"}
)
# a proxy's queries, whose series name the backends it sends requests to; in a surge
# the busiest backend's capacity is read (never its restarts: no failure is blamed on it)
SURGE = "traffic_surge"
BACKEND_QUERIES = frozenset({"upstream_requests", "upstream_health"})
BACKEND_SET = "backend_state"
_NAME = re.compile(DEPENDENCY_NAME)


def dependency_named(findings: Sequence[Finding]) -> str | None:
    """The upstream the failing calls of the first dependency-failure rule that held go to.

    Only an outgoing-call series names one: a name cut from a metric's name ("db",
    "cache") is a kind of dependency, not a service to look up.
    """
    for finding in findings:
        if finding.rule.category != CATEGORY:
            continue
        for premise in finding.premises:
            name = host(str(premise.labels.get("dependency") or ""))
            if premise.query in CALL_QUERIES and _NAME.fullmatch(name):
                return name
    return None


def backend_named(series: Sequence[Series], findings: Sequence[Finding]) -> str | None:
    """The busiest backend of a proxy, when a traffic-surge rule held: its capacity (an
    autoscaler at its maximum, throttled CPU) is where the surge meets its limit."""
    if not any(f.rule.category == SURGE for f in findings):
        return None
    ranked = sorted(
        (
            (s.value("at_onset") or 0.0, name)
            for s in series
            if s.query in BACKEND_QUERIES
            and not s.dependency
            and _NAME.fullmatch(name := host(str(s.labels.get("dependency") or "")))
        ),
        reverse=True,
    )
    return ranked[0][1] if ranked else None


def dependency_call(
    trace: Sequence[ToolInvocation],
    calls: Sequence[PlannedCall],
    series: Sequence[Series],
    findings: Sequence[Finding],
) -> PlannedCall | None:
    """The call reading the named dependency's state, when a metrics call was planned
    (``series``: the trace's series; ``findings``: the rules that hold on them)."""
    planned = next((c for c in calls if c.tool == SERIES_TOOL), None)
    asked = any(
        inv.tool_name == SERIES_TOOL
        and isinstance(inv.input_params, Mapping)
        and inv.input_params.get("dependency")
        for inv in trace
    )
    if planned is None or asked:
        return None
    name, queries, why = dependency_named(findings), QUERIES, "where the failing calls go"
    if name is None:
        name, queries, why = backend_named(series, findings), BACKEND_SET, "the busiest backend"
    if name is None:
        return None
    base = planned.params if isinstance(planned.params, Mapping) else {}
    params = {k: base[k] for k in CARRIED if base.get(k) is not None}
    params.update(queries=queries, dependency=name)
    return PlannedCall(tool=SERIES_TOOL, params=params, purpose=f"the state of {name}, {why}")
