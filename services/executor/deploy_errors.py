"""A new error that began right after a deploy: a log cause no signature names.

Why: a release that breaks something rarely logs words a signature knows ("unknown
time zone America/Chicago", a mapping's ``KeyError``). What an SRE sees is an error
message that was never logged before the deployment changed and is logged, again and
again, from a few minutes after it. So when the series show a deploy in the rule
window, the commonest error message that first appeared after it (within
``within_minutes``) and never before becomes a labelled, circumstantial cause,
quoting its first line. Its shape is that message with numbers and ids set aside.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.executor.diagnosis import Series, rulebook
from services.executor.log_lines import LEVEL_ORDER, Logged, shape

# what marks a deploy: a new version, generation, image or ReplicaSet
DEPLOY_QUERIES = ("versions", "deployment_generation", "images", "replicasets")
# a rollout takes a minute or two, and change points sit on a 15-30 s grid
_SLACK_S = 120.0
# lines at ERROR or a more severe level
_ERROR = LEVEL_ORDER["ERROR"]


class AfterDeploy(BaseModel):
    """The cause a new error after a deploy names (``{message}``: its first line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    category: str
    cause: dict[Literal["en", "zh"], str]
    within_minutes: float = Field(default=10.0, gt=0)
    # how many lines of the new message make it more than a one-off
    min_lines: int = Field(default=2, ge=1)


def deployed_at(series: Sequence[Series]) -> float | None:
    """When the latest deploy in the rule window happened (epoch seconds), if one did."""
    book = rulebook()
    moments: list[float] = []
    for s in series:
        if s.query not in DEPLOY_QUERIES or s.dependency or s.onset is None:
            continue
        rose = s.item.get("facts", {}).get("direction") == "rose"
        moment = s.value("change_began") if s.query == "deployment_generation" and rose else None
        moment = moment if moment is not None else s.value("first_seen")
        low, high = s.onset - book.lead_minutes * 60, s.onset + book.grace_minutes * 60
        if moment is not None and low <= moment <= high:
            moments.append(moment)
    return max(moments, default=None)


def new_error(lines: Sequence[Logged], deployed: float, entry: AfterDeploy) -> Logged | None:
    """Of ``lines``, the first line of the commonest error message first logged within
    ``entry.within_minutes`` after ``deployed`` and never before it."""
    groups: dict[str, list[Logged]] = defaultdict(list)
    for line in lines:
        groups[shape(line.message)].append(line)
    found: list[tuple[int, float, Logged]] = []
    for group in groups.values():
        errors = sum(1 for x in group if x.severity <= _ERROR)
        first = min(group, key=lambda x: x.at)
        if errors < entry.min_lines or first.at < deployed - _SLACK_S:
            continue
        if first.at <= deployed + entry.within_minutes * 60:
            found.append((-errors, first.at, first))
    return min(found, key=lambda x: x[:2])[2] if found else None
