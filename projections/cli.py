"""``tracebound projections …``: rebuild read models from the topics, show their status."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import psycopg

from projections.migrate import migrate
from projections.models import MODELS, select_models
from projections.rebuild import rebuild_models, status
from projections.store import connect
from tracebound.collector import tune_collector
from tracebound.errors import TransientError
from tracebound.settings import KafkaSettings, PostgresSettings


def _connect() -> Any:
    try:
        return connect(PostgresSettings())
    except psycopg.OperationalError as exc:
        raise TransientError(f"cannot connect to PostgreSQL: {exc}") from exc


def _workers(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"not a worker count: {value!r}")
    return count


def _cmd_rebuild(args: argparse.Namespace) -> int:
    models = select_models(args.name)
    tune_collector()
    kafka = KafkaSettings()
    with _connect() as conn:
        reports = rebuild_models(
            conn,
            kafka,
            models,
            workers=args.workers,
            progress=None if args.quiet else sys.stderr,
        )
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in reports], sort_keys=True))
    else:
        for r in reports:
            print(f"{r.model}: {r.rows} row writes from {r.events} events ({r.skipped} skipped)")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    with _connect() as conn:
        report = status(conn, KafkaSettings())
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0
    for model in report:
        print(f"{model['model']:<16} rows {model['rows']:<9} lag {model['lag']}")
        shown = (
            model["partitions"] if args.verbose else [p for p in model["partitions"] if p["lag"]]
        )
        for p in shown:
            done = "-" if p["checkpoint"] is None else p["checkpoint"]
            print(
                f"  {p['topic']}[{p['partition']}] checkpoint {done} "
                f"end {p['end_offset']} lag {p['lag']}"
            )
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
    with _connect() as conn:
        applied = migrate(conn)
    print("\n".join(f"applied {name}" for name in applied) or "schema is up to date")
    return 0


def register(subparsers: Any) -> None:
    """Add ``projections rebuild|status|migrate`` to the ``tracebound`` parser."""
    parser = subparsers.add_parser(
        "projections",
        help="PostgreSQL read models: rebuild from the topics, status, migrations",
        description="Read models projected from the event topics into PostgreSQL.",
    )
    sub = parser.add_subparsers(dest="projections_command", metavar="ACTION")
    sub.required = True
    rebuild = sub.add_parser(
        "rebuild",
        help="rebuild one or all read models from the topics into new tables, then swap",
        description="Readers keep the old table until the rebuilt one is swapped in.",
    )
    rebuild.add_argument("name", nargs="?", choices=list(MODELS), help="one read model")
    rebuild.add_argument(
        "--workers",
        type=_workers,
        default=0,
        metavar="N",
        help=(
            "partition groups rebuilt in parallel processes"
            " (default: one per partition number, up to two per CPU core)"
        ),
    )
    rebuild.add_argument("--json", action="store_true", help="print a JSON report")
    rebuild.add_argument("--quiet", action="store_true", help="no progress on stderr")
    rebuild.set_defaults(handler=_cmd_rebuild)
    show = sub.add_parser("status", help="row counts, checkpoints and lag of each read model")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument(
        "--all", dest="verbose", action="store_true", help="list every partition, not only lagging"
    )
    show.set_defaults(handler=_cmd_status)
    mig = sub.add_parser("migrate", help="apply pending SQL migrations")
    mig.set_defaults(handler=_cmd_migrate)
