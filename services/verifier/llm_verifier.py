"""The model verifier: the deterministic check first, then a model that may only be stricter.

Why the rules run first and keep the last word on leniency: the claim-vs-excerpt
comparison in code is what makes "92% is not 29%" hold whatever a model thinks,
so the model's reply can only lower a claim (SUPPORTED → NOT_ENOUGH_INFO or
REFUTED, NOT_ENOUGH_INFO → REFUTED) and never raise one. The verdict is then
recomputed from the combined claim statuses with the deterministic verifier's
own rules, so a gatekeeper ``reject`` stays REJECT and ``low_confid`` never
becomes PASS, and the composer's material keeps only claims still SUPPORTED.

Why the model is sometimes not asked: when the deterministic verdict is already
REJECT or there is no claim to judge, no reply could change the outcome.

Endpoint trouble or a reply that does not parse leaves the deterministic
outcome in place (``rules-fallback``), and so does a prompt over the context
budget even after its trims (tool trace paths, gatekeeper bindings, then ever
shorter excerpts; never the instructions or the question).
``executor_final_answer`` is never sent: the model is only asked when the
structured output is valid, and then that text must not be a source of facts.
Question, claims, excerpts and tool output all reach the prompt as fenced,
untrusted data.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.verifier.claims import NOT_ENOUGH_INFO, REFUTED, SUPPORTED
from services.verifier.input import VerifierInput
from services.verifier.judge import PASS, REJECT, VerifierOutcome, _verdict, verify
from services.verifier.prompt_view import view
from services.verifier.rules_file import OverclaimPhrases, VerifierRules
from tracebound.events import ClaimCheck
from tracebound.llm import ChatModel, StepRecorder, Trim, parse_model
from tracebound.llm.budget import budget_for, clip_fields, staged_trims
from tracebound.llm.fallback import Decision, ReplyRejected, decide, rules_only
from tracebound.llm.monitor import FallbackMonitor
from tracebound.llm.question import shown_question
from tracebound.llm.steps import clip
from tracebound.prompts import Prompt, PromptSet

ROLE = "verifier"
PROMPT_NAME = "chat-verifier"
# The ``small`` profile's prompt: each claim with its excerpts and the code's check only.
SMALL_PROMPT_NAME = "chat-verifier-small"
REASON_LIMIT = 200
RATIONALE_LIMIT = 300
_SEVERITY = {SUPPORTED: 0, NOT_ENOUGH_INFO: 1, REFUTED: 2}
# Prompt trimming (see _trims): what an over-budget prompt keeps.
PATHS_KEPT = 3
EXCERPT_CHARS = 300
SHORT_EXCERPT_CHARS = 100
EXCERPT_KEYS = frozenset(
    {"evidence_excerpt", "evidence_excerpts", "excerpts", "matched_text", "not_found"}
)

ClaimStatus = Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"]


class ModelClaimCheck(BaseModel):
    """One per-claim judgement of the model; only id, status and reason are used."""

    model_config = ConfigDict(extra="ignore")

    claim_id: str = Field(min_length=1)
    status: ClaimStatus
    reason: str = ""

    @field_validator("status", mode="before")
    @classmethod
    def _spelling(cls, value: object) -> object:
        """ "not enough info", "Not-Enough-Info" and friends name the same status."""
        if isinstance(value, str):
            return value.strip().upper().replace(" ", "_").replace("-", "_")
        return value


class VerifierReply(BaseModel):
    """The model's JSON reply (docs/contracts.md shape); extra fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    verdict: Literal["PASS", "LOW_CONFID", "REJECT"]
    groundedness_score: float | None = None
    critical_fact_count: int | None = None
    claim_checks: list[ModelClaimCheck]
    facts_checked: list[Any] = Field(default_factory=list)
    rationale: str = ""


def verifier_prompt(prompts: PromptSet, model: ChatModel | None = None) -> Prompt:
    """The prompt for ``model``: the compact one when its budget is the ``small`` profile."""
    small = model is not None and budget_for(model).small
    return prompts.get(SMALL_PROMPT_NAME if small else PROMPT_NAME)


def _compact(prompt: Prompt) -> bool:
    """Whether ``prompt`` shows the compact claim list instead of the whole verifier input."""
    return "claims" in prompt.variables


def new_recorder(model: ChatModel, prompt: Prompt, *, service: str, run_id: str) -> StepRecorder:
    """A step recorder for one call outside the pipeline (the CLI), named after the prompt."""
    return StepRecorder(
        model,
        run_id=run_id,
        agent_name=prompt.name,
        prompt_version=prompt.version,
        service=service,
    )


def _fenced(value: object) -> str:
    """JSON (or text) that cannot close the prompt's ``<<<``/``>>>`` data fences."""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    return text.replace("<<<", "< < <").replace(">>>", "> > >")


def _messages(
    inp: VerifierInput, data: dict[str, Any], claims: int, language: str, prompt: Prompt
) -> list[dict[str, Any]]:
    system = prompt.render(
        query=_fenced(shown_question(inp.original_query, inp.alerts)),
        language=language,
        **{name: _fenced(part) for name, part in data.items()},
    )
    ask = (
        f"Judge the {claims} claim(s) against their verified excerpts "
        "and reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


def _excerpts_cut(limit: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return partial(clip_fields, keys=EXCERPT_KEYS, limit=limit)


def _paths_summarised(data: dict[str, Any]) -> dict[str, Any]:
    """Each tool trace entry keeps its first raw paths and the count of the rest."""
    entries = []
    for entry in data["verifier_input"]["tool_trace_summary"]:
        paths = list(entry.get("raw_paths", ()))
        if len(paths) > PATHS_KEPT:
            paths = [*paths[:PATHS_KEPT], f"… {len(paths) - PATHS_KEPT} more"]
        entries.append({**entry, "raw_paths": paths})
    return {**data, "verifier_input": {**data["verifier_input"], "tool_trace_summary": entries}}


def _bindings_dropped(data: dict[str, Any]) -> dict[str, Any]:
    """The gatekeeper's per-binding list goes; its status, rules and notes stay."""
    gate = {**data["verifier_input"]["gatekeeper_result"]}
    gate["checked_bindings"] = f"{len(gate.get('checked_bindings') or ())} checked (not shown)"
    return {**data, "verifier_input": {**data["verifier_input"], "gatekeeper_result": gate}}


def _trims(
    inp: VerifierInput, data: dict[str, Any], claims: int, language: str, prompt: Prompt
) -> Iterator[Trim]:
    """Smaller prompts, in order: paths, gatekeeper bindings, then ever shorter excerpts."""
    whole_input = [
        (f"tool trace raw paths cut to the first {PATHS_KEPT}", _paths_summarised),
        ("gatekeeper checked bindings summarised", _bindings_dropped),
    ]
    stages = [
        *(whole_input if "verifier_input" in data else ()),
        (f"excerpts cut to {EXCERPT_CHARS} characters", _excerpts_cut(EXCERPT_CHARS)),
        (f"excerpts cut to {SHORT_EXCERPT_CHARS} characters", _excerpts_cut(SHORT_EXCERPT_CHARS)),
    ]
    return staged_trims(data, stages, lambda d: _messages(inp, d, claims, language, prompt))


def combine(
    inp: VerifierInput, deterministic: VerifierOutcome, reply: VerifierReply, model_name: str
) -> VerifierOutcome:
    """The deterministic outcome with the model's stricter claim statuses applied."""
    stricter: dict[str, ModelClaimCheck] = {}
    for item in reply.claim_checks:
        known = stricter.get(item.claim_id)
        if known is None or _SEVERITY[item.status] > _SEVERITY[known.status]:
            stricter[item.claim_id] = item
    checks: list[ClaimCheck] = []
    notes: list[str] = []
    for original in deterministic.claim_checks:
        check = original
        judged = stricter.get(check.claim_id)
        if judged is not None and _SEVERITY[judged.status] > _SEVERITY[check.status]:
            reason = f"{check.reason}; model {model_name}: {clip(judged.reason, REASON_LIMIT)}"
            check = check.model_copy(update={"status": judged.status, "reason": reason})
            verb = "contradicts" if judged.status == REFUTED else "does not establish"
            notes.append(
                f"the verifier model judged that the cited evidence {verb} claim {check.claim_id}"
            )
        checks.append(check)

    statuses = [c.status for c in checks]
    verdict, decided_by = _verdict(inp, True, statuses)
    # The allowed claims are the deterministic SUPPORTED claims, in order; keep those still so.
    supported_at = [i for i, c in enumerate(deterministic.claim_checks) if c.status == SUPPORTED]
    still = [
        claim
        for claim, position in zip(
            deterministic.composer_input.allowed_claims, supported_at, strict=False
        )
        if checks[position].status == SUPPORTED
    ]
    gate = inp.gatekeeper_result
    counts = {s: statuses.count(s) for s in (SUPPORTED, REFUTED, NOT_ENOUGH_INFO)}
    disagreement = (
        f" The model's own verdict was {reply.verdict}; the verdict is recomputed from the claims."
        if reply.verdict != verdict
        else ""
    )
    rationale = (
        f"{verdict}: {decided_by}. Gatekeeper {gate.status}/{gate.severity} "
        f"({gate.rule_set_version}); {deterministic.rule_set_version} then model {model_name}: "
        f"{counts[SUPPORTED]} supported, {counts[REFUTED]} refuted, "
        f"{counts[NOT_ENOUGH_INFO]} not enough info of {len(checks)} claims "
        f"({len(notes)} lowered by the model); {len(deterministic.facts_checked)} facts checked."
        f"{disagreement} Model rationale: {clip(reply.rationale, RATIONALE_LIMIT) or '-'}"
    )
    missing = tuple(dict.fromkeys([*deterministic.missing_info, *notes]))
    earlier = deterministic.retry_reasons[1:] if deterministic.verdict != PASS else ()
    reasons = () if verdict == PASS else tuple(dict.fromkeys([decided_by, *earlier, *notes]))
    material = deterministic.composer_input.model_copy(
        update={
            "verdict": verdict,
            "allowed_claims": () if verdict == REJECT else tuple(still),
            "allowed_hypotheses": ()
            if verdict == REJECT
            else deterministic.composer_input.allowed_hypotheses,
            "missing_info": missing,
            "rationale": rationale,
        }
    )
    supported = statuses.count(SUPPORTED)
    return dataclasses.replace(
        deterministic,
        verdict=verdict,
        groundedness_score=round(supported / len(checks), 6) if checks else 0.0,
        claim_checks=tuple(checks),
        rationale=rationale,
        composer_input=material,
        retry_reasons=reasons,
        failed_claims=tuple(c.claim_id for c in checks if c.status != SUPPORTED),
        missing_info=missing,
        rejected_claims=tuple(c.claim_text for c in checks if c.status == REFUTED),
    )


def _worth_asking(inp: VerifierInput, outcome: VerifierOutcome) -> bool:
    """Could a stricter model change anything? Not after REJECT, not without claims."""
    usable = inp.executor_output_parse_status.usable
    return usable and outcome.verdict != REJECT and bool(outcome.claim_checks)


def verify_llm(
    inp: VerifierInput,
    recorder: StepRecorder | None,
    *,
    language: str,
    prompt: Prompt,
    rules: VerifierRules,
    phrases: OverclaimPhrases,
    monitor: FallbackMonitor,
) -> Decision[VerifierOutcome]:
    """Judge one round: rules first, then the model when it could change anything.

    Endpoint trouble or an unusable reply leaves the deterministic outcome
    (``rules-fallback``); the model is never asked without a recorder.
    """
    deterministic = verify(inp, rules, phrases)
    if not _worth_asking(inp, deterministic):
        return rules_only(lambda: deterministic)

    def judged(rec: StepRecorder) -> VerifierOutcome:
        data = view(inp, deterministic, compact=_compact(prompt))
        claims = len(deterministic.claim_checks)
        reply, _step = rec.complete(
            _messages(inp, data, claims, language, prompt),
            json_mode=True,
            schema=VerifierReply,
            trims=_trims(inp, data, claims, language, prompt),
        )
        outcome, parsed = parse_model(reply.text, VerifierReply)
        if parsed is None:
            raise ReplyRejected(outcome.detail)
        return combine(inp, deterministic, parsed, reply.model or rec.model.name)

    return decide(ROLE, recorder, judged, lambda: deterministic, monitor)
