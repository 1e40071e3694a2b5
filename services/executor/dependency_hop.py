"""A second metrics call, about the dependency the service's failing calls go to.

Why: when a service's outgoing calls fail, the first question at the console is
what happened to the other side: is it crash-looping, out of memory, scaled to
nothing, freshly deployed? The diagnosis rules that held name the dependency (a
label of the failing-call series, such as Envoy's cluster or a client's host),
and that name scopes one more ``query_prometheus`` call, in the alert's
namespace and with the alert's onset. Its series say whose they are, and rules
read them only through premises marked ``dependency``.

The name comes from a metric label, so it is untrusted: it is cut to its host
(Envoy's cluster host, a ``host:port`` without the port), and only a plain name
is followed (the tool's parameter pattern), once per round. The tool maps it to
the namespace's workload it means (:mod:`dependency_names`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from services.executor.diagnosis import Finding
from services.executor.tools.dependency_names import host
from services.executor.tools.query_prometheus import DEPENDENCY_NAME
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


def dependency_call(
    trace: Sequence[ToolInvocation], calls: Sequence[PlannedCall], findings: Sequence[Finding]
) -> PlannedCall | None:
    """The call reading the named dependency's state, when a metrics call was planned
    (``findings``: the rules that hold on ``trace``)."""
    planned = next((c for c in calls if c.tool == SERIES_TOOL), None)
    asked = any(
        inv.tool_name == SERIES_TOOL
        and isinstance(inv.input_params, Mapping)
        and inv.input_params.get("dependency")
        for inv in trace
    )
    if planned is None or asked:
        return None
    name = dependency_named(findings)
    if name is None:
        return None
    base = planned.params if isinstance(planned.params, Mapping) else {}
    params = {k: base[k] for k in CARRIED if base.get(k) is not None}
    params.update(queries=QUERIES, dependency=name)
    return PlannedCall(
        tool=SERIES_TOOL, params=params, purpose=f"the state of {name}, where the failing calls go"
    )
