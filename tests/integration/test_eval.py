"""The shipped demo suite against the real PostgreSQL demo stores: every case listed, all pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.evals import EVALS_DIR, load_suite
from replay.store import load_report
from tests.support.stack import StackHandle
from tracebound.cli import main


def test_the_demo_suite_passes_and_is_stored(
    stack: StackHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEBOUND_PG_DSN", stack.pg_dsn)
    suite = EVALS_DIR / "demo"
    out = tmp_path / "eval.json"
    assert main(["eval", "run", str(suite), "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    ids = {c.id for c in load_suite(suite)}
    assert {c["case_id"] for c in report["cases"]} == ids
    for case in report["cases"]:
        assert isinstance(case["passed"], bool) and case["reasons"]
        assert all({"check", "passed", "detail"} <= set(r) for r in case["reasons"])
    failed = {c["case_id"]: c["reasons"] for c in report["cases"] if not c["passed"]}
    assert not failed, failed
    stored = load_report(report["id"])
    assert stored["kind"] == "eval"
    assert {c["case_id"] for c in stored["cases"]} == ids
    assert all(c["passed"] for c in stored["cases"])
