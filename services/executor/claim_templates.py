"""The wording of the rules executor's claims: ``rules/executor-claims.json``.

Why a file: every claim is a template filled with values of one tool item, so a
reader sees each sentence the executor can say, in both languages, in one place.
The file is checked when first read: each template has its English and Chinese text.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from tracebound import resources
from tracebound.errors import ConfigError

CLAIMS_PATH = resources.path("rules", "executor-claims.json")
TEMPLATE_KEYS = (
    "alert",
    "alert_unscoped",
    "log",
    "log_error",
    "negative",
    "hypothesis",
    "action",
    "missing_failed",
    "missing_none",
    "missing_uncovered",
    "missing_contradicted",
)
FACT_KEYS = ("current", "threshold", "duration", "since", "summary", "separator")


@cache
def templates() -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(CLAIMS_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"claim templates {CLAIMS_PATH} are unreadable: {exc}") from exc
    for key in TEMPLATE_KEYS:
        if not all(isinstance(data.get(key, {}).get(lang), str) for lang in ("en", "zh")):
            raise ConfigError(f"claim templates {CLAIMS_PATH}: {key} needs en and zh text")
    facts = data.get("alert_facts", {})
    for key in FACT_KEYS:
        if not all(isinstance(facts.get(key, {}).get(lang), str) for lang in ("en", "zh")):
            raise ConfigError(f"claim templates {CLAIMS_PATH}: alert_facts.{key} needs en and zh")
    sections = data.get("runbook_sections", {})
    if not all(isinstance(sections.get(k), list) for k in ("causes", "checks")):
        raise ConfigError(f"claim templates {CLAIMS_PATH}: runbook_sections needs causes, checks")
    return data
