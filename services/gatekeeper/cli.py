"""``tracebound gatekeeper check FILE [--rules PATH]``.

Why a CLI: operators replay a stored session's executor output and tool
invocations through the exact rules the service runs, without Kafka. One
compact ``gatekeeper_result`` JSON line is printed per input object, in input
order. Exit 0 whenever the checks ran (a ``fail`` status is a result, not an
error); invalid input raises InvalidInputError, which the main CLI reports on
one line with exit 2. All input is validated before anything is printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from services.gatekeeper.check import check
from services.gatekeeper.input import parse_requests
from services.gatekeeper.ruleset import default_ruleset, load_ruleset
from tracebound.jsonio import add_check_command, print_json_line, read_text


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``gatekeeper`` command group to the main parser."""
    check_parser = add_check_command(
        subparsers,
        (
            "gatekeeper",
            "deterministic verification of executor citations",
            "Deterministic verification of executor citations against tool invocations.",
        ),
        (
            "check",
            "check executor output against tool invocations",
            "Read one JSON object {executor_structured_output, tool_invocations} or JSON "
            "Lines of them, print one gatekeeper_result JSON line per object.",
        ),
        run_check,
    )
    check_parser.add_argument(
        "--rules",
        metavar="PATH",
        type=Path,
        default=None,
        help="rules file (default: repository's)",
    )


def run_check(args: argparse.Namespace) -> int:
    """Check every request of FILE and print the results."""
    ruleset = load_ruleset(args.rules) if args.rules is not None else default_ruleset()
    for request in parse_requests(read_text(args.file)):
        outcome = check(request.executor_structured_output, request.tool_invocations, ruleset)
        print_json_line(outcome.result.model_dump(mode="json"))
    return 0
