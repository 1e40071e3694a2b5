"""``python -m bench`` (``make bench``): the benchmark figures, saved as JSON.

Each figure is the median of repeated runs, printed with the machine's core
count; the JSON file under ``bench-results/`` lets successive versions be compared.
The same run is ``tracebound bench``; see :mod:`bench.cli` for what is measured.
"""

from __future__ import annotations

from bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
