"""The documentation stays short and linked: line and sentence limits, an index, no dead links.

README.md is read by a newcomer first, so it has a line budget; every sentence of the
README, CONTRIBUTING.md and docs/*.md stays under a word budget; every docs page is
reachable from docs/README.md; and no relative link points at a missing file.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CONTRIBUTING = REPO / "CONTRIBUTING.md"
DOCS = REPO / "docs"
DOCS_INDEX = DOCS / "README.md"

README_MAX_LINES = 250
CONTRIBUTING_MAX_LINES = 120
SENTENCE_MAX_WORDS = 60

FENCE = re.compile(r"^\s*(```|~~~)")
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _docs_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def _prose_files() -> list[Path]:
    return [README, CONTRIBUTING, *_docs_pages()]


def _paragraphs(text: str) -> list[str]:
    """Prose paragraphs: fenced code, table rows and headings left out; list items stand alone."""
    paragraphs: list[str] = []
    current: list[str] = []
    fenced = False

    def flush() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            flush()
            continue
        stripped = line.strip()
        if not fenced and stripped.startswith("|"):
            # a table row: each cell is prose of its own (the separator row is not)
            flush()
            cells = (c.strip() for c in stripped.strip("|").split("|"))
            paragraphs.extend(c for c in cells if c and not set(c) <= set("-: "))
            continue
        if fenced or not stripped or stripped.startswith(("#", "![", "<")):
            flush()
            continue
        if LIST_MARKER.match(line):
            flush()
            stripped = LIST_MARKER.sub("", line).strip()
        current.append(stripped)
    flush()
    return paragraphs


def sentences(text: str) -> list[str]:
    """The sentences of a Markdown text's prose, split on . ! ? followed by white space."""
    found: list[str] = []
    for paragraph in _paragraphs(text):
        found += [s.strip() for s in SENTENCE_END.split(paragraph) if s.strip()]
    return found


def long_sentences(text: str, limit: int = SENTENCE_MAX_WORDS) -> list[tuple[int, str]]:
    """(word count, start) of every sentence over ``limit`` words."""
    return [(len(s.split()), s[:80]) for s in sentences(text) if len(s.split()) > limit]


def _relative_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    code_free = "\n".join(line for line, fenced in _unfenced(text.splitlines()) if not fenced)
    targets: list[str] = []
    for target in LINK.findall(code_free):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def _unfenced(lines: list[str]) -> list[tuple[str, bool]]:
    marked: list[tuple[str, bool]] = []
    fenced = False
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
            marked.append((line, True))
            continue
        marked.append((line, fenced))
    return marked


def test_the_readme_fits_its_line_budget() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


def test_contributing_fits_its_line_budget() -> None:
    lines = len(CONTRIBUTING.read_text(encoding="utf-8").splitlines())
    assert lines <= CONTRIBUTING_MAX_LINES, (
        f"CONTRIBUTING.md has {lines} lines (at most {CONTRIBUTING_MAX_LINES})"
    )


def test_no_sentence_is_too_long() -> None:
    offending = [
        f"{path.relative_to(REPO)}: {words} words: {start!r}"
        for path in _prose_files()
        for words, start in long_sentences(path.read_text(encoding="utf-8"))
    ]
    assert not offending, "sentences over the word budget:\n" + "\n".join(offending)


def test_every_docs_page_is_linked_from_the_index() -> None:
    linked = {(DOCS / target).resolve() for target in _relative_links(DOCS_INDEX) if target}
    missing = [p.name for p in _docs_pages() if p != DOCS_INDEX and p.resolve() not in linked]
    assert not missing, f"docs pages not linked from docs/README.md: {missing}"


def test_every_relative_link_points_at_a_file() -> None:
    broken = [
        f"{path.relative_to(REPO)} → {target}"
        for path in _prose_files()
        for target in _relative_links(path)
        if target and not (path.parent / target).exists()
    ]
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_the_splitter_reads_prose_only() -> None:
    text = (
        "# A heading that is long\n\nOne. Two words here!\n\n```\ncode. more code.\n```\n"
        "| a | b. c |\n- item one. item two\n"
    )
    assert sentences(text) == ["One.", "Two words here!", "a", "b.", "c", "item one.", "item two"]
    assert long_sentences("word " * 61) == [(61, ("word " * 61)[:80])]
