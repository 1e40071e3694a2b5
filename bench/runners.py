"""The bench's figures, one method each: run the workload, add the table line and the report.

:mod:`bench.cli` parses the options, brings the stack up and calls the figures
asked for; each runner here repeats its workload as asked (median of the runs),
appends its :class:`~bench.report.Figure` lines and stores every run in the report.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    history_fill,
    pipeline_bench,
    processes,
    projections_bench,
    replay_bench,
    runtime_bench,
)
from bench.figures import (
    TARGETS,
    llm_figures,
    med,
    model_figures,
    pipeline_figures,
    projections_figures,
    runs_note,
    runtime_figures,
)
from bench.report import REPO, RESULTS, Figure, fmt, log
from tracebound.codec import make_codec

FIGURES = (
    "runtime",
    "gatekeeper",
    "pipeline",
    "llm",
    "model",
    "projections",
    "replay",
    "dashboard",
    "restore",
)
PROFILE_ENV = "TRACEBOUND_BENCH_PROFILE"


def _repeat(times: int, what: str, fn: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    runs = []
    for i in range(times):
        log(f"{what}: run {i + 1}/{times}")
        runs.append(fn(i))
    return runs


def _settled(
    groups: dict[str, list[int]], fn: Callable[[int], dict[str, Any]]
) -> Callable[[int], dict[str, Any]]:
    """``fn`` run on a settled stack: a figure is of a steady stack, not of what the
    run before it left behind (a burst's events still being projected)."""

    # An idle stack keeps ≈ 0.05 cores busy, and each broker node ≈ 0.1 more (the
    # consumers' fetches waiting at the end of their partitions).
    idle = 0.15 + 0.1 * len(groups.get("kafka", []))

    def run(i: int) -> dict[str, Any]:
        log(f"the stack settled after {processes.settle(groups, idle):.1f}s")
        return fn(i)

    return run


class FigureRunners:
    """Runs each figure and keeps its result: the table line and the report's entry."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.only = set(args.only or FIGURES)
        self.profile = bool(args.profile) or os.environ.get(PROFILE_ENV, "") not in ("", "0")
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.profile_dir = RESULTS / f"profile-{self.stamp}" if self.profile else None
        self.figures: list[Figure] = []
        self.report: dict[str, Any] = {}
        # The stack's processes besides the roles (:func:`bench.processes.stack_processes`).
        self.stack_pids: dict[str, list[int]] = {}

    def _profile_path(self, name: str) -> Path | None:
        return self.profile_dir / f"{name}.pstats" if self.profile_dir is not None else None

    def _profiled_runs(
        self, what: str, profile: str, run: Callable[[int, Path | None], dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """``--repeat`` runs of ``run(i, profile_to)``; only the first one is profiled."""
        return _repeat(
            self.args.repeat,
            what,
            lambda i: run(i, self._profile_path(profile) if i == 0 else None),
        )

    # -- figures ------------------------------------------------------------------------

    def model(self) -> None:
        """Prompt tokens per diagnosis against the scripted server, then the real model.

        Both run the demo eval suite in process (no stack): the scripted server with
        each profile, and llama-server serving SmolLM2-135M with its slots as concurrency.
        """
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        llm_tokens: Any = importlib.import_module("bench.llm_tokens")
        with llm_tokens.llama() as running:
            # The scripted replies' prompts are counted by the real server's tokenizer.
            counter = None if isinstance(running, str) else running.root
            scripted = {
                profile: llm_tokens.scripted_suite(
                    tokenizer_url=counter, settings={"profile": profile}
                ).as_dict()
                for profile in ("default", "small")
            }
            real_figures: dict[str, Any] | str = running
            if not isinstance(running, str):
                log("model: the demo eval suite against llama-server (SmolLM2-135M)")
                real = llm_tokens.llama_suite(running, profile=self.args.model_profile)
                real_figures = real.as_dict()
        self.figures += model_figures(scripted, real_figures, self.args.model_profile)
        self.report["model"] = {"scripted": scripted, "real": real_figures}

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
        runs = self._profiled_runs(
            "runtime",
            "runtime-loop",
            lambda i, to: runtime_bench.run(
                kafka, self.args.runtime_messages, order=i, profile_to=to
            ),
        )
        self.figures += runtime_figures(runs)
        self.report["runtime"] = {"runs": runs}

    def pipeline(self, kafka: Any, env: dict[str, str]) -> None:
        codec = make_codec(kafka)
        with processes.running_roles(env) as roles:
            warm = pipeline_bench.warm_up(kafka, codec)
            pids = roles.pids()
            everything = {**{role: [pid] for role, pid in pids.items()}, **self.stack_pids}
            log(f"pipeline: roles warm after {warm:.1f}s (pids {pids})")
            first = None
            if self.args.warm_seconds > 0:
                # A broker's JIT compiler keeps a core busy for its first minutes of load.
                log(f"pipeline: {self.args.warm_seconds:g}s of open loop to warm up (not counted)")
                first = pipeline_bench.open_loop(
                    kafka, codec, self.args.rate, self.args.warm_seconds, everything
                )
            bursts = _repeat(
                self.args.pipeline_repeat,
                "pipeline burst",
                _settled(
                    everything,
                    lambda _i: pipeline_bench.burst(
                        kafka,
                        codec,
                        self.args.requests,
                        pids,
                        metrics_ports=roles.metrics_ports,
                        processes=everything,
                    ),
                ),
            )
            rss = processes.roles_rss(pids)
            loops = _repeat(
                self.args.pipeline_repeat,
                "pipeline open loop",
                _settled(
                    everything,
                    lambda _i: pipeline_bench.open_loop(
                        kafka, codec, self.args.rate, self.args.rate_seconds, everything
                    ),
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
        figures, rps, p99 = pipeline_figures(self.args, bursts, loops, rss_end, first)
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
            "warm_up_open_loop": first,
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
        filled = history_fill.fill(kafka, self.args.projection_events)
        if filled.copies:
            log(
                f"history filled: {filled.before:,} → {filled.after.events:,} model events"
                f" ({filled.runs_copied:,} runs copied)"
            )
        live = self._profiled_runs(
            "projections catch-up",
            "projections-catch-up",
            lambda _i, to: projections_bench.catch_up(kafka, dsn, to),
        )
        replicas = projections_bench.scaled_replicas(kafka)
        scaled = _repeat(
            self.args.repeat,
            f"projections catch-up by {replicas} replicas",
            lambda _i: projections_bench.catch_up(kafka, dsn, replicas=replicas),
        )
        rebuilt = self._profiled_runs(
            "projections rebuild",
            "projections-rebuild",
            lambda _i, to: projections_bench.rebuild(kafka, dsn, to),
        )
        figures, live_eps, scaled_eps, rebuild_eps = projections_figures(live, scaled, rebuilt)
        self.figures += figures
        self.report["projections"] = {
            "live_events_per_second_median": live_eps,
            "live_events_per_second_by_replicas_median": scaled_eps,
            "rebuild_events_per_second_median": rebuild_eps,
            "event_definition": "one event applied to one read model",
            "history": {
                "asked": self.args.projection_events,
                "before_fill": filled.before,
                "model_events": filled.after.events,
                "runs_copied": filled.runs_copied,
            },
            "catch_up_runs": live,
            "catch_up_by_replicas_runs": scaled,
            "rebuild_runs": rebuilt,
        }

    def replay(self, kafka: Any) -> None:
        # Over the whole history, grown as for the projections (a no-op when they ran).
        filled = history_fill.fill(kafka, self.args.projection_events)
        log(f"replay: a history of {filled.after.events:,} model events")
        runs = self._profiled_runs(
            "replay",
            "replay-gatekeeper",
            lambda _i, to: replay_bench.run(kafka, None, to),
        )
        eps = med(runs, "events_per_second")
        since = "the beginning"
        self.figures.append(
            Figure(
                "replay",
                f"{fmt(eps)} events/s re-judged (--stage gatekeeper --no-store,"
                f" {med(runs, 'inputs'):,.0f} evidence events since {since};"
                f" judging alone {fmt(med(runs, 'judge_events_per_second'))}/s)",
                f">= {TARGETS['replay_eps']:,.0f} events/s",
                eps >= TARGETS["replay_eps"],
                runs_note(len(runs)),
            )
        )
        chain = replay_bench.pipeline(kafka, None)
        self.figures.append(
            Figure(
                "replay pipeline",
                f"{fmt(chain['run_events_per_second'])} recorded events/s re-run"
                f" ({chain['runs']} runs, {fmt(chain['runs_per_second'])} runs/s, rules mode;"
                f" read {fmt(chain['read_events_per_second'])} events/s over"
                f" {chain['recorded_events_read']:,} events)",
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


__all__ = ["FIGURES", "PROFILE_ENV", "FigureRunners"]
