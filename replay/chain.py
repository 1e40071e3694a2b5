"""The pipeline in one process: the pure role handlers chained by their events.

Why in-process: a replay or an eval must never publish to the live topics nor
touch the read models, and every role handler is a pure function of its input
event (plus its rules, prompts, model and tools). Calling them directly, in
the order the topics would carry their events — planner, executor, gatekeeper,
verifier (with its retry rounds back to the executor), composer — gives the
same decisions the processes would make, with isolation by construction:
nothing here holds a producer. What it does not reproduce is transport
behaviour (transactions, redelivery), which the runtime's own tests cover.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.composer.handler import ComposerHandler
from services.executor.handler import ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools.base import EvidenceTool
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import Ruleset, default_ruleset
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler, VerifierSettings
from services.verifier.rules_file import VerifierRules
from tracebound.events import (
    Answer,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    RetryRequested,
    ToolInvocation,
    Verdict,
)
from tracebound.llm import ChatModel
from tracebound.llm.monitor import FallbackMonitor
from tracebound.prompts import PromptSet

MAX_STEPS = 12  # far above max_rounds; a guard against a handler loop, not a limit


class ChainError(RuntimeError):
    """A handler did not produce the event the next role needs."""


@dataclass
class ChainResult:
    """Everything one in-process run produced, in order."""

    run_id: str
    events: list[Event] = field(default_factory=list)

    def _all(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def answer(self) -> Answer | None:
        found = self._all(Answer)
        return found[-1] if found else None

    @property
    def verdict(self) -> Verdict | None:
        found = self._all(Verdict)
        return found[-1] if found else None

    @property
    def evidence(self) -> list[EvidenceProduced]:
        return self._all(EvidenceProduced)

    @property
    def gatekeeper_results(self) -> list[GatekeeperResult]:
        return self._all(GatekeeperResult)

    @property
    def invocations(self) -> list[ToolInvocation]:
        return [inv for e in self.evidence for inv in e.tool_trace]

    @property
    def rounds(self) -> int:
        return len(self.evidence)


@dataclass
class Chain:
    """The five handlers, ready to run one request after another."""

    planner: PlannerHandler
    executor: ExecutorHandler
    gatekeeper: GatekeeperHandler
    verifier: VerifierHandler
    composer: ComposerHandler

    @classmethod
    def build(
        cls,
        tools: Mapping[str, EvidenceTool],
        *,
        ruleset: Ruleset | None = None,
        model: ChatModel | None = None,
        executor_settings: ExecutorSettings | None = None,
        verifier_settings: VerifierSettings | None = None,
        verifier_rules: VerifierRules | None = None,
        prompts: PromptSet | None = None,
    ) -> Chain:
        """One chain; ``model`` None runs every role's rules implementation.

        Candidate rules and prompts are handed to the roles that use them; the
        skills come from the same prompt folder.
        """
        prompts = prompts or PromptSet.active()
        skills = load_skills(prompts.folder)
        monitor = FallbackMonitor()
        rules = ruleset or default_ruleset()
        return cls(
            planner=PlannerHandler(skills, model, prompts=prompts, monitor=monitor),
            executor=ExecutorHandler(
                tools,
                skills,
                executor_settings or ExecutorSettings(),
                model,
                rules,
                prompts=prompts,
                monitor=monitor,
            ),
            gatekeeper=GatekeeperHandler(rules),
            verifier=VerifierHandler(
                verifier_settings or VerifierSettings(),
                model,
                rules=verifier_rules,
                prompts=prompts,
                monitor=monitor,
            ),
            composer=ComposerHandler(model, rules=verifier_rules, prompts=prompts, monitor=monitor),
        )

    def with_tools(self, tools: Mapping[str, EvidenceTool]) -> Chain:
        """The same roles with other tools (each replayed run has its own frozen set)."""
        executor = ExecutorHandler(
            tools,
            tuple(self.executor.skills.values()),
            self.executor.settings,
            self.executor.model,
            self.executor.ruleset,
            prompts=self.executor.prompts,
            monitor=self.executor.monitor,
        )
        return Chain(self.planner, executor, self.gatekeeper, self.verifier, self.composer)

    def run(self, request: DiagnosisRequested, plan: PlanProduced | None = None) -> ChainResult:
        """Carry one request through every role until its answer.

        With ``plan`` (the run's recorded ``PlanProduced``) the planner is not asked
        again: the executor runs the calls that plan records, as it did live.
        """
        result = ChainResult(request.run_id, [request])
        current: PlanProduced | RetryRequested = (
            _one([plan], PlanProduced, result)
            if plan is not None
            else _one(self.planner(request), PlanProduced, result)
        )
        for _ in range(MAX_STEPS):
            evidence = _one(self.executor(current), EvidenceProduced, result)
            checked = _one(self.gatekeeper(evidence), GatekeeperResult, result)
            judged = _one(self.verifier(checked), (Verdict, RetryRequested), result)
            if isinstance(judged, RetryRequested):
                current = judged
                continue
            _one(self.composer(judged), Answer, result)
            return result
        raise ChainError(f"run {request.run_id}: no verdict after {MAX_STEPS} rounds")


def _one(outputs: list[Event], kind: Any, result: ChainResult) -> Any:
    result.events.extend(outputs)
    found = [e for e in outputs if isinstance(e, kind)]
    if len(found) != 1:
        raise ChainError(f"run {result.run_id}: expected one {kind} from a handler, got {found}")
    return found[0]


def prompts_folder(value: str | None) -> Path | None:
    """``--prompt-version``: a folder of prompt files (see ``TRACEBOUND_PROMPTS_DIR``)."""
    if not value:
        return None
    return Path(value).expanduser().resolve()
