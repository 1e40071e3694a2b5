"""OpenMetrics text for ``promtool tsdb create-blocks-from openmetrics``: two hours of
one sample a minute, ending at a given moment, written the same way by every test."""

from __future__ import annotations

from collections.abc import Callable, Mapping

# the sampled minutes, relative to the end: two hours and the end itself
MINUTES = range(-120, 1)


def _number(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def family(name: str, kind: str, series: Mapping[str, Callable[[int], float]], end: float) -> str:
    """One metric family: its TYPE line, then for each labels text (``a="1",b="2"``) its
    value at every minute of :data:`MINUTES`; a counter's samples are ``<name>_total``."""
    sample = f"{name}_total" if kind == "counter" else name
    lines = [f"# TYPE {name} {kind}"]
    lines += [
        f"{sample}{{{labels}}} {_number(value(m))} {end + m * 60:.0f}"
        for labels, value in series.items()
        for m in MINUTES
    ]
    return "\n".join(lines)


def document(*families: str) -> str:
    """The families as one OpenMetrics document, ``# EOF`` last."""
    return "\n".join(families) + "\n# EOF\n"
