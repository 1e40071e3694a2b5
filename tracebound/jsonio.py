"""Reading JSON or JSON Lines input files for the check commands, one way for all.

``tracebound gatekeeper check``, ``verifier check`` and ``composer guard`` share the
same conventions: FILE (or ``-`` for stdin) holds one JSON object or JSON Lines of
objects; every object is validated before anything is printed; any defect is one
line of text (``InvalidInputError``, exit 2), never a traceback; results are printed
one compact JSON line per input, in order.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tracebound.errors import InvalidInputError

M = TypeVar("M", bound=BaseModel)


def read_text(path: str) -> str:
    """The whole input; ``-`` is stdin."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidInputError(f"cannot read {path}: {reason}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{'stdin' if path == '-' else path} is not UTF-8 text") from None


def one_line(exc: ValidationError) -> str:
    """The first validation problem on one line, with a count of the rest."""
    errors = exc.errors()
    first = errors[0]
    location = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
    ).lstrip(".")
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    text = f"{location}: {first['msg']}{more}" if location else f"{first['msg']}{more}"
    return text.replace("\n", " ")


def json_objects(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, object) pairs: the whole text as one JSON object, else one per JSON line."""
    if not text.strip():
        raise InvalidInputError("empty input")
    try:
        documents: list[tuple[str, Any]] = [("", json.loads(text))]
    except json.JSONDecodeError as whole:
        documents = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}: ", json.loads(line)))
            except json.JSONDecodeError as exc:
                where = f"line {number}: " if documents else ""
                error = exc if documents else whole
                raise InvalidInputError(
                    f"{where}not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
                ) from None
    objects: list[tuple[str, dict[str, Any]]] = []
    for label, document in documents:
        if not isinstance(document, dict):
            kind = "array" if isinstance(document, list) else type(document).__name__
            raise InvalidInputError(f"{label}expected a JSON object, got {kind}")
        objects.append((label, document))
    return objects


def parse_each(text: str, model: type[M]) -> list[tuple[dict[str, Any], M]]:
    """Every object of the text with its validated model, in order."""
    parsed = []
    for label, document in json_objects(text):
        try:
            parsed.append((document, model.model_validate(document)))
        except ValidationError as exc:
            raise InvalidInputError(f"{label}{one_line(exc)}") from None
    return parsed


def print_json_line(value: Any) -> None:
    """One compact JSON line; non-UTF-8 terminals get ASCII escapes instead of mojibake."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    print(
        json.dumps(value, ensure_ascii=not encoding.startswith("utf"), separators=(",", ":")),
        flush=True,
    )


def add_check_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    group: tuple[str, str, str],
    command: tuple[str, str, str],
    handler: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """``tracebound GROUP COMMAND FILE``: a command group with one check over FILE.

    ``group`` and ``command`` are (name, help, description); returns the command's
    parser so the caller can add its own options.
    """
    name, help_text, description = group
    parent = subparsers.add_parser(name, help=help_text, description=description)
    commands = parent.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
    commands.required = True
    name, help_text, description = command
    parser = commands.add_parser(name, help=help_text, description=description)
    parser.add_argument("file", metavar="FILE", help="input file, or - for stdin")
    parser.set_defaults(handler=handler)
    return parser
