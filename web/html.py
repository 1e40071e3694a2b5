"""The pieces every server-rendered page is made of: escaping, badges, style, headers.

Pages are HTML with inline CSS only: no script, no external asset, so they
render the same in any browser, offline, and a strict Content-Security-Policy
(``PAGE_HEADERS``; ``FORM_PAGE_HEADERS`` for pages whose forms submit to this
server) can forbid everything else. Tool output, log lines and model
text are untrusted, so every value goes through :func:`esc`; CSS class names
come from fixed tables (``TONE``), never from data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from typing import Any

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# Pages with forms (the dashboard's filters, sign-in) may submit to this server only.
FORM_PAGE_HEADERS = {
    **PAGE_HEADERS,
    "Content-Security-Policy": PAGE_HEADERS["Content-Security-Policy"].replace(
        "form-action 'none'", "form-action 'self'"
    ),
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
    "valid": "good",
    "repaired": "warn",
    "invalid": "bad",
    "missing": "bad",
}

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
.facts{margin-top:6px;border-collapse:collapse}.facts td{padding:1px 8px 1px 0;vertical-align:top}
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


def esc(value: Any) -> str:
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


def tone_of(status: Any) -> str:
    """The colour class of a status (``none`` for anything not in ``TONE``)."""
    return TONE.get(status, "none") if isinstance(status, str) else "none"


def badge(status: Any, text: Any = None, big: bool = False) -> str:
    """A pill coloured by ``status`` showing ``text`` (the status itself by default)."""
    size = " big" if big else ""
    shown = esc(text if text is not None else status)
    return f'<span class="badge {tone_of(status)}{size}">{shown}</span>'


def ms_text(value: Any) -> str:
    """A duration in milliseconds as a person reads it (seconds from one second up)."""
    if not isinstance(value, int | float):
        return "–"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{int(value)} ms"


def clock(iso: Any) -> str:
    """The time of day of an ISO timestamp (the date is in the header), full value on hover."""
    if not isinstance(iso, str) or len(iso) < 23 or iso[10] != "T":
        return esc(iso)
    return f"<span title='{esc(iso)}'>{esc(iso[11:23])}</span>"


def join(parts: Iterable[str]) -> str:
    """Rendered fragments in order."""
    return "".join(parts)


def list_block(title: str, items: Any) -> str:
    """A titled bullet list, or nothing when there are no items."""
    items = list(items or [])
    if not items:
        return ""
    return (
        f"<div class='label'>{esc(title)}</div><ul class='plain'>"
        + join(f"<li>{esc(i)}</li>" for i in items)
        + "</ul>"
    )


def document(title: str, body: str, extra_css: str = "") -> str:
    """The HTML document around a page body, with the inline style sheet (and a page's own)."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{CSS}{extra_css}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )


def render_message(title: str, message: str) -> str:
    """A plain page for 401/404/503, escaped like the trace itself."""
    return document(
        title, f"<div class='card none'><h1>{esc(title)}</h1><p>{esc(message)}</p></div>"
    )
