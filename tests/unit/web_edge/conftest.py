"""Fixtures of the HTTP edge tests: a recording client and one that must refuse."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from tests.support.web_edge import Recorder, edge_client
from tests.unit.test_ingest_http import TOKEN, NoDedup, NoPublisher
from web.app import Ports, create_app


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> Iterator[TestClient]:
    with edge_client(recorder) as client:
        yield client


@pytest.fixture
def refusing() -> Iterator[TestClient]:
    """A client whose every request must be refused before anything is published."""
    publisher = NoPublisher()
    ports = Ports(publisher=publisher, dedup=NoDedup(), runs=RunBuffer(100))
    app = create_app(IngestSettings(token=SecretStr(TOKEN)), ports)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client
    assert publisher.published == [], "a refused request published something"
