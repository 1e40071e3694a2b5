"""Micro-facts from recorded tool output: the rules executor's ``executor_evidence_v2``.

Each claim cites one evidence ref and copies its text verbatim as the excerpt;
its wording takes every value from the same tool item (templates in
``rules/executor-claims.json``), so the claim says nothing its evidence does not.
Runbook knowledge never becomes a claim about the current environment (contract
section 2.4): each item of a runbook's likely-causes section becomes one labelled,
unverified hypothesis and each item of its checks section one next step, as
plain lines; other sections (symptoms among them) become neither.
A tool that could not run (no backend, refused, 5xx, timeout) gives no claim, only
a "<kind> unavailable" line in ``missing_info``; every firing alert of the request
ends up in a claim or in ``missing_info`` (``coverage``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.executor import (
    coverage,
    log_causes,
    log_lines,
    log_records,
    log_shapes,
    series_claims,
)
from services.executor.claim_parts import binding as _binding
from services.executor.claim_parts import claim as _claim
from services.executor.claim_parts import item_at
from services.executor.claim_templates import templates
from services.executor.diagnosis import Series
from services.executor.log_lines import Logged
from services.executor.onset_logs import is_onset_search
from services.executor.tools.refs import ALERT_REF_LABELS, alert_figures
from services.executor.tools.runbook_items import section_items, section_kind
from tracebound.events import Alert, ExecutionPlan, ToolInvocation
from tracebound.rfc3339 import parse_time

NO_EVIDENCE = "$.no_evidence"
ANSWER_VERSION = "executor_evidence_v2"
_ARRAYS = {
    "query_metrics": "alerts",
    "query_logs": "logs",
    "lookup_knowledge": "evidence_blocks",
    "query_prometheus": "series",
}


def _lang(language: str) -> str:
    return "zh" if language.lower().startswith("zh") else "en"


def _item(inv: ToolInvocation, raw_path: str) -> Mapping[str, Any] | None:
    array = _ARRAYS.get(inv.tool_name)
    return None if array is None else item_at(inv, array, raw_path)


def _fill(template: str, values: Mapping[str, Any]) -> str:
    return template.format(**{k: ("-" if v in (None, "") else v) for k, v in values.items()})


def _alert_facts(item: Mapping[str, Any], lang: str) -> str:
    """``current 97%, threshold 80%, for 2m, pod p``; an absent value reads "unstated"."""
    t = templates()["alert_facts"]
    figures = alert_figures(item)
    facts = [
        t["current"][lang].format(value=figures["current"]),
        t["threshold"][lang].format(value=figures["threshold"]),
    ]
    if item.get("duration"):
        facts.append(t["duration"][lang].format(value=item["duration"]))
    elif item.get("active_at"):
        facts.append(t["since"][lang].format(value=item["active_at"]))
    labels: Mapping[str, Any] = item.get("labels") or {}
    # which pod (else instance): two alerts of one service differ only there
    target = next((k for k in ALERT_REF_LABELS if labels.get(k)), None)
    if target is not None:
        facts.append(f"{target} {labels[target]}")
    # the alert's own words, where a rule's template often wrote the value
    summary = " ".join(str(item.get("summary") or "").split())
    if summary:
        facts.append(t["summary"][lang].format(value=summary))
    # and its description, where the value and threshold are often stated in full
    description = " ".join(str(item.get("description") or "").split())
    if description and description != summary:
        facts.append(t["description"][lang].format(value=description))
    return str(t["separator"][lang]).join(facts)


def _observation_text(inv: ToolInvocation, item: Mapping[str, Any], lang: str) -> str | None:
    t = templates()
    if inv.tool_name == "query_metrics":
        values = {
            "service": item.get("service"),
            "state": item.get("state"),
            "alert_name": item.get("alert_name"),
            "facts": _alert_facts(item, lang),
        }
        return _fill(t["alert" if item.get("service") else "alert_unscoped"][lang], values)
    if inv.tool_name == "query_logs":
        return log_records.wording(item, lang, t)
    return None


def _relevant(item: Mapping[str, Any], focus: ExecutionPlan) -> bool:
    """Whether an item is about what the plan is about (anything, when it names nothing)."""
    if not focus.services and not focus.alert_names:
        return True
    return item.get("service") in focus.services or item.get("alert_name") in focus.alert_names


class _Round:
    """Accumulates the parts of one structured output while walking the trace."""

    def __init__(
        self, focus: ExecutionPlan, lang: str, narrow: bool, alerts: Sequence[Alert]
    ) -> None:
        self.focus, self.lang, self.narrow = focus, lang, narrow
        self.firing = coverage.firing(alerts)
        self.t = templates()
        self.claims: list[dict[str, Any]] = []
        self.items: dict[str, Mapping[str, Any]] = {}  # claim text -> cited metrics item
        self.hypotheses: list[str] = []
        self.actions: list[str] = []
        self.missing: list[str] = []
        self.series: list[series_claims.SeriesRef] = []
        self.levels: dict[str, str] = {}  # log claim text -> its level
        self.onset: dict[str, float] = {}  # log claim text of the onset search -> its time
        self.logged: list[Logged] = []  # every stated log line, for its signature

    def text(self, key: str, **values: Any) -> str:
        return _fill(self.t[key][self.lang], values)

    def text_of(self, template: Mapping[str, str], **values: Any) -> str:
        return _fill(template[self.lang], values)

    def kind(self, tool: str) -> str:
        """What a tool returns, in words: logs, alerts, runbook sections."""
        kinds = self.t["kinds"]
        return str(kinds.get(tool, kinds["query_logs"])[self.lang])

    def add(self, inv: ToolInvocation) -> None:
        details = inv.retrieval_details
        params = inv.input_params if isinstance(inv.input_params, Mapping) else {}
        if is_onset_search(params):
            self.onset_lines(inv)
            return
        if details is None or not inv.success:
            self.missing.append(
                self.text(
                    "missing_failed",
                    kind=self.kind(inv.tool_name),
                    tool=inv.tool_name,
                    error=inv.error_message,
                )
            )
            return
        for ref in details.evidence_refs:
            if ref.raw_path == NO_EVIDENCE:
                self.negative(inv, ref.raw_path, ref.text)
                continue
            item = _item(inv, ref.raw_path)
            if item is None:
                continue
            if inv.tool_name == "lookup_knowledge":
                if not self.narrow:
                    self.knowledge(inv, item)
                continue
            if inv.tool_name == "query_prometheus":
                key = (inv.source_invocation_id, ref.raw_path)
                binding = _binding(inv, ref.raw_path, ref.text)
                self.series.append(series_claims.SeriesRef(binding, Series(key, item)))
                continue
            wording = _observation_text(inv, item, self.lang)
            if wording and _relevant(item, self.focus):
                binding = _binding(inv, ref.raw_path, ref.text)
                self.claims.append(_claim("observation", wording, [binding]))
                if inv.tool_name == "query_metrics":
                    self.items[wording] = item
                else:
                    self.levels[wording] = str(item.get("level") or "").upper()
                    self.log_line(wording, item)

    def onset_lines(self, inv: ToolInvocation) -> None:
        """The onset search's lines, kept aside; none or a failure goes unsaid (the planned
        search already says whether logs could be read)."""
        details = inv.retrieval_details
        for ref in details.evidence_refs if details is not None and inv.success else ():
            item = _item(inv, ref.raw_path)
            moment = parse_time(str(item.get("timestamp") or "")) if item else None
            wording = _observation_text(inv, item, self.lang) if item else None
            if item is None or moment is None or not wording or not _relevant(item, self.focus):
                continue
            if wording in self.onset:
                continue
            self.onset[wording] = moment.timestamp()
            # a line the planned search returned too is stated once, with its citation
            # there, but placed where the first change puts it
            if all(c["claim_text"] != wording for c in self.claims):
                self.log_line(wording, item)
                b = _binding(inv, ref.raw_path, ref.text)
                self.claims.append(_claim("observation", wording, [b]))

    def log_line(self, wording: str, item: Mapping[str, Any]) -> None:
        moment = parse_time(str(item.get("timestamp") or ""))
        if moment is not None:
            message, level = log_records.searched(item), str(item.get("level") or "")
            self.logged.append(Logged(wording, message, level, moment.timestamp()))

    def knowledge(self, inv: ToolInvocation, block: Mapping[str, Any]) -> None:
        """A runbook block's causes as hypotheses and its checks as steps, one line each.

        Only the best-ranked runbook of a lookup counts: lower-ranked documents
        describe other failure modes and would be guidance about something else.
        """
        best = _item(inv, "$.evidence_blocks[0]") or {}
        if block.get("doc_id") != best.get("doc_id"):
            return
        kind = section_kind(str(block.get("heading") or ""), self.t["runbook_sections"])
        target = {"causes": (self.hypotheses, "hypothesis"), "checks": (self.actions, "action")}
        if kind not in target:
            return
        found, key = target[kind]
        for line in section_items(str(block.get("content") or "")):
            wording = self.text(key, text=line)
            if wording not in found:
                found.append(wording)

    def negative(self, inv: ToolInvocation, raw_path: str, ref_text: str) -> None:
        params = inv.input_params if isinstance(inv.input_params, Mapping) else {}
        query = params.get("query") or " ".join(
            str(params[k]) for k in ("alert_name", "service") if params.get(k)
        )
        if inv.tool_name == "query_metrics" and any(
            coverage.filter_matches(params, a) for a in self.firing
        ):
            # the request carries this alert firing: its absence from the backend
            # is a gap of that backend, never "no matching evidence"
            backend = inv.backend.name if inv.backend else "-"
            self.missing.append(
                self.text("missing_contradicted", tool=inv.tool_name, backend=backend, query=query)
            )
            return
        wording = self.text("negative", kind=self.kind(inv.tool_name), query=query or "-")
        self.claims.append(
            _claim("negative_observation", wording, [_binding(inv, raw_path, ref_text)])
        )
        self.missing.append(self.text("missing_none", tool=inv.tool_name, query=query or "-"))


def build_evidence(
    trace: Sequence[ToolInvocation],
    focus: ExecutionPlan,
    language: str,
    *,
    narrow: bool,
    max_claims: int,
    alerts: Sequence[Alert] = (),
) -> dict[str, Any]:
    """The structured output for one round, from the code-recorded tool trace.

    ``alerts`` are the request's: each firing one not covered by a kept claim
    is named in ``missing_info``.
    """
    acc = _Round(focus, _lang(language), narrow, alerts)
    for inv in trace:
        acc.add(inv)
    causes = _series(acc, log_shapes.stated(trace, acc.lang, focus, acc.t))
    kept = [dict(c, claim_id=f"claim-{i}") for i, c in enumerate(acc.claims, start=1)]
    kept = kept[:max_claims]
    observed = [acc.items[c["claim_text"]] for c in kept if c["claim_text"] in acc.items]
    for alert in coverage.uncovered(alerts, observed):
        acc.missing.append(acc.text("missing_uncovered", alert=coverage.alert_label(alert)))
    return {
        "answer_version": ANSWER_VERSION,
        "claims": kept,
        "hypotheses": [] if narrow else [*causes, *acc.hypotheses][:3],
        "recommended_actions": [] if narrow else acc.actions[:3],
        "missing_info": acc.missing,
    }


def _series(acc: _Round, shapes: list[dict[str, Any]]) -> list[str]:
    """Claims in the order the claim limit keeps them; the causes of the rules that held.

    The alert, the causes' premises, the first logs (errors first), the lines
    written when the first premise began to change, the other series that
    changed, the log shapes' counts, the other logs, the swept series and the
    alert's own expression, what was not found. A changed series is a computed
    fact; a later log line one sample.
    """
    found = series_claims.diagnose(acc.series, acc.lang)
    t = acc.t["series"]
    series = [
        _claim("observation", series_claims.wording(r.series.item, acc.lang, t), [r.binding])
        for r in found.refs
    ]
    alerts = [c for c in acc.claims if c["claim_text"] in acc.items]
    negatives = [c for c in acc.claims if c["claim_type"] == "negative_observation"]
    onset = [c for c in acc.claims if c["claim_text"] in acc.onset]
    logs = [c for c in acc.claims if c not in alerts and c not in negatives and c not in onset]
    logs = log_lines.by_level(logs, acc.levels)
    near = log_lines.near_change(onset, acc.onset, logs)
    declared = len(series) - found.late
    causes, lead = _causes(acc, found.causes)
    logs, near = [c for c in logs if c not in lead], [c for c in near if c not in lead]
    acc.claims[:] = [
        *alerts,
        *series[: found.premises],
        *lead,
        *logs[:3],
        *near,
        *series[found.premises : declared],
        *shapes,
        *logs[3:],
        *series[declared:],
        *negatives,
    ]
    return causes


def _causes(acc: _Round, found: Sequence[tuple[str, str]]) -> tuple[list[str], list[Any]]:
    """The rules' causes, a log signature's and its line first (:func:`log_causes.unless_held`)."""
    t = acc.t["series"]
    causes = [acc.text_of(t["diagnosis"], rule=rule, cause=cause) for rule, cause in found]
    hit = log_causes.unless_held(found, acc.logged, [r.series for r in acc.series], acc.firing)
    if hit is None:
        return causes, []
    line = [c for c in acc.claims if c["claim_text"] == hit.first][:1]
    cause = hit.cause("zh" if acc.lang == "zh" else "en")
    return [acc.text_of(t["diagnosis"], rule=f"log:{hit.id}", cause=cause), *causes], line


def diagnosis_findings(
    trace: Sequence[ToolInvocation], language: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The premise claims and causes the diagnosis rules give over ``trace``.

    In ``llm`` mode the model words its own claims; the rules' findings are code's
    and are added to them, so a cause never depends on the model noticing it.
    """
    acc = _Round(ExecutionPlan(calls=()), _lang(language), False, ())
    for inv in trace:
        if inv.tool_name in ("query_prometheus", "query_logs"):
            acc.add(inv)
    found = series_claims.diagnose(acc.series, acc.lang)
    t = acc.t["series"]
    claims = [
        _claim("observation", series_claims.wording(r.series.item, acc.lang, t), [r.binding])
        for r in found.refs[: found.premises]
    ]
    causes, line = _causes(acc, found.causes)
    return [*claims, *line], causes


def with_findings(
    structured: dict[str, Any], claims: Sequence[dict[str, Any]], causes: Sequence[str]
) -> dict[str, Any]:
    """``structured`` with the rules' premise claims and causes it does not already hold."""
    if not claims and not causes:
        return structured
    held = structured.get("claims")
    held = list(held) if isinstance(held, list) else []
    texts = {c.get("claim_text") for c in held if isinstance(c, dict)}
    added = [c for c in claims if c["claim_text"] not in texts]
    start = len(held) + 1
    held += [dict(c, claim_id=f"claim-{i}") for i, c in enumerate(added, start=start)]
    hypotheses = structured.get("hypotheses")
    hypotheses = (
        [h for h in hypotheses if isinstance(h, str)] if isinstance(hypotheses, list) else []
    )
    merged = [*causes, *(h for h in hypotheses if h not in causes)][:3]
    return {**structured, "claims": held, "hypotheses": merged}
