"""The knowledge base: runbook sections in PostgreSQL, found by L0 hint + L1 rank.

Why two layers: an alert name or an exact runbook title is a strong hint (L0),
but a hint alone must never put a block in front of the executor — only text
that actually matches the question (L1, ranked full-text search) can be cited.
L0 therefore only raises the score of blocks L1 already found. When every word
of the question is required and nothing matches, the search falls back to any
word (OR), and the relevance thresholds decide what is still worth returning.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import LiteralString

import psycopg

from services.executor.tools.pg import Connection, SeedCheck, connect, ensure_seeded
from tracebound.errors import ConfigError

SEED_NAME = "runbooks"
KB_TABLE = "tb_kb_chunk"
_ALERTS_LINE = re.compile(r"^alerts:\s*(.*)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")

KB_DDL: tuple[LiteralString, ...] = (
    """
    CREATE TABLE IF NOT EXISTS tb_kb_chunk (
        doc_id text NOT NULL,
        position integer NOT NULL,
        title text NOT NULL,
        heading text NOT NULL,
        content text NOT NULL,
        alert_names text[] NOT NULL DEFAULT '{}',
        search tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', title), 'A')
            || setweight(to_tsvector('simple', heading), 'B')
            || setweight(to_tsvector('simple', content), 'D')
        ) STORED,
        PRIMARY KEY (doc_id, position)
    )
    """,
    "CREATE INDEX IF NOT EXISTS tb_kb_chunk_search_idx ON tb_kb_chunk USING gin (search)",
)

_L0_SQL: LiteralString = """
SELECT count(DISTINCT doc_id) FROM tb_kb_chunk
WHERE (%(alert)s::text IS NOT NULL AND %(alert)s::text = ANY(alert_names))
   OR lower(title) = lower(%(text)s)
"""

# rank: cover density of the query in the chunk; covered: how many distinct
# query words the chunk contains (each word its own plainto_tsquery, so no
# query syntax can get in). Both feed the score in knowledge.py.
_L1_SELECT: LiteralString = """
SELECT doc_id, title, heading, content,
       ts_rank_cd(search, q, %(norm)s) AS rank,
       (SELECT count(*) FROM unnest(%(words)s::text[]) AS w(word)
         WHERE search @@ plainto_tsquery('simple', w.word)) AS covered,
       (%(alert)s::text IS NOT NULL AND %(alert)s::text = ANY(alert_names))
         OR lower(title) = lower(%(text)s) AS l0
FROM tb_kb_chunk, {tsquery} AS q
WHERE search @@ q
ORDER BY rank DESC, doc_id, position
"""
_L1_AND_SQL: LiteralString = _L1_SELECT.replace(
    "{tsquery}", "websearch_to_tsquery('simple', %(text)s)"
)
_L1_OR_SQL: LiteralString = _L1_SELECT.replace("{tsquery}", "to_tsquery('simple', %(any)s)")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``##`` section of a runbook (the text before the first one is "Overview")."""

    doc_id: str
    position: int
    title: str
    heading: str
    content: str
    alert_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    doc_id: str
    title: str
    heading: str
    content: str
    rank: float
    coverage: float
    l0: bool


@dataclass(frozen=True, slots=True)
class SearchResult:
    candidates: list[Candidate]
    l0_count: int
    l1_count: int
    fallback: bool


def parse_runbook(path: Path) -> list[Chunk]:
    """Split a runbook into chunks; the ``#`` line is the title."""
    title, heading = "", "Overview"
    alerts: tuple[str, ...] = ()
    sections: list[tuple[str, list[str]]] = [(heading, [])]
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ") and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif len(sections) == 1 and not alerts and (match := _ALERTS_LINE.match(line.strip())):
            alerts = tuple(a.strip() for a in match.group(1).split(",") if a.strip() != "")
        else:
            sections[-1][1].append(line)
    if not title:
        raise ConfigError(f"runbook {path} has no '# ' title line")
    chunks: list[Chunk] = []
    for heading, lines in sections:
        content = "\n".join(lines).strip()
        if content:
            chunks.append(Chunk(path.stem, len(chunks), title, heading, content, alerts))
    return chunks


def load_runbooks(directory: Path) -> list[Chunk]:
    paths = sorted(directory.glob("*.md"))
    if not paths:
        raise ConfigError(f"no runbooks (*.md) in {directory}")
    return [chunk for path in paths for chunk in parse_runbook(path)]


def chunks_hash(chunks: list[Chunk]) -> str:
    digest = hashlib.sha256()
    for c in chunks:
        fields = (c.doc_id, str(c.position), c.title, c.heading, c.content, *c.alert_names)
        digest.update("\x1f".join(fields).encode() + b"\x1e")
    return digest.hexdigest()


def query_words(text: str) -> list[str]:
    """The distinct words of a question, lower-cased, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


class KnowledgeStore:
    """Runbook chunks in ``tb_kb_chunk``, loaded from the runbook directory."""

    layer = "L0+L1"

    def __init__(self, dsn: str, runbooks_dir: Path, rank_normalization: int = 32) -> None:
        self._dsn = dsn
        self._runbooks_dir = runbooks_dir
        self._norm = rank_normalization
        self._seeded: str | None = None
        self._seed_check = SeedCheck()

    def ensure_ready(self, conn: Connection) -> bool:
        """Create the table and load the runbooks if missing or changed."""
        chunks = load_runbooks(self._runbooks_dir)
        digest = chunks_hash(chunks)
        if self._seeded == digest:
            return False

        def load(c: Connection) -> None:
            c.execute("DELETE FROM tb_kb_chunk")
            with c.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tb_kb_chunk "
                    "(doc_id, position, title, heading, content, alert_names) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [
                        (k.doc_id, k.position, k.title, k.heading, k.content, list(k.alert_names))
                        for k in chunks
                    ],
                )

        loaded = ensure_seeded(conn, SEED_NAME, digest, KB_TABLE, ddl=KB_DDL, load=load)
        self._seeded = digest
        return loaded

    def search(self, text: str, alert_name: str | None) -> SearchResult:
        words = query_words(text)
        params: dict[str, object] = {
            "text": text,
            "alert": alert_name or None,
            "norm": self._norm,
            "words": words,
            # word characters only, so this OR query carries no tsquery syntax
            "any": " | ".join(words),
        }
        with connect(self._dsn) as conn:
            self._seed_check.ready(conn, self.ensure_ready)
            try:
                return self._search(conn, params, words)
            except psycopg.errors.UndefinedTable:
                # dropped behind our back: recreate, reload, ask again
                conn.rollback()
                self._seeded = None
                self.ensure_ready(conn)
                return self._search(conn, params, words)

    @staticmethod
    def _search(conn: Connection, params: dict[str, object], words: list[str]) -> SearchResult:
        row = conn.execute(_L0_SQL, params).fetchone()
        l0_count = int(row[0]) if row else 0
        rows = conn.execute(_L1_AND_SQL, params).fetchall()
        fallback = not rows and bool(words)
        if fallback:
            rows = conn.execute(_L1_OR_SQL, params).fetchall()
        total_words = max(len(words), 1)
        candidates = [
            Candidate(doc, title, heading, content, float(rank), covered / total_words, bool(l0))
            for doc, title, heading, content, rank, covered, l0 in rows
        ]
        return SearchResult(candidates, l0_count, len(candidates), fallback)
