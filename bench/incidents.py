"""The incident suite on real monitoring: each incident's alert fires, tracebound answers, scored.

For the incidents of a split (``evals/incidents``), at ``origin`` = now:

1. their two hours of metric history, ending 15 s before ``origin``, become TSDB blocks
   (``promtool tsdb create-blocks-from openmetrics``) that a real Prometheus starts on;
2. a small exporter on loopback serves every series' live value, scraped every 5 s
   with the series' own job and instance labels (``honor_labels``), so the alerting
   rules (evaluated every second) really fire;
3. a real Alertmanager groups the alerts by service and namespace, one group (one
   run) per incident, and posts them to a real ingest's webhook;
4. the incidents' log lines are in a real VictoriaLogs;
5. the five roles run with the Prometheus and VictoriaLogs backends (in ``llm`` mode
   against the tests' scripted model server unless ``TRACEBOUND_LLM_BASE_URL`` names
   one), and each incident's run is waited for (bounded) until answered;
6. each answer is scored against the incident's key from what the verifier allowed
   (the last verdict's ``composer_input``: allowed claims and hypotheses) and the
   user-facing answer, and a table is printed (``--json PATH`` writes it too).

``python -m bench.incidents --split dev`` (or ``tracebound eval incidents --split dev``).
The exit code is 1 only when the harness failed (a component did not start, an
incident was not answered in time), never for low scores.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracebound import topics
from tracebound.errors import StackError
from tracebound.events import AgentStep, Answer, DiagnosisRequested, Event, Verdict
from tracebound.settings import StackSettings
from tracebound.stack import stack as local_stack
from tracebound.stack.services import start_services, stop_services
from tracebound.topology import MODEL_ROLES, PIPELINE_ROLES

# The harness (tests/support) and the suite (evals/incidents) are imported when the suite
# runs: ``tracebound`` builds its parser with this module, in a wheel too.
if TYPE_CHECKING:
    from evals.incidents.model import Incident
    from tests.support.incident_stack import IncidentEnvironment
    from tests.support.stack import StackHandle

DEFAULT_TIMEOUT_S = 900.0
PROGRESS_EVERY_S = 10.0
BACKFILL_END_S = 15.0
WATCHED = (topics.REQUESTS, topics.VERDICTS, topics.ANSWERS, topics.AGENT_STEPS)


class HarnessError(RuntimeError):
    """The suite could not be run as designed (not a low score)."""


def log(message: str) -> None:
    """Progress goes to stderr so stdout stays the table."""
    print(f"incidents: {message}", file=sys.stderr, flush=True)


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
    got = score.score(incident, claims, hypotheses, text)
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


# ---------------------------------------------------------------- running


def _for_seconds(incident: Incident) -> float:
    return float(incident.alert.for_.rstrip("s") or 0)


def _tail(path: Path, chars: int = 2000) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return f"--- {path.name} ({path}) ---\n{text[-chars:]}"


@dataclass
class Suite:
    """One run of the suite: its incidents, its folder and what the roles run with."""

    incidents: Sequence[Incident]
    folder: Path
    mode: str = "rules"
    timeout_s: float = DEFAULT_TIMEOUT_S
    rows: list[Row] = field(default_factory=list)
    wall_s: float = 0.0

    def check(self) -> None:
        scopes = [(i.scope.service, i.scope.namespace) for i in self.incidents]
        if dupes := sorted({s for s in scopes if scopes.count(s) > 1}):
            raise HarnessError(f"incidents share a service and namespace (one run each): {dupes}")
        if not self.incidents:
            raise HarnessError("no incident selected")

    def run(self, stack: StackHandle) -> list[Row]:
        """Start everything, wait for every answer (bounded), score; stops what it started."""
        from evals.incidents import render  # noqa: PLC0415
        from tests.support.incident_stack import incident_environment  # noqa: PLC0415
        from tests.support.ingest_process import ingest_server  # noqa: PLC0415
        from tests.support.pipeline import running_pipeline  # noqa: PLC0415
        from tests.support.prometheus import free_port  # noqa: PLC0415

        self.check()
        started = time.monotonic()
        self.folder.mkdir(parents=True, exist_ok=True)
        origin = time.time()
        incidents = list(self.incidents)
        port = free_port()
        env = {
            "TRACEBOUND_TOOLS_METRICS_BACKEND": "prometheus",
            "TRACEBOUND_TOOLS_LOGS_BACKEND": "victorialogs",
        }
        log(f"{len(incidents)} incidents, origin {origin:.0f}, folder {self.folder}")
        with contextlib.ExitStack() as stop:
            environment = stop.enter_context(
                incident_environment(
                    self.folder,
                    f"http://127.0.0.1:{port}/api/v1/alerts",
                    openmetrics=render.openmetrics(incidents, end_unix=origin - BACKFILL_END_S),
                    exposition=lambda: render.exposition(incidents, time.time(), origin),
                    rules=render.rules_yaml(incidents),
                    log_lines=render.log_lines(incidents, origin),
                )
            )
            log(
                f"Prometheus {environment.prometheus_url}, VictoriaLogs"
                f" {environment.victorialogs_url}, exporter {environment.exporter}"
            )
            env["TRACEBOUND_TOOLS_PROMETHEUS_URL"] = environment.prometheus_url
            env["TRACEBOUND_TOOLS_VICTORIALOGS_URL"] = environment.victorialogs_url
            env.update(self._model_env(stop))
            events = Events(stack)
            stop.callback(events.close)
            ingest_log = self.folder / "ingest.log"
            stop.enter_context(ingest_server(stack.env(), ingest_log, port))
            pipeline_dir = self.folder / "pipeline"
            stop.enter_context(running_pipeline(stack, pipeline_dir, env=env, demo=False))
            log(f"ingest on 127.0.0.1:{port} and the five roles started ({self.mode} mode)")
            try:
                self._wait(environment, events, started)
            except HarnessError as exc:
                logs = [ingest_log, *sorted((pipeline_dir / "services").glob("*.log"))]
                tails = "\n".join(_tail(p) for p in logs)
                self.rows = self._scored(events)  # what was answered, for the table
                raise HarnessError(f"{exc}\n{environment.log_tails()}\n{tails}") from None
            self.rows = self._scored(events)
        self.wall_s = time.monotonic() - started
        return self.rows

    def _scored(self, events: Events) -> list[Row]:
        """A row per incident, scored when its run was answered."""
        runs = events.runs(self.incidents)
        try:
            return [score_row(i, runs.get(i.id)) for i in self.incidents]
        except Exception as exc:
            raise HarnessError(f"scoring failed: {type(exc).__name__}: {exc}") from exc

    def _model_env(self, stop: contextlib.ExitStack) -> dict[str, str]:
        roles = {f"TRACEBOUND_{r.upper()}_MODE": self.mode for r in MODEL_ROLES}
        if self.mode != "llm" or os.environ.get("TRACEBOUND_LLM_BASE_URL"):
            return roles
        from bench.llm_bench import scripted_reply  # noqa: PLC0415
        from tests.support import fake_openai as fake  # noqa: PLC0415

        server = fake.FakeOpenAI(responder=scripted_reply, record=False).start()
        stop.callback(server.stop)
        log(f"llm mode against the scripted model server at {server.base_url}")
        return {**roles, "TRACEBOUND_LLM_BASE_URL": server.base_url}

    def _wait(self, environment: IncidentEnvironment, events: Events, started: float) -> None:
        """Until every incident's run is answered; progress every few seconds."""
        total = len(self.incidents)
        deadline = time.monotonic() + self.timeout_s + max(map(_for_seconds, self.incidents))
        shown = 0.0
        while True:
            runs = events.runs(self.incidents)
            answered = sum(1 for r in runs.values() if r.answer is not None)
            if answered == total:
                log(f"all {total} answered after {time.monotonic() - started:.0f}s")
                time.sleep(1)  # the last agent steps of the runs
                return
            now = time.monotonic()
            if now - shown >= PROGRESS_EVERY_S:
                shown = now
                firing = _firing(environment)
                log(
                    f"{now - started:4.0f}s: {firing} alerts firing, {len(runs)}/{total} runs,"
                    f" {answered}/{total} answered"
                )
            if now >= deadline:
                raise HarnessError(self._stalled(environment, runs))
            time.sleep(0.5)

    def _stalled(self, environment: IncidentEnvironment, runs: Mapping[str, Run]) -> str:
        """What did not happen, incident by incident."""
        try:
            active = environment.alerts()
            scrape = "; ".join(environment.scrape_health())
        except Exception as exc:  # Prometheus itself gone: say so
            active, scrape = [], f"Prometheus unreachable: {exc}"
        lines = [f"not every incident was answered within {self.timeout_s:.0f}s"]
        for incident in self.incidents:
            run = runs.get(incident.id)
            if run is not None and run.answer is not None:
                continue
            scope = incident.scope
            states = {
                state
                for state, labels in active
                if labels.get("service") == scope.service
                and labels.get("namespace") == scope.namespace
            }
            if run is not None:
                why = f"run {run.run_id} not answered; its events: {run.reached}"
            elif "firing" in states:
                why = "its alert fires in Prometheus but no run came (Alertmanager → ingest)"
            elif states:
                why = f"its alert is still {'/'.join(sorted(states))} (for: {incident.alert.for_})"
            else:
                why = f"its alert {incident.alert.alert} is not active in Prometheus"
            lines.append(f"  {incident.id}: {why}")
        lines.append(f"  exporter scrape: {scrape}")
        return "\n".join(lines)


def _firing(environment: IncidentEnvironment) -> int | str:
    try:
        return len(environment.firing())
    except Exception:
        return "?"


# ---------------------------------------------------------------- the stack and the CLI


class _Leases:
    """Suites sharing the local stack: the last one to leave restores it.

    Each running suite holds a lease (a file named by its pid) under the stack's state
    folder; the roles a suite paused and whether a suite started the stack are noted
    there too. Leaving, a suite restarts the paused roles and stops a stack a suite
    started only when no other live suite holds a lease: a second suite started while
    the first ran must not lose its broker when the first one ends.
    """

    def __init__(self, settings: StackSettings) -> None:
        self.folder = Path(settings.state_dir) / "incident-suite"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.mine = self.folder / f"lease-{os.getpid()}"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with (self.folder / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def take(self, started: bool, paused: Sequence[str]) -> None:
        self.mine.touch()
        if started:
            (self.folder / "started").touch()
        noted = self.folder / "paused"
        before = noted.read_text().split() if noted.exists() else []
        noted.write_text(" ".join(dict.fromkeys([*before, *paused])))

    def release(self) -> tuple[bool, tuple[str, ...]] | None:
        """``(stop the stack, roles to restart)`` when this was the last lease, else None."""
        self.mine.unlink(missing_ok=True)
        for lease in self.folder.glob("lease-*"):
            with contextlib.suppress(ValueError):
                if Path(f"/proc/{int(lease.name.removeprefix('lease-'))}").exists():
                    return None
            lease.unlink(missing_ok=True)  # of a suite that died without leaving
        started, noted = self.folder / "started", self.folder / "paused"
        stop = started.exists()
        paused = tuple(noted.read_text().split()) if noted.exists() else ()
        started.unlink(missing_ok=True)
        noted.unlink(missing_ok=True)
        return stop, paused


@contextlib.contextmanager
def suite_stack() -> Iterator[StackHandle]:
    """The broker and database: an external one (``TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS``) or
    the local stack, started if needed, its own roles paused meanwhile (they would share
    the roles' consumer groups); the last suite to leave restores it (see :class:`_Leases`)."""
    from tests.support.stack import StackHandle, external_stack  # noqa: PLC0415

    if os.environ.get("TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"):
        yield external_stack()
        return
    settings = StackSettings()
    leases = _Leases(settings)
    with leases.locked():
        status = local_stack.up(settings)
        paused = tuple(s.name for s in status.services if s.running and s.name in PIPELINE_ROLES)
        leases.take(bool(status.started), paused)
    started = list(status.started)
    log(f"stack at {status.kafka_bootstrap}" + (f" (started {started})" if started else ""))
    env = {
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": status.kafka_bootstrap,
        "TRACEBOUND_PG_DSN": status.pg_dsn,
    }
    try:
        if not status.healthy:
            raise HarnessError("the local stack is not healthy: " + "; ".join(status.messages))
        for note in stop_services(settings, paused) if paused else ():
            log(note)
        yield StackHandle(
            kind="local",
            bootstrap=status.kafka_bootstrap,
            pg_dsn=status.pg_dsn,
            stack_settings=settings,
        )
    finally:
        with leases.locked():
            last = leases.release()
            if last is None:
                log("another suite is using the stack: left as it is")
            elif last[0]:
                log("stopping the stack a suite started")
                local_stack.down(settings)
            elif last[1]:
                for note in start_services(settings, env, last[1]):
                    log(note)


def load(split: str, only: Sequence[str] = ()) -> list[Incident]:
    from evals.incidents.model import load_split  # noqa: PLC0415

    splits = ("dev", "test") if split == "both" else (split,)
    incidents = [i for s in splits for i in load_split(s)]  # type: ignore[arg-type]
    if only:
        unknown = sorted(set(only) - {i.id for i in incidents})
        if unknown:
            raise HarnessError(f"--only: no incident {unknown} in split {split}")
        incidents = [i for i in incidents if i.id in only]
    return incidents


def report(suite: Suite, split: str) -> dict[str, Any]:
    return {
        "split": split,
        "mode": suite.mode,
        "wall_seconds": round(suite.wall_s, 1),
        "totals": totals(suite.rows),
        "incidents": [
            asdict(r) | {"facts_total": r.facts_total, "seconds": r.seconds} for r in suite.rows
        ],
    }


def run_suite(args: argparse.Namespace) -> int:
    """Handler of ``tracebound eval incidents`` and ``python -m bench.incidents``."""
    try:
        from tests.support.incident_stack import IncidentEnvironmentError  # noqa: PLC0415
    except ImportError as exc:
        print(f"incidents: runs from a checkout of tracebound (needs {exc.name})", file=sys.stderr)
        return 1
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="tracebound-incidents-"))
    suite: Suite | None = None
    failure: str | None = None
    try:
        suite = Suite(load(args.split, args.only), folder, args.mode, args.timeout)
        with suite_stack() as stack:
            suite.run(stack)
    except (HarnessError, IncidentEnvironmentError, StackError) as exc:
        failure = str(exc)
    if suite is not None and suite.rows:
        for line in table(suite.rows):
            print(line)
        print(f"wall time {suite.wall_s:.0f}s; servers' files in {folder}")
        if args.json:
            path = Path(args.json)
            path.write_text(json.dumps(report(suite, args.split), indent=2) + "\n")
            print(f"saved {path}")
    if failure is not None:
        print(f"incidents: harness failure: {failure}", file=sys.stderr)
        return 1
    return 0


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=("dev", "test", "both"), default="dev")
    parser.add_argument("--mode", choices=("rules", "llm"), default="rules")
    parser.add_argument(
        "--only", action="append", default=[], metavar="ID", help="an incident id (repeatable)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the table and totals as JSON")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds to wait for every answer (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument("--dir", metavar="DIR", help="the servers' folder (default: a temp one)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.incidents", description=__doc__.splitlines()[0]
    )
    add_options(parser)
    return run_suite(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
