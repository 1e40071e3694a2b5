"""The trace page: one run's trace as a server-rendered HTML document.

The page is server-rendered HTML with inline CSS only: no script, no external
asset, so it renders the same in any browser, offline, and a strict
Content-Security-Policy can forbid everything else. Tool output, log lines and
model text in a trace are untrusted, so every value goes through
:func:`html.escape`; CSS class names come from fixed tables, never from data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

Trace = Mapping[str, Any]

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# status → colour class: green for pass/supported, red for fail/refuted, amber between.
TONE = {
    "pass": "good",
    "PASS": "good",
    "SUPPORTED": "good",
    "answered": "good",
    "ok": "good",
    "found": "good",
    "fail": "bad",
    "REJECT": "bad",
    "REFUTED": "bad",
    "reject": "bad",
    "violations": "bad",
    "no_ref": "bad",
    "no_invocation": "bad",
    "backfilled": "warn",
    "LOW_CONFID": "warn",
    "NOT_ENOUGH_INFO": "warn",
    "low_confid": "warn",
    "replaced": "warn",
    "skipped": "warn",
}
STAGE_TONE = {"gatekeeper": "gate", "verdict": "verify", "answer": "answer", "tools": "tools"}

CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI","Noto Sans","Noto Sans CJK SC",
 sans-serif;color:#1d2330;background:#f4f6f9}
main{max-width:1240px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:21px;margin:0 0 6px}
h2{font-size:16px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid #d5dbe5}
h3{font-size:14px;margin:0}
code,pre,.mono{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,monospace}
pre{white-space:pre-wrap;word-break:break-word;margin:0}
.meta{color:#556;display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 0}
.meta b{color:#1d2330;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:700;
 letter-spacing:.02em;border:1px solid transparent;white-space:nowrap}
.badge.big{font-size:15px;padding:3px 12px}
.good{background:#e3f6e8;color:#16622e;border-color:#9bd5ab}
.bad{background:#fde7e7;color:#9b1c1c;border-color:#f0a8a8}
.warn{background:#fff3d6;color:#8a5a00;border-color:#f0cf7d}
.none{background:#eceff3;color:#4a5568;border-color:#cfd6df}
.card{background:#fff;border:1px solid #d9dfe8;border-radius:8px;padding:14px 16px;margin:0 0 14px}
.card.good{border-left:6px solid #2f9e55;background:#fff}
.card.bad{border-left:6px solid #d64545;background:#fff}
.card.warn{border-left:6px solid #e0a100;background:#fff}
.card.none{border-left:6px solid #9aa5b4;background:#fff}
.card.good,.card.bad,.card.warn,.card.none{color:inherit}
.row{display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.claim-text{font-size:15px;font-weight:600;margin:8px 0 6px}
.muted{color:#667085}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid #e4e8ef}
th{font-size:12px;color:#556;background:#f0f3f7;font-weight:600}
table.evidence{table-layout:fixed;margin-top:8px}
table.evidence td.side{width:50%}
tr.good td.status{background:#e3f6e8}
tr.bad td.status{background:#fde7e7}
tr.warn td.status{background:#fff3d6}
.binding-head{background:#f7f9fc}
.label{font-size:11px;text-transform:uppercase;color:#667085;letter-spacing:.04em;margin-bottom:2px}
.facts{display:flex;flex-wrap:wrap;gap:4px;margin-top:6px}
.timeline td.bar{width:46%}
.track{position:relative;height:14px;background:#eef1f5;border-radius:3px}
.seg{position:absolute;top:0;height:14px;min-width:3px;border-radius:3px;background:#5b7fbf}
.seg.gate{background:#7a5bbf}.seg.verify{background:#2f9e55}.seg.answer{background:#1d2330}
.seg.tools{background:#d08a1e}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.answer-text{font-size:15px;background:#fbfcfe;border:1px solid #e4e8ef;border-radius:6px;
 padding:10px 12px;margin-top:8px}
ul.plain{margin:6px 0 0;padding-left:20px}
"""


def _e(value: Any) -> str:
    """Escaped text of any value; None shows as a dash."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return escape(value, quote=True)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return escape(str(value))
    return escape(json.dumps(value, ensure_ascii=False, sort_keys=True), quote=True)


def _tone(status: Any) -> str:
    return TONE.get(status, "none") if isinstance(status, str) else "none"


def _badge(status: Any, text: Any = None, big: bool = False) -> str:
    size = " big" if big else ""
    shown = _e(text if text is not None else status)
    return f'<span class="badge {_tone(status)}{size}">{shown}</span>'


def _ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{int(value)} ms"


def _clock(iso: Any) -> str:
    """The time of day of an ISO timestamp (the date is in the header), full value on hover."""
    if not isinstance(iso, str) or len(iso) < 23 or iso[10] != "T":
        return _e(iso)
    return f"<span title='{_e(iso)}'>{_e(iso[11:23])}</span>"


def _join(parts: Iterable[str]) -> str:
    return "".join(parts)


def _header(t: Trace) -> str:
    run = t.get("run") or {}
    answer = t.get("answer") or {}
    verdict = run.get("verdict") or answer.get("verdict")
    tokens = (t.get("tokens") or {}).get("total") or {}
    meta = [
        ("run", f"<code>{_e(run.get('run_id'))}</code>"),
        ("status", _badge(run.get("status"))),
        ("mode", _e(run.get("mode"))),
        ("skill", _e(run.get("selected_skill"))),
        ("narrow scope", _e(run.get("narrow_scope"))),
        ("rounds", _e(run.get("round"))),
        ("requested", _e(run.get("requested_at"))),
        ("by", _e(run.get("requested_by"))),
        ("latency", _ms(run.get("latency_ms"))),
        ("tokens", _e(tokens.get("token_count"))),
    ]
    if run.get("session_id"):
        meta.insert(1, ("session", f"<code>{_e(run.get('session_id'))}</code>"))
    return (
        '<header class="card"><div class="row">'
        f"{_badge(verdict, verdict or 'no verdict', big=True)}"
        f"<h1>{_e(run.get('query'))}</h1></div>"
        f'<div class="meta">{_join(f"<span>{k} <b>{v}</b></span>" for k, v in meta)}</div>'
        "</header>"
    )


def _timeline(t: Trace) -> str:
    stages = list(t.get("timeline") or [])
    invocations = list(t.get("tool_invocations") or [])
    rows: list[tuple[str, str, Any, Any, Any, str]] = []
    for stage in stages:
        rows.append(
            (
                stage.get("label") or stage.get("stage"),
                STAGE_TONE.get(stage.get("stage"), ""),
                stage.get("at_ms"),
                stage.get("span_ms"),
                stage.get("since_previous_ms"),
                _clock(stage.get("first")),
            )
        )
        if stage.get("stage") == "tools":
            for inv in invocations:
                label = (
                    f"  ↳ {inv.get('tool_name')} #{inv.get('source_invocation_id')}"
                    f" (round {inv.get('round')})"
                )
                at = inv.get("at_ms")
                duration = inv.get("duration_ms")
                start = at - duration if isinstance(at, int) and isinstance(duration, int) else at
                rows.append((label, "tools", start, duration, None, _clock(inv.get("created_at"))))
    ends = [
        (r[2] or 0) + (r[3] or 0) for r in rows if isinstance(r[2], int) and isinstance(r[3], int)
    ]
    total = max([*ends, 1])
    body = []
    for label, tone, at, span, since, when in rows:
        left = max(0.0, min(100.0, 100.0 * (at or 0) / total)) if isinstance(at, int) else 0.0
        width = max(0.0, min(100.0 - left, 100.0 * (span or 0) / total))
        bar = (
            f'<div class="track"><div class="seg {tone}" '
            f'style="left:{left:.2f}%;width:{width:.2f}%"></div></div>'
        )
        body.append(
            f"<tr><td>{_e(label)}</td><td class='mono'>{when}</td>"
            f"<td class='num'>{'+' + _ms(at) if isinstance(at, int) else '–'}</td>"
            f"<td class='num'>{_ms(since)}</td><td class='num'>{_ms(span)}</td>"
            f"<td class='bar'>{bar}</td></tr>"
        )
    return (
        "<h2>Timeline</h2><table class='timeline'><tr><th>stage</th><th>at</th>"
        "<th class='num'>since request</th><th class='num'>after previous</th>"
        "<th class='num'>duration</th><th>request → answer</th></tr>"
        f"{_join(body)}</table>"
    )


def _binding(b: Mapping[str, Any]) -> str:
    gate = b.get("gatekeeper") or {}
    status = gate.get("status")
    notes = [f"{_e(gate.get('rule'))}: {_e(gate.get('reason'))}"] if gate.get("reason") else []
    notes += [f"{_e(w.get('rule'))}: {_e(w.get('message'))}" for w in gate.get("warnings") or []]
    cited = b.get("executor_cited")
    if cited:
        notes.append(
            "executor cited invocation "
            f"<code>{_e(cited.get('source_invocation_id'))}</code>, raw_path "
            f"<code>{_e(cited.get('raw_path'))}</code>"
        )
    ref_status = b.get("recorded_ref_status")
    recorded = (
        f"<pre>{_e(b.get('recorded_ref_text'))}</pre>"
        if ref_status == "found"
        else f"{_badge(ref_status, 'no recorded ref')}"
    )
    return (
        f"<tr class='binding-head {_tone(status)}'><td colspan='2'><div class='row'>"
        f"<span class='label'>binding {_e(b.get('binding_index'))}</span>"
        f"<code>{_e(b.get('tool_name'))}</code>"
        f"<span>invocation <code>{_e(b.get('source_invocation_id'))}</code></span>"
        f"<span>raw_path <code>{_e(b.get('raw_path'))}</code></span>"
        f"<span>gatekeeper {_badge(status)}</span></div>"
        + (f"<div class='muted'>{'<br>'.join(notes)}</div>" if notes else "")
        + "</td></tr>"
        f"<tr class='{_tone(status)}'><td class='side status'>"
        "<div class='label'>evidence_excerpt (executor)</div>"
        f"<pre>{_e(b.get('evidence_excerpt'))}</pre></td>"
        f"<td class='side status'><div class='label'>recorded ref text (tool invocation)</div>"
        f"{recorded}</td></tr>"
    )


def _claim(c: Mapping[str, Any]) -> str:
    verifier = c.get("verifier") or {}
    v_status = verifier.get("status")
    g_status = (c.get("gatekeeper") or {}).get("status")
    tone = _tone(v_status) if v_status else _tone(g_status)
    if _tone(g_status) == "bad":
        tone = "bad"
    facts = _join(
        _badge("found" if f.get("found") else "fail", f"{f.get('kind')}: {f.get('fact')}")
        for f in verifier.get("facts") or []
    )
    errors = _join(
        f"<div class='muted'>{_e(n.get('rule'))}: {_e(n.get('message'))}</div>"
        for n in (c.get("gatekeeper") or {}).get("errors") or []
    )
    bindings = _join(_binding(b) for b in c.get("bindings") or [])
    return (
        f"<section class='card {tone}'><div class='row'>"
        f"<h3><code>{_e(c.get('claim_id'))}</code></h3>"
        f"{_badge(None, c.get('claim_type'))}"
        f"<span>gatekeeper {_badge(g_status)}</span>"
        f"<span>verifier {_badge(v_status, v_status or 'not judged')}</span></div>"
        f"<div class='claim-text'>{_e(c.get('claim_text'))}</div>"
        + (f"<div class='muted'>verifier: {_e(verifier.get('reason'))}</div>" if verifier else "")
        + (f"<div class='facts'>{facts}</div>" if facts else "")
        + errors
        + (
            f"<table class='evidence'>{bindings}</table>"
            if bindings
            else "<div class='muted'>no evidence bindings</div>"
        )
        + "</section>"
    )


def _stages(t: Trace) -> str:
    gate = t.get("gatekeeper") or {}
    verifier = t.get("verifier") or {}
    executor = t.get("executor") or {}
    parse = executor.get("parse_status") or {}
    warnings = _join(
        f"<li>{_e(n.get('rule'))} ({_e(n.get('claim_id'))}): {_e(n.get('message'))}</li>"
        for n in gate.get("warnings") or []
    )
    errors = _join(
        f"<li>{_e(n.get('rule'))} ({_e(n.get('claim_id'))}): {_e(n.get('message'))}</li>"
        for n in gate.get("errors") or []
    )
    score = verifier.get("groundedness_score")
    gate_card = (
        f"<div class='card {_tone(gate.get('status'))}'><div class='row'><h3>Gatekeeper</h3>"
        f"{_badge(gate.get('status'), gate.get('status') or 'not run')}"
        f"{_badge(gate.get('severity'), 'severity ' + str(gate.get('severity')))}</div>"
        f"<div class='meta'><span>rule set <b>{_e(gate.get('rule_set_version'))}</b></span>"
        f"<span>failed rules <b>{_e(', '.join(gate.get('failed_rules') or []) or None)}</b>"
        "</span></div>"
        + (
            f"<div class='label'>warnings</div><ul class='plain'>{warnings}</ul>"
            if warnings
            else ""
        )
        + (f"<div class='label'>errors</div><ul class='plain'>{errors}</ul>" if errors else "")
        + "</div>"
    )
    verifier_card = (
        f"<div class='card {_tone(verifier.get('verdict'))}'><div class='row'><h3>Verifier</h3>"
        f"{_badge(verifier.get('verdict'), verifier.get('verdict') or 'not run')}</div>"
        "<div class='meta'>"
        f"<span>groundedness <b>{_e(f'{score:.2f}' if isinstance(score, float) else score)}</b>"
        f"</span><span>critical facts <b>{_e(verifier.get('critical_fact_count'))}</b></span>"
        f"<span>mode <b>{_e(verifier.get('mode'))}</b></span>"
        f"<span>round <b>{_e(verifier.get('round'))}</b></span></div>"
        f"<div class='muted' style='margin-top:6px'>{_e(verifier.get('rationale'))}</div></div>"
    )
    executor_card = (
        f"<div class='card none'><div class='row'><h3>Executor</h3>"
        f"{_badge('pass' if parse.get('status') == 'valid' else 'fail', parse.get('status'))}"
        f"</div><div class='meta'><span>answer version <b>{_e(executor.get('answer_version'))}"
        f"</b></span><span>round <b>{_e(executor.get('round'))}</b></span>"
        f"<span>{_e(parse.get('detail'))}</span></div>"
        + _list_block("missing info", executor.get("missing_info"))
        + _list_block("hypotheses", executor.get("hypotheses"))
        + "</div>"
    )
    return f"<div class='grid'>{gate_card}{verifier_card}</div>{executor_card}"


def _list_block(title: str, items: Any) -> str:
    items = list(items or [])
    if not items:
        return ""
    return (
        f"<div class='label'>{_e(title)}</div><ul class='plain'>"
        + _join(f"<li>{_e(i)}</li>" for i in items)
        + "</ul>"
    )


def _answer(t: Trace) -> str:
    answer = t.get("answer")
    if not answer:
        return "<h2>Answer</h2><div class='card none'>no answer yet</div>"
    guard = answer.get("guard") or {}
    violations = guard.get("violations") or []
    guard_status = "ok" if guard.get("ok") else "violations"
    actions = _join(
        f"<li>{_e(a.get('action_text') if isinstance(a, Mapping) else a)}"
        + (
            f" <span class='muted'>— {_e(a.get('reason'))}</span>"
            if isinstance(a, Mapping) and a.get("reason")
            else ""
        )
        + "</li>"
        for a in answer.get("recommended_actions") or []
    )
    return (
        f"<h2>Answer</h2><div class='card {_tone(answer.get('verdict'))}'><div class='row'>"
        f"{_badge(answer.get('verdict'), answer.get('verdict'), big=True)}"
        f"<span>guard {_badge(guard_status, 'ok' if guard.get('ok') else 'violations')}</span>"
        + (
            f"<span>{_badge('replaced', 'answer replaced by guard')}</span>"
            if guard.get("replaced")
            else ""
        )
        + f"<span class='muted'>final status {_e(answer.get('final_status'))}</span></div>"
        f"<div class='answer-text'><pre>{_e(answer.get('user_facing_answer'))}</pre></div>"
        + (
            "<div class='label' style='margin-top:8px'>guard violations</div><ul class='plain'>"
            + _join(f"<li>{_e(v)}</li>" for v in violations)
            + "</ul>"
            if violations
            else ""
        )
        + (
            f"<div class='label' style='margin-top:8px'>recommended actions</div>"
            f"<ul class='plain'>{actions}</ul>"
            if actions
            else ""
        )
        + "</div>"
    )


def _tools(t: Trace) -> str:
    rows = _join(
        f"<tr><td class='mono'>{_e(i.get('source_invocation_id'))}</td>"
        f"<td><code>{_e(i.get('tool_name'))}</code></td><td class='num'>{_e(i.get('round'))}</td>"
        f"<td>{_badge('ok', 'ok') if i.get('success') else _badge('fail', 'failed')}"
        f" {_e(i.get('evidence_status'))}</td>"
        f"<td class='num'>{_ms(i.get('duration_ms'))}</td>"
        f"<td class='mono'>{_e(i.get('input_params'))}</td>"
        f"<td>{_e(i.get('error_message') or i.get('output_preview'))}</td></tr>"
        for i in t.get("tool_invocations") or []
    )
    if not rows:
        return "<h2>Tool invocations</h2><div class='card none'>none</div>"
    return (
        "<h2>Tool invocations</h2><table><tr><th>invocation</th><th>tool</th>"
        "<th class='num'>round</th><th>status</th><th class='num'>duration</th><th>params</th>"
        f"<th>output</th></tr>{rows}</table>"
    )


def _steps(t: Trace) -> str:
    tokens = (t.get("tokens") or {}).get("total") or {}
    rows = _join(
        f"<tr><td>{_e(s.get('agent_name'))}</td><td class='num'>{_e(s.get('step_index'))}</td>"
        f"<td>{_e(s.get('model'))}</td><td>{_e(s.get('prompt_version'))}</td>"
        f"<td class='num'>{_ms(s.get('duration_ms'))}</td>"
        f"<td class='num'>{_e(s.get('prompt_tokens'))}</td>"
        f"<td class='num'>{_e(s.get('completion_tokens'))}</td>"
        f"<td class='num'>{_e(s.get('token_count'))}</td></tr>"
        for s in t.get("agent_steps") or []
    )
    total = (
        f"<tr><th colspan='5'>total</th><th class='num'>{_e(tokens.get('prompt_tokens'))}</th>"
        f"<th class='num'>{_e(tokens.get('completion_tokens'))}</th>"
        f"<th class='num'>{_e(tokens.get('token_count'))}</th></tr>"
    )
    return (
        "<h2>Agent steps and tokens</h2><table><tr><th>agent</th><th class='num'>step</th>"
        "<th>model</th><th>prompt version</th><th class='num'>duration</th>"
        "<th class='num'>prompt</th><th class='num'>completion</th><th class='num'>total</th></tr>"
        + (rows or "<tr><td colspan='8' class='muted'>no model calls recorded</td></tr>")
        + total
        + "</table>"
    )


def _plan(t: Trace) -> str:
    plan = (t.get("run") or {}).get("plan") or {}
    if not plan:
        return ""
    return (
        "<h2>Plan</h2><div class='card none'>"
        f"<div>{_e(plan.get('selection_reason'))}</div>"
        + _list_block("steps", plan.get("plan"))
        + f"<div class='muted' style='margin-top:6px'>{_e(plan.get('reasoning'))}</div></div>"
    )


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )


def render_page(t: Trace) -> str:
    """The whole trace page of one run, every value escaped."""
    run = t.get("run") or {}
    claims = list(t.get("claims") or [])
    body = (
        _header(t)
        + _timeline(t)
        + f"<h2>Claims ({len(claims)})</h2>"
        + (_join(_claim(c) for c in claims) or "<div class='card none'>no claims</div>")
        + "<h2>Gatekeeper and verifier</h2>"
        + _stages(t)
        + _answer(t)
        + _plan(t)
        + _tools(t)
        + _steps(t)
    )
    return _document(f"trace {run.get('run_id', '')}", body)


def render_message(title: str, message: str) -> str:
    """A plain page for 401/404/503, escaped like the trace itself."""
    return _document(
        title, f"<div class='card none'><h1>{_e(title)}</h1><p>{_e(message)}</p></div>"
    )
