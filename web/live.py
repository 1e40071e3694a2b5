"""Live refresh of the dashboard's newest runs: one small same-origin script, no inline code.

Why a file and not inline script: the dashboard's Content-Security-Policy then
allows only ``script-src 'self'`` (no ``'unsafe-inline'``, no hash to keep in
step), so markup smuggled into a question or a log line still cannot run. The
script re-reads the page it is on (same URL, same cookie) every
:data:`PERIOD_S` seconds while the tab is visible and the first page is shown,
and swaps in the server's freshly rendered counts and runs table; the server
escaped that markup, and ``DOMParser`` runs none of it. Without JavaScript the
page is the same, only not refreshed.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from web.html import FORM_PAGE_HEADERS

PATH = "/assets/live.js"
PERIOD_S = 15
REFRESHED = ("counts", "latest")  # ids of the parts of the page the script replaces
SCRIPT_TAG = f"<script src='{PATH}' defer></script>"
# The dashboard: its forms, this server's script, and the script's reads of the page.
LIVE_PAGE_HEADERS = {
    **FORM_PAGE_HEADERS,
    "Content-Security-Policy": FORM_PAGE_HEADERS["Content-Security-Policy"]
    + "; script-src 'self'; connect-src 'self'",
}
SCRIPT = f"""'use strict';
(function () {{
  var PERIOD = {PERIOD_S * 1000};
  var PARTS = {list(REFRESHED)!r};
  if (new URLSearchParams(location.search).has('cursor')) return;  // older pages hold still
  var note = document.getElementById('live');
  function later() {{ window.setTimeout(refresh, PERIOD); }}
  function swap(fresh) {{
    PARTS.forEach(function (id) {{
      var old = document.getElementById(id), next = fresh.getElementById(id);
      if (old && next) old.replaceWith(document.importNode(next, true));
    }});
  }}
  function refresh() {{
    if (document.hidden) return later();
    fetch(location.href, {{credentials: 'same-origin', headers: {{Accept: 'text/html'}}}})
      .then(function (reply) {{
        if (!reply.ok) throw new Error('HTTP ' + reply.status);
        return reply.text();
      }})
      .then(function (html) {{
        swap(new DOMParser().parseFromString(html, 'text/html'));
        if (note) {{
          note.textContent = 'refreshed ' + new Date().toLocaleTimeString();
          note.hidden = false;
        }}
      }})
      .catch(function (err) {{
        if (note) {{ note.textContent = 'not refreshed: ' + err.message; note.hidden = false; }}
      }})
      .then(later);
  }}
  later();
}})();
"""


async def _script(_request: Request) -> Response:
    return Response(
        SCRIPT,
        media_type="text/javascript",
        headers={**FORM_PAGE_HEADERS, "Cache-Control": "max-age=300"},
    )


def routes() -> list[Route]:
    """``GET /assets/live.js`` (no data in it, so no token asked)."""
    return [Route(PATH, _script, methods=["GET"])]
