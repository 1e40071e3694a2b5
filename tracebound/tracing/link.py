"""Where a person sees a run's trace: a link from its trace id, if a trace UI is set.

``TRACEBOUND_TRACE_URL_TEMPLATE`` is the trace UI's address with ``{trace_id}`` in
it (``https://jaeger.example/trace/{trace_id}``, a Tempo or Grafana Explore URL);
without it the trace page and ``tracebound trace`` show the bare id.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from tracebound.settings import TraceboundSettings

PLACEHOLDER = "{trace_id}"
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


class TraceLinkSettings(TraceboundSettings):
    """The trace UI's URL template (``TRACEBOUND_TRACE_URL_TEMPLATE``)."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_TRACE_", frozen=True)

    url_template: str | None = Field(
        default=None,
        max_length=500,
        description="a trace UI's URL with {trace_id}, e.g. https://jaeger/trace/{trace_id}",
    )

    @field_validator("url_template")
    @classmethod
    def _has_placeholder(cls, value: str | None) -> str | None:
        if value is not None and PLACEHOLDER not in value:
            raise ValueError(f"the template must contain {PLACEHOLDER}")
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("the template must be an http(s) URL")
        return value or None

    def url(self, trace_id: object) -> str | None:
        """The trace's URL, or None without a template or for anything not a trace id."""
        if self.url_template is None or not isinstance(trace_id, str):
            return None
        if not _TRACE_ID.match(trace_id):
            return None
        return self.url_template.replace(PLACEHOLDER, trace_id)


__all__ = ["PLACEHOLDER", "TraceLinkSettings"]
