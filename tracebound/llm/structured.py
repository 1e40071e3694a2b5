"""Lenient extraction of one JSON object from model text, strict validation after it.

Models wrap JSON in ```json fences, prepend "Here is the result:", or append a
remark. Those wrappers are harmless, so we look past them — and say so: the
outcome is then ``repaired``, not ``valid``. What the object *contains* is
validated strictly by the role's pydantic model of its contract, so an answer is
usable only when its shape is. The outcome's ``status`` follows the contract's
``executor_output_parse_status``: ``valid``, ``repaired`` (usable, after
something was recovered or normalised; ``detail`` says what), ``invalid``
(something JSON-like that does not parse or validate; ``detail`` says why) or
``missing`` (no JSON object at all).

A reply cut off mid-object must never yield the complete inner ``{…}`` it
happens to contain: an object is taken from surrounding text only when no
earlier, unfinished object encloses it. Nothing here raises: a bad reply is data
to record, and the role falls back to its rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from tracebound.events import USABLE_PARSE_STATES, ParseStatus

ParseState = Literal["valid", "repaired", "invalid", "missing"]
ModelT = TypeVar("ModelT", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_CANDIDATES = 64
_MAX_ERRORS = 3


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """What became of a model reply that should have been a JSON object."""

    status: ParseState
    detail: str
    value: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Usable: ``valid`` or ``repaired``."""
        return self.status in USABLE_PARSE_STATES

    def as_record(self) -> ParseStatus:
        """The ``executor_output_parse_status`` record carried on events."""
        return ParseStatus(status=self.status, detail=self.detail)

    def noting(self, note: str) -> ParseOutcome:
        """This outcome with ``note`` added; a ``valid`` one becomes ``repaired``.

        For what happened before the answer that the answer itself cannot show
        (a tool call the server left in the text, for instance).
        """
        status: ParseState = "repaired" if self.status == "valid" else self.status
        return ParseOutcome(status, f"{self.detail}; {note}", self.value)


class _NotAnObject(Exception):
    """The text is valid JSON, but of another type than an object."""


def _decode_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Decode ``text`` exactly; return the object or a short reason it is not JSON.

    Raises :class:`_NotAnObject` for valid JSON of the wrong type, which is
    ``invalid`` outright: hunting for an object inside an array would guess.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:
        return None, type(exc).__name__
    if not isinstance(value, dict):
        raise _NotAnObject(f"top-level JSON is {type(value).__name__}, expected an object")
    return value, None


def _scan_objects(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Find the first ``{...}`` that decodes to an object, past leading prose.

    ``reach`` is how far the failed candidates were read before they broke: a
    candidate starting before it lies inside an unfinished object (a cut-off
    reply), and is a fragment of that object, not an answer.
    """
    decoder = json.JSONDecoder()
    first_error: str | None = None
    start = text.find("{")
    tried = reach = 0
    while start != -1 and tried < _MAX_CANDIDATES:
        tried += 1
        try:
            value, _end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first_error = first_error or f"{exc.msg} at char {exc.pos}"
            reach = max(reach, exc.pos)
        except (ValueError, RecursionError) as exc:
            first_error = first_error or type(exc).__name__
            reach = len(text)
        else:
            if isinstance(value, dict) and start >= reach:
                return value, None
            if isinstance(value, dict):
                first_error = first_error or "an object inside an unfinished one"
        start = text.find("{", start + 1)
    return None, first_error


def parse_json_object(text: str | None) -> ParseOutcome:  # noqa: PLR0911  # one return per rung of the repair ladder
    """Extract one JSON object from ``text``, tolerating fences and surrounding prose."""
    if text is None or not text.strip():
        return ParseOutcome("missing", "model returned no text")
    stripped = text.strip()
    try:
        value, error = _decode_object(stripped)
        if value is not None:
            return ParseOutcome("valid", "parsed JSON object", value)
        for block in _FENCE.findall(stripped):
            fenced, fence_error = _decode_object(block.strip())
            if fenced is not None:
                return ParseOutcome("repaired", "JSON object taken from a fenced block", fenced)
            error = fence_error or error
    except _NotAnObject as exc:
        return ParseOutcome("invalid", str(exc))
    scanned, scan_error = _scan_objects(stripped)
    if scanned is not None:
        return ParseOutcome("repaired", "JSON object taken from surrounding text", scanned)
    if "{" not in stripped:
        return ParseOutcome("missing", "no JSON object in the model reply")
    return ParseOutcome("invalid", f"malformed JSON: {scan_error or error or 'unparseable'}")


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:_MAX_ERRORS]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_model(text: str | None, model_cls: type[ModelT]) -> tuple[ParseOutcome, ModelT | None]:
    """Extract a JSON object and validate it as ``model_cls``; never raises.

    A shape that does not validate is ``invalid`` with the first errors as the
    reason; the object is kept on the outcome so the trace can show it.
    """
    outcome = parse_json_object(text)
    if outcome.value is None:
        return outcome, None
    try:
        instance = model_cls.model_validate(outcome.value)
    except ValidationError as exc:
        detail = f"does not match {model_cls.__name__}: {_summarise(exc)}"
        return ParseOutcome("invalid", detail, outcome.value), None
    except (ValueError, TypeError) as exc:  # a validator raising outside pydantic's wrapping
        detail = f"does not match {model_cls.__name__}: {type(exc).__name__}"
        return ParseOutcome("invalid", detail, outcome.value), None
    if outcome.status == "repaired":
        detail = f"parsed {model_cls.__name__} ({outcome.detail})"
        return ParseOutcome("repaired", detail, outcome.value), instance
    return ParseOutcome("valid", f"parsed {model_cls.__name__}", outcome.value), instance


__all__ = ["ParseOutcome", "ParseState", "parse_json_object", "parse_model"]
