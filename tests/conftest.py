"""Where the integration tests find a real Kafka broker and a real PostgreSQL.

In order of preference:
1. an external cluster named by ``TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS`` (and
   ``TRACEBOUND_PG_DSN``): used as is;
2. a reachable Docker engine: Kafka and PostgreSQL containers (testcontainers);
3. otherwise the local stack (``tracebound up``): started if it is not running,
   and stopped at the end only if this session started it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.stack import StackHandle, docker_stack, external_stack, local_stack


@pytest.fixture(scope="session")
def stack() -> Iterator[StackHandle]:
    if os.environ.get("TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"):
        yield external_stack()
        return
    docker = docker_stack()
    if docker is not None:
        with docker as handle:
            yield handle
        return
    with local_stack() as handle:
        yield handle


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each failure's reason once more, in a few lines, at the very end of the output.

    A CI log is read from its tail, and there a failed stack test's captured service
    logs come after its assertion; the reason's last line (the fault tests repeat the
    reason there) is then lost between them.
    """
    failed = [*terminalreporter.stats.get("failed", []), *terminalreporter.stats.get("error", [])]
    if not failed:
        return
    terminalreporter.section("why each test failed")
    for report in failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        lines = str(crash.message if crash is not None else report.longreprtext).splitlines()
        reason = lines[0] if len(lines) < 2 else f"{lines[0]} … {lines[-1]}"
        terminalreporter.write_line(f"{report.nodeid}: {reason[:600]}")
