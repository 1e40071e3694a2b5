"""``tracebound tool NAME [--param KEY=VALUE ...] [--json]``.

Why a CLI: operators and tests run one evidence tool exactly as the executor
does — same parameter model, same backends, same evidence refs — and see what a
claim could cite. ``--json`` prints the tool_invocation fields (stable for
scripts); without it a short readable summary. An unknown tool, an unknown or
repeated parameter or an invalid value is invalid input (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any

from pydantic import BaseModel, ValidationError

from services.executor.tools import build_tools
from services.executor.tools.base import EvidenceTool, RunContext, ToolOutcome
from tracebound.errors import InvalidInputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tool`` command to the main parser."""
    parser = subparsers.add_parser(
        "tool",
        help="run one evidence tool and show its evidence refs",
        description=(
            "Run one evidence tool (query_metrics, query_logs, lookup_knowledge) with the "
            "configured backends and print its output with retrieval_details."
        ),
    )
    parser.add_argument("name", metavar="NAME", help="tool name")
    parser.add_argument(
        "--param",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a tool parameter (repeatable), e.g. --param query=HikariCP",
    )
    parser.add_argument("--json", action="store_true", help="print the invocation as JSON")
    parser.set_defaults(handler=run_tool)


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; a missing ``=`` or a repeated key is invalid."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--param {pair!r} is not KEY=VALUE")
        if key in params:
            raise InvalidInputError(f"--param {key} given more than once")
        params[key] = value
    return params


def validate_params(tool: EvidenceTool, raw: dict[str, str]) -> BaseModel:
    """The tool's own parameter model, built from CLI strings (ints converted)."""
    try:
        return tool.params_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidInputError(f"invalid parameters for {tool.name}: {problems}") from exc


def invocation_json(
    tool: EvidenceTool, params: BaseModel, outcome: ToolOutcome, duration_ms: int
) -> dict[str, Any]:
    return {
        "tool_name": tool.name,
        "backend": tool.backend.model_dump(mode="json"),
        "input_params": params.model_dump(mode="json"),
        "output": outcome.output,
        "retrieval_details": outcome.retrieval_details.model_dump(mode="json"),
        "success": outcome.success,
        "error_message": outcome.error_message,
        "retrieval_layer": outcome.retrieval_layer,
        "l0_match_count": outcome.l0_match_count,
        "l1_match_count": outcome.l1_match_count,
        "duration_ms": duration_ms,
    }


def summary_lines(tool: EvidenceTool, outcome: ToolOutcome, duration_ms: int) -> list[str]:
    details = outcome.retrieval_details
    name = tool.name
    lines = [
        f"tool: {name}  backend: {tool.backend.label()}  "
        f"success: {str(outcome.success).lower()}  "
        f"evidence_status: {details.evidence_status}  layer: {outcome.retrieval_layer or '-'}  "
        f"duration: {duration_ms} ms"
    ]
    if outcome.l0_match_count is not None or outcome.l1_match_count is not None:
        lines.append(
            f"l0_match_count: {outcome.l0_match_count}  l1_match_count: {outcome.l1_match_count}"
        )
    if details.relevance_level:
        lines.append(f"relevance_level: {details.relevance_level}")
    if details.dedup_reason:
        lines.append(f"dedup_reason: {details.dedup_reason}")
    if outcome.error_message:
        lines.append(f"error: {outcome.error_message}")
    message = outcome.output.get("message")
    if message:
        lines.append(f"message: {message}")
    lines.append(f"evidence_refs ({len(details.evidence_refs)}):")
    lines.extend(f"  {ref.raw_path}  {ref.text}" for ref in details.evidence_refs)
    return lines


def run_tool(args: argparse.Namespace) -> int:
    """Run the named tool once and print its invocation."""
    tools = build_tools()
    tool = tools.get(args.name)
    if tool is None:
        known = ", ".join(sorted(tools))
        raise InvalidInputError(f"unknown tool {args.name!r}; known tools: {known}")
    params = validate_params(tool, parse_params(args.param))
    ctx = RunContext(run_id=f"cli-{uuid.uuid4().hex[:12]}")
    started = time.perf_counter()
    outcome = tool.run(params, ctx)
    duration_ms = int((time.perf_counter() - started) * 1000)
    if args.json:
        record = invocation_json(tool, params, outcome, duration_ms)
        print(json.dumps(record, ensure_ascii=False, indent=2))
    else:
        sys.stdout.write("\n".join(summary_lines(tool, outcome, duration_ms)) + "\n")
    return 0 if outcome.success else 1
