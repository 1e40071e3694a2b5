"""The composer's own wiring for the role kit (:mod:`services.common.kit`).

It answers a run once (:class:`~services.composer.answered.OncePerRun`): the runs
already answered are read back for newly assigned partitions, and what an
uncommitted batch added is forgotten when the batch is rewound. A dead-lettered
verdict is answered as failed by the same guard.
"""

from __future__ import annotations

from services.common.kit import RoleContext, Wiring
from services.composer.answered import AnsweredRuns, AnsweredSettings, OncePerRun
from services.composer.handler import ComposerHandler
from services.verifier.rules_file import load_verifier_rules
from tracebound.codec import make_codec
from tracebound.events import Verdict


def build(kit: RoleContext) -> Wiring[Verdict]:
    answered = AnsweredRuns(kit.kafka, make_codec(kit.kafka), AnsweredSettings().answered_window_s)
    composer = ComposerHandler(kit.model, rules=load_verifier_rules(), monitor=kit.monitor)
    once = OncePerRun(composer, answered)
    return Wiring(
        once,
        (Verdict,),
        on_poison=once.failed,
        on_assign=answered.restore,
        on_rewind=answered.forget,
        on_commit=answered.commit,
    )
