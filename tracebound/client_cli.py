"""``tracebound ask`` and ``tracebound answers``: questions in, answers out, from a terminal."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from tracebound.client import AnswerReader, new_request, publish
from tracebound.errors import InvalidInputError
from tracebound.events import Answer
from tracebound.settings import KafkaSettings

MAX_QUESTION_CHARS = 4000
_CJK = re.compile(r"[\u3400-\u9fff]")


def _language(question: str, given: str | None) -> str:
    return given or ("zh" if _CJK.search(question) else "en")


def _show(answer: Answer, as_json: bool) -> None:
    if as_json:
        print(json.dumps(answer.to_json(), ensure_ascii=False, default=str), flush=True)
        return
    print(f"run {answer.run_id}  verdict {answer.verdict}  ({answer.final_status})")
    for fallback in answer.fallbacks:
        print(fallback.describe())
    print(answer.user_facing_answer, flush=True)


def _cmd_ask(args: argparse.Namespace) -> int:
    question = args.question.strip()
    if not question or len(question) > MAX_QUESTION_CHARS:
        raise InvalidInputError(f"the question must have 1 to {MAX_QUESTION_CHARS} characters")
    kafka = KafkaSettings()
    event = new_request(
        question, language=_language(question, args.language), session_id=args.session
    )
    reader = AnswerReader(kafka)
    try:
        publish(kafka, [event])
        if not args.json:
            print(f"asked as run {event.run_id}; waiting up to {args.wait:g}s…", file=sys.stderr)
        found = reader.wait_for({event.run_id}, args.wait)
    finally:
        reader.close()
    if event.run_id not in found:
        print(
            f"tracebound: no answer for run {event.run_id} within {args.wait:g}s", file=sys.stderr
        )
        return 1
    _show(found[event.run_id], args.json)
    return 0


def _cmd_answers(args: argparse.Namespace) -> int:
    reader = AnswerReader(KafkaSettings(), from_start=not args.follow or args.from_start)
    try:
        for answer in reader.answers(None if args.follow else args.wait):
            _show(answer, args.json)
    finally:
        reader.close()
    return 0


def register(sub: Any) -> None:
    ask = sub.add_parser("ask", help="publish a chat question and print its answer")
    ask.add_argument("question")
    ask.add_argument("--wait", type=float, default=60.0, help="seconds to wait (default 60)")
    ask.add_argument("--json", action="store_true", help="print the Answer event as JSON")
    ask.add_argument("--language", choices=("zh", "en"), help="default: from the question")
    ask.add_argument("--session", help="chat session id")
    ask.set_defaults(handler=_cmd_ask)
    answers = sub.add_parser("answers", help="show answers from tracebound.answers")
    answers.add_argument("--follow", action="store_true", help="keep showing new answers")
    answers.add_argument("--from-start", action="store_true", help="with --follow: replay history")
    answers.add_argument("--wait", type=float, default=5.0, help="without --follow: read for N s")
    answers.add_argument("--json", action="store_true", help="one JSON object per answer")
    answers.set_defaults(handler=_cmd_answers)
