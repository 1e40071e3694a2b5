"""``tracebound verifier check FILE [--mode rules|llm]``.

Why a CLI: operators re-judge a stored round (its gatekeeper result and
executor output) under the current verifier rules without Kafka. One verifier
output JSON line (seed section 5 fields, the retry request and the composer's
allowed material) is printed per input object, in input order. Exit 0 whenever
the verifier ran (REJECT is a result, not an error); invalid input raises
InvalidInputError, which the main CLI reports with exit 2. All input is
validated before anything is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from services.verifier.input import parse_inputs, read_text
from services.verifier.judge import verify

LLM_URL_SETTING = "TRACEBOUND_LLM_BASE_URL"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verifier`` command group to the main parser."""
    group = subparsers.add_parser(
        "verifier",
        help="judge claims against gatekeeper-verified evidence",
        description="Judge executor claims against gatekeeper-verified evidence.",
    )
    commands = group.add_subparsers(dest="verifier_command", metavar="SUBCOMMAND")
    commands.required = True
    check_parser = commands.add_parser(
        "check",
        help="verify one or more verifier inputs",
        description=(
            "Read one verifier input JSON object (contract section 5) or JSON Lines of them, "
            "print one verifier output JSON line per object."
        ),
    )
    check_parser.add_argument("file", metavar="FILE", help="input file, or - for stdin")
    check_parser.add_argument(
        "--mode",
        choices=("rules", "llm"),
        default="rules",
        help="rules: deterministic (default); llm: model-backed",
    )
    check_parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Verify every input of FILE and print the outputs."""
    if args.mode == "llm":
        if not os.environ.get(LLM_URL_SETTING):
            print(f"tracebound: llm mode needs {LLM_URL_SETTING}", file=sys.stderr)
        else:
            print("tracebound: llm verifier mode is not available in this build", file=sys.stderr)
        return 2
    inputs = parse_inputs(read_text(args.file))
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    ascii_only = not encoding.startswith("utf")
    for item in inputs:
        output = verify(item).to_json()
        print(json.dumps(output, ensure_ascii=ascii_only, separators=(",", ":")))
    return 0
