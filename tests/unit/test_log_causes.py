"""Causes named by logged messages: only near the onset, only when no series rule held."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, get_args

from evals.incidents.model import Category
from services.executor.claims import build_evidence, diagnosis_findings
from services.executor.log_causes import (
    QUOTED_CHARS,
    named,
    quoted,
    signatures,
    unless_held,
)
from services.executor.log_lines import Logged
from tests.support.evidence_events import answered_invocation
from tests.support.logged_lines import firing as _firing
from tests.support.logged_lines import line as _line
from tests.support.series_items import ONSET, START, item
from tracebound.events import ExecutionPlan, PlannedCall, ToolInvocation

LOGS = {"log_topic": "application-logs", "query": "gw", "service": "gw", "window_minutes": 120}


def _cause(lines: list[Logged]) -> str:
    found = named(lines, ONSET)
    return found.id if found else ""


def test_the_signature_with_most_lines_near_the_onset_names_the_cause() -> None:
    full = _line(-9, "write /data/wal/000172: No space left on device")
    refused = _line(-5, "dial tcp 10.0.3.7:6379: connect: connection refused")
    assert _cause([full, refused, _line(-3, "flush failed: ENOSPC")]) == "disk-full"
    # a tie goes to the signature whose first line came first
    assert _cause([refused, full]) == "disk-full"
    found = named([refused, full], ONSET)
    assert found is not None and found.first == full.text


def test_old_later_and_routine_lines_name_nothing() -> None:
    assert _cause([_line(-200, "java.lang.OutOfMemoryError: Java heap space")]) == ""
    assert _cause([_line(30, "java.lang.OutOfMemoryError: Java heap space")]) == ""
    assert _cause([_line(-4, "java.lang.OutOfMemoryError: Java heap space", "INFO")]) == ""
    assert _cause([_line(-4, "GET /v1/items 200 12ms", "ERROR")]) == ""
    # a message logged before the window as well is chronic, not this alert's cause
    reset = "read: Connection reset by peer"
    assert _cause([_line(-100, reset), _line(-20, reset), _line(-5, reset)]) == ""
    assert _cause([_line(-4, "GET /x 503 Service Unavailable: retry later")]) == ""


def test_every_signature_names_a_known_category() -> None:
    known = set(get_args(Category))
    assert {s.category for s in signatures().signatures} <= known


def _trace(series_rule: bool) -> list[ToolInvocation]:
    rising = item(
        lambda i: 0.4 if i < 200 or not series_rule else 0.4 - 0.008 * (i - 200),
        "ratio",
        "fs_free_ratio",
        mountpoint="/data",
    )
    prom = answered_invocation(
        1, "query_prometheus", {"queries": "disk"}, {"series": [rising]}, ["$.series[0]"]
    )
    messages = ["GET /v1/items 200", "cache warm", "retrying upload", "No space left on device"]
    records = [
        {
            "timestamp": datetime.fromtimestamp(START + 6000 + i, UTC).isoformat(),
            "level": "ERROR" if "space" in text else "INFO",
            "service": "gw",
            "message": text,
        }
        for i, text in enumerate(messages)
    ]
    paths = [f"$.logs[{i}]" for i in range(len(records))]
    return [prom, answered_invocation(2, "query_logs", LOGS, {"logs": records}, paths)]


def _evidence(series_rule: bool) -> dict[str, Any]:
    plan = ExecutionPlan(
        calls=(
            PlannedCall(tool="query_prometheus", params={"queries": "disk"}, purpose=""),
            PlannedCall(tool="query_logs", params=LOGS, purpose=""),
        ),
        services=("gw",),
        alert_names=(),
    )
    return build_evidence(_trace(series_rule), plan, "en", narrow=False, max_claims=16)


def test_a_signature_names_the_cause_only_when_no_series_rule_held() -> None:
    by_log = _evidence(series_rule=False)
    assert by_log["hypotheses"][0].startswith("Likely cause by diagnosis rule log:disk-full")
    assert "No space left on device" in by_log["claims"][0]["claim_text"]
    by_series = _evidence(series_rule=True)
    assert "log:" not in " ".join(by_series["hypotheses"])


def test_llm_mode_gains_the_same_log_cause_and_its_line() -> None:
    claims, causes = diagnosis_findings(_trace(series_rule=False), "en")
    assert causes[0].startswith("Likely cause by diagnosis rule log:disk-full")
    assert ["No space left on device" in c["claim_text"] for c in claims] == [True]
    claims, causes = diagnosis_findings(_trace(series_rule=True), "en")
    assert not any("log:" in c for c in causes)


def test_a_client_library_exception_names_a_failing_dependency() -> None:
    for message in (
        "Task index_product raised unexpected: TransportError(503, 'unavailable_shards')",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='ledger', port=443)",
        "httpx.ReadTimeout: timed out",
        "rpc error: code = DeadlineExceeded desc = DEADLINE_EXCEEDED",
        "call to upstream inventory timed out after 2000ms",
    ):
        assert _cause([_line(-4, message)]) == "dependency-unreachable", message


def test_the_pool_libraries_own_exhaustion_messages_name_the_pool() -> None:
    for message in (
        "System.InvalidOperationException: Timeout expired.  The timeout period elapsed prior"
        " to obtaining a connection from the pool.  This may have occurred because all pooled"
        " connections were in use and max pool size was reached.",
        "Npgsql.NpgsqlException: The connection pool has been exhausted",
        "MongoTimeoutException: Timed out while checking out a connection from connection pool",
        "DBConnection.ConnectionError: connection not available and request was dropped from"
        " queue after 2000ms",
        "redis.clients.jedis.exceptions.JedisException: Could not get a resource from the pool",
        "SequelizeConnectionAcquireTimeoutError: Operation timeout",
        "no available connections in the pool",
    ):
        assert _cause([_line(-4, message)]) == "pool-exhausted", message


def test_a_pools_leak_detection_names_a_connection_leak_at_its_own_info_level() -> None:
    leak = (
        "Datasource '<default>': Connection leak of io.agroal.pool.wrapper.ConnectionWrapper@3f6e"
    )
    timeout = "Unable to acquire JDBC Connection [Sorry, acquisition timeout!]"
    lines = [_line(-30, leak, "INFO"), _line(-20, leak, "INFO"), _line(-3, timeout)]
    assert _cause(lines) == "connection-leak"
    hikari = "Connection leak detection triggered for org.postgresql.jdbc.PgConnection@5f1b"
    assert _cause([_line(-9, hikari, "WARN")]) == "connection-leak"


def test_runtimes_and_proxies_own_words_name_their_category() -> None:
    cases = {
        "out-of-memory": (
            "Unhandled exception. System.OutOfMemoryException: Insufficient memory",
            "PHP Fatal error:  Allowed memory size of 536870912 bytes exhausted",
            'eheap_alloc: Cannot allocate 1048576 bytes of memory (of type "heap")',
            "memory allocation of 4194304 bytes failed",
        ),
        "gc-overhead": (
            "[gc] Allocation Stall (http-nio-8080-exec-3) 812.345ms",
            "[gc] GC(412) Pause Young (Normal) (G1 Evacuation Pause) (Evacuation Failure)",
            "[GC (Allocation Failure) [ParNew: concurrent mode failure]",
        ),
        "dependency-unreachable": (
            "upstream connect error or disconnect/reset before headers. reset reason: timeout",
            "no healthy upstream",
            'Get "http://rates:8080/v1": dial tcp 10.1.2.3:8080: i/o timeout',
            "quote failed: no healthy instances of dutycalc in consul catalog",
            "No servers available for service: inventory",
            'no endpoints available for service "ledger"',
            "PHP Warning:  session_start(): Failed to read session data: redis (path: tcp://r:6379)",
            "RedisConnectionFailureException: Unable to connect to Redis",
            "memcached get failed: SERVER IS MARKED DEAD",
        ),
        "datastore-full": (
            "failed saving state: OOM command not allowed when used memory > 'maxmemory'.",
            "MISCONF Redis is configured to save RDB snapshots, but it's unable to persist",
        ),
        "consumer-behind": (
            "org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed",
            "PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out",
        ),
    }
    for signature, messages in cases.items():
        for message in messages:
            assert _cause([_line(-4, message)]) == signature, message


def test_a_jvm_gc_log_names_gc_pressure_at_its_own_info_level() -> None:
    full = "[gc] GC(18307) Pause Full (G1 Compaction Pause) 3962M->3811M(3968M) 5127.884ms"
    assert _cause([_line(-20, full, "INFO")]) == "gc-overhead"
    # other signatures still read errors and warnings only
    assert _cause([_line(-20, "java.lang.OutOfMemoryError: Java heap space", "INFO")]) == ""
    assert _cause([_line(-200, full, "INFO"), _line(-20, full, "INFO")]) == "", "chronic"


def test_a_failing_log_rotation_names_logs_filling_the_disk() -> None:
    line = 'error: skipping "/var/log/app/access.log" because parent directory has insecure'
    assert _cause([_line(-30, line + " permissions")]) == "log-rotation-failing"


def test_the_cause_quotes_the_first_lines_message_cut_at_a_space() -> None:
    long = "TransportError(503, 'unavailable_shards_exception', '[products-v7][1] primary " + (
        "shard is not active Timeout: [2s], request: [BulkShardRequest [[products-v7][1]]"
    )
    found = named([_line(-4, long), _line(-2, "ConnectionError: reset")], ONSET)
    assert found is not None and found.message == long
    cause = found.cause("en")
    assert cause.startswith("a dependency failure") and "\u201cTransportError(503," in cause
    assert cause.endswith(" \u2026\u201d") and len(quoted(long)) <= QUOTED_CHARS + 4
    assert quoted("short message") == "\u201cshort message\u201d"
    # a cut never ends inside a word or a number
    inner = quoted(long)[1:-3].rstrip()
    assert long.startswith(inner) and long[len(inner)] == " "


def test_the_quote_starts_near_where_the_signature_matched() -> None:
    task = "Task catalog.tasks.index[3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f]"
    message = f"[ERROR/Worker-7] {task} raised unexpected: TransportError(503, 'shards') " + (
        "x " * 60
    )
    found = named([_line(-4, message)], ONSET)
    assert found is not None
    cause = found.cause("en")
    assert "\u201c\u2026 raised unexpected: TransportError(503," in cause, cause
    assert task not in cause


def test_a_log_cause_goes_first_unless_a_rule_beyond_circumstance_held() -> None:
    lines = [_line(-4, "requests.exceptions.ConnectionError: connection refused")]
    circumstance = [("deploy-alert", "a regression")]
    assert unless_held(circumstance, lines, [], [_firing()]) is not None
    assert unless_held([], lines, [], [_firing()]) is not None
    held = [*circumstance, ("datastore-failing", "a failing dependency")]
    assert unless_held(held, lines, [], [_firing()]) is None


def test_a_pattern_anchored_at_the_start_quotes_from_its_last_words() -> None:
    head = "pid=1 tid=2pqa class=PaymentWebhookJob jid=d2e3f4a5b6c7d8e9f0a1b2c3 elapsed=5.004 "
    tail = "WARN: ActiveRecord::ConnectionTimeoutError: could not obtain a connection from the pool"
    found = named([_line(-4, head + tail)], ONSET)
    assert found is not None and found.id == "pool-exhausted"
    assert "could not obtain a connection" in found.cause("en")


def test_a_quote_never_starts_or_ends_inside_a_token() -> None:
    long = (
        "jid=d2e3f4a5b6c7d8e9f0a1b2c3,elapsed=5.004,queue=payments,trace=0af7651916cd43dd8448eb21"
    )
    message = f"{long} could not obtain a connection from the pool within 5 s"
    found = named([_line(-4, message)], ONSET)
    assert found is not None
    inner = found.cause("en").split("\u201c", 1)[1].rstrip("\u201d").removeprefix("\u2026 ")
    inner = inner.removesuffix(" \u2026")
    assert message.startswith(inner) or f" {inner}" in message, inner
    assert quoted("x" * 150) == "\u201c" + "x" * 150 + "\u201d", "no space: the whole token"


def test_a_known_message_rarer_than_an_unknown_error_names_nothing() -> None:
    npe = "java.lang.NullPointerException: Cannot invoke because rate is null at Mapper.java:{}"
    unknown = [_line(-9 + i, npe.format(80 + i)) for i in range(3)]
    deadline = _line(-6, "ListPostings cancelled by client: DEADLINE_EXCEEDED after 2001 ms")
    assert _cause([*unknown, deadline]) == ""
    # as common as the unknown message, or commoner: it names its cause
    assert _cause([unknown[0], deadline]) == "dependency-unreachable"
    assert _cause(
        [*unknown, deadline, _line(-5, "DEADLINE_EXCEEDED"), _line(-4, "DEADLINE_EXCEEDED")]
    )


def test_routine_warnings_do_not_outweigh_errors_a_signature_knows() -> None:
    slow = [_line(-20 + i, f"slow query took {1200 + i} ms", "WARN") for i in range(4)]
    full = [_line(-9, "write /data/wal/000172: No space left on device")]
    assert _cause([*slow, *full]) == "disk-full"


def test_a_cause_quotes_the_commonest_message_its_signature_read() -> None:
    lines = [
        _line(-40, "geo lookup timed out (StatusCode.DEADLINE_EXCEEDED)"),
        _line(-6, "screening failed: StatusCode.UNAVAILABLE: Connection refused"),
        _line(-4, "screening failed: StatusCode.UNAVAILABLE: Connection refused"),
    ]
    found = named(lines, ONSET)
    assert found is not None and found.id == "dependency-unreachable"
    assert "Connection refused" in found.cause("en") and "geo" not in found.cause("en")


def test_a_chronic_message_does_not_silence_a_new_one_of_the_same_signature() -> None:
    timeout = "geo lookup timed out (StatusCode.DEADLINE_EXCEEDED)"
    refused = "screening failed: StatusCode.UNAVAILABLE: Connection refused"
    lines = [_line(-104, timeout), _line(-30, timeout), _line(-6, refused), _line(-4, refused)]
    found = named(lines, ONSET)
    assert found is not None and "Connection refused" in found.cause("en")
    assert named([_line(-104, timeout), _line(-30, timeout)], ONSET) is None, "chronic alone"


def test_names_that_do_not_resolve_name_a_dns_failure() -> None:
    for message in (
        "Caused by: java.net.UnknownHostException: rx-router.corp.example: Temporary failure"
        " in name resolution",
        "getaddrinfo ENOTFOUND ledger.payments.svc.cluster.local",
        "dial tcp: lookup geo-eta on 10.96.0.10:53: no such host",
        "socket.gaierror: [Errno -2] Name or service not known",
        "Could not resolve host: api.partner.example",
    ):
        assert _cause([_line(-4, message)]) == "name-resolution-failing", message


def test_a_rejected_certificate_or_a_refusing_datastore_names_the_dependency() -> None:
    for message in (
        'err="x509: certificate has expired or is not yet valid"',
        "FetchError: request to https://pricing/ failed, reason: certificate has expired",
        "javax.net.ssl.SSLHandshakeException: PKIX path validation failed",
    ):
        assert _cause([_line(-4, message)]) == "certificate-rejected", message
    flood = "flood stage disk watermark [95%] exceeded on [logs-es-data-3], all indices read-only"
    assert _cause([_line(-4, flood, "WARN")]) == "datastore-full"
    # a buffer fills its volume when its sink refuses the writes
    hit = unless_held([("volume-filling", "x")], [_line(-4, flood, "WARN")], [], [_firing()])
    assert hit is not None and hit.id == "datastore-full"


def test_a_datastore_that_lost_quorum_names_a_failing_dependency() -> None:
    for message in (
        "Error: Write failed. Insufficient number of drives online (cmd.InsufficientWriteQuorum)",
        "org.apache.kafka.common.errors.NotEnoughReplicasException: Messages are rejected",
        "Cannot achieve consistency level LOCAL_QUORUM",
        "etcdserver: no quorum, request timed out",
    ):
        assert _cause([_line(-4, message)]) == "quorum-lost", message
    hit = unless_held(
        [("dependency-failing", "x")], [_line(-4, "write quorum not met")], [], [_firing()]
    )
    assert hit is not None and hit.id == "quorum-lost"
