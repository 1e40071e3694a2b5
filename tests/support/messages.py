"""A consumed message as confluent-kafka hands it over, for tests of what reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Message:
    """The parts of ``confluent_kafka.Message`` the project's readers look at."""

    topic_name: str
    partition_number: int
    at: int
    data: bytes | None
    key_bytes: bytes | None = None
    failure: Any = None

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int:
        return self.partition_number

    def offset(self) -> int:
        return self.at

    def value(self) -> bytes | None:
        return self.data

    def key(self) -> bytes | None:
        return self.key_bytes

    def error(self) -> Any:
        return self.failure
