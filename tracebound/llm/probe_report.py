"""The findings of a model-endpoint probe, shared by ``tracebound doctor`` and start-up.

Kept apart from the probe itself so the printers, the start-up log and the
metrics read one shape without importing any HTTP client.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One finding. ``fail`` means llm mode cannot work as configured; ``warn`` may."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    down: bool = False  # the endpoint is not answering (as opposed to misconfigured)


@dataclass(frozen=True)
class ProbeReport:
    """Every check in probe order; the endpoint is usable when none failed."""

    target: str
    model: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.status != "fail" for check in self.checks)

    @property
    def down(self) -> bool:
        """Only unreachable, not misconfigured: the roles use rules until it returns."""
        failed = [check for check in self.checks if check.status == "fail"]
        return bool(failed) and all(check.down for check in failed)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.status == "fail")

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "model": self.model,
            "ok": self.ok,
            "checks": [asdict(check) for check in self.checks],
        }


__all__ = ["Check", "ProbeReport", "Status"]
