"""The bench's figures: medians of the runs, set against their targets.

The runs are measured in :mod:`bench.runners`; here they become the table's lines
(and the medians the report keeps), so the two can change independently.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

from bench import processes
from bench.report import Figure, fmt, median
from tracebound.runtime.stages import STAGES

TARGETS = {
    "pipeline_rps": 400.0,
    "open_loop_p99_ms": 400.0,
    "gatekeeper_cps": 20_000.0,
    "projections_live_eps": 10_000.0,
    "projections_rebuild_eps": 10_000.0,
    "projections_rss_mb": 150.0,
    "replay_eps": 8_000.0,  # gatekeeper-stage replay, evidence events/s over the command
    "rss_mb": 150.0,
    "llm_rps": 10.0,
    "prompt_tokens": 6000,
    "prompt_tokens_small": 3000,
    "model_s": 60.0,  # model time of one alert diagnosis, small profile, SmolLM2 on 2 cores
    "dashboard_ms": 300.0,
}


def med(runs: Sequence[dict[str, Any]], *path: str) -> float:
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value))
    return median(values)


def runs_note(count: int) -> str:
    return f"(median of {count})" if count > 1 else "(1 run)"


def _warm_up(first: dict[str, Any] | None) -> str:
    if not first:
        return ""
    seconds = float(first.get("send_seconds", math.nan))
    return f"; p99 {fmt(first['latency_ms']['p99'], 0)} ms in the {seconds:.0f}s warm-up before"


def pipeline_figures(
    args: argparse.Namespace,
    bursts: Sequence[dict[str, Any]],
    loops: Sequence[dict[str, Any]],
    rss_end: dict[str, float],
    first: dict[str, Any] | None = None,
) -> tuple[list[Figure], float, float]:
    """Throughput, open-loop latency, overhead and memory; with the median rps and p99.

    ``first`` is the uncounted warm-up loop, whose p99 is told alongside."""
    figures: list[Figure] = []
    rps = med(bursts, "requests_per_second")
    answered = sum(int(b["answered"]) for b in bursts)
    asked = sum(int(b["asked"]) for b in bursts)
    lat = {q: med(bursts, "latency_ms", q) for q in ("p50", "p95", "p99")}
    figures.append(
        Figure(
            "pipeline",
            f"{fmt(rps)} requests/s ({args.requests} requests at once,"
            f" {answered}/{asked} answered; latency p50/p95/p99"
            f" {fmt(lat['p50'], 0)}/{fmt(lat['p95'], 0)}/{fmt(lat['p99'], 0)} ms)",
            f">= {TARGETS['pipeline_rps']:.0f} requests/s",
            rps >= TARGETS["pipeline_rps"],
            runs_note(len(bursts)),
        )
    )
    p99 = med(loops, "latency_ms", "p99")
    p50 = med(loops, "latency_ms", "p50")
    sent = med(loops, "achieved_send_rate")
    lost = sum(int(r["asked"]) - int(r["answered"]) for r in loops)
    ok = p99 < TARGETS["open_loop_p99_ms"] and lost == 0
    figures.append(
        Figure(
            "pipeline open loop",
            f"p99 {fmt(p99, 0)} ms at {args.rate:g} requests/s offered"
            f" (p50 {fmt(p50, 0)} ms, sent {fmt(sent)}/s for {args.rate_seconds:g}s,"
            f" {lost} unanswered{_warm_up(first)})",
            f"p99 < {TARGETS['open_loop_p99_ms']:.0f} ms",
            ok,
            runs_note(len(loops)),
        )
    )
    over = med(loops, "overhead_ms", "p50")
    tool = med(loops, "tool_ms_per_request", "mean")
    step = med(loops, "agent_step_ms_per_request", "mean")
    burst_over = med(bursts, "overhead_ms", "p50")
    cpu = {role: med(bursts, "cpu_ms_per_request", role) for role in processes.ROLES}
    cpu_text = ", ".join(f"{r} {v:.1f}" for r, v in cpu.items())
    figures.append(
        Figure(
            "pipeline overhead",
            f"p50 {fmt(over, 0)} ms/request at {args.rate:g}/s beyond tool"
            f" {tool:.1f} ms + agent-step {step:.1f} ms (latency = answer received −"
            f" requested_at; burst: {fmt(burst_over, 0)} ms); CPU ms/request: {cpu_text}",
        )
    )
    figures += stage_figures(bursts)
    figures.append(stack_cpu_figure(bursts, loops, args.rate))
    top_role, top_rss = max(rss_end.items(), key=lambda kv: kv[1]) if rss_end else ("-", 0.0)
    figures.append(
        Figure(
            "service RSS",
            f"max {fmt(top_rss)} MB ({top_role}; "
            + ", ".join(f"{r} {v:.0f}" for r, v in rss_end.items())
            + " MB, VmRSS after the pipeline runs)",
            f"< {TARGETS['rss_mb']:.0f} MB each",
            bool(rss_end) and top_rss < TARGETS["rss_mb"],
        )
    )
    return figures, rps, p99


def projections_figures(
    live: Sequence[dict[str, Any]],
    scaled: Sequence[dict[str, Any]],
    rebuilt: Sequence[dict[str, Any]],
) -> tuple[list[Figure], float, float, float]:
    """Catch-up rates (one process, and replicas), the rebuild rate and the memory of a
    catch-up; with the three medians."""
    live_eps = med(live, "events_per_second")
    scaled_eps = med(scaled, "events_per_second")
    rebuild_eps = med(rebuilt, "events_per_second")
    target = TARGETS["projections_live_eps"]
    replicas = int(med(scaled, "replicas")) if scaled else 0
    workers = int(med(scaled, "run_workers")) if scaled else 0
    figures = [
        Figure(
            "projections live",
            f"{fmt(live_eps)} events/s (one process catching up on {med(live, 'events'):,.0f}"
            f" model events, {fmt(med(live, 'distinct_events_per_second'))} distinct events/s)",
            f">= {target:,.0f} events/s",
            live_eps >= target,
            runs_note(len(live)),
        ),
        Figure(
            "projections scaled",
            f"{fmt(scaled_eps)} events/s (the same catch-up by {replicas} replicas,"
            f" {workers} run worker{'s' if workers != 1 else ''} each)",
            f">= {target:,.0f} events/s",
            scaled_eps >= target,
            runs_note(len(scaled)),
        ),
        Figure(
            "projections rebuild",
            f"{fmt(rebuild_eps)} events/s ({med(rebuilt, 'events'):,.0f} model events)",
            f">= {TARGETS['projections_rebuild_eps']:,.0f} events/s",
            rebuild_eps >= TARGETS["projections_rebuild_eps"],
            runs_note(len(rebuilt)),
        ),
    ]
    peak = _most(live, "peak_rss_mb")
    per_replica, together = _most(scaled, "peak_rss_mb"), _most(scaled, "peak_rss_mb_together")
    figures.append(
        Figure(
            "projections memory",
            f"{fmt(peak)} MB peak RSS of one python -m projections catching up;"
            f" {fmt(per_replica)} MB per replica ({replicas} replicas, {fmt(together)} MB"
            " together)",
            f"<= {TARGETS['projections_rss_mb']:.0f} MB",
            peak <= TARGETS["projections_rss_mb"],
            runs_note(len(live)),
        )
    )
    return figures, live_eps, scaled_eps, rebuild_eps


def _most(runs: Sequence[dict[str, Any]], key: str) -> float:
    return max((float(r.get(key, math.nan)) for r in runs), default=math.nan)


def llm_figures(runs: dict[str, Any]) -> list[Figure]:
    """The llm-mode burst against its one-call-at-a-time baseline of the same bench run."""
    fast, base = runs["concurrent"], runs["baseline"]
    rps, base_rps = float(fast["requests_per_second"]), float(base["requests_per_second"])
    lat = fast["latency_ms"]
    complete = fast["answered"] == fast["asked"] and fast["rebalances"] == 0
    ratio = f"{rps / base_rps:.1f}x" if base_rps > 0 else "n/a"
    return [
        Figure(
            "llm pipeline",
            f"{fmt(rps)} runs/s ({fast['asked']} requests at once, model {runs['delay_s']:g}s"
            f" per call, {fast['model_calls_per_request']} calls per run;"
            f" {fast['answered']}/{fast['asked']} answered, {fast['rebalances']} rebalances;"
            f" latency p50/p99 {fmt(lat['p50'], 0)}/{fmt(lat['p99'], 0)} ms)",
            f">= {TARGETS['llm_rps']:.0f} runs/s, all answered, no rebalance",
            rps >= TARGETS["llm_rps"] and complete,
            "(1 run)",
        ),
        Figure(
            "llm baseline",
            f"{fmt(base_rps)} runs/s with one call at a time ({base['asked']} requests,"
            f" {base['answered']} answered; latency p50/p99 {fmt(base['latency_ms']['p50'], 0)}"
            f"/{fmt(base['latency_ms']['p99'], 0)} ms); concurrency gains {ratio}",
            note="(1 run)",
        ),
    ]


def model_figures(
    scripted: dict[str, dict[str, Any]], real: dict[str, Any] | str, profile: str
) -> list[Figure]:
    """Prompt tokens per alert diagnosis (scripted server, both profiles) and per diagnosis
    of the whole suite, beside the real model; the targets are for an alert diagnosis."""
    default, small = scripted["default"], scripted["small"]
    none = {"runs": 0, "prompt_tokens": math.nan, "model_s": math.nan}
    alert = default["per_alert_diagnosis"] or none
    tokens, small_tokens = (
        alert["prompt_tokens"],
        (small["per_alert_diagnosis"] or none)["prompt_tokens"],
    )
    same = default["verdicts"] == small["verdicts"]
    suite = default["total_per_diagnosis"]["prompt_tokens"]
    small_suite = small["total_per_diagnosis"]["prompt_tokens"]
    figures = [
        Figure(
            "llm prompt tokens",
            f"{fmt(tokens, 0)} per alert diagnosis ({fmt(small_tokens, 0)} with the small"
            f" profile); {fmt(suite, 0)} ({fmt(small_suite, 0)}) per diagnosis of the"
            f" {default['runs']} demo cases, alert runs {alert['runs']} of them; scripted server,"
            f" verdicts {'the same' if same else 'differ'} in both profiles",
            f"< {TARGETS['prompt_tokens']:.0f} (small < {TARGETS['prompt_tokens_small']:.0f})",
            tokens < TARGETS["prompt_tokens"] and small_tokens < TARGETS["prompt_tokens_small"],
            "(1 run)",
        )
    ]
    if isinstance(real, str):
        figures.append(Figure("llm real model", f"skipped: {real}"))
        return figures
    total = real["total_per_diagnosis"]
    used = real["model_output_used"]
    real_alert = real["per_alert_diagnosis"] or none
    figures.append(
        Figure(
            "llm real model",
            f"{fmt(real_alert['model_s'], 1)} model s and {fmt(real_alert['prompt_tokens'], 0)}"
            f" prompt tokens per alert diagnosis ({fmt(total['model_s'], 1)} s and"
            f" {fmt(total['prompt_tokens'], 0)} per diagnosis of the {real['runs']} demo cases);"
            f" {fmt(real['runs_per_s'] or 0, 3)} runs/s; model output used in"
            f" {fmt(100 * (used or 0), 0)}% of role calls (SmolLM2-135M on llama-server,"
            f" {profile} profile)",
            f"< {TARGETS['model_s']:.0f} s",
            real_alert["model_s"] < TARGETS["model_s"],
            note="(1 run)",
        )
    )
    return figures


def runtime_figures(runs: Sequence[dict[str, Any]]) -> list[Figure]:
    """The runtime's throughput, and its ratio to each peer that ran in every run."""
    first = runs[0]
    tb = med(runs, "tracebound", "messages_per_second")
    peers = []
    for name in ("raw", "fastavro", "quix"):
        if all(name in run["ratio"] for run in runs):
            peers.append(f"{name} {fmt(med(runs, name, 'messages_per_second'), 0)}")
    figures = [
        Figure(
            "runtime",
            f"{fmt(tb, 0)} msg/s (ServiceLoop, trivial handler; exactly-once peers: "
            + ", ".join(peers)
            + f" msg/s; {first['message_bytes_mean']:.0f}-byte messages, commit every"
            f" {first['commit_interval_ms']} ms or {first['commit_max_messages']} inputs)",
            note=runs_note(len(runs)),
        )
    ]
    # No targets: the runtime's ratios are a no-regression figure. The fastavro loop
    # (decode and encode only) is below any target worth setting, and no user waits
    # on the loop; what users wait on is the model (the llm lines).
    for name in ("raw", "fastavro", "quix"):
        ratios = [run["ratio"][name] for run in runs if name in run["ratio"]]
        if len(ratios) < len(runs):
            why = next((run[name]["error"] for run in runs if "error" in run[name]), "missing")
            figures.append(Figure(f"runtime / {name}", f"not measured: {why}"))
            continue
        note = f"no-regression figure, no target; {runs_note(len(runs))}"
        figures.append(Figure(f"runtime / {name}", f"{median(ratios):.2f}", note=note))
    floor = floor_figure(runs)
    if floor is not None:
        figures.append(floor)
    return figures


def floor_figure(runs: Sequence[dict[str, Any]]) -> Figure | None:
    """The fastavro loop against the other peers: a loop that decodes and encodes every
    value with fastavro and does nothing else, the ceiling of any Avro loop in Python
    (None when the fastavro loop did not run)."""
    if not all("fastavro" in run["ratio"] for run in runs):
        return None
    parts = []
    for name in ("raw", "quix"):
        if all(name in run["ratio"] for run in runs):
            floor = median([run["ratio"][name] / run["ratio"]["fastavro"] for run in runs])
            parts.append(f"{floor:.2f} of {name}")
    if not parts:
        return None
    text = "the fastavro loop runs at " + ", ".join(parts)
    return Figure("fastavro / peers", text, note=runs_note(len(runs)))


def stage_figures(bursts: Sequence[dict[str, Any]]) -> list[Figure]:
    """One line per role: CPU and loop time per request, split by stage (burst medians)."""
    figures = []
    for role in processes.ROLES:
        if not all(role in b.get("stage_ms_per_request", {}) for b in bursts):
            continue
        ms = {s: med(bursts, "stage_ms_per_request", role, s) for s in STAGES}
        cpu = med(bursts, "cpu_ms_per_request", role)
        figures.append(
            Figure(
                f"stages {role}",
                f"codec {ms['codec']:.2f}, handler {ms['handler'] - ms['postgres']:.2f},"
                f" postgres {ms['postgres']:.2f}, kafka {ms['kafka']:.2f} ms/request"
                f" (process CPU {cpu:.2f} ms/request)",
                note=runs_note(len(bursts)),
            )
        )
    return figures


def stack_cpu_figure(
    bursts: Sequence[dict[str, Any]], loops: Sequence[dict[str, Any]], rate: float
) -> Figure:
    """Where the machine's CPU goes: the roles together and every other process of the
    stack, per request in the burst and as cores kept busy in the open loop (medians)."""
    names = list(bursts[0].get("stack_cpu_ms_per_request") or {}) if bursts else []
    burst = {"roles": sum(med(bursts, "cpu_ms_per_request", r) for r in processes.ROLES)}
    burst.update({n: med(bursts, "stack_cpu_ms_per_request", n) for n in names})
    cores = loops[0].get("cores", {}) if loops else {}
    loop = {"roles": sum(med(loops, "cores", r) for r in processes.ROLES if r in cores)}
    loop.update({n: med(loops, "cores", n) for n in cores if n not in processes.ROLES})
    return Figure(
        "pipeline CPU",
        "burst "
        + ", ".join(f"{n} {v:.2f}" for n, v in burst.items())
        + f" ms/request; at {rate:g}/s "
        + ", ".join(f"{n} {v:.2f}" for n, v in sorted(loop.items(), key=lambda kv: -kv[1]))
        + " cores busy",
        note=runs_note(len(bursts)),
    )
