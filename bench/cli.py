"""``tracebound bench`` (and ``python -m bench`` / ``make bench``): the six figures.

Runs on the local stack (started here if it is not running, and stopped again at
the end if it was started here): the pipeline (a burst of requests and an
open-loop run at a fixed offered rate, five role processes in rules mode), the
pipeline in llm mode against a scripted model server with a fixed delay per call
(a burst with each role's default concurrency and one with a single call at a
time), the runtime against exactly-once peers (a raw loop, the fastavro floor,
Quix Streams), the gatekeeper, the projections (catch-up
and rebuild into private schemas), the gatekeeper replay and the runs dashboard's
page reads over 100,000 runs (:mod:`bench.dashboard_bench`), and the composer's
restore of its answered runs over a million answers older than its window
(:mod:`bench.answered_bench`). The model figure needs no stack: the demo eval
suite in process, prompt tokens per diagnosis against the scripted server, and the
real SmolLM2-135M on llama-server (:mod:`bench.llm_tokens`). Each figure is the
median of repeated runs; the table goes to stdout, progress to stderr, and the
whole report (every run, the machine, the git commit) to ``bench-results/``.

While the bench runs the pipeline roles, the stack's own role processes (if
``tracebound up`` started them) are stopped, because they would share consumer
groups and transactional ids with the bench's; they are started again at the end.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import processes
from bench.report import git_commit, log, machine, save, table
from bench.runners import FIGURES, PROFILE_ENV, FigureRunners
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack import stack
from tracebound.stack.services import start_services, stop_services
from tracebound.stack.topics import stack_kafka_settings


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=2000, help="burst size (default 2000)")
    parser.add_argument(
        "--rate", type=float, default=50.0, help="open-loop offered requests/s (default 50)"
    )
    parser.add_argument(
        "--rate-seconds", type=float, default=20.0, help="open-loop duration (default 20)"
    )
    parser.add_argument(
        "--warm-seconds",
        type=float,
        default=20.0,
        help="an uncounted open loop at --rate before the pipeline figures, so they are of"
        " a warm stack (its p99 is reported too; 0: none; default 20)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per cheap figure (default 3; median)"
    )
    parser.add_argument(
        "--pipeline-repeat", type=int, default=1, help="pipeline burst and open-loop runs"
    )
    parser.add_argument(
        "--runtime-messages", type=int, default=50_000, help="messages per runtime loop"
    )
    parser.add_argument("--gatekeeper-seconds", type=float, default=2.0)
    parser.add_argument(
        "--llm-requests", type=int, default=300, help="llm-mode burst size (default 300)"
    )
    parser.add_argument(
        "--llm-baseline-requests",
        type=int,
        default=20,
        help="llm-mode burst with one call at a time per role (default 20)",
    )
    parser.add_argument(
        "--llm-delay", type=float, default=1.0, help="seconds per model call (default 1)"
    )
    parser.add_argument(
        "--model-profile",
        choices=("default", "small"),
        default="small",
        help="model: the prompt profile of the real-model run (default small)",
    )
    parser.add_argument(
        "--projection-events",
        type=int,
        default=150_000,
        help="projections, replay: copy recorded runs until the history has this many model events",
    )
    parser.add_argument(
        "--answered-runs", type=int, default=1_000_000, help="restore: answers past the window"
    )
    parser.add_argument(
        "--only", action="append", choices=FIGURES, help="run only these figures (repeatable)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help=f"also profile (py-spy on the roles, cProfile in-process); or {PROFILE_ENV}=1",
    )


def register(subparsers: Any) -> None:
    """Add ``bench`` to the ``tracebound`` parser."""
    parser = subparsers.add_parser(
        "bench",
        help="benchmark the pipeline, runtime, gatekeeper, projections, replay and dashboard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(parser)
    parser.set_defaults(handler=run_bench)


class Bench(FigureRunners):
    """The whole bench run: the figures asked for, on the stack, then the report."""

    # -- the whole run ------------------------------------------------------------------

    def run(self) -> int:
        info = machine()
        log(f"{info['cores']} cores, load average {info['load_average']}")
        self.report["machine_at_start"] = info
        if "gatekeeper" in self.only:
            self.gatekeeper()
        if "model" in self.only:  # in process: the real model needs no stack
            self.model()
        if self.only - {"gatekeeper", "model"}:
            self._on_stack()
        return self._finish()

    def _on_stack(self) -> None:
        settings = StackSettings()
        status = stack.up(settings)
        if not status.healthy:
            raise RuntimeError("the local stack is not healthy: " + "; ".join(status.messages))
        started = list(status.started)
        log(f"stack at {status.kafka_bootstrap}" + (f" (started {started})" if started else ""))
        kafka = stack_kafka_settings(settings)
        env = {
            "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": status.kafka_bootstrap,
            "TRACEBOUND_PG_DSN": status.pg_dsn,
        }
        paused = tuple(s.name for s in status.services if s.running and s.name in processes.ROLES)
        if paused:
            log(f"pausing the stack's own {', '.join(paused)} for the bench")
            for note in stop_services(settings, paused):
                log(note)
        others = [s.name for s in status.services if s.running and s.name not in paused]
        self.stack_pids = processes.stack_processes(status, processes.ROLES)
        if others:
            log(f"also running on the stack (load during the bench): {', '.join(others)}")
        self.report["stack"] = {"started_here": started, "paused": paused, "others": others}
        try:
            self._stack_benches(kafka, env, status.pg_dsn)
        finally:
            if paused:
                for note in start_services(settings, env, paused):
                    log(note)
            if started:
                log("stopping the stack the bench started")
                stack.down(settings)

    def _stack_benches(self, kafka: KafkaSettings, env: dict[str, str], pg_dsn: str) -> None:
        """Run the benches asked for that need the stack, always in this order."""
        benches: dict[str, Callable[[], object]] = {
            "runtime": lambda: self.runtime(kafka),
            "pipeline": lambda: self.pipeline(kafka, env),
            "llm": lambda: self.llm(kafka, env),
            "projections": lambda: self.projections(kafka, pg_dsn),
            "replay": lambda: self.replay(kafka),
            "dashboard": lambda: self.dashboard(pg_dsn),
            "restore": lambda: self.restore(kafka),
        }
        for name, bench in benches.items():
            if name in self.only:
                bench()

    def _finish(self) -> int:
        info = machine()
        self.report = {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": git_commit(),
            "machine": info,
            "args": vars(self.args) | {"handler": None},
            "figures": [
                {"name": f.name, "text": f.text, "target": f.target, "ok": f.ok, "note": f.note}
                for f in self.figures
            ],
            **self.report,
        }
        load = self.report["machine_at_start"]["load_average"]
        print(
            f"tracebound bench — {info['cores']} cores, load average {load[0]:.2f} at start,"
            f" {info['load_average'][0]:.2f} at end; commit {self.report['commit'] or 'unknown'}"
        )
        for line in table(self.figures):
            print(line)
        path = save(self.report)
        print(f"saved {path}")
        if self.profile_dir is not None:
            print(f"profiles in {self.profile_dir}")
        return 0


def run_bench(args: argparse.Namespace) -> int:
    """Handler of ``tracebound bench``; the exit code is 0 whenever the bench ran."""
    return Bench(args).run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    add_options(parser)
    args = parser.parse_args(argv)
    return run_bench(args)


__all__ = ["add_options", "main", "register", "run_bench"]
