"""``tracebound verifier check FILE [--mode rules|llm]``.

Why a CLI: operators re-judge a stored round (its gatekeeper result and
executor output) under the current verifier rules without Kafka. One verifier
output JSON line (the verifier output of docs/contracts.md, the retry
request and the composer's
allowed material) is printed per input object, in input order. Exit 0 whenever
the verifier ran (REJECT is a result, not an error); invalid input raises
InvalidInputError, which the main CLI reports with exit 2. All input is
validated before anything is printed.

``--mode llm`` runs the model verifier against the endpoint of
``TRACEBOUND_LLM_*`` (rules first, the model may only be stricter); each output
says in ``verifier_mode`` whether the model's reply was used (``llm``), was not
needed (``rules``) or failed (``rules-fallback``, with ``fallback`` saying why).
Without a base URL it exits 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pydantic import ValidationError

from services.verifier.input import VerifierInput, parse_inputs
from services.verifier.judge import verify
from services.verifier.llm_verifier import new_recorder, verifier_prompt, verify_llm
from services.verifier.rules_file import (
    OverclaimPhrases,
    VerifierRules,
    load_overclaim_phrases,
    load_verifier_rules,
)
from tracebound.jsonio import add_check_command, one_line, print_json_line, read_text
from tracebound.llm import ChatModel, LLMSettings, OpenAIChatModel
from tracebound.llm.monitor import FallbackMonitor
from tracebound.prompts import PromptSet

LLM_URL_SETTING = "TRACEBOUND_LLM_BASE_URL"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verifier`` command group to the main parser."""
    check_parser = add_check_command(
        subparsers,
        (
            "verifier",
            "judge claims against gatekeeper-verified evidence",
            "Judge executor claims against gatekeeper-verified evidence.",
        ),
        (
            "check",
            "verify one or more verifier inputs",
            "Read one verifier input JSON object (docs/contracts.md) or JSON Lines of them, "
            "print one verifier output JSON line per object.",
        ),
        run_check,
    )
    check_parser.add_argument(
        "--mode",
        choices=("rules", "llm"),
        default="rules",
        help="rules: deterministic (default); llm: model-backed",
    )


def _judge(
    item: VerifierInput,
    model: ChatModel | None,
    rules: tuple[VerifierRules, OverclaimPhrases],
    monitor: FallbackMonitor,
) -> dict[str, Any]:
    if model is None:
        return verify(item, *rules).to_json()
    prompt = verifier_prompt(PromptSet.active(), model)
    recorder = new_recorder(model, prompt, service="verifier", run_id="cli")
    language = (item.model_extra or {}).get("language")
    result = verify_llm(
        item,
        recorder,
        language=language if isinstance(language, str) else "en",
        prompt=prompt,
        rules=rules[0],
        phrases=rules[1],
        monitor=monitor,
    )
    return {
        **result.value.to_json(),
        "verifier_mode": result.mode,
        "fallback": result.fallback.model_dump() if result.fallback else None,
    }


def run_check(args: argparse.Namespace) -> int:
    """Verify every input of FILE and print the outputs."""
    model: OpenAIChatModel | None = None
    if args.mode == "llm":
        try:
            settings = LLMSettings()
        except ValidationError as exc:
            print(f"tracebound: invalid TRACEBOUND_LLM_* setting: {one_line(exc)}", file=sys.stderr)
            return 2
        if not settings.configured:
            print(f"tracebound: llm mode needs {LLM_URL_SETTING}", file=sys.stderr)
            return 2
        model = OpenAIChatModel(settings)
    rules, monitor = (load_verifier_rules(), load_overclaim_phrases()), FallbackMonitor()
    try:
        for item in parse_inputs(read_text(args.file)):
            print_json_line(_judge(item, model, rules, monitor))
    finally:
        if model is not None:
            model.close()
    return 0
