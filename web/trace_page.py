"""The trace page: one run's trace as a server-rendered HTML document.

The page reads top-down: the run, the timeline, each claim with its bindings
(the executor's excerpt next to the ref text the invocation recorded, coloured
by the gatekeeper's outcome), then the stage cards and tables of
:mod:`web.trace_sections`. It renders the very document the trace API serves,
and escapes every value of it (see :mod:`web.html`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from web import trace_sections as sections
from web.html import badge, clock, document, esc, join, ms_text, tone_of
from web.trace_sections import Trace

STAGE_TONE = {"gatekeeper": "gate", "verdict": "verify", "answer": "answer", "tools": "tools"}


def _trace_link(trace_id: Any, url: str | None) -> str:
    """The run's distributed trace: a link into the trace UI, or the bare id."""
    code = f"<code>{esc(trace_id)}</code>"
    return f'<a href="{esc(url)}" rel="noreferrer">{code}</a>' if url else code


def _header(t: Trace, trace_url: str | None) -> str:
    run = t.get("run") or {}
    answer = t.get("answer") or {}
    verdict = run.get("verdict") or answer.get("verdict")
    tokens = (t.get("tokens") or {}).get("total") or {}
    meta = [
        ("run", f"<code>{esc(run.get('run_id'))}</code>"),
        ("status", badge(run.get("status"))),
        ("mode", esc(run.get("mode"))),
        ("skill", esc(run.get("selected_skill"))),
        ("narrow scope", esc(run.get("narrow_scope"))),
        ("rounds", esc(run.get("round"))),
        ("requested", esc(run.get("requested_at"))),
        ("by", esc(run.get("requested_by"))),
        ("latency", ms_text(run.get("latency_ms"))),
        ("tokens", esc(tokens.get("token_count"))),
    ]
    if run.get("session_id"):
        meta.insert(1, ("session", f"<code>{esc(run.get('session_id'))}</code>"))
    if run.get("resolved_at"):
        meta.append(("resolved", esc(run.get("resolved_at"))))
    if run.get("trace_id"):
        meta.append(("trace", _trace_link(run.get("trace_id"), trace_url)))
    for fallback in run.get("fallbacks") or []:
        cause = f"{fallback.get('kind')}: {fallback.get('reason')}"
        meta.append((f"{esc(fallback.get('role'))} rules fallback because", esc(cause)))
    return (
        '<header class="card"><div class="row">'
        f"{badge(verdict, verdict or 'no verdict', big=True)}"
        f"<h1>{esc(run.get('query'))}</h1></div>"
        f'<div class="meta">{join(f"<span>{k} <b>{v}</b></span>" for k, v in meta)}</div>'
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
                clock(stage.get("first")),
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
                rows.append((label, "tools", start, duration, None, clock(inv.get("created_at"))))
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
            f"<tr><td>{esc(label)}</td><td class='mono'>{when}</td>"
            f"<td class='num'>{'+' + ms_text(at) if isinstance(at, int) else '–'}</td>"
            f"<td class='num'>{ms_text(since)}</td><td class='num'>{ms_text(span)}</td>"
            f"<td class='bar'>{bar}</td></tr>"
        )
    return (
        "<h2>Timeline</h2><table class='timeline'><tr><th>stage</th><th>at</th>"
        "<th class='num'>since request</th><th class='num'>after previous</th>"
        "<th class='num'>duration</th><th>request → answer</th></tr>"
        f"{join(body)}</table>"
    )


def _binding(b: Mapping[str, Any]) -> str:
    gate = b.get("gatekeeper") or {}
    status = gate.get("status")
    notes = [f"{esc(gate.get('rule'))}: {esc(gate.get('reason'))}"] if gate.get("reason") else []
    notes += [f"{esc(w.get('rule'))}: {esc(w.get('message'))}" for w in gate.get("warnings") or []]
    cited = b.get("executor_cited")
    if cited:
        notes.append(
            "executor cited invocation "
            f"<code>{esc(cited.get('source_invocation_id'))}</code>, raw_path "
            f"<code>{esc(cited.get('raw_path'))}</code>"
        )
    ref_status = b.get("recorded_ref_status")
    recorded = (
        f"<pre>{esc(b.get('recorded_ref_text'))}</pre>"
        if ref_status == "found"
        else f"{badge(ref_status, 'no recorded ref')}"
    )
    return (
        f"<tr class='binding-head {tone_of(status)}'><td colspan='2'><div class='row'>"
        f"<span class='label'>binding {esc(b.get('binding_index'))}</span>"
        f"<code>{esc(b.get('tool_name'))}</code>"
        f"<span>invocation <code>{esc(b.get('source_invocation_id'))}</code></span>"
        f"<span>raw_path <code>{esc(b.get('raw_path'))}</code></span>"
        f"<span>gatekeeper {badge(status)}</span></div>"
        + (f"<div class='muted'>{'<br>'.join(notes)}</div>" if notes else "")
        + "</td></tr>"
        f"<tr class='{tone_of(status)}'><td class='side status'>"
        "<div class='label'>evidence_excerpt (executor)</div>"
        f"<pre>{esc(b.get('evidence_excerpt'))}</pre></td>"
        f"<td class='side status'><div class='label'>recorded ref text (tool invocation)</div>"
        f"{recorded}</td></tr>"
    )


FACT_TONE = {"checked": "found", "contradicted": "fail", "not stated": "skipped"}


def _fact(fact: dict[str, Any]) -> str:
    """One fact of a claim: its verdict, what it is, and what it was checked against."""
    outcome = str(fact.get("outcome") or ("checked" if fact.get("found") else "not stated"))
    return (
        f"<tr><td>{badge(FACT_TONE.get(outcome), outcome)}</td>"
        f"<td>{esc(fact.get('kind'))}: <code>{esc(fact.get('fact'))}</code></td>"
        f"<td class='muted'>{esc(fact.get('detail'))}</td></tr>"
    )


def _claim(c: Mapping[str, Any]) -> str:
    verifier = c.get("verifier") or {}
    v_status = verifier.get("status")
    g_status = (c.get("gatekeeper") or {}).get("status")
    tone = tone_of(v_status) if v_status else tone_of(g_status)
    if tone_of(g_status) == "bad":
        tone = "bad"
    facts = join(_fact(f) for f in verifier.get("facts") or [])
    errors = join(
        f"<div class='muted'>{esc(n.get('rule'))}: {esc(n.get('message'))}</div>"
        for n in (c.get("gatekeeper") or {}).get("errors") or []
    )
    bindings = join(_binding(b) for b in c.get("bindings") or [])
    return (
        f"<section class='card {tone}'><div class='row'>"
        f"<h3><code>{esc(c.get('claim_id'))}</code></h3>"
        f"{badge(None, c.get('claim_type'))}"
        f"<span>gatekeeper {badge(g_status)}</span>"
        f"<span>verifier {badge(v_status, v_status or 'not judged')}</span></div>"
        f"<div class='claim-text'>{esc(c.get('claim_text'))}</div>"
        + (f"<div class='muted'>verifier: {esc(verifier.get('reason'))}</div>" if verifier else "")
        + (f"<table class='facts'>{facts}</table>" if facts else "")
        + errors
        + (
            f"<table class='evidence'>{bindings}</table>"
            if bindings
            else "<div class='muted'>no evidence bindings</div>"
        )
        + "</section>"
    )


def render_page(t: Trace, trace_url: str | None = None) -> str:
    """The whole trace page of one run, every value escaped; ``trace_url`` links its trace."""
    run = t.get("run") or {}
    claims = list(t.get("claims") or [])
    body = (
        _header(t, trace_url)
        + sections.resolved(t)
        + _timeline(t)
        + f"<h2>Claims ({len(claims)})</h2>"
        + (join(_claim(c) for c in claims) or "<div class='card none'>no claims</div>")
        + "<h2>Gatekeeper and verifier</h2>"
        + sections.stages(t)
        + sections.answer(t)
        + sections.plan(t)
        + sections.tools(t)
        + sections.steps(t)
    )
    return document(f"trace {run.get('run_id', '')}", body)
