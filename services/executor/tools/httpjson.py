"""One small JSON-over-HTTP read for the external evidence backends.

Why the standard library: a few read-only calls (Prometheus alerts and queries,
Loki query_range) do not justify another dependency, and every way such a call can
go wrong — refused connection, timeout, HTTP error status, a body that is not
JSON — must end up as the same :class:`ToolBackendError`, which the tool records
as ``evidence_status=failed`` instead of raising.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from services.executor.tools.base import ToolBackendError

MAX_BODY_BYTES = 32 * 1024 * 1024


def get_json(
    backend: str, url: str, params: Mapping[str, str], timeout_s: float, *, form: bool = False
) -> dict[str, Any]:
    """GET ``url?params`` (or, with ``form``, POST them as a form: a long PromQL query
    stays out of the URL, whose length proxies limit) and return the decoded JSON object."""
    if not url.startswith(("http://", "https://")):
        raise ToolBackendError(f"{backend}: unsupported URL {url!r}")
    headers = {"Accept": "application/json"}
    if form:
        sent = urllib.parse.urlencode(params).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(url, data=sent, headers=headers)  # noqa: S310
    else:
        full = f"{url}?{urllib.parse.urlencode(params)}" if params else url
        request = urllib.request.Request(full, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            body: bytes = response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise ToolBackendError(f"{backend}: HTTP {exc.code} from {url}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ToolBackendError(f"{backend}: unreachable at {url}: {reason}") from exc
    if len(body) > MAX_BODY_BYTES:
        raise ToolBackendError(f"{backend}: response from {url} is larger than allowed")
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ToolBackendError(f"{backend}: response from {url} is not JSON") from exc
    if not isinstance(data, dict):
        raise ToolBackendError(f"{backend}: response from {url} is not a JSON object")
    if data.get("status") not in (None, "success"):
        error = data.get("error") or data.get("status")
        raise ToolBackendError(f"{backend}: query failed: {error}")
    return data
