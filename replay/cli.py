"""``tracebound replay …`` and ``tracebound eval run …``.

``replay --stage gatekeeper|verifier|pipeline`` reads recorded events (all, a
``--since/--until`` window of stage inputs, or ``--run`` ids; or a ``--from-file``
export), re-runs that stage in this process with the candidate rules
(``--rules`` for the gatekeeper, ``--verifier-rules`` for the verifier and the
composer), mode/model (``--mode``, ``--model``) or prompts (``--prompt-version
DIR``: a folder of prompt files and skills, laid out as ``TRACEBOUND_PROMPTS_DIR``
would be), and reports old vs new. The candidates are handed to the roles that
use them; nothing process-wide is changed. ``--export FILE``
writes the selected recorded events as JSON Lines instead — the recording an
eval suite can run against with ``--frozen``. Progress goes to stderr; the
report goes to stdout (readable, or JSON with ``--json``) and ``--out FILE``,
and into the eval tables unless ``--no-store``; a stored report ends with the
URL of its page (``page <url>``, ``/reports/ID`` on the ingest). Exit 0 whenever the replay ran:
changes are its result, not an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay.chain import Chain, prompts_folder
from replay.compare import (
    gatekeeper_comparison,
    gatekeeper_report,
    pipeline_report,
    verifier_report,
)
from replay.evals import load_suite, run_suite
from replay.frozen import FrozenTools
from replay.judging import read_judged
from replay.recorded import (
    Recording,
    Selection,
    export_jsonl,
    load_jsonl,
    read_groups,
    stderr_progress,
)
from replay.report import Report, render_text
from replay.store import store_report
from services.common.mode import Mode
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import default_ruleset, load_ruleset
from services.verifier.handler import VerifierHandler
from services.verifier.rules_file import VerifierRules, load_verifier_rules
from tracebound.collector import tune_collector
from tracebound.errors import InvalidInputError
from tracebound.events import ToolInvoked
from tracebound.llm import ChatModel, LLMSettings, chat_model_from_settings
from tracebound.llm.monitor import FallbackMonitor
from tracebound.pages import PageAddress, report_path
from tracebound.prompts import PromptSet
from tracebound.settings import KafkaSettings
from tracebound.topology import EXPORT_TOPICS, REPLAY_TOPICS

STAGE_TOPICS = REPLAY_TOPICS  # what each --stage reads (the topology)


def _time(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {value!r}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _candidate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", type=Path, help="candidate gatekeeper rules file")
    parser.add_argument(
        "--verifier-rules", type=Path, metavar="FILE", help="candidate verifier rules file"
    )
    parser.add_argument(
        "--mode", choices=("rules", "llm"), default="rules", help="role implementations"
    )
    parser.add_argument("--model", help="model name for --mode llm (TRACEBOUND_LLM_MODEL)")
    parser.add_argument(
        "--prompt-version",
        metavar="DIR",
        help="candidate prompts folder (as TRACEBOUND_PROMPTS_DIR); default the active one",
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--out", type=Path, help="also write the JSON report to FILE")
    parser.add_argument("--no-store", action="store_true", help="do not store the report")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``replay`` and ``eval`` to the main parser."""
    rp = subparsers.add_parser(
        "replay",
        help="re-run a stage over recorded events and compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rp.add_argument("--stage", choices=sorted(STAGE_TOPICS), help="the stage to re-run")
    rp.add_argument("--since", type=_time, help="first stage input time (ISO-8601)")
    rp.add_argument("--until", type=_time, help="last stage input time (ISO-8601)")
    rp.add_argument("--run", action="append", default=[], metavar="RUN_ID", help="repeatable")
    rp.add_argument("--from-file", type=Path, help="read a --export file instead of Kafka")
    rp.add_argument("--export", type=Path, metavar="FILE", help="write events as JSON Lines")
    rp.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes re-judging partition groups (--stage gatekeeper; default one per core)",
    )
    _candidate_options(rp)
    _output_options(rp)
    rp.set_defaults(handler=run_replay)

    ev = subparsers.add_parser("eval", help="run eval suites through the in-process pipeline")
    commands = ev.add_subparsers(dest="eval_command", metavar="SUBCOMMAND")
    commands.required = True
    run = commands.add_parser(
        "run",
        help="run every case of a suite folder and score it",
        description="Run every case (*.json) of DIR with live demo tools, or --frozen outputs.",
    )
    run.add_argument("dir", type=Path, metavar="DIR")
    run.add_argument("--frozen", type=Path, metavar="RECORDING.jsonl", help="a --export file")
    _candidate_options(run)
    _output_options(run)
    run.set_defaults(handler=run_eval)

    from bench import incidents  # noqa: PLC0415 - its harness is imported when the suite runs

    suite = commands.add_parser(
        "incidents",
        help="run the incident suite on real Prometheus, Alertmanager and VictoriaLogs",
        description=incidents.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    incidents.add_options(suite)
    suite.set_defaults(handler=incidents.run_suite)


def _prompts(folder: str | None) -> PromptSet:
    """The candidate prompt folder, or the active one."""
    path = prompts_folder(folder)
    if path is None:
        return PromptSet.active()
    if not path.is_dir():
        raise InvalidInputError(f"--prompt-version {folder}: not a folder of prompts")
    return PromptSet(path)


def _verifier_rules(args: argparse.Namespace) -> VerifierRules:
    return load_verifier_rules(args.verifier_rules)


def _model(args: argparse.Namespace) -> ChatModel | None:
    mode: Mode = args.mode
    if mode == "rules":
        return None
    settings = LLMSettings()
    if args.model:
        settings = settings.model_copy(update={"model": args.model})
    model = chat_model_from_settings(settings)
    if model is None:
        raise InvalidInputError("--mode llm needs TRACEBOUND_LLM_BASE_URL")
    return model


def _candidate(
    args: argparse.Namespace, prompts: PromptSet, verifier_rules: VerifierRules
) -> dict[str, Any]:
    ruleset = load_ruleset(args.rules) if args.rules else default_ruleset()
    candidate: dict[str, Any] = {
        "mode": args.mode,
        "rule_set_version": ruleset.version,
        "rules": ruleset.source,
        "verifier_rule_set_version": verifier_rules.version,
        "verifier_rules": verifier_rules.source,
        "prompts_dir": str(prompts.folder),
    }
    if args.mode == "llm":
        candidate["model"] = args.model or LLMSettings().model
        candidate["prompt_versions"] = {p.name: p.version for p in prompts.all()}
    return candidate


def _recorded(
    args: argparse.Namespace, names: tuple[str, ...], sel: Selection
) -> Iterable[Recording]:
    """The recording of ``--from-file``, or the topics' partition groups one at a time."""
    if args.from_file:
        return (load_jsonl(args.from_file, sel),)
    return read_groups(KafkaSettings(), names, sel, stderr_progress)


def _gatekeeper(args: argparse.Namespace, sel: Selection, handler: GatekeeperHandler) -> Report:
    """The gatekeeper replay: of ``--from-file`` here, of the topics by ``--workers`` processes,
    each message decoded only as far as the replay reads it."""
    if args.from_file:
        recording = load_jsonl(args.from_file, sel)
        return gatekeeper_report(recording, handler, sel, stderr_progress)
    groups = read_judged(
        KafkaSettings(),
        STAGE_TOPICS["gatekeeper"],
        sel,
        handler.ruleset,
        progress=stderr_progress,
        workers=args.workers,
    )
    return gatekeeper_comparison(groups, handler.ruleset, stderr_progress)


def _finish(report: Report, args: argparse.Namespace) -> int:
    page = None
    if not args.no_store:
        report_id = store_report(report)
        page = PageAddress().page_url(report_path(report_id))
        stderr_progress(f"stored as eval_report {report_id}")
    if args.out:
        report.write_json(args.out)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2, default=str))
        if page:  # stdout stays one JSON document
            stderr_progress(f"page {page}")
    else:
        print(render_text(report))
        if page:
            print(f"\npage  {page}")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    tune_collector()  # a replay holds a partition group of recorded events at a time
    selection = Selection(args.since, args.until, frozenset(args.run))
    if args.export:
        groups = _recorded(args, EXPORT_TOPICS, Selection(run_ids=selection.run_ids))
        events = (e for group in groups for e in group.events if _in_window(e, selection))
        count = export_jsonl(events, args.export)
        stderr_progress(f"exported {count} event(s) to {args.export}")
        return 0
    if not args.stage:
        raise InvalidInputError("replay needs --stage (or --export FILE)")
    prompts, verifier_rules = _prompts(args.prompt_version), _verifier_rules(args)
    candidate = _candidate(args, prompts, verifier_rules)
    candidate["selection"] = selection.describe()
    if args.stage == "gatekeeper":
        ruleset = load_ruleset(args.rules) if args.rules else default_ruleset()
        report = _gatekeeper(args, selection, GatekeeperHandler(ruleset))
        report.candidate.update(candidate)
    elif args.stage == "verifier":
        recorded = _recorded(args, STAGE_TOPICS[args.stage], selection)
        handler = VerifierHandler(
            model=_model(args), rules=verifier_rules, prompts=prompts, monitor=FallbackMonitor()
        )
        report = verifier_report(recorded, handler, candidate, selection, stderr_progress)
    else:
        recorded = _recorded(args, STAGE_TOPICS[args.stage], selection)
        candidate_rules = load_ruleset(args.rules) if args.rules else None
        chain = Chain.build(
            {},
            ruleset=candidate_rules,
            model=_model(args),
            verifier_rules=verifier_rules,
            prompts=prompts,
        )
        report = pipeline_report(recorded, chain, candidate, selection, stderr_progress)
    return _finish(report, args)


def _in_window(event: Any, selection: Selection) -> bool:
    if selection.since is not None and event.occurred_at < selection.since:
        return False
    return selection.until is None or event.occurred_at <= selection.until


def run_eval(args: argparse.Namespace) -> int:
    cases = load_suite(args.dir)
    prompts, verifier_rules = _prompts(args.prompt_version), _verifier_rules(args)
    candidate = _candidate(args, prompts, verifier_rules)
    frozen = None
    if args.frozen:
        recording = load_jsonl(args.frozen)
        frozen = FrozenTools.of(e.tool_invocation for e in recording.of(ToolInvoked))
        tools = frozen.tools()
        candidate["tools"] = f"frozen:{args.frozen}"
    else:
        from services.executor.tools import (  # noqa: PLC0415 - live tools only here
            ToolSettings,
            build_tools,
        )

        tools = build_tools(ToolSettings.demo())  # the cases are written for the demo data
        candidate["tools"] = "live demo environment"
    ruleset = load_ruleset(args.rules) if args.rules else None
    chain = Chain.build(
        tools, ruleset=ruleset, model=_model(args), verifier_rules=verifier_rules, prompts=prompts
    )
    report = run_suite(
        cases,
        chain,
        tools,
        suite=str(args.dir),
        candidate=candidate,
        frozen=frozen,
        progress=stderr_progress,
    )
    return _finish(report, args)


def main() -> int:  # pragma: no cover - convenience for `python -m replay.cli`
    from tracebound.cli import main as cli_main  # noqa: PLC0415

    return cli_main(sys.argv[1:])
