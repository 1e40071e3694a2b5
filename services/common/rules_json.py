"""Reading a rule file of ``rules/``: JSON in, :class:`~tracebound.errors.ConfigError` out.

Why shared: every rule file must fail the same way — naming the file and what is
wrong with it — whether it cannot be read, is not UTF-8, is not JSON or does
not validate, so an operator reads one kind of message for all of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tracebound.errors import ConfigError


def describe(exc: ValidationError) -> str:
    """The validation problems on one line: ``location: message; …``."""
    problems = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"])
        problems.append(f"{location}: {error['msg']}" if location else error["msg"])
    return "; ".join(problems)


def read_json(path: Path, what: str) -> Any:
    """The decoded JSON of ``path``; ``what`` names the file in errors."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{path}: cannot read {what}: {reason}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {what} is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: {what} is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
