"""The incident suite's splits for unit tests, sealed so no traceback shows the test split."""

from __future__ import annotations

from typing import Literal

from evals.incidents.model import Incident, load_split


class Sealed(list[Incident]):
    """Incidents whose repr tells only their number, so no traceback shows the test split."""

    def __repr__(self) -> str:
        return f"<{len(self)} incidents>"


def sealed(split: Literal["dev", "test"]) -> Sealed:
    return Sealed(load_split(split))


def by_id(incidents: list[Incident], ident: str) -> Incident:
    return next(i for i in incidents if i.id == ident)
