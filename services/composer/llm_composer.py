"""The model composer: a model writes the answer, the deterministic guard decides if it ships.

Why a guard after the model: a model phrases the allowed material more
naturally than templates, but it may also add what nobody verified (an
over-claim such as "ruled out", a number or service no allowed claim carries,
a refuted claim said again). So every field the model writes is checked with
the answer guard's own checks: a violating ``user_facing_answer`` is replaced
by the safe template answer (and the template's summary and actions with it,
since the reply as a whole is no longer trusted); otherwise a violating
``answer_summary`` becomes the template summary and a violating or remedial
action is dropped. Every violation is recorded in the ``GuardResult``.

Why a prompt over the context budget loses raw paths, then excerpt length, then
later claims (never the instructions or the question): the answer is checked
against the full material anyway, so a shorter prompt can only make it say less.

Why REJECT never reaches the model: there is nothing it may state, and the
degraded template answer says exactly that. Endpoint trouble or an unparseable
reply gives the rules composer's answer (``rules-fallback``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from services.composer.compose import ComposedAnswer, compose, hypothesis_lines
from services.composer.guard import enforce, guard_material
from services.composer.rulebook import ComposerRules
from services.composer.templates import language_of
from services.verifier.material import is_evidence_action
from tracebound.events import Alert, ComposerInput, GuardResult, RecommendedAction
from tracebound.llm import StepRecorder, Trim, parse_model
from tracebound.llm.budget import clip_fields, staged_trims
from tracebound.llm.fallback import Decision, ReplyRejected, decide, rules_only
from tracebound.llm.monitor import FallbackMonitor
from tracebound.llm.question import shown_question
from tracebound.prompts import Prompt, PromptSet

ROLE = "composer"
PROMPT_NAME = "chat-composer"
STATED_VERDICTS = ("PASS", "LOW_CONFID")
# Prompt trimming (see _trims): what an over-budget prompt keeps.
TEXT_CHARS, SHORT_TEXT_CHARS, CLAIMS_KEPT = 300, 100, 8
TEXT_KEYS = frozenset({"evidence_excerpts", "rationale", "missing_info", "allowed_hypotheses"})
# The question is shown once, above; the backends only tell code to add the demo note.
HIDDEN_KEYS = frozenset({"original_query", "rationale", "evidence_backends"})
# A claim's id names it for the verifier only; the answer never cites it. A claim
# type is shown when it is not the plain observation (the prompt's rules name the others).
HIDDEN_CLAIM_KEYS = ("claim_id", "evidence_excerpts")
PLAIN_CLAIM_TYPE = "observation"

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class ActionReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    action_text: Text
    reason: str = ""


class ComposerReply(BaseModel):
    """The model's JSON reply (docs/contracts.md shape); extra fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    answer_summary: Text
    recommended_actions: list[ActionReply] = Field(default_factory=list)
    user_facing_answer: Text


@dataclass(frozen=True, slots=True)
class Composition:
    """The answer to publish and its guard result, whoever wrote it."""

    answer: ComposedAnswer
    guard: GuardResult


def composer_prompt(prompts: PromptSet) -> Prompt:
    return prompts.get(PROMPT_NAME)


def compose_rules(
    material: ComposerInput,
    language: str,
    rules: ComposerRules,
    rejected_claims: Sequence[str] = (),
) -> Composition:
    """The template answer, guarded like any other (the ``rules`` composer)."""
    composed = compose(material, language, rules)
    text, result = enforce(
        material, language, composed.user_facing_answer, rules, rejected_claims=rejected_claims
    )
    return Composition(dataclasses.replace(composed, user_facing_answer=text), result)


def _fenced(value: object) -> str:
    """Compact JSON (or text) that cannot close the prompt's ``<<<``/``>>>`` data fences."""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    return text.replace("<<<", "< < <").replace(">>>", "> > >")


def shown_material(data: dict[str, Any], small: bool = False) -> dict[str, Any]:
    """The material as the model sees it, nothing twice: the question is shown once, above
    it, the verifier's rationale (its own notes) not at all, and an excerpt that only repeats
    its claim's text is left out, and so is an empty list, a claim's id and the claim type
    ``observation``. The ``small`` profile also leaves out raw paths."""
    shown = {k: v for k, v in data.items() if k not in HIDDEN_KEYS and v != []}
    if isinstance(shown.get("allowed_claims"), list):
        shown["allowed_claims"] = [_shown_claim(c, small) for c in shown["allowed_claims"]]
    return shown


def _shown_claim(claim: Any, small: bool) -> Any:
    if not isinstance(claim, dict):
        return claim
    text = str(claim.get("claim_text", ""))
    excerpts = [e for e in claim.get("evidence_excerpts") or [] if str(e) not in text]
    hidden = (*HIDDEN_CLAIM_KEYS, "raw_paths") if small else HIDDEN_CLAIM_KEYS
    kept = {k: v for k, v in claim.items() if k not in hidden}
    if kept.get("claim_type") == PLAIN_CLAIM_TYPE:
        del kept["claim_type"]
    return {**kept, "evidence_excerpts": excerpts} if excerpts else kept


def _messages(
    material: ComposerInput,
    language: str,
    prompt: Prompt,
    data: dict[str, Any] | None = None,
    *,
    small: bool = False,
    alerts: Sequence[Alert] = (),
) -> list[dict[str, Any]]:
    lang = language_of(language)
    data = data if data is not None else material.model_dump(mode="json")
    system = prompt.render(
        query=_fenced(shown_question(material.original_query, alerts)),
        language=lang,
        composer_input=_fenced(shown_material(data, small)),
    )
    ask = (
        f"Write the {lang} answer for verdict {material.verdict} from the "
        f"{len(material.allowed_claims)} allowed claim(s); reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


def _paths_dropped(data: dict[str, Any]) -> dict[str, Any]:
    claims = [{k: v for k, v in c.items() if k != "raw_paths"} for c in data["allowed_claims"]]
    return {**data, "allowed_claims": claims}


def _claims_kept(data: dict[str, Any]) -> dict[str, Any]:
    """The first claims only: the last resort, named in the trace like every cut."""
    claims = data["allowed_claims"]
    return {**data, "allowed_claims": claims[:CLAIMS_KEPT]}


def _trims(
    material: ComposerInput,
    language: str,
    prompt: Prompt,
    small: bool = False,
    alerts: Sequence[Alert] = (),
) -> Iterator[Trim]:
    """Smaller prompts, in order: raw paths, excerpts and notes, then later claims."""
    stages: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
        ("raw paths dropped", _paths_dropped),
        (
            f"excerpts and notes cut to {TEXT_CHARS} characters",
            partial(clip_fields, keys=TEXT_KEYS, limit=TEXT_CHARS),
        ),
        (
            f"excerpts and notes cut to {SHORT_TEXT_CHARS} characters",
            partial(clip_fields, keys=TEXT_KEYS, limit=SHORT_TEXT_CHARS),
        ),
        (f"allowed claims after the first {CLAIMS_KEPT} left out", _claims_kept),
    ]
    return staged_trims(
        material.model_dump(mode="json"),
        stages,
        partial(_messages, material, language, prompt, small=small, alerts=alerts),
    )


def _screen(
    material: ComposerInput, reply: ComposerReply, rejected: Sequence[str], rules: ComposerRules
) -> tuple[str | None, list[RecommendedAction], list[str]]:
    """The summary (None if it violates), the clean actions, and every violation found."""
    violations: list[str] = []
    summary: str | None = reply.answer_summary
    summary_check = guard_material(material, reply.answer_summary, rules, rejected_claims=rejected)
    if not summary_check.ok:
        violations += [f"answer_summary: {v}" for v in summary_check.violations]
        summary = None
    actions: list[RecommendedAction] = []
    for index, action in enumerate(reply.recommended_actions):
        reason = action.reason.strip()
        problems = list(
            guard_material(
                material, f"{action.action_text}\n{reason}", rules, rejected_claims=rejected
            ).violations
        )
        if not is_evidence_action(action.action_text, rules.verifier):
            problems.append("not an evidence-gathering action")
        if problems:
            violations += [f"recommended_actions[{index}]: {p}" for p in problems]
            continue
        actions.append(RecommendedAction(action_text=action.action_text, reason=reason))
    return summary, actions, violations


def guarded(
    material: ComposerInput,
    language: str,
    reply: ComposerReply,
    rejected: Sequence[str],
    rules: ComposerRules,
) -> Composition:
    """The model's answer after the guard: as written, partly templated, or the safe answer."""
    template = compose(material, language, rules)
    text, result = enforce(
        material, language, reply.user_facing_answer, rules, rejected_claims=rejected
    )
    if result.replaced:
        return Composition(dataclasses.replace(template, user_facing_answer=text), result)
    summary, actions, violations = _screen(material, reply, rejected, rules)
    # every allowed hypothesis is shown: those the model left out are added as the
    # template shows them, never dropped silently
    added = hypothesis_lines(material, language, rules, shown=text)
    answer = ComposedAnswer(
        answer_summary=summary if summary is not None else template.answer_summary,
        recommended_actions=tuple(actions),
        user_facing_answer="\n".join([text.rstrip(), *added]) if added else text,
    )
    record = GuardResult(ok=not violations, violations=tuple(violations), replaced=bool(violations))
    return Composition(answer, record)


def compose_llm(
    material: ComposerInput,
    language: str,
    recorder: StepRecorder | None,
    *,
    prompt: Prompt,
    rules: ComposerRules,
    monitor: FallbackMonitor,
    rejected_claims: Sequence[str] = (),
    alerts: Sequence[Alert] = (),
) -> Decision[Composition]:
    """Compose one answer, with the model when it may state anything; never raises on it.

    ``alerts`` are the request's: the prompt shows the question without their
    summaries (:func:`~tracebound.llm.question.shown_question`), since the answer
    opens with the alerts quoted by code.
    """

    def template() -> Composition:
        return compose_rules(material, language, rules, rejected_claims)

    if material.verdict not in STATED_VERDICTS:
        return rules_only(template)

    def written(rec: StepRecorder) -> Composition:
        small = rec.budget.small
        reply, _step = rec.complete(
            _messages(material, language, prompt, small=small, alerts=alerts),
            json_mode=True,
            schema=ComposerReply,
            trims=_trims(material, language, prompt, small, alerts),
        )
        outcome, parsed = parse_model(reply.text, ComposerReply)
        if parsed is None:
            raise ReplyRejected(outcome.detail)
        return guarded(material, language, parsed, rejected_claims, rules)

    return decide(ROLE, recorder, written, template, monitor)
