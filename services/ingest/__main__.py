"""``python -m services.ingest``: the ingest role, which serves the HTTP API (wiring only)."""

from __future__ import annotations

import sys

from services.ingest.settings import load_settings
from tracebound.errors import ConfigError
from web.server import serve


def main() -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"ingest: {exc}", file=sys.stderr)
        return 2
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
