"""What an incident's run left on the topics, and its score against the incident's key.

The suite (:mod:`bench.incidents`) watches the pipeline's topics while the
incidents fire; this module finds each incident's first run among the events,
scores the answer with :mod:`evals.incidents.score` from what the verifier
allowed, and prints the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracebound import topics
from tracebound.events import AgentStep, Answer, DiagnosisRequested, Event, Verdict

if TYPE_CHECKING:
    from evals.incidents.model import Incident
    from tests.support.stack import StackHandle

WATCHED = (topics.REQUESTS, topics.VERDICTS, topics.ANSWERS, topics.AGENT_STEPS)


# ---------------------------------------------------------------- what a run left


@dataclass
class Run:
    run_id: str
    requested: DiagnosisRequested
    answer: Answer | None = None
    verdict: Verdict | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reached: list[str] = field(default_factory=list)  # event types seen, in order

    @property
    def seconds(self) -> float | None:
        if self.answer is None:
            return None
        return (self.answer.occurred_at - self.requested.occurred_at).total_seconds()


class Events:
    """Every event of the watched topics published from construction on."""

    def __init__(self, stack: StackHandle) -> None:
        from tests.support.kafka_io import TopicTail  # noqa: PLC0415

        self.tails = [TopicTail(stack.kafka, name) for name in WATCHED]

    def all(self) -> list[Event]:
        return [e for tail in self.tails for e in tail.snapshot()]

    def close(self) -> None:
        for tail in self.tails:
            tail.close()

    def runs(self, incidents: Sequence[Incident]) -> dict[str, Run]:
        """The first run of each incident (by its alerts' service and namespace), by id."""
        events = self.all()
        by_run: dict[str, list[Event]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        found: dict[str, Run] = {}
        requests = sorted(
            (e for e in events if isinstance(e, DiagnosisRequested)), key=lambda e: e.occurred_at
        )
        for incident in incidents:
            mine = [r for r in requests if _is_of(r, incident)]
            if mine:
                found[incident.id] = _run(mine[0], by_run.get(mine[0].run_id, []))
        return found


def _is_of(request: DiagnosisRequested, incident: Incident) -> bool:
    scope = incident.scope
    return any(
        a.labels.get("service") == scope.service and a.labels.get("namespace") == scope.namespace
        for a in request.request.alerts
    )


def _run(requested: DiagnosisRequested, events: Sequence[Event]) -> Run:
    run = Run(run_id=requested.run_id, requested=requested)
    run.reached = [type(e).__name__ for e in events]
    answers = [e for e in events if isinstance(e, Answer)]
    run.answer = answers[0] if answers else None
    verdicts = sorted((e for e in events if isinstance(e, Verdict)), key=lambda v: v.round)
    if verdicts:
        same_round = [v for v in verdicts if run.answer and v.round == run.answer.round]
        run.verdict = (same_round or verdicts)[-1]
    steps = [e for e in events if isinstance(e, AgentStep)]
    if any(s.prompt_tokens is not None for s in steps):
        run.prompt_tokens = sum(s.prompt_tokens or 0 for s in steps)
        run.completion_tokens = sum(s.completion_tokens or 0 for s in steps)
    return run


# ---------------------------------------------------------------- scoring and the table


@dataclass
class Row:
    id: str
    category: str
    answered: bool
    run_id: str | None = None
    verdict: str | None = None
    cause_named: bool = False
    facts_found: list[str] = field(default_factory=list)
    facts_missing: list[str] = field(default_factory=list)
    false_statements: list[str] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float | None = None
    answer: str = ""
    claims: list[tuple[str, str]] = field(default_factory=list)
    hypotheses: list[str] = field(default_factory=list)
    rationale: str = ""  # the verifier's, of the verdict the answer came from
    # claims the verifier did not support: (status, claim_text, reason), for development
    unsupported: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def facts_total(self) -> int:
        return len(self.facts_found) + len(self.facts_missing)


def _ids(value: Any) -> list[str]:
    """A score's list of ids (or of objects with an ``id``), as strings."""
    if isinstance(value, int | bool) or value is None:
        return []
    return [str(getattr(v, "id", v)) for v in value]


def score_row(incident: Incident, run: Run | None) -> Row:
    from evals.incidents import score  # noqa: PLC0415

    row = Row(id=incident.id, category=incident.category, answered=False)
    if run is None or run.answer is None:
        if run is not None:
            row.run_id = run.run_id
        return row
    allowed = run.verdict.composer_input if run.verdict is not None else None
    claims = [(c.claim_type, c.claim_text) for c in allowed.allowed_claims] if allowed else []
    hypotheses = list(allowed.allowed_hypotheses) if allowed else []
    text = run.answer.user_facing_answer
    got = score.score(incident, claims, hypotheses, text, shown=score.shown_in(text, hypotheses))
    row.answered = True
    row.run_id = run.run_id
    row.verdict = run.answer.verdict
    row.cause_named = bool(got.cause_named)
    row.facts_found = _ids(got.facts_found)
    row.facts_missing = _ids(got.facts_missing)
    row.false_statements = _ids(got.false_statements)
    row.prompt_tokens, row.completion_tokens = run.prompt_tokens, run.completion_tokens
    row.seconds = run.seconds
    row.answer, row.claims, row.hypotheses = text, claims, hypotheses
    row.rationale = run.verdict.rationale if run.verdict is not None else ""
    checks = run.verdict.claim_checks if run.verdict is not None else ()
    row.unsupported = [
        (c.status, c.claim_text, c.reason) for c in checks if c.status != "SUPPORTED"
    ]
    return row


def totals(rows: Sequence[Row]) -> dict[str, Any]:
    answered = [r for r in rows if r.answered]
    facts = sum(r.facts_total for r in rows)
    found = sum(len(r.facts_found) for r in rows)
    return {
        "incidents": len(rows),
        "answered": len(answered),
        "cause_named_pct": round(100 * sum(r.cause_named for r in rows) / max(len(rows), 1), 1),
        "facts_found": found,
        "facts_total": facts,
        "facts_pct": round(100 * found / facts, 1) if facts else 0.0,
        "false_statements": sum(len(r.false_statements) for r in rows),
    }


def table(rows: Sequence[Row]) -> list[str]:
    """The printed table: one line per incident, then the totals."""
    head = ("incident", "category", "verdict", "cause", "facts", "false", "tokens", "seconds")
    lines: list[tuple[str, ...]] = [head]
    for r in rows:
        tokens = f"{r.prompt_tokens}+{r.completion_tokens}" if r.prompt_tokens is not None else "-"
        false = f"{len(r.false_statements)}" + (
            f" ({', '.join(r.false_statements)})" if r.false_statements else ""
        )
        lines.append(
            (
                r.id,
                r.category,
                r.verdict or "UNANSWERED",
                ("yes" if r.cause_named else "no") if r.answered else "-",
                f"{len(r.facts_found)}/{r.facts_total}" if r.answered else "-",
                false if r.answered else "-",
                tokens,
                f"{r.seconds:.1f}" if r.seconds is not None else "-",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines]
    t = totals(rows)
    out.append(
        f"totals: cause named {t['cause_named_pct']}%, facts {t['facts_found']}/"
        f"{t['facts_total']} ({t['facts_pct']}%), false statements {t['false_statements']},"
        f" answered {t['answered']}/{t['incidents']}"
    )
    return out
