"""Fixtures of every unit test."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from httpx._config import create_ssl_context
from httpx._transports import default as httpx_transports

from evals.incidents.model import Incident
from tests.support.incident_splits import Sealed, sealed


@pytest.fixture(autouse=True, scope="session")
def _one_default_tls_context() -> Iterator[None]:
    """Clients asking for httpx's default certificate check share one TLS context.

    Every model client the unit tests build (the ``openai`` SDK over httpx) would load
    the CA bundle anew, about 25 ms each and a few hundred times a run, to talk plain
    HTTP to a local fake. A context with other settings (``verify`` given, a client
    certificate, no ``trust_env``) is made as asked; the shared one follows
    ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` as httpx's does.
    """
    original = create_ssl_context  # what the transports call, imported from here
    made: dict[tuple[str | None, str | None], ssl.SSLContext] = {}

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is not True or cert is not None or not trust_env:
            return original(verify=verify, cert=cert, trust_env=trust_env)
        key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = original(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    patch = pytest.MonkeyPatch()
    patch.setattr(httpx_transports, "create_ssl_context", shared)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def dev() -> list[Incident]:
    """The incident suite's dev split."""
    return sealed("dev")


@pytest.fixture(scope="session")
def held() -> list[Incident]:
    """The frozen test split, sealed: a failure names no detail of it."""
    return sealed("test")


@pytest.fixture(scope="session")
def every(dev: list[Incident], held: list[Incident]) -> list[Incident]:
    """Both splits, sealed."""
    return Sealed([*dev, *held])
