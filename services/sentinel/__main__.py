"""``python -m services.sentinel``: the deadline watcher (wiring only)."""

from __future__ import annotations

import sys

from services.sentinel.runner import main

if __name__ == "__main__":
    sys.exit(main())
