"""Claims and cause hypotheses from ``query_prometheus`` series, worded by code.

Why worded from the item: every number and time of a series claim is one of the
facts the tool computed and wrote into the cited ref (``series_text``), so the
verifier finds each of them there. Which series become claims: first the
premises of the diagnosis rules that held (:mod:`diagnosis`), then the other
series that changed in the window, largest change first (a declared query's
before a swept one); a steady series is stated only when it is a premise. The
cause of each rule that held is a labelled hypothesis naming its rule, listed
before any runbook hypothesis.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.executor import diagnosis
from services.executor.diagnosis import Series
from services.executor.tools.promql import catalogue
from services.executor.tools.promql_alert import ALERT_ID
from services.executor.tools.promql_sweep import SWEEP_ID
from services.executor.tools.series_text import hour_told, series_scope

# series stated after every other evidence unless a rule rests on them: a swept metric
# (the catalogue is what is known to matter) and the alert's own expression (its value
# is already the alert's)
LATE = (SWEEP_ID, ALERT_ID)


@dataclass(frozen=True, slots=True)
class SeriesRef:
    """A cited series: the invocation and path its claim binds to, and its ref text."""

    binding: dict[str, Any]
    series: Series


def wording(item: Mapping[str, Any], lang: str, t: Mapping[str, Any]) -> str:
    """The claim for one series item in ``lang`` with the templates ``t`` (``series``)."""
    f: Mapping[str, Any] = item["facts"]
    names = {
        "what": item["what"],
        "query": item["query"],
        "labels": series_scope(item.get("labels") or {}),
    }
    subject = t["subject"][lang].format(**names)
    values = {k: ("-" if v is None else v) for k, v in f.items() if k != "values"}
    for key in ("began_before", "seen_before"):  # "38 min before the alert's onset"
        values[key] = f", {f[key]}" if f.get(key) else ""
    direction = t["directions"].get(str(f.get("direction")))
    if direction:
        values["direction"] = direction[lang]
    values["began"] = t["began"][lang].format(**values) if f.get("change_began") else ""
    values["trend"] = _trend(f, lang, t)
    values["ratio"] = t["ratio"][lang].format(ratio=f["ratio"]) if f.get("ratio") else ""
    shared = {k: f.get(k) for k in ("limit", "limit_what", "share")}
    values["of_limit"] = str(t["of_limit"][lang]).format(**shared) if f.get("share") else ""
    if item.get("unit") == "presence":
        key = "appeared" if f.get("first_seen") else "present"
    elif f.get("direction") == "steady":
        key = "steady"
    elif f.get("at_onset") is not None and f.get("hour_before") is not None:
        key = "changed" if hour_told(f) else "changed_earlier"
    else:
        key = "changed_short" if f.get("change_began") else "steady"
    return str(t[key][lang]).format(subject=subject, **names, **values)


_SLOT = re.compile(r"\{(\w+)\|([^{}]*)\}")
# a longer name gives the slot's own words: a name cut short is a token no claim holds
_SLOT_CHARS = 120


def _filled(cause: str, premises: Sequence[Series]) -> str:
    """``{label|otherwise}`` in a cause: the label's value on the first premise that has it;
    ``{what|otherwise}``: what the first premise's series is (a swept one: its metric)."""

    def value(m: re.Match[str]) -> str:
        if m[1] == "what":
            found = str(premises[0].item.get("what") or "") if premises else ""
        else:
            # a label of a premise; a dependency's own series name it on the item
            found = next((v for s in premises if (v := s.labels.get(m[1]) or s.item.get(m[1]))), "")
        text = str(found)
        return text if 0 < len(text) <= _SLOT_CHARS else m[2]

    return _SLOT.sub(value, cause)


def _trend(f: Mapping[str, Any], lang: str, t: Mapping[str, Any]) -> str:
    """``; growing 16 MiB/min in the last 30m`` and when the level would run out, or nothing."""
    if not f.get("trend"):
        return ""
    word = t["trends"][str(f["trend"])][lang]
    text = str(t["trend"][lang]).format(trend=word, per_minute=f["per_minute"])
    if f.get("empty_in"):
        text += str(t["empty"][lang]).format(empty_in=f["empty_in"])
    return text


def _changed(s: Series) -> bool:
    facts = s.item.get("facts", {})
    return facts.get("direction") != "steady" or bool(facts.get("first_seen"))


def _size(s: Series) -> float:
    before, after = s.value("hour_before"), s.value("at_onset")
    if before is None or after is None:
        return 0.0
    return abs(after - before) / max(abs(before), abs(after), 1e-9)


@dataclass(frozen=True, slots=True)
class Diagnosed:
    """Series refs in the order their claims go, and the cause hypotheses."""

    refs: tuple[SeriesRef, ...]
    causes: tuple[tuple[str, str], ...]  # (rule id, cause text)
    premises: int = 0  # how many of ``refs`` (the first) are premises of a rule that held
    late: int = 0  # how many of ``refs`` (the last) are swept or the alert's expression


def diagnose(refs: Sequence[SeriesRef], lang: str) -> Diagnosed:
    """Premises of the rules that held first, then the other changed series."""
    by_key = {r.series.key: r for r in refs}
    findings = diagnosis.evaluate([r.series for r in refs])
    ordered: list[SeriesRef] = []
    causes: list[tuple[str, str]] = []
    for finding in findings:
        cause = finding.rule.cause["zh" if lang == "zh" else "en"]
        causes.append((finding.rule.id, _filled(cause, finding.premises)))
        for s in finding.premises:
            if by_key[s.key] not in ordered:
                ordered.append(by_key[s.key])
    premises = len(ordered)
    book = catalogue()
    ordered.extend(
        r
        for r in refs
        if r not in ordered and (q := book.queries.get(r.series.query)) is not None and q.always
    )
    rest = sorted(
        (r for r in refs if _changed(r.series)),
        key=lambda r: (r.series.query in LATE, -_size(r.series)),
    )
    ordered.extend(r for r in rest if r not in ordered)
    late = sum(1 for r in ordered[premises:] if r.series.query in LATE)
    return Diagnosed(tuple(ordered), tuple(causes), premises, late)
