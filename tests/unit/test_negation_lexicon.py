"""The one negation lexicon (``rules/negation.json``) and the three readers that share it."""

from __future__ import annotations

from typing import Any

import pytest

from services.common.negation import default_negations, load_negations, parse_negations
from services.gatekeeper.ruleset import default_ruleset
from services.verifier.facts import extract
from services.verifier.match import compare
from tests.support.rulebook import RULES
from tracebound.errors import ConfigError

HIKARI_LOG = (
    "2026-07-08T10:00:03Z ERROR order-service HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms"
)


def _document(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": "test-v1",
        "scope_words": 3,
        "en": {"cues": ["not"], "suffixes": ["n't"], "exempt": ["not only"]},
        "zh": {"cues": ["不"], "exempt": ["不同"]},
    }
    doc.update(changes)
    return doc


def test_repository_lexicon_loads() -> None:
    lexicon = load_negations()
    assert lexicon.version == "negation-v1"
    assert default_ruleset().matcher is not None
    assert {"未", "不", "没有", "并非"} <= set(lexicon.zh_cues)


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("cpu 使用率非常高", False),
        ("两个实例不同", False),
        ("无论如何", False),
        ("not only errors", False),
        ("cpu 使用率不高", True),
        ("未出现错误", True),
        ("连接池不存在", True),
        ("并非如此", True),
        ("it did not fire", True),
        ("it doesn't fire", True),
        ("fired without retries", True),
        ("the knot is tied", False),
    ],
)
def test_cues_and_exemptions(text: str, negated: bool) -> None:
    assert default_negations().in_text(text) is negated


def test_gatekeeper_accepts_the_verbatim_excerpt_after_an_exempt_phrase() -> None:
    matcher = default_ruleset().matcher
    assert matcher.is_supported("current=92%", "CPU 使用率非常高 current=92%")
    assert not matcher.is_supported("current=92%", "CPU 使用率并非 current=92%")
    assert not matcher.is_supported("高 current=92%", "CPU 使用率不高 current=92%")


def test_verifier_and_gatekeeper_read_the_same_lexicon() -> None:
    assert [n.head for n in extract("CPU 使用率非常高 current=92%", rules=RULES).negations] == []
    assert [n.cue for n in extract("两个实例不同，连接不可用", rules=RULES).negations] == ["不"]


def test_chinese_absence_is_not_an_english_unavailability() -> None:
    claim = extract("order-service 未出现 HikariPool-1 连接池耗尽错误", rules=RULES)
    [result] = [
        r
        for r in compare(claim, extract(HIKARI_LOG, rules=RULES), rules=RULES)
        if r.kind == "negation"
    ]
    assert not result.found


def test_chinese_negation_matches_an_equivalent_english_one() -> None:
    claim = extract("order-service 连接不可用", rules=RULES)
    [result] = [
        r
        for r in compare(claim, extract(HIKARI_LOG, rules=RULES), rules=RULES)
        if r.kind == "negation"
    ]
    assert result.found


@pytest.mark.parametrize(
    "doc",
    [
        _document(en={"cues": ["did not"]}),
        _document(zh={"cues": [" "]}),
        _document(scope_words=0),
        _document(en={"cues": ["not"], "exempt": ["only not"]}),
        _document(unknown=1),
    ],
)
def test_malformed_lexicons_are_config_errors(doc: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="negation lexicon"):
        parse_negations(doc, "lexicon.json")


def test_an_injected_lexicon_changes_what_negates() -> None:
    lexicon = parse_negations(_document())
    assert lexicon.in_text("不高") and not lexicon.in_text("没有")
    assert not lexicon.english_cue(["not", "only"], 0) and lexicon.english_cue(["isn't"], 0)
