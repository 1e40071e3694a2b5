"""``tracebound composer guard FILE`` through the main CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import demo_evidence as demo
from tracebound.cli import main

CPU_TEXT = "payment-service has a firing HighCPUUsage alert at 92% CPU."
NEGATIVE = {
    "claim_id": "claim-neg",
    "claim_type": "negative_observation",
    "claim_text": demo.NEGATIVE_TEXT,
    "evidence_excerpts": [demo.NO_EVIDENCE_TEXT],
}


def write(tmp_path: Path, text: str, name: str = "input.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def results(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_single_json_object_with_string_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {"allowed_claims": [CPU_TEXT], "answer": f"Verified: {CPU_TEXT}"}
    assert main(["composer", "guard", write(tmp_path, json.dumps(data, indent=2))]) == 0
    out, err = capsys.readouterr()
    assert results(out) == [{"ok": True, "violations": []}]
    assert err == ""


def test_json_lines_keep_input_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        {"allowed_claims": [NEGATIVE], "answer": "inventory-service: the problem does not exist."},
        {"allowed_claims": [CPU_TEXT], "answer": "payment-service CPU is at 92 %."},
        {"allowed_claims": [CPU_TEXT], "answer": "order-service CPU is at 97%."},
        {
            "allowed_claims": [NEGATIVE],
            "answer": "The current query found no matching evidence for HikariCP pool "
            "exhaustion logs for inventory-service.",
        },
    ]
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n", "in.jsonl")
    assert main(["composer", "guard", path]) == 0
    out = results(capsys.readouterr().out)
    assert [r["ok"] for r in out] == [False, True, False, True]
    assert any("over-claim" in v for v in out[0]["violations"])
    assert {
        "number 97% is in no allowed claim",
        "service order-service is in no allowed claim",
    } <= (set(out[2]["violations"]))


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"allowed_claims": [CPU_TEXT], "answer": "已排除 payment-service 的问题。"}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(data, ensure_ascii=False)))
    assert main(["composer", "guard", "-"]) == 0
    [result] = results(capsys.readouterr().out)
    assert result["ok"] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{oops", "not JSON"),
        ('"just a string"', "expected a JSON object"),
        (json.dumps({"answer": "x"}), "allowed_claims"),
        (json.dumps({"allowed_claims": [{"claim_type": "observation"}], "answer": "x"}), "claim"),
        (json.dumps({"allowed_claims": [], "answer": 3}), "answer"),
        ('{"allowed_claims": [], "answer": "x"}\n{bad', "line 2"),
    ],
)
def test_invalid_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    assert main(["composer", "guard", write(tmp_path, text)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_hypotheses_and_alerts_license_their_causes_and_facts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cause = "Possible cause from the runbook, not verified here: load due to a batch job"
    alert = {
        "status": "firing",
        "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
        "annotations": {"value": "95", "unit": "%"},
    }
    answer = f"- HighCPUUsage on payment-service: value 95%\n{CPU_TEXT}\n- {cause}"
    bare = {"allowed_claims": [CPU_TEXT], "answer": answer}
    full = {**bare, "allowed_hypotheses": [cause], "alerts": [alert]}
    lines = "\n".join(json.dumps(d) for d in (bare, full))
    assert main(["composer", "guard", write(tmp_path, lines, "in.jsonl")]) == 0
    first, second = results(capsys.readouterr()[0])
    assert not first["ok"] and any("95%" in v for v in first["violations"])
    assert any("causal link" in v for v in first["violations"])
    assert second == {"ok": True, "violations": []}
