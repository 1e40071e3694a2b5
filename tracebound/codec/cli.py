"""``tracebound schemas check|freeze|export``: guard the wire contract and hand it out."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tracebound.codec import compat, schemas
from tracebound.events import EVENT_TYPES


def _check(args: argparse.Namespace) -> int:
    problems = compat.check_working_copy()
    for p in problems:
        print(f"{p.event}: {p.direction} incompatible with v{p.against_version}: {p.detail}")
    unfrozen = [
        e
        for e in EVENT_TYPES
        if not schemas.history(e)
        or schemas.history(e)[-1].canonical != schemas.current(e).canonical
    ]
    for event in unfrozen:
        print(f"{event}: changed since its last frozen version (run `tracebound schemas freeze`)")
    if not problems and not unfrozen:
        print(f"{len(EVENT_TYPES)} event schemas: FULL_TRANSITIVE compatible and frozen")
    return 1 if problems or unfrozen else 0


def _freeze(args: argparse.Namespace) -> int:
    problems = compat.check_working_copy()
    if problems:
        for p in problems:
            print(f"{p.event}: {p.direction} incompatible with v{p.against_version}: {p.detail}")
        print("refusing to freeze incompatible schemas")
        return 1
    for event in EVENT_TYPES:
        frozen = schemas.freeze(event)
        if frozen is not None:
            print(f"{event}: frozen as v{frozen.version}")
    return 0


def _export(args: argparse.Namespace) -> int:
    for path, version in schemas.export(Path(args.folder)):
        print(f"{path}  single-object header c301{version.fingerprint.hex()}")
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser("schemas", help="check, freeze or export the Avro wire contract")
    inner = parser.add_subparsers(dest="schemas_command", metavar="ACTION")
    inner.required = True
    check = inner.add_parser("check", help="FULL_TRANSITIVE check against frozen versions")
    check.set_defaults(handler=_check)
    freeze = inner.add_parser("freeze", help="freeze changed schemas as new versions")
    freeze.set_defaults(handler=_freeze)
    export = inner.add_parser(
        "export", help="write one self-contained .avsc per event, for consumers in any language"
    )
    export.add_argument("folder", help="folder to write tracebound.<Event>.avsc files into")
    export.set_defaults(handler=_export)
