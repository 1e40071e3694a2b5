"""Reading the README's architecture: the edges of its box-drawing diagram and its roles table.

The diagram is traced as a grid. Names are the nodes: topics (``tracebound.<name>``),
the roles passed in, and the phrase ``every topic but dead-letters``; a comma list of
names (``planner, executor ──►``) acts as one node. Connector characters join into
lines; each line runs from the names it touches with a plain end to the names its
arrowheads point at (one space may separate an end from a name). Names that are
neither (``PostgreSQL``, labels beside a line) are not nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracebound.topics import DEAD_LETTERS, topic_table

ALL_BUT_DEAD_LETTERS = "every topic but dead-letters"
# Which sides of a cell a connector joins: Left, Right, Up, Down.
SIDES = {
    "─": "LR",
    "│": "UD",
    "┬": "LRD",
    "┴": "LRU",
    "├": "UDR",
    "┤": "UDL",
    "┌": "RD",
    "┐": "LD",
    "└": "UR",
    "┘": "UL",
    "┼": "LRUD",
    "►": "L",
    "◄": "R",
    "▲": "D",
    "▼": "U",
}
HEADS = {"►": "R", "◄": "L", "▲": "U", "▼": "D"}
STEP = {"L": (0, -1), "R": (0, 1), "U": (-1, 0), "D": (1, 0)}
OPPOSITE = {"L": "R", "R": "L", "U": "D", "D": "U"}

Edge = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Node:
    row: int
    start: int
    end: int  # exclusive
    names: frozenset[str]


def _expand(phrase: str) -> frozenset[str]:
    if phrase == ALL_BUT_DEAD_LETTERS:
        return frozenset(t.name for t in topic_table() if t.name != DEAD_LETTERS)
    return frozenset({phrase})


def _nodes(lines: list[str], roles: frozenset[str]) -> list[Node]:
    words = "|".join(sorted(roles, key=len, reverse=True))
    pattern = re.compile(
        rf"{re.escape(ALL_BUT_DEAD_LETTERS)}|tracebound\.[a-z-]+|(?<![\w.-])(?:{words})(?![\w-])"
    )
    nodes: list[Node] = []
    for row, line in enumerate(lines):
        found = [Node(row, m.start(), m.end(), _expand(m.group())) for m in pattern.finditer(line)]
        for i, node in enumerate(found):
            names = set(node.names)
            j = i  # a comma list is one node: its last name carries the ones before it
            while j > 0 and line[found[j - 1].end : found[j].start] == ", ":
                j -= 1
                names |= found[j].names
            nodes.append(Node(row, node.start, node.end, frozenset(names)))
    return nodes


class Diagram:
    def __init__(self, text: str, roles: frozenset[str]) -> None:
        self.lines = text.splitlines()
        self.nodes = _nodes(self.lines, roles)

    def _char(self, row: int, col: int) -> str:
        if 0 <= row < len(self.lines) and 0 <= col < len(self.lines[row]):
            return self.lines[row][col]
        return " "

    def _node_at(self, row: int, col: int, side: str) -> Node | None:
        """The node a connector side at ``(row, col)`` touches, if any."""
        for node in self.nodes:
            if node.row != row + STEP[side][0]:
                continue
            if side in "UD" and node.start <= col < node.end:
                return node
            if side == "R" and node.start in (col + 1, col + 2):
                return node
            if side == "L" and node.end in (col, col - 1):
                return node
        return None

    def edges(self) -> set[Edge]:
        seen: set[tuple[int, int]] = set()
        edges: set[Edge] = set()
        for row, line in enumerate(self.lines):
            for col, char in enumerate(line):
                if char in SIDES and (row, col) not in seen:
                    edges |= self._trace(row, col, seen)
        return edges

    def _trace(self, row: int, col: int, seen: set[tuple[int, int]]) -> set[Edge]:
        """The edges of the connected line through ``(row, col)``."""
        sources: set[str] = set()
        targets: set[str] = set()
        todo = [(row, col)]
        seen.add((row, col))
        while todo:
            r, c = todo.pop()
            char = self._char(r, c)
            head = HEADS.get(char)
            if head is not None and (node := self._node_at(r, c, head)) is not None:
                targets |= node.names
            for side in SIDES[char]:
                nr, nc = r + STEP[side][0], c + STEP[side][1]
                if OPPOSITE[side] in SIDES.get(self._char(nr, nc), ""):
                    if (nr, nc) not in seen:
                        seen.add((nr, nc))
                        todo.append((nr, nc))
                elif (node := self._node_at(r, c, side)) is not None:
                    sources |= node.names
        return {(s, t) for s in sources - targets for t in targets}


def architecture(readme: str) -> str:
    """The first fenced block under ``## Architecture``."""
    section = readme.split("\n## Architecture\n", 1)[1]
    return section.split("```\n", 2)[1]


def roles_table(readme: str) -> dict[str, tuple[set[str], set[str]]]:
    """Role → (topics read, topics written), from the table after the diagram.

    Short names stand for ``tracebound.<name>``; parentheses are comments; ``—`` is none.
    """
    table: dict[str, tuple[set[str], set[str]]] = {}
    section = readme.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] in ("role", "---") or len(cells) < 3:
            continue
        table[cells[0]] = (_topic_cell(cells[1]), _topic_cell(cells[2]))
    return table


def _topic_cell(cell: str) -> set[str]:
    names: set[str] = set()
    for part in re.split(r",| or ", re.sub(r"\([^)]*\)", "", cell)):
        part = part.strip()
        if part in ("", "—"):
            continue
        names |= _expand(part) if part == ALL_BUT_DEAD_LETTERS else {f"tracebound.{part}"}
    return names
