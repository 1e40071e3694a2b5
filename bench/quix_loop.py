"""Quix Streams' exactly-once JSON path, run by the interpreter of its own environment.

Not part of the project: :mod:`bench.quix_bench` runs this file with the Python
of a virtual environment holding ``quixstreams``, so the library never becomes
a dependency of tracebound. Arguments: bootstrap servers, input topic, output
topic, message count, commit interval in seconds. It prints one JSON line: the
count and the seconds from the first message processed to the application's
return (its last checkpoint committed).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any


def main(argv: list[str]) -> int:
    from quixstreams import Application  # type: ignore[import-not-found]  # noqa: PLC0415

    bootstrap, in_topic, out_topic, count, interval = argv
    total = int(count)
    state: dict[str, Any] = {"seen": 0, "first": None}
    app = Application(
        broker_address=bootstrap,
        consumer_group=f"bench-quix-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        commit_interval=float(interval),
        auto_create_topics=False,
        use_changelog_topics=False,
    )
    source = app.topic(in_topic, value_deserializer="json")
    sink = app.topic(out_topic, value_serializer="json")

    def seen(value: Any) -> None:
        if state["first"] is None:
            state["first"] = time.perf_counter()
        state["seen"] += 1
        if state["seen"] >= total:
            app.stop()

    frame = app.dataframe(source)
    frame = frame.update(seen)
    frame.to_topic(sink)
    app.run()
    seconds = time.perf_counter() - (state["first"] or time.perf_counter())
    print(json.dumps({"messages": state["seen"], "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
