"""``python -m services.ingest``: the ingest role, which serves the HTTP API (wiring only)."""

from __future__ import annotations

import sys

from services.ingest.settings import IngestSettings
from web.server import serve


def main() -> int:
    return serve(IngestSettings())


if __name__ == "__main__":
    sys.exit(main())
