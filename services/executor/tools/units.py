"""How a measured quantity is written in evidence: plain digits and the unit a person reads.

Why one place: a series' facts, an alert's value and the claims worded from
them must print a quantity the same way, or the verifier would compare
``536870912`` with ``512 MiB``. Bytes print in binary units, ratios as percents,
seconds as ``s`` or ``ms``; no number is ever printed in scientific notation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

_BINARY = (("TiB", 1024.0**4), ("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0))


def plain(value: float) -> str:
    """About three significant digits, no exponent: ``0.00123``, ``12.3``, ``4``."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    size = abs(value)
    if size >= 100 or value == int(value):
        return str(round(value))
    decimals = 1 if size >= 10 else 2 if size >= 1 else 2 - math.floor(math.log10(size))
    text = f"{value:.{min(decimals, 12)}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def binary_bytes(value: float) -> str:
    """``536870912`` → ``512 MiB``; below 1 KiB in bytes."""
    for name, size in _BINARY:
        if abs(value) >= size:
            return f"{plain(value / size)} {name}"
    return f"{plain(value)} B"


def seconds(value: float) -> str:
    """``0.35`` → ``350ms``, ``1.5`` → ``1.5s``."""
    return f"{plain(value * 1000)}ms" if value != 0 and abs(value) < 1 else f"{plain(value)}s"


_FORMATS: dict[str, Callable[[float], str]] = {
    "bytes": binary_bytes,
    "bytes/s": lambda v: f"{binary_bytes(v)}/s",
    "ratio": lambda v: f"{plain(v * 100)}%",
    "seconds": seconds,
    "/s": lambda v: f"{plain(v)}/s",
    "cores": lambda v: f"{plain(v)} cores",
    "messages": lambda v: f"{plain(v)} messages",
}


def format_quantity(value: float, unit: str) -> str:
    """``value`` in ``unit`` (a catalogue unit) as evidence text prints it."""
    return _FORMATS.get(unit, plain)(value)
