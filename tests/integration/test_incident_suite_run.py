"""One dev incident of the suite, end to end on the real components.

``bench/incidents.py`` backfills the incident's two hours of metrics into Debian's
Prometheus, serves its live values from an exporter so its alerting rule fires,
routes the alert through Alertmanager to a real ingest, puts its log lines in
VictoriaLogs, and runs the five roles with the Prometheus and VictoriaLogs
backends. The run must be answered within the bound, printed as a scored row (its
facts counted) and state nothing the incident's key marks false.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.incident_scores import table
from bench.incidents import Suite
from evals.incidents.model import load_split
from tests.support.stack import StackHandle

ANSWER_TIMEOUT_S = 240.0


def test_one_dev_incident_is_answered_and_scored(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    incident = min(load_split("dev"), key=lambda i: i.id)
    suite = Suite([incident], tmp_path / "suite", mode="rules", timeout_s=ANSWER_TIMEOUT_S)
    [row] = suite.run(stack)
    for line in table(suite.rows):
        print(line)
    printed = capsys.readouterr().out
    with capsys.disabled():
        print(f"\n{printed}wall time {suite.wall_s:.0f}s")
    assert row.answered, f"{incident.id} was not answered"
    assert row.facts_total == len(incident.key.facts)
    assert re.search(
        rf"^{re.escape(incident.id)}\s.*\s{len(row.facts_found)}/{row.facts_total}\s",
        printed,
        re.MULTILINE,
    ), printed
    assert row.false_statements == [], f"false statements: {row.false_statements}\n{row.answer}"
