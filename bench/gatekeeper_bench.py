"""How many claims per second one process can gatekeep.

Why: the gatekeeper runs on every executor answer before the verifier, so it
must never be the bottleneck of the pipeline. The workload is generated from
the demo scenarios: mostly correct and benign-variant answers (back-fills,
case/whitespace/full-width/ellipsis excerpts) with a share of adversarial ones,
whose rejections also build repair hints. Wall-clock figures are reported, never
asserted.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from services.gatekeeper import check, default_ruleset
from tests.support.demo_evidence import scenarios
from tests.support.gate import records
from tests.support.mutations import generate
from tracebound.events import ToolInvocation

Workload = list[tuple[dict[str, Any], tuple[ToolInvocation, ...], int]]


def workload(benign: int = 400, adversarial: int = 30, seed: int = 7) -> Workload:
    """(structured_output, tool_invocations, claim count) items, fixed for a seed.

    The invocations are parsed once, as the service receives them in the event.
    """
    items: Workload = []
    for s in scenarios():
        claims = s.structured_output["claims"]
        items.append((s.structured_output, records(s.tool_invocations), len(claims)))
    cases = generate("F", benign, seed)
    for family in ("A", "B", "D"):
        cases += generate(family, adversarial, seed)
    for case in cases:
        claims = case.structured_output.get("claims", [])
        items.append((case.structured_output, records(case.tool_invocations), len(claims)))
    return items


def run(seconds: float = 3.0) -> dict[str, Any]:
    """Check the workload round-robin for about ``seconds``; report claims per second."""
    rs = default_ruleset()
    items = workload()
    for so, invocations, _ in items:  # warm-up: imports, regex and caches
        check(so, invocations, rs)
    claims = checks = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for so, invocations, count in items:
            check(so, invocations, rs)
            claims += count
        checks += len(items)
    elapsed = time.perf_counter() - started
    rate = claims / elapsed
    print(f"gatekeeper: {rate:.1f} claims/s")
    return {
        "claims_per_second": round(rate, 1),
        "checks_per_second": round(checks / elapsed, 1),
        "claims": claims,
        "checks": checks,
        "seconds": round(elapsed, 3),
        "workload_items": len(items),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    run(args.seconds)


if __name__ == "__main__":
    main()
