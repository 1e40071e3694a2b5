"""``python -m bench`` (``make bench``): the benchmark figures, saved as JSON.

Each figure is the median of repeated runs, printed with the machine's core
count; the JSON file under ``bench-results/`` lets successive versions be compared.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from bench import gatekeeper_bench

REPEATS = 3
RESULTS = Path(__file__).resolve().parent.parent / "bench-results"


def main() -> int:
    cores = os.cpu_count() or 1
    runs = [gatekeeper_bench.run(seconds=2.0) for _ in range(REPEATS)]
    rate = statistics.median(r["claims_per_second"] for r in runs)
    print(f"gatekeeper: {rate:.1f} claims/s (median of {REPEATS}, single process, {cores} cores)")
    report: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": cores, "python": platform.python_version()},
        "gatekeeper": {"claims_per_second_median": rate, "runs": runs},
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
