"""The replay and eval report pages: ``/reports`` (every stored report) and ``/reports/{id}``.

A report's rows hold queries, answers, rule names and expectation details taken
from events and model output, so every value goes through :func:`web.html.esc`;
links to traces are built from run ids with ``quote``. The pages are plain HTML
like the dashboard (no script, inline style only), so they read the same with
JavaScript off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from projections.reports import ReportHead, StoredReport
from web.dash_page import DASH_CSS, nav
from web.html import badge, document, esc, join

REPORT_CSS = """
table.matrix{width:auto}
table.matrix td{text-align:right;min-width:56px;font-variant-numeric:tabular-nums}
table.matrix td.same{color:#667085}
table.matrix td.moved{background:#fff3d6;font-weight:700}
table.side td.side{width:38%}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dl.kv dt{color:#556}dl.kv dd{margin:0;word-break:break-word;white-space:pre-wrap}
td.run .q{margin-top:4px;max-width:260px;word-break:break-word}
"""
TRANSITIONS = ("verdict_transitions", "severity_transitions")
# candidate/baseline fields a list row names, in this order, with a person's label
COMPARED = (
    ("suite", "suite"),
    ("rule_set_version", "rules"),
    ("verifier_rule_set_version", "verifier rules"),
    ("verifier_mode", "verifier mode"),
    ("mode", "mode"),
    ("model", "model"),
    ("tools", "tools"),
)
OUTCOMES = ("verdict", "outcome", "status", "severity")  # shown first, as badges
SIDE_NOTES = (
    "round",
    "failed_rules_added",
    "failed_rules_removed",
    "groundedness_delta",
    "error",
    "unrecorded_tool_calls",
)


def report_href(report_id: int) -> str:
    return f"/reports/{int(report_id)}"


def _trace_link(run_id: Any) -> str:
    text = esc(run_id)
    if not isinstance(run_id, str) or not run_id:
        return text
    return f"<a class='trace-link' href='/runs/{esc(quote(run_id, safe=''))}'>{text}</a>"


def _when(head: ReportHead) -> str:
    iso = head.created_at.isoformat()
    return f"<span title='{esc(iso)}'>{esc(iso[:19].replace('T', ' '))}</span>"


def _shown(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value) or "–"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def compared_text(head: ReportHead) -> str:
    """One line: what the candidate was, and what it was compared against where recorded."""
    parts: list[str] = []
    for key, label in COMPARED:
        new, old = head.candidate.get(key), head.baseline.get(key)
        if new is None and old is None:
            continue
        if new is None or old is None:  # recorded on one side only (an eval's suite)
            parts.append(f"{label} {_shown(old if new is None else new)}")
        else:
            parts.append(f"{label} {_shown(old)} → {_shown(new)}")
    return " · ".join(parts)


def window_text(head: ReportHead) -> str:
    """The selection a replay read (time window and chosen runs), or ``all``."""
    chosen = head.candidate.get("selection")
    if not isinstance(chosen, Mapping):
        return "–" if head.family == "eval" else "all recorded"
    since, until, runs = chosen.get("since"), chosen.get("until"), chosen.get("run_ids") or []
    parts = []
    if since or until:
        parts.append(f"{since or '…'} – {until or '…'}")
    if runs:
        parts.append(f"{len(runs)} chosen run(s)")
    return "; ".join(parts) or "all recorded"


def totals_text(head: ReportHead) -> str:
    s = head.summary
    if head.family == "eval":
        return f"{s.get('passed', '?')} of {s.get('cases', '?')} cases passed"
    total = s.get("inputs", s.get("runs", "?"))
    return f"{s.get('changed', '?')} of {total} changed"


def _list_row(head: ReportHead) -> str:
    failed = head.family == "eval" and bool(head.summary.get("failed"))
    changed = head.family != "eval" and bool(head.summary.get("changed"))
    tone = "fail" if failed else ("LOW_CONFID" if changed else "pass")
    cells = (
        f"<a href='{report_href(head.id)}' class='report-link'>#{head.id}</a>",
        esc(head.kind),
        _when(head),
        esc(compared_text(head)),
        esc(window_text(head)),
        badge(tone, totals_text(head)),
    )
    tds = join(f"<td>{c}</td>" for c in cells)
    return f"<tr class='report' data-report='{head.id}' data-kind='{esc(head.kind)}'>{tds}</tr>"


def render_list(heads: list[ReportHead], next_before: int | None, signed_in: bool) -> str:
    """Every stored report, newest first, a page at a time."""
    if heads:
        head = join(
            f"<th>{c}</th>"
            for c in ("report", "kind", "when (UTC)", "compared", "window", "totals")
        )
        table = (
            f"<table class='reports' id='reports'><thead><tr>{head}</tr></thead>"
            f"<tbody>{join(_list_row(h) for h in heads)}</tbody></table>"
        )
    else:
        table = (
            "<div class='card none' id='no-reports'>No report stored yet: "
            "<code>tracebound replay</code> and <code>tracebound eval run</code> store theirs."
            "</div>"
        )
    pager = (
        f"<div class='pager'><a id='next-page' href='/reports?before={next_before}'>"
        "older reports »</a></div>"
        if next_before is not None
        else ""
    )
    body = nav(signed_in) + "<h1>Replay and eval reports</h1>" + table + pager
    return document("tracebound · reports", body, DASH_CSS + REPORT_CSS)


def _kv(values: Mapping[str, Any]) -> str:
    items = join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in values.items())
    return f"<dl class='kv'>{items}</dl>" if values else "–"


def _compared_table(head: ReportHead) -> str:
    keys = [k for k in dict.fromkeys([*head.baseline, *head.candidate]) if k != "selection"]
    rows = join(
        f"<tr><th>{esc(k)}</th><td>{esc(head.baseline.get(k))}</td>"
        f"<td>{esc(head.candidate.get(k))}</td></tr>"
        for k in keys
    )
    return (
        "<table class='compared' id='compared'><thead><tr><th></th><th>baseline</th>"
        f"<th>candidate</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<p class='meta'>window: <b>{esc(window_text(head))}</b></p>"
    )


def transition_matrix(name: str, counts: Mapping[str, Any]) -> str:
    """``{"OLD→NEW": n}`` as a table: old outcomes down, new across; moves are highlighted."""
    pairs = [(k.split("→", 1), n) for k, n in counts.items() if "→" in k]
    olds = sorted({p[0][0] for p in pairs})
    news = sorted({p[0][1] for p in pairs})
    cells = {(o, n): count for (o, n), count in pairs}
    head = join(f"<th>{esc(n)}</th>" for n in news)
    rows = []
    for old in olds:
        tds = []
        for new in news:
            count = cells.get((old, new))
            cls = "same" if old == new else "moved"
            tds.append(f"<td class='{cls if count else ''}'>{esc(count) if count else ''}</td>")
        rows.append(f"<tr><th>{esc(old)}</th>{join(tds)}</tr>")
    title = name.replace("_", " ")
    return (
        f"<div class='card'><h3>{esc(title)} (old ↓, new →)</h3>"
        f"<table class='matrix' id='{esc(name)}'><thead><tr><th></th>{head}</tr></thead>"
        f"<tbody>{join(rows)}</tbody></table></div>"
    )


def _rule_fires(fires: Any) -> str:
    if not isinstance(fires, Mapping) or not fires:
        return ""
    rows = []
    for rule, count in fires.items():
        old, new = (count or {}).get("old", 0), (count or {}).get("new", 0)
        moved = " class='moved'" if old != new else ""
        delta = f"{new - old:+d}" if isinstance(old, int) and isinstance(new, int) else "?"
        rows.append(
            f"<tr{moved}><td>{esc(rule)}</td><td class='num'>{esc(old)}</td>"
            f"<td class='num'>{esc(new)}</td><td class='num'>{esc(delta)}</td></tr>"
        )
    return (
        "<div class='card'><h3>Rule fires</h3><table id='rule-fires'><thead><tr><th>rule</th>"
        "<th class='num'>old</th><th class='num'>new</th><th class='num'>Δ</th></tr></thead>"
        f"<tbody>{join(rows)}</tbody></table></div>"
    )


def _totals(head: ReportHead) -> str:
    scalars = {
        k: v for k, v in head.summary.items() if not isinstance(v, dict | list) and v is not None
    }
    matrices = join(
        transition_matrix(k, head.summary[k])
        for k in TRANSITIONS
        if isinstance(head.summary.get(k), Mapping)
    )
    return (
        f"<div class='card' id='totals'>{_kv(scalars)}</div>"
        f"<div class='grid'>{matrices}{_rule_fires(head.summary.get('rule_fires'))}</div>"
    )


def _side(values: Any) -> str:
    """One side of a change: its outcome as badges, then the rest (an answer, rounds, …)."""
    if not isinstance(values, Mapping):
        return esc(values)
    marks = join(
        badge(values[k], values[k] if k in ("verdict", "outcome") else f"{k} {values[k]}")
        for k in OUTCOMES
        if values.get(k) is not None
    )
    rest = {k: v for k, v in values.items() if k not in OUTCOMES}
    return f"<div class='row'>{marks}</div>{_kv(rest) if rest else ''}"


def _query(query: Any) -> str:
    return f"<div class='q'>{esc(query)}</div>" if isinstance(query, str) and query else ""


def _changed_row(row: Mapping[str, Any]) -> str:
    notes = {k: row[k] for k in SIDE_NOTES if row.get(k) not in (None, [], "")}
    return (
        f"<tr class='changed' data-run='{esc(row.get('run_id'))}'>"
        f"<td class='run'>{_trace_link(row.get('run_id'))}{_query(row.get('query'))}</td>"
        f"<td class='side old'>{_side(row.get('old'))}</td>"
        f"<td class='side new'>{_side(row.get('new'))}</td><td>{_kv(notes)}</td></tr>"
    )


def _changed(report: StoredReport) -> str:
    changed = report.head.summary.get("changed")
    shown = len(report.changed)
    title = f"Changed runs ({esc(changed)} of {report.inputs}"
    title += f"; the first {shown} shown)" if isinstance(changed, int) and changed > shown else ")"
    if not report.changed:
        return f"<h2>{title}</h2><div class='card none' id='no-changes'>Nothing changed.</div>"
    head = "<tr><th>run</th><th>old</th><th>new</th><th>notes</th></tr>"
    return (
        f"<h2>{title}</h2><table class='side' id='changed'><thead>{head}</thead>"
        f"<tbody>{join(_changed_row(r) for r in report.changed)}</tbody></table>"
    )


def _case_row(case: Mapping[str, Any]) -> str:
    reasons = [r for r in case.get("reasons") or [] if isinstance(r, Mapping)]
    failed = [r for r in reasons if not r.get("passed")]
    if failed:
        why = "<ul class='plain failed'>" + join(
            f"<li><b>{esc(r.get('check'))}</b>: {esc(r.get('detail'))}</li>" for r in failed
        )
        why += "</ul>"
    else:
        why = f"<span class='muted'>all {len(reasons)} expectations held</span>"
    run = case.get("run") or {}
    status = "PASS" if case.get("passed") else "fail"
    return (
        f"<tr class='case' data-case='{esc(case.get('case_id'))}' data-passed="
        f"'{'yes' if case.get('passed') else 'no'}'><td>{esc(case.get('case_id'))}</td>"
        f"<td>{badge(status, 'PASS' if case.get('passed') else 'FAIL')}</td>"
        f"<td>{badge(run.get('verdict'), run.get('verdict') or '–')}</td><td>{why}</td></tr>"
    )


def _cases(report: StoredReport) -> str:
    head = "<tr><th>case</th><th>result</th><th>verdict</th><th>expectations</th></tr>"
    return (
        f"<h2>Cases ({len(report.cases)}, failed first)</h2><table id='cases'>"
        f"<thead>{head}</thead><tbody>{join(_case_row(c) for c in report.cases)}</tbody></table>"
    )


def render_report(report: StoredReport, signed_in: bool) -> str:
    """One report: what was compared, the totals, and the changed runs or the cases."""
    head = report.head
    body = (
        nav(signed_in)
        + f"<h1>{esc(head.kind)} report #{head.id}</h1>"
        + f"<p class='meta'><span>{_when(head)} UTC</span><b>{esc(totals_text(head))}</b></p>"
        + "<h2>What was compared</h2>"
        + _compared_table(head)
        + "<h2>Totals</h2>"
        + _totals(head)
        + (_cases(report) if head.family == "eval" else _changed(report))
    )
    return document(f"tracebound · report #{head.id}", body, DASH_CSS + REPORT_CSS)
