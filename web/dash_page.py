"""The runs dashboard: the latest runs, their filters, counts and pictures, as one HTML page.

Everything is server-rendered and works without script: the filters are a GET
form, paging is a link carrying the run list's cursor, and the pictures are
inline SVG from :mod:`web.charts`; the one same-origin script
(:mod:`web.live`) only refreshes the counts and the newest runs. Queries, alert
labels, skills and model names come from events, so every value goes through
:func:`web.html.esc`, and links are built with ``urlencode`` from the parsed
filter, never from raw text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from projections.dashboard import FALLBACK, RunDetails, Summary
from projections.views import STATUSES, VERDICTS, RunList, RunSummary
from web import charts, live
from web.html import badge, document, esc, join, ms_text

FILTER_FIELDS = ("verdict", "mode", "status", "skill", "service", "since", "until", "q")
MODES = ("CHAT", "AIOPS")
DASH_CSS = """
form.filters{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:8px 12px;
 align-items:end}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#556;gap:2px}
form.filters input,form.filters select{font:inherit;padding:4px 6px;border:1px solid #cfd6df;
 border-radius:4px;background:#fff}
form.filters .actions{display:flex;gap:10px;align-items:center}
button{font:inherit;padding:5px 14px;border-radius:4px;border:1px solid #3d5f9e;
 background:#4a6fb0;color:#fff;cursor:pointer}
.counts{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.counts a{text-decoration:none}
svg.chart{width:100%;height:auto;display:block}
table.runs td{font-size:13px}
table.runs td.q{max-width:360px;word-break:break-word}
td.nowrap{white-space:nowrap}
td.small{font-size:12px}
.pager{display:flex;gap:18px;margin-top:12px}
nav.top{display:flex;gap:16px;align-items:center;margin-bottom:10px}
nav.top form{margin-left:auto}
"""


@dataclass(frozen=True, slots=True)
class DashView:
    """What one dashboard page shows: the filter as given, the page and the summary."""

    params: Mapping[str, str]  # the filter fields as submitted (already validated)
    page: RunList
    details: Mapping[str, RunDetails]
    summary: Summary
    signed_in: bool = False  # a token cookie is in use: offer to forget it
    # (role, state, problem) of each service of the local stack that serves the page
    roles: tuple[tuple[str, str, str], ...] = ()


def _link(params: Mapping[str, str], **changes: str | None) -> str:
    kept = {k: params[k] for k in FILTER_FIELDS if params.get(k)}
    for key, value in changes.items():
        if value is None:
            kept.pop(key, None)
        else:
            kept[key] = value
    return "/?" + urlencode(kept) if kept else "/"


def _select(name: str, label: str, options: tuple[str, ...], chosen: str) -> str:
    items = [f"<option value=''{' selected' if not chosen else ''}>any</option>"]
    items += [
        f"<option value='{esc(o)}'{' selected' if o == chosen else ''}>{esc(o)}</option>"
        for o in options
    ]
    return f"<label>{esc(label)}<select name='{name}'>{join(items)}</select></label>"


def _input(name: str, label: str, value: str, kind: str = "text", hint: str = "") -> str:
    return (
        f"<label>{esc(label)}<input type='{kind}' name='{name}' value='{esc(value)}'"
        f" placeholder='{esc(hint)}' maxlength='200'></label>"
    )


def _filters(params: Mapping[str, str]) -> str:
    p = {k: params.get(k, "") for k in FILTER_FIELDS}
    return (
        "<form class='filters card' method='get' action='/' id='filters'>"
        + _select("verdict", "verdict", VERDICTS, p["verdict"])
        + _select("mode", "mode", MODES, p["mode"])
        + _select("status", "status", STATUSES, p["status"])
        + _input("skill", "skill", p["skill"], hint="e.g. cpu-diagnosis")
        + _input("service", "service label", p["service"], hint="e.g. payment-service")
        + _input("since", "since (UTC)", p["since"], "datetime-local")
        + _input("until", "until (UTC)", p["until"], "datetime-local")
        + _input("q", "question contains", p["q"], hint="text search")
        + "<div class='actions'><button type='submit'>Apply</button>"
        "<a href='/'>clear</a></div></form>"
    )


def _counts(view: DashView) -> str:
    verdicts = view.summary.verdicts
    parts = [f"<b id='total'>{view.summary.total}</b> runs match"]
    for verdict in (*VERDICTS, "none"):
        n = verdicts.get(verdict, 0)
        shown = f"{verdict if verdict != 'none' else 'no verdict'} {n}"
        pill = f"<span class='count' data-verdict='{esc(verdict)}'>{badge(verdict, shown)}</span>"
        if verdict != "none":
            pill = f"<a href='{esc(_link(view.params, verdict=verdict, cursor=None))}'>{pill}</a>"
        parts.append(pill)
    return f"<div class='counts card' id='counts'>{join(parts)}</div>"


def _pictures(s: Summary) -> str:
    sample = f"the latest {s.sampled} runs of the selection"
    buckets = [(b.start, b.verdicts) for b in s.buckets]
    cards = [
        ("Verdicts over time", charts.verdict_bars(buckets, s.bucket_width, "verdicts over time")),
        (
            "Latency of answered runs",
            charts.latency_histogram(s.latencies, s.percentiles, "latency distribution"),
        ),
        (
            "Fallback, unfinished runs and dead letters",
            charts.share_bars(
                [
                    (f"{FALLBACK} (any role)", s.fallbacks, s.judged),
                    ("not answered", s.unfinished, s.sampled),
                    ("dead letters / runs", s.dead_letters, s.sampled),
                ]
                if s.sampled
                else [],
                "fallback, unfinished and dead-letter rate",
            ),
        ),
        ("Time per stage (mean)", charts.stage_bars(s.stages, "per-stage time")),
    ]
    body = join(
        f"<div class='card picture'><h3>{esc(title)}</h3>{svg}</div>" for title, svg in cards
    )
    heading = f"<h2>Pictures <span class='muted'>({esc(sample)})</span></h2>"
    return f"{heading}<div class='grid'>{body}</div>"


def _subject(run: RunSummary, details: RunDetails | None) -> str:
    if details is not None and details.alertname:
        more = f" +{details.alert_count - 1}" if details.alert_count > 1 else ""
        where = f" · {esc(details.alert_service)}" if details.alert_service else ""
        return f"<b>{esc(details.alertname)}</b>{where}{esc(more)}"
    return esc(run.query)


def _engine(details: RunDetails | None) -> str:
    if details is None:
        return "–"
    mode = details.verifier_mode
    verifier = ""
    if mode:
        tone = "warn" if mode == FALLBACK else "none"
        verifier = f" <span class='badge {tone}' title='verifier mode'>{esc(mode)}</span>"
    return (
        f"<div title='models'>{esc(details.models or 'no model')}</div>"
        f"<div class='muted'><span title='gatekeeper rule set'>{esc(details.rule_set_version)}"
        f"</span>{verifier}</div>"
    )


def _time(iso: str | None) -> str:
    if not iso:
        return "–"
    return f"<span title='{esc(iso)}'>{esc(iso[:19].replace('T', ' '))}</span>"


def _row(run: RunSummary, details: RunDetails | None) -> str:
    href = "/runs/" + quote(run.run_id, safe="")
    cells = [
        _time(run.requested_at),
        esc(run.mode),
        f"<a href='{esc(href)}' class='trace-link'>{_subject(run, details)}</a>",
        esc(run.selected_skill),
        badge(run.verdict, run.verdict or "–"),
        f"{badge(run.status)} {esc(run.final_status or '')}",
        esc(run.round),
        ms_text(run.latency_ms),
        _engine(details),
    ]
    tds = join(
        f"<td class='{cls}'>{cell}</td>" for cls, cell in zip(COLUMN_CLASSES, cells, strict=True)
    )
    return f"<tr class='run' data-run='{esc(run.run_id)}'>{tds}</tr>"


COLUMNS = (
    "time (UTC)",
    "mode",
    "question or alert",
    "skill",
    "verdict",
    "status",
    "rounds",
    "latency",
    "model · rules · verifier",
)
COLUMN_CLASSES = ("mono nowrap", "", "q", "", "", "", "num", "num", "small")


def _table(view: DashView) -> str:
    runs = view.page.runs
    if not runs:
        return "<div class='card none' id='no-runs'>No run matches these filters.</div>"
    head = join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    rows = join(_row(r, view.details.get(r.run_id)) for r in runs)
    return (
        f"<table class='runs' id='runs'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _pager(view: DashView) -> str:
    links: list[str] = []
    if view.params.get("cursor"):
        links.append(f"<a id='first-page' href='{esc(_link(view.params))}'>« newest</a>")
    if view.page.next_cursor:
        after = _link(view.params, cursor=view.page.next_cursor)
        links.append(f"<a id='next-page' href='{esc(after)}'>older runs »</a>")
    return f"<div class='pager'>{join(links)}</div>"


def nav(signed_in: bool) -> str:
    """The header every browsing page shares (with the forget-token form when signed in)."""
    leave = (
        "<form method='post' action='/logout'><button type='submit'>forget token</button></form>"
        if signed_in
        else ""
    )
    return (
        "<nav class='top'><b>tracebound</b><a href='/'>runs</a><a href='/reports'>reports</a>"
        f"<a href='/openapi.json'>API</a>{leave}</nav>"
    )


ROLE_BADGE = {"running": "PASS", "stuck": "LOW_CONFID", "down": "REJECT", "stopped": "none"}


def _roles(view: DashView) -> str:
    """The stack's roles with their state; each one down or stuck says why."""
    if not view.roles:
        return ""
    pills = [
        f"<span class='role' data-state='{esc(state)}'>"
        f"{badge(ROLE_BADGE[state], f'{name} {state}')}</span>"
        for name, state, _ in view.roles
    ]
    problems = "".join(f"<li>{esc(problem)}</li>" for _, _, problem in view.roles if problem)
    listed = f"<ul class='problems'>{problems}</ul>" if problems else ""
    return f"<div class='counts card' id='roles'>{join(pills)}{listed}</div>"


def render_dashboard(view: DashView) -> str:
    """The whole dashboard page."""
    body = (
        nav(view.signed_in)
        + "<h1>Runs</h1>"
        + _roles(view)
        + _filters(view.params)
        + _counts(view)
        + _pictures(view.summary)
        + "<h2>Latest runs <span class='muted' id='live' hidden></span></h2>"
        + f"<section id='latest'>{_table(view)}{_pager(view)}</section>"
        + live.SCRIPT_TAG
    )
    return document("tracebound · runs", body, DASH_CSS)


def render_login(message: str = "") -> str:
    """The form that trades the API token for a cookie (the token never enters a URL)."""
    note = f"<p class='muted' id='login-error'>{esc(message)}</p>" if message else ""
    body = (
        "<div class='card none'><h1>Sign in</h1>"
        "<p>This server asks for its API token. It is kept in a cookie only this site can"
        " read, never in the address.</p>"
        f"{note}<form method='post' action='/login' class='row'>"
        "<input type='password' name='token' autocomplete='current-password' required"
        " maxlength='512' aria-label='token'>"
        "<button type='submit'>Sign in</button></form></div>"
    )
    return document("tracebound · sign in", body, DASH_CSS)


def form_values(params: Mapping[str, Any]) -> dict[str, str]:
    """The filter fields and cursor of a query string, as the page echoes them back."""
    return {k: str(params[k]) for k in (*FILTER_FIELDS, "cursor") if params.get(k)}
