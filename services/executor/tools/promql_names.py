"""Which metric names a catalogue query selects, and whether a scope exports any of them.

Why: a call holds about seventy templates, one per naming convention family, and a
service exports a few of them. Running each template (and each of its scope
alternatives) to learn that it matches nothing costs a range query apiece. Under
load those empty queries used up the call's time budget before the queries that
matched, or the sweep, could run. One listing of the metric names under a scope
(Prometheus's label-values API, index only) answers the same question for every
template at once.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from services.executor.tools.base import ToolBackendError
from services.executor.tools.httpjson import get_json
from services.executor.tools.series_items import Span

# the metric names listed under each selector in one call (None: the listing failed)
Listings = dict[str, frozenset[str] | None]

# ``name{`` of a selector, and the pattern of ``{__name__=~"…"}``
_SELECTED_NAME = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
_NAME_REGEX = re.compile(r"__name__\s*=~\s*\"((?:[^\"\\]|\\.)*)\"")


@dataclass(frozen=True, slots=True)
class Selects:
    """The metric names a query selects by name, and the name patterns it selects by."""

    names: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]

    def any_of(self, available: Collection[str]) -> bool:
        """Whether one of ``available`` is a name this query selects.

        A query whose selectors name nothing (none here, but a template may) is
        assumed to select something: it is run, not skipped.
        """
        if not self.names and not self.patterns:
            return True
        if not self.names.isdisjoint(available):
            return True
        return any(p.fullmatch(name) for p in self.patterns for name in available)


@lru_cache(maxsize=512)
def selects(promql: str) -> Selects:
    """What ``promql`` selects (a PromQL string escape ``\\\\`` read as ``\\``)."""
    patterns = tuple(re.compile(raw.replace("\\\\", "\\")) for raw in _NAME_REGEX.findall(promql))
    return Selects(frozenset(_SELECTED_NAME.findall(promql)), patterns)


def listing_params(selector: str, start: float, end: float) -> dict[str, str]:
    """The parameters of ``/api/v1/label/__name__/values`` for the names under ``selector``
    with a sample in ``[start, end]`` (a version's series that ended is still listed)."""
    return {"match[]": f"{{{selector}}}", "start": f"{start:.3f}", "end": f"{end:.3f}"}


def listing(url: str, selector: str, span: Span, timeout_s: float) -> frozenset[str] | None:
    """The metric names with a sample under ``selector`` in the window; None when the
    listing failed (then every query is run, as without it)."""
    return label_values(url, "__name__", selector, span, timeout_s)


def label_values(
    url: str, label: str, selector: str, span: Span, timeout_s: float
) -> frozenset[str] | None:
    """The values of ``label`` on series with a sample under ``selector`` in the window;
    None when the listing failed."""
    params = listing_params(selector, span[0].timestamp(), span[1].timestamp())
    try:
        body = get_json("prometheus", f"{url}/api/v1/label/{label}/values", params, timeout_s)
    except ToolBackendError:
        return None
    data = body.get("data")
    return frozenset(n for n in data if isinstance(n, str)) if isinstance(data, list) else None
