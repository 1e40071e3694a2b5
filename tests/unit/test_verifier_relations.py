"""Comparisons, exact values and hedged causes in wordings of their own, over items the
tools print: the structural check must hold them, not only the corpus's templates."""

from __future__ import annotations

import pytest

from services.verifier.structure import check_claim

QUEUE = (
    "QueueDepthHigh, service=sorrel-mail, state=firing, current=4210, threshold=1000, "
    "comparison=>, for=15m, duration=1h05m; Queue outbound of sorrel-mail holds 4210 messages"
)
REDIS = (
    "RedisMemoryHigh, service=brine-cache, state=firing, current=91.5%, threshold=90%, "
    "comparison=>, for=5m, duration=12m"
)
DISK = (
    "NodeFilesystemAlmostFull, service=node-exporter, state=firing, current=8.2%, threshold=10%, "
    "comparison=<, for=15m, duration=41m, instance=10.0.4.12:9100"
)
RUNBOOK = (
    "Kafka consumer lag / Likely causes: A slow consumer or a partition skew. "
    "Check per-partition lag before scaling consumers."
)
PG = "PostgresqlTooManyConnections, current=0.89; PostgreSQL too many connections (> 80%)"
LOG = "2026-12-05T08:40:00Z WARN tern-gc 10.0.0.5:8080 GC pause 2.1s; cause=Allocation Failure"


def outcome(claim: str, item: str) -> str:
    results = check_claim(claim, [item])
    if any(r.conflict for r in results):
        return "refuted"
    return "supported" if all(r.found for r in results) else "unproven"


@pytest.mark.parametrize(
    ("claim", "item", "expected"),
    [
        # a bound written first, compared with the value after it
        ("The 1000-message threshold exceeds the 4210 messages queued.", QUEUE, "refuted"),
        ("The threshold of 1000 is below the 4210 messages queued.", QUEUE, "supported"),
        ("4210 messages are queued, above the threshold of 1000.", QUEUE, "supported"),
        # a strict relation to a field's exact value
        ("brine-cache uses more than 91.5% of its memory.", REDIS, "refuted"),
        ("brine-cache uses at least 91.5% of its memory.", REDIS, "supported"),
        ("brine-cache uses 91.5% of its memory, above the 90% threshold.", REDIS, "supported"),
        # a strict relation to a value the item writes in prose, and to one it compares
        ("tern-gc paused for more than 2.1s once.", LOG, "supported"),
        ("The queue of sorrel-mail holds fewer than 4210 messages.", QUEUE, "refuted"),
        ("PostgreSQL has too many connections (above 80%).", PG, "supported"),
        # a conclusion after ", so" right behind a number
        ("Only 8.2% is left on 10.0.4.12, so container logs filled the disk.", DISK, "unproven"),
        # a relative clause that concludes is not an observation; one that restates is
        ("Only 8.2% is left on 10.0.4.12, which points to a log flood.", DISK, "unproven"),
        ("8.2% is left on 10.0.4.12, which is under the 10% threshold.", DISK, "supported"),
        # a cause the item names only as a candidate is not an observation
        ("The lag is caused by partition skew.", RUNBOOK, "unproven"),
        (
            "The runbook lists a slow consumer or a partition skew as likely causes.",
            RUNBOOK,
            "supported",
        ),
        # a reason the item states plainly may be restated as one
        ("tern-gc paused 2.1s because of an Allocation Failure.", LOG, "supported"),
    ],
)
def test_relations_and_links(claim: str, item: str, expected: str) -> None:
    assert outcome(claim, item) == expected


def test_a_key_holding_a_bound_word_inside_it_names_a_value() -> None:
    # GOMAXPROCS is a value of the process; pool_max and maxPoolSize are bounds
    log = 'level=WARN msg="singleflight waiters high" waiters=1840 inflight=512 gomaxprocs=2'
    item = f"2026-12-05T08:40:00Z WARN forecast {log}"
    assert outcome(f'At 08:40, forecast logged WARN: "{log}"', item) == "supported"
    pool = "pool stats: active=20 pool_max=20 maxPoolSize=20"
    assert outcome("the pool's active connections are 20 of its maximum of 20", pool) == (
        "supported"
    )
    assert outcome("2 goroutines are waiting", "pool_max=2 waiting=7") == "unproven"


def test_numbers_in_a_quote_the_item_writes_say_what_the_item_says() -> None:
    # "under 2.5s" of a quoted description is the item's words, not a claim of its value
    description = "4.164% of logins took longer than 2.5s (objective: 98% under 2.5s)."
    item = f"Login, state=firing, current=4.164%, threshold=2%, duration=6s; {description}"
    claim = f'auth has a firing Login alert: current 4.164%, description "{description}".'
    assert outcome(claim, item) == "supported"
    # an edited number makes the quote another text, and it is read as a claim again
    assert outcome(claim.replace("current 4.164%", "current 9%"), item) == "refuted"
    edited = claim.replace("98% under", "50% under")
    assert outcome(edited, item) != "supported"
    # a quote cut inside the item's number ("= 1" of "= 10452") is not the item's words
    log = "WARN mysql Query_time: 3.1s Rows_sent: 1 WHERE p.user_id = 10452"
    cut = 'mysql logged WARN: "Query_time: 3.1s Rows_sent: 1 WHERE p.user_id = 1"'
    assert outcome(cut, log) != "supported"
