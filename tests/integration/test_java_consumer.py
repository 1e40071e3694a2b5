"""A Java consumer reads the answers with Apache Avro and the exported schema alone.

The program is the one ``docs/consumers.md`` shows (``docs/examples/java``): it gets
nothing from this project but ``tracebound.Answer.avsc`` as ``tracebound schemas
export`` writes it, decodes with ``BinaryMessageDecoder`` (which refuses a message
whose header fingerprint is not that file's) and reads ``read_committed``. Answers
are published the way the composer publishes them, in transactions with the
project's codec; one transaction is aborted and must be invisible to both readers.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support import java
from tests.support.kafka_io import CODEC, Collector
from tests.support.samples import sample
from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound.cli import main
from tracebound.events import Answer
from tracebound.settings import StackSettings

pytestmark = pytest.mark.slow

# Quotes, a backslash, a newline and non-ASCII text survive both readers alike.
ANSWERS = (
    ('disk "full" on db-1', "PASS"),
    ("C:\\logs\nsecond line", "REJECT"),
    ("CPU 使用率 97%，超过阈值 80%", "PASS"),
)


def _answer(text: str, verdict: str) -> Answer:
    update = {"run_id": str(uuid.uuid4()), "user_facing_answer": text, "verdict": verdict}
    return sample(Answer).model_copy(update=update)


def _publish(stack: StackHandle, topic: str, answers: list[Answer], *, commit: bool) -> None:
    producer = edge.transactional_producer(stack.kafka, f"test-java-{uuid.uuid4()}", 60000)
    producer.init_transactions(60)
    producer.begin_transaction()
    for answer in answers:
        producer.produce(topic, key=answer.run_id.encode(), value=CODEC.encode(answer))
    producer.flush(60)
    if commit:
        producer.commit_transaction(60)
    else:
        producer.abort_transaction(60)


def _row(answer: Answer) -> dict[str, Any]:
    return {"run_id": answer.run_id, "verdict": answer.verdict, "text": answer.user_facing_answer}


def test_java_reads_committed_answers_with_the_exported_schema(
    stack: StackHandle, tmp_path: Path
) -> None:
    cache = (stack.stack_settings or StackSettings()).cache_dir.expanduser()
    libs = java.example_libs(cache)
    classes = tmp_path / "classes"
    java.compile_example(libs, classes, cache / "apt.log")
    assert main(["schemas", "export", str(tmp_path / "avsc")]) == 0

    topic = stack.topic("java-answers")
    committed = [_answer(text, verdict) for text, verdict in ANSWERS]
    aborted = _answer("never committed", "PASS")
    _publish(stack, topic, committed[:2], commit=True)
    _publish(stack, topic, [aborted], commit=False)
    _publish(stack, topic, committed[2:], commit=True)

    python_reader = Collector(stack.kafka, topic)
    try:
        assert python_reader.wait_for(len(committed), timeout=60)
        python_reader.settle(1.0)
        seen_by_python = python_reader.snapshot()
    finally:
        python_reader.close()
    seen_by_java = java.run_example(
        libs, classes, stack.bootstrap, str(tmp_path / "avsc" / "tracebound.Answer.avsc"), topic
    )

    def key(row: dict[str, Any]) -> str:
        return str(row["run_id"])

    expected = sorted(map(_row, committed), key=key)
    assert sorted((_row(a) for a in seen_by_python if isinstance(a, Answer)), key=key) == expected
    assert sorted(seen_by_java, key=key) == expected
    assert aborted.run_id not in {row["run_id"] for row in seen_by_java}
