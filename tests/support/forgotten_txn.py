"""A transaction its coordinator knows nothing of, made on the real broker.

What a broker leaves behind when it completes a transaction without writing its
markers: transactional records open on a partition (a ``read_committed`` reader
stops at them) and transactional offsets pending in a group (an offset fetch that
requires stable offsets is answered UNSTABLE_OFFSET_COMMIT). No client library
writes either without telling the coordinator first, so the requests are spoken
here in the wire protocol: ``InitProducerId`` for the producer id of a
``transactional.id``, then ``Produce`` and ``TxnOffsetCommit`` with it and no
``AddPartitionsToTxn``/``AddOffsetsToTxn``. The broker accepts them only while
``transaction.partition.verification.enable`` is off (:func:`verification_off`).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported, not in __all__
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from tracebound.settings import KafkaSettings

VERIFICATION = "transaction.partition.verification.enable"
_PRODUCE, _FIND_COORDINATOR, _INIT_PRODUCER_ID, _TXN_OFFSET_COMMIT = 0, 10, 22, 28
_TRANSACTIONAL = 0x10
# Coordinator loading or not available, concurrent transactions; and a transactional
# write refused while the broker still verifies transactions (its setting not applied yet).
_RETRY = {14, 15, 51, 48}


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def record_batch(producer_id: int, epoch: int, values: Sequence[bytes]) -> bytes:
    """A transactional record batch (magic 2) of ``values``, sequence from 0."""
    now = int(time.time() * 1000)
    records = b""
    for i, value in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(value)) + value
        records += _varint(len(body + _varint(0))) + body + _varint(0)
    last = len(values) - 1
    tail = struct.pack(
        ">hiqqqhii", _TRANSACTIONAL, last, now, now, producer_id, epoch, 0, len(values)
    )
    tail += records
    head = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(tail))
    return struct.pack(">qi", 0, len(head) + len(tail)) + head + tail


class _Connection:
    """One broker connection speaking request header v1 and response header v0."""

    def __init__(self, host: str, port: int) -> None:
        self._sock = socket.create_connection((host, port), timeout=10)
        self._correlation = 0

    def call(self, api: int, version: int, body: bytes) -> bytes:
        self._correlation += 1
        header = struct.pack(">hhi", api, version, self._correlation) + _str("tb-test-forgotten")
        request = header + body
        self._sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", self._recv(4))[0]
        response = self._recv(size)
        assert struct.unpack(">i", response[:4])[0] == self._correlation
        return response[4:]

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._sock.recv(n - len(data))
            assert chunk, "the broker closed the connection"
            data += chunk
        return data

    def __enter__(self) -> _Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._sock.close()


def _coordinator(bootstrap: _Connection, key: str, key_type: int) -> tuple[str, int]:
    found: list[bytes] = []

    def find() -> list[int]:
        found[:] = [bootstrap.call(_FIND_COORDINATOR, 2, _str(key) + struct.pack(">b", key_type))]
        return [struct.unpack(">h", found[0][4:6])[0]]

    _until_accepted(find, f"FindCoordinator({key})")
    body = found[0]
    at = 6
    (length,) = struct.unpack(">h", body[at : at + 2])
    at += 2 + max(length, 0) + 4  # error message, node id
    (host_len,) = struct.unpack(">h", body[at : at + 2])
    host = body[at + 2 : at + 2 + host_len].decode()
    (port,) = struct.unpack(">i", body[at + 2 + host_len : at + 6 + host_len])
    return host, port


def _errors(body: bytes, per_partition: str) -> list[int]:
    """The partition error codes of a Produce v7 or TxnOffsetCommit v2 response."""
    at = 0 if per_partition == "produce" else 4
    errors = []
    (topics,) = struct.unpack(">i", body[at : at + 4])
    at += 4
    for _ in range(topics):
        (name_len,) = struct.unpack(">h", body[at : at + 2])
        at += 2 + name_len
        (parts,) = struct.unpack(">i", body[at : at + 4])
        at += 4
        for _ in range(parts):
            errors.append(struct.unpack(">h", body[at + 4 : at + 6])[0])
            at += 6 + (24 if per_partition == "produce" else 0)
    return errors


def _address(kafka: KafkaSettings) -> tuple[str, int]:
    host, _, port = kafka.bootstrap_servers.split(",")[0].rpartition(":")
    return host, int(port)


def _until_accepted(call: Callable[[], list[int]], what: str) -> None:
    """``call()`` until its error codes are all 0; retried while the broker is getting
    ready (a coordinator loading, the verification setting not applied yet)."""
    for _ in range(100):
        errors = call()
        if not set(errors) & _RETRY:
            break
        time.sleep(0.2)
    assert errors and not any(errors), f"{what} errors {errors}"


def leave_forgotten(
    kafka: KafkaSettings,
    transactional_id: str,
    records: dict[tuple[str, int], Sequence[bytes]],
    group: str,
    offsets: dict[tuple[str, int], int],
) -> None:
    """Write ``records`` and ``offsets`` in a transaction of ``transactional_id`` that
    its coordinator never hears of (single-broker stack: one node leads everything)."""
    with ExitStack() as connections:
        bootstrap = connections.enter_context(_Connection(*_address(kafka)))
        txn = connections.enter_context(_Connection(*_coordinator(bootstrap, transactional_id, 1)))
        group_conn = connections.enter_context(_Connection(*_coordinator(bootstrap, group, 0)))
        init = _str(transactional_id) + struct.pack(">i", 60000)
        producer: list[tuple[int, int]] = []

        def init_producer() -> list[int]:
            _, error, producer_id, epoch = struct.unpack(
                ">ihqh", txn.call(_INIT_PRODUCER_ID, 1, init)
            )
            producer[:] = [(producer_id, epoch)]
            return [error]

        _until_accepted(init_producer, "InitProducerId")
        producer_id, epoch = producer[0]
        by_topic: dict[str, list[tuple[int, bytes]]] = {}
        for (topic, partition), values in records.items():
            batch = record_batch(producer_id, epoch, values)
            by_topic.setdefault(topic, []).append((partition, batch))
        produce = _str(transactional_id) + struct.pack(">hii", -1, 10000, len(by_topic))
        for topic, parts in by_topic.items():
            produce += _str(topic) + struct.pack(">i", len(parts))
            for partition, batch in parts:
                produce += struct.pack(">ii", partition, len(batch)) + batch
        _until_accepted(lambda: _errors(bootstrap.call(_PRODUCE, 7, produce), "produce"), "Produce")
        commit = _str(transactional_id) + _str(group) + struct.pack(">qh", producer_id, epoch)
        commit_topics: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in offsets.items():
            commit_topics.setdefault(topic, []).append((partition, offset))
        commit += struct.pack(">i", len(commit_topics))
        for topic, offset_parts in commit_topics.items():
            commit += _str(topic) + struct.pack(">i", len(offset_parts))
            for partition, offset in offset_parts:
                commit += struct.pack(">iqi", partition, offset, -1) + _str(None)
        _until_accepted(
            lambda: _errors(group_conn.call(_TXN_OFFSET_COMMIT, 2, commit), "offsets"),
            "TxnOffsetCommit",
        )


@contextmanager
def verification_off(kafka: KafkaSettings) -> Iterator[None]:
    """Every broker's transaction verification off for the block."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    brokers = [str(b) for b in admin.list_topics(timeout=10).brokers]

    def alter(op: AlterConfigOpType, value: str) -> None:
        entry = ConfigEntry(VERIFICATION, value, incremental_operation=op)
        resources = [
            ConfigResource(ConfigResource.Type.BROKER, b, incremental_configs=[entry])
            for b in brokers
        ]
        for future in admin.incremental_alter_configs(resources).values():
            future.result(30)

    alter(AlterConfigOpType.SET, "false")
    try:
        yield
    finally:
        alter(AlterConfigOpType.DELETE, "")
