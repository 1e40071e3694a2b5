"""The ``up``, ``down``, ``restart`` and ``status`` sub-commands of ``tracebound``.

Output is meant for both eyes and scripts: one line per component, topic and
service, or the same as a single JSON object with ``status --json``. The exit code
says whether the whole stack is healthy, so ``tracebound status && make test`` works.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tracebound.cli import load_settings_classes
from tracebound.settings import StackSettings
from tracebound.settings_check import known_variables, unknown_variables
from tracebound.stack import stack
from tracebound.stack.services import ROLE_INPUTS, ServiceState, check_roles, parse_replicas
from tracebound.stack.stack import StackStatus


def _service_line(v: ServiceState) -> str:
    """State, pid, lag (``~N``: an upper bound), mode, backends and settings of a service."""
    pid = str(v.pid) if v.pid is not None else "-"
    lag = "lag ?" if v.lag is None else f"lag {'' if v.lag.exact else '~'}{v.lag.records}"
    line = f"service   {v.name:<11} {v.state:<8} pid {pid:<8} {lag:<10}"
    if v.mode is not None:
        line += f" mode {v.mode}"
    if v.backends:
        line += " " + " ".join(f"{k}={u}" for k, u in v.backends.items())
    if v.running:
        line += f" settings {v.settings}"
        if v.changes:
            line += f" ({', '.join(v.changes)}; tracebound up applies them)"
        elif v.record is None:
            line += f" (tracebound restart {v.name} applies the current ones)"
    restarts = (v.crashes or {}).get("restarts", 0)
    if restarts:
        line += f" restarted {restarts}x (last crash: {(v.crashes or {}).get('last_reason', '?')})"
    return f"{line} log {v.log}"


def format_status(status: StackStatus) -> list[str]:
    """Human-readable lines: components first, then topics, then any notes."""
    lines = []
    for c in status.components:
        pid = str(c.pid) if c.pid is not None else "-"
        lines.append(f"{c.name:<9} {c.state:<8} pid {pid:<8} {c.address:<21} {c.data_dir}")
    width = max((len(t.name) for t in status.topics), default=0)
    for t in status.topics:
        detail = f"{t.partitions} partition(s)" if t.partitions is not None else ""
        lines.append(f"topic     {t.name:<{width}} {t.state:<8} {detail}".rstrip())
    lines.extend(_service_line(v) for v in status.services)
    lines.extend(f"problem: {p}" for p in status.problems)
    lines.extend(f"note: {m}" for m in status.messages)
    return lines


def _print(status: StackStatus) -> None:
    print("\n".join(format_status(status)))


def warn_unknown_variables() -> int:
    """Print a warning per ``TRACEBOUND_*`` variable no process of the stack reads."""
    load_settings_classes()
    known, _ = known_variables(ROLE_INPUTS)
    unknown = unknown_variables(os.environ, known)
    for item in unknown:
        print(f"tracebound: warning: {item.message()}", file=sys.stderr)
    return len(unknown)


def _stack_settings(args: argparse.Namespace) -> StackSettings:
    """The stack's settings, with ``--brokers`` over ``TRACEBOUND_STACK_BROKERS``."""
    brokers = getattr(args, "brokers", None)
    return StackSettings(brokers=brokers) if brokers is not None else StackSettings()


def _cmd_up(args: argparse.Namespace) -> int:
    replicas = parse_replicas(args.replicas or [])
    warn_unknown_variables()
    result = stack.up(_stack_settings(args), services=not args.infra_only, replicas=replicas)
    _print(result)
    if not result.started:
        print("stack was already running")
    return 0 if result.healthy else 1


def _cmd_restart(args: argparse.Namespace) -> int:
    roles = check_roles(args.roles)
    warn_unknown_variables()
    result = stack.restart(StackSettings(), roles)
    _print(result)
    return 0 if result.healthy else 1


def _cmd_down(args: argparse.Namespace) -> int:
    result = stack.down(StackSettings(), purge=bool(args.purge))
    print("\n".join(result.messages))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    warn_unknown_variables()
    result = stack.status(StackSettings())
    if args.json:
        print(json.dumps(result.to_dict(), indent=None, sort_keys=False))
    else:
        _print(result)
    return 0 if result.healthy else 1


def register(subparsers: Any) -> None:
    """Add the stack sub-commands to the ``tracebound`` parser."""
    up = subparsers.add_parser(
        "up",
        help="start Kafka, PostgreSQL and the pipeline services (loopback only, no containers)",
        description=(
            "Start the local stack. On a running stack it starts what is not running and"
            " restarts each service whose TRACEBOUND_* settings changed since it started."
        ),
    )
    up.add_argument(
        "--infra-only",
        action="store_true",
        help="start only Kafka and PostgreSQL, not the pipeline services",
    )
    up.add_argument(
        "--brokers",
        type=int,
        choices=range(1, 6),
        metavar="N",
        help="Kafka nodes of a new stack (default 1; 3 replicates every topic 3 times,"
        " 2 in sync); a stack keeps the count it was first started with",
    )
    up.add_argument(
        "--replicas",
        action="append",
        metavar="N|ROLE=N",
        help="processes per consuming role (repeatable: --replicas 2 --replicas executor=3);"
        " N alone sets the pipeline's roles, projections=N the projection process;"
        " without it the replicas that run are kept",
    )
    up.set_defaults(handler=_cmd_up)

    restart = subparsers.add_parser(
        "restart",
        help="stop and start pipeline services with the current settings",
        description="Restart the named services (all when none is named) on a running stack.",
    )
    restart.add_argument(
        "roles", nargs="*", metavar="ROLE", help=f"one of: {', '.join(ROLE_INPUTS)}"
    )
    restart.set_defaults(handler=_cmd_restart)

    down = subparsers.add_parser(
        "down",
        help="stop the local stack started by `tracebound up`",
        description="Stop the processes `tracebound up` started; nothing else is signalled.",
    )
    down.add_argument(
        "--purge",
        action="store_true",
        help="also delete the Kafka and PostgreSQL data in the state folder",
    )
    down.set_defaults(handler=_cmd_down)

    status = subparsers.add_parser(
        "status",
        help="show the local stack (exit 1 unless everything runs and progresses)",
        description=(
            "One line per component, topic and service; exit 0 only if all is up and no"
            " service that up started is down or stuck."
        ),
    )
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=_cmd_status)
