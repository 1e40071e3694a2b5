"""Per-call deadlines from the server's measured speed: slow but alive is not dead.

Why: one fixed timeout cannot fit every server. A CPU-served small model reads
a 3,000-token prompt in ten seconds or more and writes a few dozen tokens a
second, so a 30 s timeout calls it dead while it works; a fast GPU server would
hide a hang behind a generous one. So every reply teaches :class:`Pace` how fast
the server reads and writes (llama.cpp's ``timings``: ``prompt_per_second`` and
``predicted_per_second``; else the reply's tokens over its wall time, which
overstates both times and so errs long), and each call gets::

    deadline = SAFETY * (prompt_tokens / prompt_speed + max_tokens / gen_speed)

bounded below by ``timeout_s`` and above by ``timeout_ceiling_s``. Until a reply
has been measured, a call gets ``timeout_s``, doubled after each call that timed
out (up to the ceiling): a server too slow for the first deadline gets the time
to answer once, and that answer sets the pace. The
deadline used is logged at debug level, put on the model-call span, and named by
the error of a call that ran out of it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SAFETY = 2.0
MIN_SPEED = 0.5  # tokens/s; below this a measurement is noise, not a speed


@dataclass(frozen=True, slots=True)
class Speed:
    """Tokens per second the server read (prompt) and wrote (generation)."""

    prompt: float
    generation: float


def measured_speed(
    timings: Mapping[str, Any] | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    duration_ms: int,
) -> Speed | None:
    """The speed one reply shows: the server's own timings, else tokens over wall time."""
    if timings:
        read = timings.get("prompt_per_second")
        wrote = timings.get("predicted_per_second")
        if isinstance(read, (int, float)) and isinstance(wrote, (int, float)):
            speed = Speed(float(read), float(wrote))
            if min(speed.prompt, speed.generation) >= MIN_SPEED:
                return speed
    seconds = duration_ms / 1000
    if seconds <= 0 or not prompt_tokens or not completion_tokens:
        return None
    # The whole wall time charged to each part: both speeds err low, deadlines long.
    return Speed(
        max(prompt_tokens / seconds, MIN_SPEED), max(completion_tokens / seconds, MIN_SPEED)
    )


class Pace:
    """What one model's replies taught about its server's speed; the deadline of a call."""

    def __init__(self, timeout_s: float, ceiling_s: float) -> None:
        self.floor = timeout_s
        self.ceiling = max(ceiling_s, timeout_s)
        self._lock = threading.Lock()
        self._speed: Speed | None = None
        self._unmeasured = timeout_s  # the deadline until a reply is measured

    @property
    def speed(self) -> Speed | None:
        with self._lock:
            return self._speed

    def observe(self, speed: Speed | None) -> None:
        """Learn from one reply; the latest measurement wins (servers warm up and slow down)."""
        if speed is None:
            return
        with self._lock:
            self._speed = speed
            self._unmeasured = self.floor

    def timed_out(self, deadline: float) -> None:
        """A call ran out of ``deadline``: the next unmeasured call gets twice as long."""
        with self._lock:
            self._unmeasured = min(self.ceiling, max(self._unmeasured, deadline * 2))

    def deadline(self, prompt_tokens: int, max_tokens: int) -> float:
        """Seconds one call may take: from the measured speed, within floor and ceiling."""
        with self._lock:
            speed, unmeasured = self._speed, self._unmeasured
        if speed is None:
            return unmeasured
        needed = SAFETY * (prompt_tokens / speed.prompt + max_tokens / speed.generation)
        return round(min(self.ceiling, max(self.floor, needed)), 1)


__all__ = ["SAFETY", "Pace", "Speed", "measured_speed"]
