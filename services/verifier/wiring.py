"""The verifier's own wiring for the role kit (:mod:`services.common.kit`)."""

from __future__ import annotations

from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.kit import RoleContext, Wiring
from services.verifier.handler import SERVICE, VerifierHandler
from services.verifier.rules_file import load_verifier_rules
from tracebound.events import GatekeeperResult


def build(kit: RoleContext) -> Wiring[GatekeeperResult]:
    handler = VerifierHandler(model=kit.model, rules=load_verifier_rules(), monitor=kit.monitor)
    return Wiring(handler, (GatekeeperResult,), on_poison=partial(dead_letter_verdict, SERVICE))
