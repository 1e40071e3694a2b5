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
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.incident_scores import Events, Row, Run, score_row, table, totals
from bench.incident_stack import HarnessError, log, suite_stack
from tracebound.errors import StackError
from tracebound.topology import MODEL_ROLES

# The harness (tests/support) and the suite (evals/incidents) are imported when the suite
# runs: ``tracebound`` builds its parser with this module, in a wheel too.
if TYPE_CHECKING:
    from evals.incidents.model import Incident
    from tests.support.incident_stack import IncidentEnvironment
    from tests.support.stack import StackHandle

DEFAULT_TIMEOUT_S = 900.0
PROGRESS_EVERY_S = 10.0


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
                    openmetrics=render.openmetrics(incidents, end_unix=origin),
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


# ---------------------------------------------------------------- the CLI


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
