"""The address of the HTTP ingest's pages, for the commands that point a person at one.

A module of its own (not :mod:`tracebound.settings`) so that only the processes
that build page URLs define the ``TRACEBOUND_INGEST_`` settings: the ingest
itself (whose settings extend :class:`PageAddress`) and the terminal commands.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from tracebound.errors import InvalidInputError
from tracebound.events.base import RUN_ID
from tracebound.settings import TraceboundSettings

# A report is named by its page path, ``reports/ID``: a run id never holds a slash.
REPORT_NAME = re.compile(r"^/?reports/([1-9][0-9]{0,18})$")


class PageAddress(TraceboundSettings):
    """Where the HTTP ingest listens (``TRACEBOUND_INGEST_HOST``/``_PORT``), as page URLs.

    The ingest's own settings extend it; the terminal commands that point a person
    at a page (``trace``, ``open``) read only this part, so they need not import the
    ingest. A wildcard bind address is reached on the loopback.
    """

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_INGEST_", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8088, ge=0, le=65535)

    def page_url(self, path: str) -> str:
        """The URL of the page at ``path`` (absolute, starting with ``/``)."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host  # noqa: S104
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}{path}"


def report_path(report_id: int) -> str:
    """The path of a stored replay or eval report's page."""
    return f"/reports/{int(report_id)}"


def page_path(name: str) -> str:
    """The page path of ``RUN_ID`` or ``reports/ID`` (what ``tracebound open`` takes)."""
    found = REPORT_NAME.match(name)
    if found:
        return report_path(int(found.group(1)))
    if name in ("reports", "/reports"):
        return "/reports"
    if RUN_ID.match(name):
        return f"/runs/{quote(name, safe='')}"
    raise InvalidInputError(f"{name!r} is neither a run id nor reports/REPORT_ID")
