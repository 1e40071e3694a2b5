"""Old vs new, per run and in total, for each replayable stage.

Each function takes the recorded events (a :class:`~replay.recorded.Recording`, or
the partition groups :func:`~replay.recorded.read_groups` yields one at a time)
and the candidate handler, re-runs the handler over every selected input, finds
the recorded reaction to that same input by ``causation_id`` (in the input's own
group: runs are co-partitioned), and returns a :class:`~replay.report.Report`.
Only one group is held at a time. The comparisons are pure, so they are tested
over events built in memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from statistics import mean
from typing import Any

from replay.chain import Chain, ChainResult
from replay.frozen import FrozenTools
from replay.gate import GateGroup, gate_groups
from replay.judging import Judged, judged
from replay.recorded import Progress, Recorded, Recording, Selection, inputs, quiet
from replay.report import Report
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import Ruleset
from services.verifier.handler import VerifierHandler
from tracebound.events import (
    Answer,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    RetryRequested,
    ToolInvoked,
    Verdict,
)

ALL = Selection()
RETRY = "RETRY"
MISSING = "missing"
GATEKEEPER_PROGRESS_EVERY = 5000  # evidence events between progress lines


def _transition(old: str, new: str) -> str:
    return f"{old}→{new}"


def _reaction(reactions: list[Event], kinds: tuple[type[Event], ...]) -> Any:
    found = [e for e in reactions if isinstance(e, kinds)]
    return found[0] if found else None


def gatekeeper_report(
    recorded: Recording | Iterable[Recording | GateGroup],
    handler: GatekeeperHandler,
    selection: Selection = ALL,
    progress: Progress = quiet,
) -> Report:
    """Re-check every recorded ``EvidenceProduced`` with the candidate rule set, here.

    The candidate judges each round as the handler's check would (the same status,
    severity and failed rules); the result's explaining records are not built.
    """
    ruleset = handler.ruleset
    groups = (judged(group, ruleset, selection) for group in gate_groups(recorded))
    return gatekeeper_comparison(groups, ruleset, progress)


def gatekeeper_comparison(
    groups: Iterable[list[Judged]], ruleset: Ruleset, progress: Progress = quiet
) -> Report:
    """The report of re-judged evidence, group by group (see :mod:`replay.judging`)."""
    transitions: Counter[str] = Counter()
    fires_old: Counter[str] = Counter()
    fires_new: Counter[str] = Counter()
    per_run: list[dict[str, Any]] = []
    old_versions: set[str] = set()
    label = "gatekeeper: evidence event(s)"
    for rows in groups:
        for row in rows:
            old, new = row.old, row.new
            fires_new.update(set(new.failed_rules))
            if old is not None:
                fires_old.update(set(old.failed_rules))
                old_versions.add(old.rule_set_version)
            old_rules = set(old.failed_rules) if old else set()
            old_key = (old.status, old.severity) if old else (MISSING, MISSING)
            changed = (
                old is None
                or old_key != (new.status, new.severity)
                or old_rules != set(new.failed_rules)
            )
            transitions[_transition(old.severity if old else MISSING, new.severity)] += 1
            per_run.append(
                {
                    "run_id": row.run_id,
                    "evidence_event_id": row.event_id,
                    "round": row.round,
                    "old": {"status": old_key[0], "severity": old_key[1]},
                    "new": {"status": new.status, "severity": new.severity},
                    "failed_rules_added": sorted(set(new.failed_rules) - old_rules),
                    "failed_rules_removed": sorted(old_rules - set(new.failed_rules)),
                    "changed": changed,
                }
            )
            if len(per_run) % GATEKEEPER_PROGRESS_EVERY == 0:
                progress(f"{label}: {len(per_run)} re-run")
    progress(f"{label}: {len(per_run)} re-run")
    rules = sorted(set(fires_old) | set(fires_new) | set(ruleset.order))
    summary = {
        "inputs": len(per_run),
        "without_recorded_result": sum(1 for r in per_run if r["old"]["status"] == MISSING),
        "changed": sum(1 for r in per_run if r["changed"]),
        "severity_transitions": dict(sorted(transitions.items())),
        "rule_fires": {r: {"old": fires_old[r], "new": fires_new[r]} for r in rules},
        "runs_changed": sorted({r["run_id"] for r in per_run if r["changed"]}),
    }
    return Report(
        kind="replay.gatekeeper",
        baseline={"rule_set_version": sorted(old_versions)},
        candidate={"rule_set_version": ruleset.version, "rules": ruleset.source},
        summary=summary,
        per_run=per_run,
    )


def _outcome_label(event: Event | None) -> str:
    if isinstance(event, Verdict):
        return event.verdict
    if isinstance(event, RetryRequested):
        return RETRY
    return MISSING


def _score(event: Event | None) -> float | None:
    return event.groundedness_score if isinstance(event, Verdict) else None


def verifier_report(
    recorded: Recorded,
    handler: VerifierHandler,
    candidate: dict[str, Any],
    selection: Selection = ALL,
    progress: Progress = quiet,
) -> Report:
    """Re-judge every recorded ``GatekeeperResult``; compare with the recorded outcome."""
    transitions: Counter[str] = Counter()
    deltas: list[float] = []
    per_run: list[dict[str, Any]] = []
    old_modes: set[str] = set()
    for checked, reactions in inputs(
        recorded,
        GatekeeperResult,
        Recording.reactions,
        selection,
        progress,
        label="verifier: gatekeeper result(s)",
        every=100,
    ):
        reaction = _reaction(reactions, (Verdict, RetryRequested))
        outputs = handler(checked)
        new = next(e for e in outputs if isinstance(e, Verdict | RetryRequested))
        old_label, new_label = _outcome_label(reaction), _outcome_label(new)
        old_score, new_score = _score(reaction), _score(new)
        delta = None if old_score is None or new_score is None else new_score - old_score
        if delta is not None:
            deltas.append(delta)
        if isinstance(reaction, Verdict):
            old_modes.add(reaction.verifier_mode)
        transitions[_transition(old_label, new_label)] += 1
        per_run.append(
            {
                "run_id": checked.run_id,
                "gatekeeper_event_id": checked.event_id,
                "round": checked.round,
                "old": {"outcome": old_label, "groundedness": old_score},
                "new": {"outcome": new_label, "groundedness": new_score},
                "groundedness_delta": delta,
                "changed": old_label != new_label or bool(delta),
            }
        )
    summary = {
        "inputs": len(per_run),
        "changed": sum(1 for r in per_run if r["changed"]),
        "verdict_transitions": dict(sorted(transitions.items())),
        "groundedness_delta_mean": round(mean(deltas), 6) if deltas else None,
        "groundedness_compared": len(deltas),
        "runs_changed": sorted({r["run_id"] for r in per_run if r["changed"]}),
    }
    return Report(
        kind="replay.verifier",
        baseline={"verifier_mode": sorted(old_modes)},
        candidate=candidate,
        summary=summary,
        per_run=per_run,
    )


def _final(events: list[Event], kind: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    return found[-1] if found else None


def _first(events: list[Event], kind: type[Any]) -> Any:
    return next((e for e in events if isinstance(e, kind)), None)


def pipeline_report(
    recorded: Recorded,
    chain: Chain,
    candidate: dict[str, Any],
    selection: Selection = ALL,
    progress: Progress = quiet,
) -> Report:
    """Re-run whole runs from their recorded plan with tool outputs frozen from the recording.

    The plan is read from the recorded ``PlanProduced`` (it carries the calls the
    executor runs), so edited skill files do not change what a replay calls; a
    run recorded without its plan is planned again.
    """
    transitions: Counter[str] = Counter()
    per_run: list[dict[str, Any]] = []
    total_misses = 0
    for request, run_events in inputs(
        recorded,
        DiagnosisRequested,
        Recording.run_of,
        selection,
        progress,
        label="pipeline: run(s)",
        every=100,
    ):
        frozen = FrozenTools.of(e.tool_invocation for e in run_events if isinstance(e, ToolInvoked))
        plan: PlanProduced | None = _first(run_events, PlanProduced)
        result: ChainResult | None = None
        error = None
        try:
            result = chain.with_tools(frozen.tools()).run(request, plan)
        except Exception as exc:  # one broken run must not end the replay; it is reported
            error = f"{type(exc).__name__}: {exc}"
        old_answer: Answer | None = _final(run_events, Answer)
        new_answer = result.answer if result else None
        old_verdict = old_answer.verdict if old_answer else MISSING
        new_verdict = new_answer.verdict if new_answer else MISSING
        old_text = old_answer.user_facing_answer if old_answer else None
        new_text = new_answer.user_facing_answer if new_answer else None
        total_misses += len(frozen.misses)
        transitions[_transition(old_verdict, new_verdict)] += 1
        verdict_changed = old_verdict != new_verdict
        answer_changed = old_text != new_text
        per_run.append(
            {
                "run_id": request.run_id,
                "query": request.request.query,
                "old": {
                    "verdict": old_verdict,
                    "rounds": len([e for e in run_events if isinstance(e, EvidenceProduced)]),
                    "answer": old_text,
                },
                "new": {
                    "verdict": new_verdict,
                    "rounds": result.rounds if result else 0,
                    "answer": new_text,
                },
                "verdict_changed": verdict_changed,
                "answer_changed": answer_changed,
                "plan": "recorded" if plan is not None else "planned again",
                "tool_calls_answered": frozen.hits,
                "unrecorded_tool_calls": [m.to_json() for m in frozen.misses],
                "error": error,
                "changed": verdict_changed or answer_changed or error is not None,
            }
        )
    summary = {
        "runs": len(per_run),
        "changed": sum(1 for r in per_run if r["changed"]),
        "verdict_changed": sum(1 for r in per_run if r["verdict_changed"]),
        "answer_changed": sum(1 for r in per_run if r["answer_changed"]),
        "verdict_transitions": dict(sorted(transitions.items())),
        "unrecorded_tool_calls": total_misses,
        "errors": sum(1 for r in per_run if r["error"]),
        "runs_changed": sorted(r["run_id"] for r in per_run if r["changed"]),
    }
    return Report(
        kind="replay.pipeline",
        baseline={"source": "recorded events"},
        candidate=candidate,
        summary=summary,
        per_run=per_run,
    )
