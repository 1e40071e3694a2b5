"""How a measured quantity is written in evidence: plain digits and the unit a person reads.

Why one place: a series' facts, an alert's value and the claims worded from
them must print a quantity the same way, or the verifier would compare
``536870912`` with ``512 MiB``. Bytes print in binary units, ratios as percents,
seconds as ``s`` or ``ms``; no number is ever printed in scientific notation.
The digits and binary units are :mod:`tracebound.alert_printing`', which prints
an alert's own figures; a series' facts keep three significant digits.
"""

from __future__ import annotations

from collections.abc import Callable

from tracebound import alert_printing as figures


def plain(value: float) -> str:
    """About three significant digits, no exponent: ``0.00123``, ``12.3``, ``4``."""
    return figures.plain(value, 3)


def seconds(value: float) -> str:
    """``0.35`` → ``350ms``, ``1.5`` → ``1.5s``."""
    return f"{plain(value * 1000)}ms" if value != 0 and abs(value) < 1 else f"{plain(value)}s"


_FORMATS: dict[str, Callable[[float], str]] = {
    "bytes": figures.binary_bytes,
    "bytes/s": lambda v: f"{figures.binary_bytes(v)}/s",
    "ratio": lambda v: f"{plain(v * 100)}%",
    "seconds": seconds,
    "/s": lambda v: f"{plain(v)}/s",
    "cores": lambda v: f"{plain(v)} cores",
    "messages": lambda v: f"{plain(v)} messages",
}


def format_quantity(value: float, unit: str) -> str:
    """``value`` in ``unit`` (a catalogue unit) as evidence text prints it."""
    return _FORMATS.get(unit, plain)(value)
