"""``python -m services.ingest``: the ingest HTTP service (wiring only)."""

from __future__ import annotations

import sys

from services.ingest.cli import serve
from services.ingest.settings import IngestSettings


def main() -> int:
    return serve(IngestSettings())


if __name__ == "__main__":
    sys.exit(main())
