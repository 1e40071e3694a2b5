"""The ``tracebound`` command line.

Each feature owns its sub-commands in its own module, which exposes
``register(subparsers)``; this module only assembles them and maps errors to
exit codes: 0 ok, 1 failure of the work, 2 invalid input or usage.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tracebound import __version__, resources
from tracebound.errors import ConfigError, InvalidInputError, StackError, TraceboundError

Command = Callable[[argparse.Namespace], int]

# Modules that contribute sub-commands, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "tracebound.stack.cli",
    "tracebound.codec.cli",
    "tracebound.client_cli",
    "tracebound.llm.doctor_cli",
    "services.gatekeeper.cli",
    "services.executor.tools.cli",
    "services.verifier.cli",
    "services.composer.cli",
    "services.ingest.cli",
    "projections.cli",
    "projections.trace_cli",
    "replay.cli",
    "bench.cli",
)

# Modules that define settings classes, loaded by `up` and `status` so that they know
# every variable a process of the stack reads (tests check that none is missing).
SETTINGS_MODULES: tuple[str, ...] = (
    "tracebound.settings",
    "tracebound.pages",
    "tracebound.tracing.link",
    "tracebound.llm.settings",
    "services.common.mode",
    "services.executor.settings",
    "services.executor.tools.settings",
    "services.gatekeeper.settings",
    "services.verifier.handler",
    "services.composer.answered",
    "services.sentinel.runner",
    "services.ingest.settings",
    "projections.settings",
)


def load_settings_classes() -> None:
    """Define every settings class of the project in this process."""
    resources.make_importable()
    for name in SETTINGS_MODULES:
        importlib.import_module(name)


def build_parser() -> argparse.ArgumentParser:
    resources.make_importable()  # the command modules live in the application folders
    parser = argparse.ArgumentParser(
        prog="tracebound",
        description="Evidence-gated diagnosis of alerts and questions on Apache Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"tracebound {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        module: Any = importlib.import_module(name)
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    handler: Command = args.handler
    try:
        return handler(args)
    except InvalidInputError as exc:
        print(f"tracebound: invalid input: {exc}", file=sys.stderr)
        return 2
    except (StackError, ConfigError) as exc:
        print(f"tracebound: {exc}", file=sys.stderr)
        return 1
    except TraceboundError as exc:
        print(f"tracebound: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
