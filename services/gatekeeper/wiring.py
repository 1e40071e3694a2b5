"""The gatekeeper's own wiring for the role kit (:mod:`services.common.kit`)."""

from __future__ import annotations

from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.kit import RoleContext, Wiring
from services.gatekeeper.handler import SERVICE, GatekeeperHandler
from services.gatekeeper.settings import configured_ruleset
from tracebound.events import EvidenceProduced


def build(kit: RoleContext) -> Wiring[EvidenceProduced]:
    return Wiring(
        GatekeeperHandler(configured_ruleset()),
        (EvidenceProduced,),
        on_poison=partial(dead_letter_verdict, SERVICE),
    )
