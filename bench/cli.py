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
(:mod:`bench.answered_bench`). Each figure is the
median of repeated runs; the table goes to stdout, progress to stderr, and the
whole report (every run, the machine, the git commit) to ``bench-results/``.

While the bench runs the pipeline roles, the stack's own role processes (if
``tracebound up`` started them) are stopped, because they would share consumer
groups and transactional ids with the bench's; they are started again at the end.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import pipeline_bench, processes, projections_bench, replay_bench, runtime_bench
from bench.figures import (
    TARGETS,
    llm_figures,
    med,
    pipeline_figures,
    projections_figures,
    runs_note,
    runtime_figures,
)
from bench.report import REPO, RESULTS, Figure, fmt, git_commit, log, machine, save, table
from tracebound.codec import make_codec
from tracebound.settings import StackSettings
from tracebound.stack import stack
from tracebound.stack.services import start_services, stop_services
from tracebound.stack.topics import stack_kafka_settings

FIGURES = (
    "runtime",
    "gatekeeper",
    "pipeline",
    "llm",
    "projections",
    "replay",
    "dashboard",
    "restore",
)
PROFILE_ENV = "TRACEBOUND_BENCH_PROFILE"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=2000, help="burst size (default 2000)")
    parser.add_argument(
        "--rate", type=float, default=50.0, help="open-loop offered requests/s (default 50)"
    )
    parser.add_argument(
        "--rate-seconds", type=float, default=20.0, help="open-loop duration (default 20)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per cheap figure (default 3; median)"
    )
    parser.add_argument(
        "--pipeline-repeat", type=int, default=1, help="pipeline burst and open-loop runs"
    )
    parser.add_argument(
        "--runtime-messages", type=int, default=20_000, help="messages per runtime loop"
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


def _repeat(times: int, what: str, fn: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    runs = []
    for i in range(times):
        log(f"{what}: run {i + 1}/{times}")
        runs.append(fn(i))
    return runs


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.only = set(args.only or FIGURES)
        self.profile = bool(args.profile) or os.environ.get(PROFILE_ENV, "") not in ("", "0")
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.profile_dir = RESULTS / f"profile-{self.stamp}" if self.profile else None
        self.figures: list[Figure] = []
        self.report: dict[str, Any] = {}
        self.pipeline_since: datetime | None = None

    def _profile_path(self, name: str) -> Path | None:
        return self.profile_dir / f"{name}.pstats" if self.profile_dir is not None else None

    # -- figures ------------------------------------------------------------------------

    def gatekeeper(self) -> None:
        # Its workload comes from the test support package, importable from the checkout.
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        gatekeeper_bench: Any = importlib.import_module("bench.gatekeeper_bench")
        runs = _repeat(
            self.args.repeat,
            "gatekeeper",
            lambda _i: gatekeeper_bench.run(seconds=self.args.gatekeeper_seconds),
        )
        rate = med(runs, "claims_per_second")
        target = TARGETS["gatekeeper_cps"]
        self.figures.append(
            Figure(
                "gatekeeper",
                f"{fmt(rate)} claims/s (single process)",
                f">= {target:,.0f} claims/s",
                rate >= target,
                runs_note(len(runs)),
            )
        )
        self.report["gatekeeper"] = {"claims_per_second_median": rate, "runs": runs}

    def runtime(self, kafka: Any) -> None:
        runs = _repeat(
            self.args.repeat,
            "runtime",
            lambda i: runtime_bench.run(
                kafka,
                self.args.runtime_messages,
                order=i,
                profile_to=self._profile_path("runtime-loop") if i == 0 else None,
            ),
        )
        self.figures += runtime_figures(runs)
        self.report["runtime"] = {"runs": runs}

    def pipeline(self, kafka: Any, env: dict[str, str]) -> None:
        codec = make_codec(kafka)
        self.pipeline_since = datetime.now(UTC)
        with processes.running_roles(env) as roles:
            warm = pipeline_bench.warm_up(kafka, codec)
            pids = roles.pids()
            log(f"pipeline: roles warm after {warm:.1f}s (pids {pids})")
            bursts = _repeat(
                self.args.pipeline_repeat,
                "pipeline burst",
                lambda _i: pipeline_bench.burst(
                    kafka, codec, self.args.requests, pids, metrics_ports=roles.metrics_ports
                ),
            )
            rss = processes.roles_rss(pids)
            loops = _repeat(
                self.args.pipeline_repeat,
                "pipeline open loop",
                lambda _i: pipeline_bench.open_loop(
                    kafka, codec, self.args.rate, self.args.rate_seconds
                ),
            )
            profiled = None
            if self.profile_dir is not None:
                log("pipeline: extra burst under py-spy (not counted)")
                profiled = pipeline_bench.burst(
                    kafka,
                    codec,
                    min(self.args.requests, 1000),
                    pids,
                    self.profile_dir / "pipeline",
                )
            rss_end = processes.roles_rss(pids)
        figures, rps, p99 = pipeline_figures(self.args, bursts, loops, rss_end)
        self.figures += figures
        self.report["pipeline"] = {
            "requests_per_second_median": rps,
            "open_loop_p99_ms_median": p99,
            "latency_definition": "answer received by the reader − request requested_at (ms)",
            "bursts": bursts,
            "open_loops": loops,
            "rss_mb_after_bursts": rss,
            "rss_mb_at_end": rss_end,
            "warm_up_seconds": round(warm, 2),
            "profiled_burst": profiled,
        }

    def llm(self, kafka: Any, env: dict[str, str]) -> None:
        # The scripted model server comes from the test support package.
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        llm_bench: Any = importlib.import_module("bench.llm_bench")
        runs = llm_bench.run(
            kafka,
            env,
            self.args.llm_requests,
            self.args.llm_baseline_requests,
            self.args.llm_delay,
        )
        self.figures += llm_figures(runs)
        self.report["llm"] = runs

    def projections(self, kafka: Any, dsn: str) -> None:
        live = _repeat(
            self.args.repeat,
            "projections catch-up",
            lambda i: projections_bench.catch_up(
                kafka, dsn, self._profile_path("projections-catch-up") if i == 0 else None
            ),
        )
        rebuilt = _repeat(
            self.args.repeat,
            "projections rebuild",
            lambda i: projections_bench.rebuild(
                kafka, dsn, self._profile_path("projections-rebuild") if i == 0 else None
            ),
        )
        figures, live_eps, rebuild_eps = projections_figures(live, rebuilt)
        self.figures += figures
        self.report["projections"] = {
            "live_events_per_second_median": live_eps,
            "rebuild_events_per_second_median": rebuild_eps,
            "event_definition": "one event applied to one read model",
            "catch_up_runs": live,
            "rebuild_runs": rebuilt,
        }

    def replay(self, kafka: Any) -> None:
        runs = _repeat(
            self.args.repeat,
            "replay",
            lambda i: replay_bench.run(
                kafka,
                self.pipeline_since,
                self._profile_path("replay-gatekeeper") if i == 0 else None,
            ),
        )
        eps = med(runs, "events_per_second")
        since = self.pipeline_since.isoformat() if self.pipeline_since else "the beginning"
        self.figures.append(
            Figure(
                "replay",
                f"{fmt(eps)} events/s re-judged (--stage gatekeeper --no-store,"
                f" {med(runs, 'inputs'):,.0f} evidence events since {since};"
                f" judging alone {fmt(med(runs, 'judge_events_per_second'))}/s)",
                note=runs_note(len(runs)),
            )
        )
        chain = replay_bench.pipeline(kafka, self.pipeline_since)
        self.figures.append(
            Figure(
                "replay pipeline",
                f"{fmt(chain['run_events_per_second'])} recorded events/s re-run"
                f" ({chain['runs']} runs, {fmt(chain['runs_per_second'])} runs/s, rules mode;"
                f" read {fmt(chain['read_events_per_second'])} events/s)",
                note="(1 run)",
            )
        )
        self.report["replay"] = {
            "events_per_second_median": eps,
            "runs": runs,
            "pipeline": chain,
        }

    def dashboard(self, dsn: str) -> None:
        # Its runs come from the test support package, importable from the checkout.
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        dashboard_bench: Any = importlib.import_module("bench.dashboard_bench")
        log("dashboard: 100,000 runs in a private schema")
        result = dashboard_bench.run(dsn)
        medians = result["median_ms"]
        first = medians["first page"]
        filtered = medians["first page, verdict=REJECT mode=CHAT"]
        reports = result["report_pages_median_ms"]
        self.figures.append(
            Figure(
                "dashboard",
                f"{first:.0f} ms first page, {filtered:.0f} ms with two filters"
                f" ({result['runs']:,} runs; database reads of one page); report list"
                f" {reports['list']:.0f} ms, a report {reports['report']:.0f} ms"
                f" ({result['reports']:,} reports)",
                f"< {TARGETS['dashboard_ms']:.0f} ms",
                max(first, filtered) < TARGETS["dashboard_ms"],
                f"median of {len(result['all_ms']['first page'])}",
            )
        )
        self.report["dashboard"] = result

    def restore(self, kafka: Any) -> None:
        # Its answer comes from the test support package, importable from the checkout.
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        answered_bench: Any = importlib.import_module("bench.answered_bench")
        result = answered_bench.run(kafka, self.args.answered_runs, 10_000)
        self.figures.append(answered_bench.figure(result))
        self.report["restore"] = result

    # -- the whole run ------------------------------------------------------------------

    def run(self) -> int:
        info = machine()
        log(f"{info['cores']} cores, load average {info['load_average']}")
        self.report["machine_at_start"] = info
        if "gatekeeper" in self.only:
            self.gatekeeper()
        if self.only - {"gatekeeper"}:
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
        if others:
            log(f"also running on the stack (load during the bench): {', '.join(others)}")
        self.report["stack"] = {"started_here": started, "paused": paused, "others": others}
        try:
            if "runtime" in self.only:
                self.runtime(kafka)
            if "pipeline" in self.only:
                self.pipeline(kafka, env)
            if "llm" in self.only:
                self.llm(kafka, env)
            if "projections" in self.only:
                self.projections(kafka, status.pg_dsn)
            if "replay" in self.only:
                self.replay(kafka)
            if "dashboard" in self.only:
                self.dashboard(status.pg_dsn)
            if "restore" in self.only:
                self.restore(kafka)
        finally:
            if paused:
                for note in start_services(settings, env, paused):
                    log(note)
            if started:
                log("stopping the stack the bench started")
                stack.down(settings)

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
