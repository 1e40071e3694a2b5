"""``tracebound verifier check FILE [--mode rules|llm]`` through the main CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import demo_evidence as demo
from tests.support.gate import gate
from tracebound.cli import main


def request(name: str, **changes: Any) -> dict[str, Any]:
    s = next(s for s in demo.scenarios() if s.name == name)
    s.structured_output.update(changes)
    checked = gate(s.structured_output, s.tool_invocations)
    return {
        "original_query": f"question about {name}",
        "executor_final_answer": "",
        "executor_structured_output": checked.structured_output,
        "executor_output_parse_status": {"status": "valid", "detail": "parsed"},
        "tool_trace_summary": [],
        "gatekeeper_result": checked.result.model_dump(mode="json"),
        "retry_context": None,
    }


def write(tmp_path: Path, text: str, name: str = "input.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def outputs(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_single_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps(request("narrow-highcpu"), indent=2))
    assert main(["verifier", "check", path]) == 0
    out, err = capsys.readouterr()
    [result] = outputs(out)
    assert result["verdict"] == "PASS"
    assert result["groundedness_score"] == 1.0
    assert result["critical_fact_count"] == 3
    assert result["claim_checks"][0]["raw_paths"] == ["$.alerts[0]"]
    assert result["composer_input"]["allowed_claims"][0]["claim_id"] == "claim-1"
    assert result["rationale"] and err == ""


def test_json_lines_keep_input_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        request("narrow-highcpu"),
        request("narrow-highcpu", answer_version="executor_evidence_v1"),
        request("narrow-hikari-negative", user_facing_answer="no inventory problem"),
        request("narrow-hikari-negative"),
    ]
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n\n", "in.jsonl")
    assert main(["verifier", "check", path]) == 0
    out, _ = capsys.readouterr()
    assert [r["verdict"] for r in outputs(out)] == ["PASS", "LOW_CONFID", "REJECT", "PASS"]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(request("full-incident"))))
    assert main(["verifier", "check", "-"]) == 0
    assert outputs(capsys.readouterr().out)[0]["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ("", "empty input"),
        (json.dumps({"original_query": "q"}), "executor_structured_output"),
    ],
)
def test_invalid_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    assert main(["verifier", "check", write(tmp_path, text)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_invalid_later_line_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps(request("narrow-highcpu"))
    bad = dict(request("narrow-highcpu"))
    bad["gatekeeper_result"] = {**bad["gatekeeper_result"], "severity": "maybe"}
    path = write(tmp_path, f"{good}\n{json.dumps(bad)}\n", "in.jsonl")
    assert main(["verifier", "check", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "line 2" in err and "severity" in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verifier", "check", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_llm_mode_needs_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TRACEBOUND_LLM_BASE_URL", raising=False)
    path = write(tmp_path, json.dumps(request("narrow-highcpu")))
    assert main(["verifier", "check", path, "--mode", "llm"]) == 2
    assert "TRACEBOUND_LLM_BASE_URL" in capsys.readouterr().err


def test_aiops_mode_adds_rule_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = request("narrow-highcpu")
    data["mode"] = "AIOPS"
    data["alerts"] = [{"labels": {"alertname": "HighCPUUsage", "service": "payment-service"}}]
    data["tool_trace_summary"] = [{"source_invocation_id": 517, "tool_name": "query_metrics"}]
    assert main(["verifier", "check", write(tmp_path, json.dumps(data))]) == 0
    [result] = outputs(capsys.readouterr().out)
    assert result["aiops_rule_evaluation"]["passed"] is True
