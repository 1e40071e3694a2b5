"""Small pictures drawn as inline SVG by the server: no script, no library, no request.

Each function takes plain numbers and returns one ``<svg>`` element sized by its
``viewBox`` (it scales with the page). Colours come from the fixed
:data:`VERDICT_COLOURS` table and every text (labels, hover titles) goes through
:func:`web.html.esc`, so nothing from an event can become markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from web.html import esc, join, ms_text

VERDICT_COLOURS = (
    ("PASS", "#2f9e55"),
    ("LOW_CONFID", "#e0a100"),
    ("REJECT", "#d64545"),
    ("none", "#9aa5b4"),
)
WIDTH, HEIGHT, PAD = 560, 180, 28
BAR = "#5b7fbf"
MARKS = {50: "#1d2330", 95: "#8a5a00", 99: "#9b1c1c"}


def _svg(label: str, height: int, body: str) -> str:
    return (
        f"<svg class='chart' role='img' aria-label='{esc(label)}' viewBox='0 0 {WIDTH} {height}'"
        f" xmlns='http://www.w3.org/2000/svg'><title>{esc(label)}</title>{body}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", colour: str = "#556") -> str:
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='11' fill='{colour}'"
        f" text-anchor='{anchor}'>{esc(text)}</text>"
    )


def _rect(x: float, y: float, w: float, h: float, *, fill: str, title: str) -> str:
    return (
        f"<rect x='{x:.1f}' y='{y:.1f}' width='{max(w, 0):.1f}' height='{max(h, 0):.1f}'"
        f" fill='{fill}'><title>{esc(title)}</title></rect>"
    )


def _axis(y: float) -> str:
    return f"<line x1='{PAD}' y1='{y}' x2='{WIDTH - 4}' y2='{y}' stroke='#cfd6df'/>"


def _stamp(moment: datetime, width: timedelta) -> str:
    return moment.strftime("%m-%d %H:%M" if width < timedelta(days=1) else "%Y-%m-%d")


def empty(label: str) -> str:
    """The picture of nothing to draw, saying so."""
    return _svg(label, 40, _text(WIDTH / 2, 24, "no runs to draw", "middle"))


def verdict_bars(
    buckets: Sequence[tuple[datetime, dict[str, int]]], width: timedelta, label: str
) -> str:
    """Runs per time bucket, stacked by verdict (PASS at the bottom)."""
    if not buckets:
        return empty(label)
    top = max(sum(counts.values()) for _, counts in buckets) or 1
    base, room = HEIGHT - 22, HEIGHT - 40
    step = (WIDTH - PAD - 4) / len(buckets)
    parts = [_axis(base), _text(PAD - 4, 22, str(top), "end"), _text(PAD - 4, base, "0", "end")]
    for i, (start, counts) in enumerate(buckets):
        x, y = PAD + i * step, float(base)
        for verdict, colour in VERDICT_COLOURS:
            n = counts.get(verdict, 0)
            if n:
                h = n / top * room
                y -= h
                when = _stamp(start, width)
                parts.append(
                    _rect(x + 1, y, step - 2, h, fill=colour, title=f"{when} {verdict}: {n}")
                )
    parts.append(_text(PAD, HEIGHT - 6, _stamp(buckets[0][0], width)))
    parts.append(_text(WIDTH - 4, HEIGHT - 6, _stamp(buckets[-1][0] + width, width), "end"))
    return _svg(label, HEIGHT, join(parts))


def latency_histogram(
    latencies: Sequence[int], percentiles: dict[int, int], label: str, bins: int = 20
) -> str:
    """Answered runs by latency, with the percentiles marked as vertical lines."""
    if not latencies:
        return empty(label)
    hi = max(1, *latencies)
    size = hi / bins
    counts = [0] * bins
    for value in latencies:
        counts[min(bins - 1, int(value / size))] += 1
    top = max(counts)
    base, room = HEIGHT - 22, HEIGHT - 60
    step = (WIDTH - PAD - 4) / bins
    parts = [_axis(base), _text(PAD - 4, base - room + 4, str(top), "end")]
    for i, n in enumerate(counts):
        h = n / top * room
        span = f"{ms_text(i * size)} – {ms_text((i + 1) * size)}: {n} runs"
        parts.append(_rect(PAD + i * step + 1, base - h, step - 2, h, fill=BAR, title=span))
    for row, (pct, value) in enumerate(sorted(percentiles.items())):
        x = PAD + value / hi * (WIDTH - PAD - 4)
        colour = MARKS.get(pct, "#1d2330")
        y = 10 + row * 12  # one text line each, so close percentiles do not overlap
        parts.append(
            f"<line x1='{x:.1f}' y1='{y + 2}' x2='{x:.1f}' y2='{base}' stroke='{colour}'"
            " stroke-dasharray='4 3'/>"
        )
        anchor = "end" if x > WIDTH * 0.8 else "start"
        parts.append(
            _text(x + (-3 if anchor == "end" else 3), y, f"p{pct} {ms_text(value)}", anchor, colour)
        )
    parts.append(_text(PAD, HEIGHT - 6, "0"))
    parts.append(_text(WIDTH - 4, HEIGHT - 6, ms_text(hi), "end"))
    return _svg(label, HEIGHT, join(parts))


def share_bars(rows: Sequence[tuple[str, int, int]], label: str) -> str:
    """One horizontal bar per ``(name, count, out_of)``: the share as length and percent."""
    if not rows:
        return empty(label)
    line = 30
    height = line * len(rows) + 10
    left, right = 150, WIDTH - 130
    parts: list[str] = []
    for i, (name, count, out_of) in enumerate(rows):
        y = 8 + i * line
        share = count / out_of if out_of else 0.0  # a rate may pass 100%; its bar stops there
        parts.append(_text(left - 6, y + 14, name, "end", "#1d2330"))
        parts.append(
            _rect(left, y + 2, right - left, 16, fill="#eef1f5", title=f"{count}/{out_of}")
        )
        parts.append(
            _rect(
                left,
                y + 2,
                (right - left) * min(share, 1.0),
                16,
                fill=BAR,
                title=f"{name}: {count}",
            )
        )
        parts.append(_text(right + 6, y + 14, f"{share:.1%} ({count}/{out_of})"))
    return _svg(label, height, join(parts))


def stage_bars(stages: Sequence[tuple[str, float, int]], label: str) -> str:
    """Mean time per pipeline stage as horizontal bars, longest scaled to the full width."""
    if not stages:
        return empty(label)
    top = max(mean for _, mean, _ in stages) or 1.0
    line = 24
    left, right = 110, WIDTH - 90
    parts: list[str] = []
    for i, (stage, mean, runs) in enumerate(stages):
        y = 6 + i * line
        parts.append(_text(left - 6, y + 13, stage, "end", "#1d2330"))
        width = (right - left) * mean / top
        parts.append(
            _rect(
                left, y + 2, width, 14, fill=BAR, title=f"{stage}: {ms_text(mean)} over {runs} runs"
            )
        )
        parts.append(_text(left + width + 6, y + 13, ms_text(mean)))
    return _svg(label, line * len(stages) + 10, join(parts))
