"""Fact extraction and comparison: units, identifiers, negations, and the rules file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.verifier.facts import extract
from services.verifier.match import compare, number_found
from services.verifier.rules_file import (
    VERIFIER_RULES_PATH,
    default_verifier_rules,
    load_overclaim_phrases,
    load_verifier_rules,
    parse_overclaim_phrases,
    parse_verifier_rules,
)
from tests.support.rulebook import RULES
from tracebound.errors import ConfigError


def numbers(text: str) -> list[tuple[float, str]]:
    return [(n.value, n.dimension) for n in extract(text, rules=RULES).numbers]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("92%", "92 %"),
        ("92%", "92％"),
        ("4.2s", "4200ms"),
        ("4.2 s", "4200 ms"),
        ("3.8 GB", "3.8GB"),
        ("3.8 GB", "3800 MB"),
        ("25m", "25 minutes"),
        ("1 h", "3600 s"),
        ("2 GiB", "2048 MiB"),
        ("１５ min", "900 seconds"),
        ("3 秒", "3000 毫秒"),
    ],
)
def test_equivalent_numbers_match(left: str, right: str) -> None:
    [a] = extract(left, rules=RULES).numbers
    assert number_found(a, extract(right, rules=RULES).numbers)


@pytest.mark.parametrize(
    ("left", "right"),
    [("92%", "29%"), ("4.2s", "4.2ms"), ("3.8 GB", "3.8 GiB"), ("92%", "92 ms"), ("25m", "25h")],
)
def test_different_numbers_do_not_match(left: str, right: str) -> None:
    [a] = extract(left, rules=RULES).numbers
    assert not number_found(a, extract(right, rules=RULES).numbers)


def test_identifiers_and_masked_numbers() -> None:
    facts = extract(
        "2026-07-08 23:08:02 ERROR payment-service RedisCommandTimeoutException on "
        "redis-payment-0:6379 via HikariPool-1, pod=pod-order-service-5c9d7b8f4-q7n2p, p99=4.2s",
        rules=RULES,
    )
    kinds = {(i.kind, i.text) for i in facts.identifiers}
    assert {
        ("time", "2026-07-08 23:08:02"),
        ("service", "payment-service"),
        ("service", "order-service"),
        ("error", "RedisCommandTimeoutException"),
        ("host", "redis-payment-0:6379"),
        ("name", "HikariPool-1"),
        ("pod", "pod-order-service-5c9d7b8f4-q7n2p"),
    } <= kinds
    # no number from the timestamp, port, pool suffix, pod hash or the p99 label
    assert [n.text for n in facts.numbers] == ["4.2s"]


def test_camel_case_alert_names() -> None:
    facts = extract("HighCPUUsage OOMKilled SlowResponse CPU JVM P99", rules=RULES)
    names = {i.text for i in facts.identifiers if i.kind == "name"}
    assert names == {"HighCPUUsage", "OOMKilled", "SlowResponse"}
    assert [(i.kind, i.text) for i in facts.identifiers if i.kind != "name"] == [("token", "P99")]


@pytest.mark.parametrize(
    ("text", "heads"),
    [
        ("Connection is not available", ["available"]),
        ("payment-service does not have a firing alert", ["fir"]),
        ("it doesn't fire", ["fire"]),
        ("found no matching logs", ["match"]),
        ("never restarted", ["restart"]),
        ("当前查询未检索到日志", ["检索"]),
        ("告警不存在", ["存在"]),
        ("CPU 使用率非常高", []),
        ("evidence_status=no_evidence", []),
    ],
)
def test_negations(text: str, heads: list[str]) -> None:
    assert [n.head for n in extract(text, rules=RULES).negations] == heads


def test_compare_flags_conflicts_and_silence() -> None:
    evidence = extract(
        "HighCPUUsage, service=payment-service, state=firing, current=92%", rules=RULES
    )
    results = {
        r.fact: r
        for r in compare(
            extract("order-service CPU at 29% for 5 min", rules=RULES), evidence, rules=RULES
        )
    }
    assert results["order-service"].conflict and results["29% [current]"].conflict
    assert not results["5 min [duration]"].found and not results["5 min [duration]"].conflict
    dropped = compare(
        extract("connections are available", rules=RULES),
        extract("Connection is not available", rules=RULES),
        rules=RULES,
    )
    assert any(r.kind == "negation" and r.conflict for r in dropped)
    added = compare(extract("payment-service is not firing", rules=RULES), evidence, rules=RULES)
    assert any(r.kind == "negation" and r.conflict for r in added)


def test_a_quoted_line_keeps_its_negation_beside_the_plain_word() -> None:
    line = "WARNING app.throttle client=sync 2,912 requests (no throttle class configured)"
    evidence = extract(f"logged {line}; logger=app.throttle", rules=RULES)
    quoted = compare(extract(f'sync logged "{line}"', rules=RULES), evidence, rules=RULES)
    assert not any(r.conflict for r in quoted)
    # the word alone, with the evidence's negation dropped, is still a conflict
    dropped = compare(extract("a throttle class is configured", rules=RULES), evidence, rules=RULES)
    assert any(r.kind == "negation" and r.conflict for r in dropped)
    # so is a negation moved to the other subject, quoted or not
    two = extract(
        "queue orders: no consumer attached; queue refunds: consumer attached", rules=RULES
    )
    for swapped in (
        "queue refunds: no consumer attached; queue orders: consumer attached",
        'queue orders: "consumer attached", queue refunds: "no consumer attached"',
    ):
        results = compare(extract(swapped, rules=RULES), two, rules=RULES)
        assert any(r.kind == "negation" and r.conflict for r in results), swapped


def test_a_second_copied_passage_drops_no_negation_of_the_first() -> None:
    """The summary says "cannot get Redis connections"; the description, quoted beside it
    word for word, names go-redis plainly: it is the evidence's own words, no dropped
    negation. A quote cut just after the cue still drops it."""
    summary = "gw cannot get Redis connections from its pool"
    description = "gw times out waiting for a go-redis pool connection"
    evidence = extract(
        f'alert GwRedisPool: summary "{summary}", description "{description}"', rules=RULES
    )
    claim = f'gw has a firing alert: summary "{summary}", description "{description}".'
    assert not any(r.conflict for r in compare(extract(claim, rules=RULES), evidence, RULES))
    cut = extract('gw logged "Redis connections from its pool"', rules=RULES)
    assert any(r.kind == "negation" and r.conflict for r in compare(cut, evidence, RULES))


def test_alias_is_declared_in_rules() -> None:
    evidence = extract("order-service HikariPool-1 - Connection is not available", rules=RULES)
    [result] = [
        r
        for r in compare(extract("HikariCP pool", rules=RULES), evidence, rules=RULES)
        if r.fact == "HikariCP"
    ]
    assert result.found


def test_repository_rules_load() -> None:
    rules = default_verifier_rules()
    assert rules.version == "verifier-rules-v4"
    assert load_overclaim_phrases().phrases


@pytest.mark.parametrize(
    "text",
    [
        "The service IS HEALTHY; db-1 was Ruled Out.",
        "no issues found in xno issue or no issuesx",
        "Doesn't exist\nconfirmed that there is no error at 12%",
        "plain text with no phrase at all",
        "系统健康, 没有问题 and is healthy",
        "ſo the ſervice iſ healthy",  # ſ is an s to re.IGNORECASE
        "NO İSSUE and the KNOWN ıssue",
        "负载 92%，没有问题; σ and ς",
        "",
    ],
)
def test_overclaim_shortcut_finds_what_the_pattern_finds(text: str) -> None:
    phrases = load_overclaim_phrases()
    assert phrases.needles is not None
    expected = [m.span() for m in phrases.pattern.finditer(text)]
    assert [m.span() for m in phrases.finditer(text)] == expected
    found = phrases.search(text)
    assert (found.span() if found else None) == (expected[0] if expected else None)


def test_overclaim_shortcut_off_when_a_non_ascii_phrase_could_match_ascii() -> None:
    document = {"version": "v", "en": ["is healthy", "iſ fine"], "zh": ["系统健康"]}
    phrases = parse_overclaim_phrases(document)
    assert phrases.needles is None
    assert phrases.search("it IS FINE") is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("units"), "units"),
        (lambda d: d["units"].update({"x": {"dimension": "weight", "factor": 1}}), "dimension"),
        (lambda d: d["identifier_patterns"].append({"kind": "name", "pattern": "(["}), "regex"),
        (lambda d: d.update(extra_field=1), "extra_field"),
    ],
)
def test_bad_rules_raise_config_error_naming_the_file(
    change: Callable[[dict[str, Any]], object], message: str, tmp_path: Path
) -> None:
    data = json.loads(VERIFIER_RULES_PATH.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "verifier-rules.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_verifier_rules(path)
    assert str(path) in str(info.value)


def test_unreadable_rules_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_verifier_rules(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not JSON"):
        load_verifier_rules(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="<verifier rules>"):
        parse_verifier_rules([])


def test_a_quoted_message_with_its_own_quote_marks_keeps_its_negation() -> None:
    """A Java message quotes code (``Cannot invoke "x.y()" because "rate" is null``) and
    the record holds it as a JSON string, with its quote marks and newlines escaped."""
    message = (
        'java.lang.NullPointerException: Cannot invoke "java.math.BigDecimal.multiply()"'
        ' because "rate" is null\n\tat ledger.PostingMapper.toEntity(PostingMapper.java:88)'
        "\n\tat ledger.PostingGrpc$MethodHandlers.invoke(PostingGrpc.java:311)"
    )
    quoted = extract(f'At 14:02, ledger logged ERROR: "{message}"', rules=RULES)
    # the record as JSON, and as a ref text with the message's whitespace collapsed
    for held in (json.dumps({"level": "ERROR", "message": message}), " ".join(message.split())):
        evidence = extract(held, rules=RULES)
        assert not any(r.conflict for r in compare(quoted, evidence, RULES)), held
    # the head outside any quotation still drops the negation
    plain = extract("ledger can invoke the mapper", rules=RULES)
    assert any(r.kind == "negation" and r.conflict for r in compare(plain, evidence, RULES))
