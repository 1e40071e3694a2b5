"""Prompt tokens, completion tokens, model time and model calls per role, per diagnosis.

The demo eval suite runs through the in-process chain (``replay/chain.py``) with
every role in ``llm`` mode, so no broker is needed. The model is either the
scripted server of the tests (replies from ``bench.llm_bench.scripted_reply``)
or a real OpenAI-compatible server such as ``llama-server``. Tools answer from
memory: the demo alerts, the demo log records and the shipped runbooks, each
searched by plain word matching instead of PostgreSQL.

The scripted server reports as ``usage.prompt_tokens`` what a counter says the
request holds: the real server's tokenizer when ``tokenizer_url`` names one,
else the calibrated estimate. A real server reports its own count.

    python -m bench.llm_tokens                      # scripted server, estimated counts
    python -m bench.llm_tokens --tokenizer URL      # scripted server, llama-server counts
    python -m bench.llm_tokens --real URL --cases 02_cpu_en_positive
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.memory_tools import memory_tools
from replay.chain import Chain
from replay.evals import EVALS_DIR, EvalCase, load_suite, score
from replay.frozen import with_faults
from services.executor.tools.base import EvidenceTool
from tracebound.events import AgentStep
from tracebound.llm import LLMSettings, OpenAIChatModel
from tracebound.llm.budget import estimate_messages, family_for
from tracebound.llm.tokens import ServerTokenizer

ROLE_OF_AGENT = {
    "chat_planner": "planner",
    "aiops_planner": "planner",
    "chat_executor": "executor",
    "chat_verifier": "verifier",
    "chat_verifier_small": "verifier",
    "chat_composer": "composer",
}
ROLES = ("planner", "executor", "verifier", "composer")


@dataclass
class RoleFigures:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_ms: int = 0
    failed: int = 0

    def add(self, step: AgentStep) -> None:
        self.calls += 1
        self.prompt_tokens += step.prompt_tokens or 0
        self.completion_tokens += step.completion_tokens or 0
        self.model_ms += step.duration_ms
        self.failed += 0 if step.success else 1


@dataclass
class SuiteFigures:
    """What the suite cost per role, and each case's verdict and pass."""

    runs: int = 0
    seconds: float = 0.0
    roles: dict[str, RoleFigures] = field(default_factory=lambda: defaultdict(RoleFigures))
    verdicts: dict[str, str] = field(default_factory=dict)
    passed: dict[str, bool] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=dict)
    # Each alert run's (AIOPS case) prompt tokens and model seconds, all roles together.
    alert_runs: dict[str, tuple[int, float]] = field(default_factory=dict)

    def per_alert_run(self) -> dict[str, float] | None:
        """Mean prompt tokens and model seconds of one alert diagnosis; None without one."""
        if not self.alert_runs:
            return None
        n = len(self.alert_runs)
        return {
            "runs": n,
            "prompt_tokens": round(sum(t for t, _s in self.alert_runs.values()) / n),
            "model_s": round(sum(s for _t, s in self.alert_runs.values()) / n, 2),
        }

    def per_run(self, role: str) -> dict[str, float]:
        f = self.roles[role]
        n = max(self.runs, 1)
        return {
            "calls": round(f.calls / n, 2),
            "prompt_tokens": round(f.prompt_tokens / n),
            "completion_tokens": round(f.completion_tokens / n),
            "model_s": round(f.model_ms / n / 1000, 2),
        }

    def total_per_run(self) -> dict[str, float]:
        rows = [self.per_run(r) for r in ROLES]
        return {k: round(sum(r[k] for r in rows), 2) for k in rows[0]}

    @property
    def used_share(self) -> float | None:
        """Share of role decisions whose model output was used (not fallen back to rules)."""
        used = self.decisions.get("llm", 0)
        total = used + self.decisions.get("rules-fallback", 0)
        return round(used / total, 3) if total else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "runs_per_s": round(self.runs / self.seconds, 3) if self.seconds else None,
            "per_diagnosis": {r: self.per_run(r) for r in ROLES},
            "total_per_diagnosis": self.total_per_run(),
            "per_alert_diagnosis": self.per_alert_run(),
            "model_output_used": self.used_share,
            "verdicts": self.verdicts,
            "passed": sum(self.passed.values()),
        }


def add_steps(figures: SuiteFigures, events: Sequence[Any]) -> None:
    for event in events:
        if isinstance(event, AgentStep):
            figures.roles[ROLE_OF_AGENT.get(event.agent_name, event.agent_name)].add(event)


def run_cases(
    model: OpenAIChatModel,
    cases: Sequence[EvalCase],
    tools: Mapping[str, EvidenceTool],
    concurrency: int = 1,
) -> SuiteFigures:
    """Every case through the in-process chain in llm mode, ``concurrency`` at a time."""
    figures = SuiteFigures()
    lock = threading.Lock()

    def one(case: EvalCase) -> None:
        chain = Chain.build(with_faults(tools, case.faults.failing_tools), model=model)
        result = chain.run(case.request_event())
        with lock:
            figures.runs += 1
            add_steps(figures, result.events)
            figures.verdicts[case.id] = result.answer.verdict if result.answer else "none"
            figures.passed[case.id] = all(r["passed"] for r in score(case.expect, result))
            if case.request.mode == "AIOPS":
                steps = [e for e in result.events if isinstance(e, AgentStep)]
                figures.alert_runs[case.id] = (
                    sum(s.prompt_tokens or 0 for s in steps),
                    sum(s.duration_ms for s in steps) / 1000,
                )
            for (_role, mode), count in chain.planner.monitor.decisions().items():
                figures.decisions[mode] = figures.decisions.get(mode, 0) + count

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(concurrency, 1)) as pool:
        list(pool.map(one, cases))
    figures.seconds = time.monotonic() - started
    figures.verdicts = dict(sorted(figures.verdicts.items()))
    return figures


def counting_responder(tokenizer_url: str | None, model_name: str) -> Any:
    """The scripted replies, with ``usage.prompt_tokens`` counted from what was sent."""
    from bench.llm_bench import scripted_reply  # noqa: PLC0415 - needs the test support

    tokenizer = ServerTokenizer(tokenizer_url, model_name) if tokenizer_url else None
    family = family_for(model_name)

    def respond(body: Mapping[str, Any]) -> Any:
        entry = scripted_reply(body)
        messages, tools = body.get("messages") or [], body.get("tools")
        counted = tokenizer.count(messages, tools) if tokenizer else None
        if counted is None:
            counted = estimate_messages(messages, tools, family)
        payload = dict(entry.body or {})
        usage = dict(payload.get("usage") or {})
        usage.update(
            prompt_tokens=counted, total_tokens=counted + usage.get("completion_tokens", 0)
        )
        payload["usage"] = usage
        return dataclasses.replace(entry, body=payload)

    return respond


def scripted_suite(
    cases: Sequence[EvalCase] | None = None,
    tokenizer_url: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> SuiteFigures:
    """The demo suite against the scripted server."""
    from tests.support.fake_openai import FakeOpenAI  # noqa: PLC0415 - test support

    model_name = "SmolLM2-135M-Instruct"
    server = FakeOpenAI(responder=counting_responder(tokenizer_url, model_name), record=False)
    with server:
        llm = LLMSettings(
            base_url=server.base_url,
            max_retries=0,
            model="gpt-4o-mini",
            startup_check=False,
            **dict(settings or {}),
        )
        return run_cases(
            OpenAIChatModel(llm), cases or load_suite(EVALS_DIR / "demo"), memory_tools()
        )


def real_suite(
    base_url: str,
    cases: Sequence[EvalCase] | None = None,
    settings: Mapping[str, Any] | None = None,
    concurrency: int = 1,
) -> SuiteFigures:
    """The demo suite against a real server (``base_url`` ends in ``/v1``)."""
    llm = LLMSettings(base_url=base_url, max_retries=0, **dict(settings or {}))
    suite = cases or load_suite(EVALS_DIR / "demo")
    return run_cases(OpenAIChatModel(llm), suite, memory_tools(), concurrency)


@contextlib.contextmanager
def llama() -> Iterator[Any]:
    """llama-server serving SmolLM2-135M (``tests.support.llama_server.Running``), or why not."""
    from tests.support import llama_server  # noqa: PLC0415 - test support

    built = llama_server.ensure_built()
    if isinstance(built, str):
        yield f"no llama-server: {built}"
        return
    log = Path(tempfile.mkdtemp(prefix="tracebound-bench-")) / "llama-server.log"
    try:
        with llama_server.llama_server(built, log) as running:
            yield running
    except AssertionError as exc:  # the server did not start
        yield f"llama-server did not start: {str(exc)[:300]}"


def llama_suite(
    running: Any, cases: Sequence[EvalCase] | None = None, profile: str = "default"
) -> SuiteFigures:
    """The demo suite against a running llama-server, its slots as concurrency."""
    settings = {
        "model": "SmolLM2-135M-Instruct",
        "context_window": running.context // running.slots,
        "max_tokens": 512,
        "profile": profile,
    }
    return real_suite(running.base_url, cases, settings, running.slots)


def table(figures: SuiteFigures, title: str) -> str:
    """Per role and in total, per diagnosis."""
    head = f"{title}: {figures.runs} run(s), {figures.as_dict()['runs_per_s']} runs/s"
    lines = [head, f"{'role':<10}{'calls':>7}{'prompt':>9}{'completion':>12}{'model s':>9}"]
    rows = [(r, figures.per_run(r)) for r in ROLES] + [("total", figures.total_per_run())]
    for role, f in rows:
        lines.append(
            f"{role:<10}{f['calls']:>7}{f['prompt_tokens']:>9}"
            f"{f['completion_tokens']:>12}{f['model_s']:>9}"
        )
    lines.append(f"model output used: {figures.used_share}")
    if (alert := figures.per_alert_run()) is not None:
        lines.append(
            f"per alert diagnosis ({alert['runs']} alert runs): {alert['prompt_tokens']}"
            f" prompt tokens, {alert['model_s']} model s"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm_tokens", description=__doc__)
    parser.add_argument("--real", help="a real server's /v1 URL (else the scripted server)")
    parser.add_argument("--tokenizer", help="llama-server root URL to count scripted prompts")
    parser.add_argument("--cases", nargs="*", help="case ids (default: the whole demo suite)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--set", action="append", default=[], help="an LLMSettings field, NAME=VALUE"
    )
    args = parser.parse_args(argv)
    cases = load_suite(EVALS_DIR / "demo")
    if args.cases:
        cases = [c for c in cases if c.id in set(args.cases)]
    settings = dict(item.split("=", 1) for item in args.set)
    if args.real:
        figures = real_suite(args.real, cases, settings)
    else:
        figures = scripted_suite(cases, args.tokenizer, settings)
    if args.json:
        print(json.dumps(figures.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(table(figures, "real server" if args.real else "scripted server"))
        print(json.dumps(figures.verdicts, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
