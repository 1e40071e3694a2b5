"""Typed settings of the ingest service (env prefix ``TRACEBOUND_INGEST_``)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import SettingsConfigDict

from tracebound.errors import ConfigError
from tracebound.pages import PageAddress
from tracebound.topics import ALERTS

# An entry of allowed_hosts: *, a name or IPv4 address, [IPv6] or bare IPv6, with a port.
_HOST_ENTRY = re.compile(
    r"\*|(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*"
)
KIB = 1024
MIB = 1024 * KIB


class IngestSettings(PageAddress):
    """Where the HTTP API listens and how it turns alerts into runs.

    ``token`` is a ``SecretStr`` so it never shows in reprs or logs; when it is
    unset the API is open, which is only sensible on the loopback default. An
    empty token is refused at start rather than read as "open".
    """

    # hide_input_in_errors: a refused token must not be printed with the refusal.
    model_config = SettingsConfigDict(
        env_prefix="TRACEBOUND_INGEST_", frozen=True, hide_input_in_errors=True
    )

    token: SecretStr | None = Field(
        default=None,
        description="bearer token of the API and pages (or the password of basic auth);"
        " unset leaves them open; empty or padded with spaces is refused",
    )
    max_body_bytes: int = Field(
        default=256 * KIB,
        ge=1024,
        le=768 * KIB,
        description="largest webhook or chat body (413 beyond); a request event must stay"
        " under Kafka's 1 MB message limit, so at most 768 KiB. Longer fields are cut:"
        " annotation values at 8192 characters, label values at 1024, URLs and groupKey"
        " at 4096, receiver at 256",
    )
    allowed_hosts: str = Field(
        default="",
        description="comma list of extra host names (or host:port) the Host and Origin headers"
        " may name, beside the bind address and the loopback names; * turns the Host check off",
    )
    max_connections: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="open connections and tasks at most; beyond it uvicorn answers 503",
    )
    keep_alive_s: int = Field(
        default=5, ge=1, le=300, description="an idle keep-alive connection is closed after this"
    )
    max_header_bytes: int = Field(
        default=64 * KIB,
        ge=4 * KIB,
        le=MIB,
        description="largest request head (request line and headers) uvicorn buffers",
    )
    dedup_window_s: int = Field(
        default=3600,
        ge=0,
        le=30 * 86400,
        description="alerts without startsAt: a re-send inside this window reuses the run",
    )
    group_by: Literal["group", "alert"] = Field(
        default="group",
        description="group: one run per webhook alert group; alert: one run per firing alert",
    )
    answer_wait_s: float = Field(default=30.0, gt=0, le=120)
    language: Literal["zh", "en"] = Field(default="en", description="language of alert runs")
    lookback_s: int = Field(
        default=3600, ge=0, le=7 * 86400, description="event history the run buffer loads"
    )
    max_runs: int = Field(default=5000, ge=10, le=1_000_000)
    max_buffer_mb: int = Field(
        default=64, ge=1, le=65_536, description="event bytes the run buffer keeps at most"
    )
    alerts_topic: str = Field(
        default=ALERTS,
        pattern=r"^[A-Za-z0-9._-]{0,249}$",
        description="input topic of Alertmanager JSON records; empty turns the reader off",
    )

    @field_validator("token")
    @classmethod
    def _usable_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is None:
            return None
        value = token.get_secret_value()
        if not value:
            raise ValueError(
                "TRACEBOUND_INGEST_TOKEN is set but empty; set a token or unset the variable"
            )
        if value != value.strip():
            raise ValueError("TRACEBOUND_INGEST_TOKEN starts or ends with whitespace; remove it")
        return token

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: str) -> str:
        for entry in (e.strip() for e in value.split(",")):
            if entry and not _HOST_ENTRY.fullmatch(entry):
                raise ValueError(f"not a host name, host:port or *: {entry[:80]!r}")
        return value

    @property
    def host_list(self) -> list[str]:
        """The entries of ``allowed_hosts``."""
        return [entry.strip() for entry in self.allowed_hosts.split(",") if entry.strip()]

    @property
    def base_url(self) -> str:
        """The URL a local client (the demo, ``curl``) reaches the service at."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host  # noqa: S104
        return f"http://{host}:{self.port}"


def load_settings(**overrides: Any) -> IngestSettings:
    """The settings from the environment, or a ``ConfigError`` naming each invalid one."""
    try:
        return IngestSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"TRACEBOUND_INGEST_{'_'.join(map(str, err['loc'])).upper()}: "
            f"{err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid ingest settings: {problems}") from None
