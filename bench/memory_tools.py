"""The demo tools with no database: logs and runbooks searched in memory.

The model figure of ``make bench`` (:mod:`bench.llm_tokens`) and the context-budget
tests run the roles in process over the demo data. The logs and the knowledge base
then answer from memory, by plain word matching instead of PostgreSQL; the other
tools are the demo ones.
"""

from __future__ import annotations

import re

from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.base import EvidenceTool
from services.executor.tools.demo_env import format_ts, log_rows_at
from services.executor.tools.knowledge import LookupKnowledgeTool, load_relevance_rules
from services.executor.tools.knowledge_store import (
    Candidate,
    SearchResult,
    load_runbooks,
    query_words,
)
from services.executor.tools.logs import LogPage, LogQuery, QueryLogsTool
from tracebound.events import ToolBackend

_WORD = re.compile(r"\w+", re.UNICODE)


class MemoryLogs:
    """The demo log records searched in memory: every word of the text, service, level, window."""

    layer = "memory"

    def __init__(self, settings: ToolSettings) -> None:
        self.now = settings.demo_now
        self.rows = log_rows_at(self.now, settings.demo_data_dir)

    def search(self, query: LogQuery) -> LogPage:
        words = [w.lower() for w in _WORD.findall(query.text)]
        since, until = (t.timestamp() for t in query.bounds(self.now))
        found = [
            r
            for r in self.rows
            if r.topic == query.topic
            and all(s == r.service for s in query.services)
            and (query.level is None or r.level.upper() == query.level)
            and since < r.ts.timestamp() <= until
            and all(w in r.message.lower() or w in r.service.lower() for w in words)
        ]
        found.sort(key=lambda r: r.ts, reverse=True)
        page = found[: query.limit]
        records = [
            {
                "timestamp": format_ts(r.ts),
                "level": r.level,
                "service": r.service,
                "instance": r.instance,
                "message": r.message,
                "metrics": r.metrics,
            }
            for r in reversed(page)
        ]
        return LogPage(records=records, total=len(found))


class MemoryKnowledge:
    """The shipped runbooks searched in memory: all words first, else any word."""

    layer = "memory"

    def __init__(self, settings: ToolSettings) -> None:
        self.chunks = load_runbooks(settings.runbooks_dir)

    def search(self, text: str, alert_name: str | None) -> SearchResult:
        words = query_words(text)

        def covered(content: str) -> int:
            folded = content.lower()
            return sum(1 for w in words if w in folded)

        scored = [(c, covered(f"{c.title} {c.heading} {c.content}")) for c in self.chunks]
        rows = [(c, n) for c, n in scored if words and n == len(words)]
        fallback = not rows and bool(words)
        if fallback:
            rows = [(c, n) for c, n in scored if n]
        rows.sort(key=lambda item: -item[1])
        total = max(len(words), 1)
        candidates = [
            Candidate(
                c.doc_id,
                c.title,
                c.heading,
                c.content,
                n / total,
                n / total,
                bool(alert_name and alert_name in c.alert_names),
            )
            for c, n in rows[:10]
        ]
        l0 = sum(1 for c in self.chunks if alert_name and alert_name in c.alert_names)
        return SearchResult(candidates, l0, len(candidates), fallback)


def memory_tools() -> dict[str, EvidenceTool]:
    """The three tools on the demo data, with no database."""
    settings = ToolSettings.demo()
    tools = dict(build_tools(settings))
    logs = QueryLogsTool(
        MemoryLogs(settings), settings.logs_region, ToolBackend(name="demo", url="")
    )
    rules = load_relevance_rules(settings.relevance_rules)
    knowledge = LookupKnowledgeTool(MemoryKnowledge(settings), rules)
    tools[logs.name] = logs
    tools[knowledge.name] = knowledge
    return tools
