"""The lower half of the trace page: stage cards, the answer, tool calls, model steps, plan.

Each section is one function of the trace document; values are escaped by
:mod:`web.html` like everywhere else on the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from web.html import badge, esc, join, list_block, ms_text, tone_of

Trace = Mapping[str, Any]


def stages(t: Trace) -> str:
    gate = t.get("gatekeeper") or {}
    verifier = t.get("verifier") or {}
    executor = t.get("executor") or {}
    parse = executor.get("parse_status") or {}
    warnings = join(
        f"<li>{esc(n.get('rule'))} ({esc(n.get('claim_id'))}): {esc(n.get('message'))}</li>"
        for n in gate.get("warnings") or []
    )
    errors = join(
        f"<li>{esc(n.get('rule'))} ({esc(n.get('claim_id'))}): {esc(n.get('message'))}</li>"
        for n in gate.get("errors") or []
    )
    score = verifier.get("groundedness_score")
    gate_card = (
        f"<div class='card {tone_of(gate.get('status'))}'><div class='row'><h3>Gatekeeper</h3>"
        f"{badge(gate.get('status'), gate.get('status') or 'not run')}"
        f"{badge(gate.get('severity'), 'severity ' + str(gate.get('severity')))}</div>"
        f"<div class='meta'><span>rule set <b>{esc(gate.get('rule_set_version'))}</b></span>"
        f"<span>failed rules <b>{esc(', '.join(gate.get('failed_rules') or []) or None)}</b>"
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
        f"<div class='card {tone_of(verifier.get('verdict'))}'><div class='row'><h3>Verifier</h3>"
        f"{badge(verifier.get('verdict'), verifier.get('verdict') or 'not run')}</div>"
        "<div class='meta'>"
        f"<span>groundedness <b>{esc(f'{score:.2f}' if isinstance(score, float) else score)}</b>"
        f"</span><span>critical facts <b>{esc(verifier.get('critical_fact_count'))}</b></span>"
        f"<span>mode <b>{esc(verifier.get('mode'))}</b></span>"
        f"<span>round <b>{esc(verifier.get('round'))}</b></span></div>"
        f"<div class='muted' style='margin-top:6px'>{esc(verifier.get('rationale'))}</div></div>"
    )
    executor_card = (
        f"<div class='card none'><div class='row'><h3>Executor</h3>"
        f"{badge(parse.get('status'))}"
        f"</div><div class='meta'><span>answer version <b>{esc(executor.get('answer_version'))}"
        f"</b></span><span>round <b>{esc(executor.get('round'))}</b></span>"
        f"<span>{esc(parse.get('detail'))}</span></div>"
        + list_block("missing info", executor.get("missing_info"))
        + list_block("hypotheses", executor.get("hypotheses"))
        + "</div>"
    )
    return f"<div class='grid'>{gate_card}{verifier_card}</div>{executor_card}"


def resolved(t: Trace) -> str:
    """The run's alerts Alertmanager reported resolved; nothing while none is."""
    alerts = (t.get("run") or {}).get("resolved_alerts") or []
    if not alerts:
        return ""
    rows = join(
        f"<li><b>{esc(a.get('alertname'))}</b> {esc((a.get('labels') or {}).get('service'))}"
        f" <span class='muted'>fired {esc(a.get('startsAt'))}, resolved {esc(a.get('endsAt'))}"
        f" (<code>{esc(a.get('fingerprint'))}</code>)</span></li>"
        for a in alerts
    )
    return (
        f"<h2>Resolved alerts ({len(alerts)})</h2>"
        f"<div class='card good'><ul class='plain'>{rows}</ul></div>"
    )


def answer(t: Trace) -> str:
    answer = t.get("answer")
    if not answer:
        return "<h2>Answer</h2><div class='card none'>no answer yet</div>"
    guard = answer.get("guard") or {}
    violations = guard.get("violations") or []
    guard_status = "ok" if guard.get("ok") else "violations"
    actions = join(
        f"<li>{esc(a.get('action_text') if isinstance(a, Mapping) else a)}"
        + (
            f" <span class='muted'>— {esc(a.get('reason'))}</span>"
            if isinstance(a, Mapping) and a.get("reason")
            else ""
        )
        + "</li>"
        for a in answer.get("recommended_actions") or []
    )
    return (
        f"<h2>Answer</h2><div class='card {tone_of(answer.get('verdict'))}'><div class='row'>"
        f"{badge(answer.get('verdict'), answer.get('verdict'), big=True)}"
        f"<span>guard {badge(guard_status, 'ok' if guard.get('ok') else 'violations')}</span>"
        + (
            f"<span>{badge('replaced', 'answer replaced by guard')}</span>"
            if guard.get("replaced")
            else ""
        )
        + f"<span class='muted'>final status {esc(answer.get('final_status'))}</span></div>"
        f"<div class='answer-text'><pre>{esc(answer.get('user_facing_answer'))}</pre></div>"
        + (
            "<div class='label' style='margin-top:8px'>guard violations</div><ul class='plain'>"
            + join(f"<li>{esc(v)}</li>" for v in violations)
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


def tools(t: Trace) -> str:
    rows = join(
        f"<tr><td class='mono'>{esc(i.get('source_invocation_id'))}</td>"
        f"<td><code>{esc(i.get('tool_name'))}</code></td><td class='num'>{esc(i.get('round'))}</td>"
        f"<td>{esc(i.get('backend') or '-')}</td>"
        f"<td>{badge('ok', 'ok') if i.get('success') else badge('fail', 'failed')}"
        f" {esc(i.get('evidence_status'))}</td>"
        f"<td class='num'>{ms_text(i.get('duration_ms'))}</td>"
        f"<td class='mono'>{esc(i.get('input_params'))}</td>"
        f"<td>{esc(i.get('error_message') or i.get('output_preview'))}</td></tr>"
        for i in t.get("tool_invocations") or []
    )
    if not rows:
        return "<h2>Tool invocations</h2><div class='card none'>none</div>"
    return (
        "<h2>Tool invocations</h2><table><tr><th>invocation</th><th>tool</th>"
        "<th class='num'>round</th><th>backend</th><th>status</th><th class='num'>duration</th>"
        f"<th>params</th><th>output</th></tr>{rows}</table>"
    )


def _finish(reason: Any) -> str:
    """Why the model stopped; ``length`` (cut at the reply limit) counts as a failed call."""
    if not reason:
        return "–"
    return badge("fail", reason) if reason == "length" else esc(reason)


def steps(t: Trace) -> str:
    tokens = (t.get("tokens") or {}).get("total") or {}
    rows = join(
        f"<tr><td>{esc(s.get('agent_name'))}"
        f"{' ' + badge('low_confid', 'repair') if s.get('repair') else ''}"
        + (f"<div class='muted'>{esc(s['budget'])}</div>" if s.get("budget") else "")
        + f"</td><td class='num'>{esc(s.get('step_index'))}</td>"
        f"<td>{esc(s.get('model'))}</td><td>{esc(s.get('prompt_version'))}</td>"
        f"<td>{_finish(s.get('finish_reason'))}</td>"
        f"<td class='num'>{ms_text(s.get('duration_ms'))}</td>"
        f"<td class='num'>{esc(s.get('prompt_tokens'))}</td>"
        f"<td class='num'>{esc(s.get('completion_tokens'))}</td>"
        f"<td class='num'>{esc(s.get('token_count'))}</td></tr>"
        for s in t.get("agent_steps") or []
    )
    total = (
        f"<tr><th colspan='6'>total</th><th class='num'>{esc(tokens.get('prompt_tokens'))}</th>"
        f"<th class='num'>{esc(tokens.get('completion_tokens'))}</th>"
        f"<th class='num'>{esc(tokens.get('token_count'))}</th></tr>"
    )
    return (
        "<h2>Agent steps and tokens</h2><table><tr><th>agent</th><th class='num'>step</th>"
        "<th>model</th><th>prompt version</th><th>finish</th><th class='num'>duration</th>"
        "<th class='num'>prompt</th><th class='num'>completion</th><th class='num'>total</th></tr>"
        + (rows or "<tr><td colspan='9' class='muted'>no model calls recorded</td></tr>")
        + total
        + "</table>"
    )


def plan(t: Trace) -> str:
    plan = (t.get("run") or {}).get("plan") or {}
    if not plan:
        return ""
    return (
        "<h2>Plan</h2><div class='card none'>"
        f"<div>{esc(plan.get('selection_reason'))}</div>"
        + list_block("steps", plan.get("plan"))
        + f"<div class='muted' style='margin-top:6px'>{esc(plan.get('reasoning'))}</div></div>"
    )
