"""``tracebound schemas export``: one self-contained ``.avsc`` per event, wire-true.

A consumer in another language gets nothing but these files. Each must parse alone
in Apache Avro (no "Undefined schema", no redefined name) and fingerprint, by its
parsing canonical form, to the very bytes the codec writes in the single-object
header of that event.
"""

from __future__ import annotations

import json
from pathlib import Path

import avro.schema
import pytest
from fastavro.schema import to_parsing_canonical_form

from tests.support.samples import sample
from tracebound.cli import main
from tracebound.codec import SingleObjectCodec
from tracebound.codec.schemas import crc64_avro
from tracebound.codec.single_object import HEADER_LEN, MAGIC
from tracebound.events import EVENT_TYPES

CODEC = SingleObjectCodec()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("avsc")
    assert main(["schemas", "export", str(folder)]) == 0
    return folder


def _file(folder: Path, event: str) -> str:
    return (folder / f"tracebound.{event}.avsc").read_text(encoding="utf-8")


def test_one_file_per_event_and_nothing_else(exported: Path) -> None:
    names = sorted(p.name for p in exported.iterdir())
    assert names == sorted(f"tracebound.{event}.avsc" for event in EVENT_TYPES)


@pytest.mark.parametrize("event", sorted(EVENT_TYPES))
def test_each_file_parses_alone_in_apache_avro(exported: Path, event: str) -> None:
    parsed = avro.schema.parse(_file(exported, event))  # a fresh name table per file
    assert isinstance(parsed, avro.schema.RecordSchema)
    assert parsed.fullname == f"tracebound.{event}"


@pytest.mark.parametrize("event", sorted(EVENT_TYPES))
def test_fingerprint_of_the_file_is_the_wire_header(exported: Path, event: str) -> None:
    canonical = to_parsing_canonical_form(json.loads(_file(exported, event)))
    fingerprint = crc64_avro(canonical.encode("utf-8")).to_bytes(8, "little")
    wire = CODEC.encode(sample(EVENT_TYPES[event]))
    assert wire[:2] == MAGIC
    assert wire[2:HEADER_LEN] == fingerprint


def test_named_types_are_defined_once_then_referenced_by_full_name(exported: Path) -> None:
    # Answer uses Producer (a record) once; a reference elsewhere is its full name.
    text = _file(exported, "Answer")
    assert text.count('"name": "tracebound.Producer"') == 1
    assert '"type": "Producer"' not in text


def test_crc64_avro_matches_the_specification_vectors() -> None:
    # The empty-input value and the fingerprint of the schema "null" given by the Avro
    # specification, so the header is comparable with every other implementation.
    assert crc64_avro(b"") == 0xC15D213AA4D7A795
    assert crc64_avro(b'"null"') == 0x63DD24E7CC258F8A
    assert bytes(avro.schema.parse('"null"').fingerprint("CRC-64-AVRO")) == (
        0x63DD24E7CC258F8A
    ).to_bytes(8, "little")
