"""Serving the API: uvicorn in the foreground until SIGINT/SIGTERM.

The ingest role's ``__main__`` and ``tracebound serve`` start it; nothing else
imports :mod:`web`, so the ingest core and the read models stay importable
without the HTTP stack.
"""

from __future__ import annotations

import uvicorn

from services.ingest.settings import IngestSettings
from tracebound import logs, tracing
from tracebound.settings_check import report_unknown_variables
from web.app import create_app


def serve(settings: IngestSettings) -> int:
    """Run the API until it is told to stop (uvicorn shuts down gracefully)."""
    logs.configure()
    report_unknown_variables("ingest")
    tracing.configure("ingest")
    try:
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_config=None,  # uvicorn's records go through our JSON formatter
            proxy_headers=False,
            server_header=False,
            # Bounded by default: connections and tasks (503 beyond; an event stream
            # holds one while it lasts), idle keep-alive, and the size of a request head
            # (a limit of the h11 protocol, chosen explicitly so that it always applies).
            # uvicorn has no timeout for reading a request's head.
            http="h11",
            limit_concurrency=settings.max_connections,
            timeout_keep_alive=settings.keep_alive_s,
            h11_max_incomplete_event_size=settings.max_header_bytes,
        )
    finally:
        tracing.shutdown()
    return 0
