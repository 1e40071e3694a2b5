"""``tracebound gatekeeper check FILE [--rules PATH]`` through the main CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from services.gatekeeper.ruleset import DEFAULT_RULES_PATH
from tests.support.demo_evidence import scenarios
from tracebound.cli import main


def request(name: str, **changes: Any) -> dict[str, Any]:
    s = next(s for s in scenarios() if s.name == name)
    s.structured_output.update(changes)
    return {
        "executor_structured_output": s.structured_output,
        "tool_invocations": s.tool_invocations,
    }


def write(tmp_path: Path, text: str, name: str = "input.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def results(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_single_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps(request("full-incident"), indent=2))
    assert main(["gatekeeper", "check", path]) == 0
    out, err = capsys.readouterr()
    [result] = results(out)
    assert (result["status"], result["severity"]) == ("pass", "none")
    assert result["rule_set_version"] == "gatekeeper-rules-v3"
    assert err == ""


def test_json_lines_keep_input_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        request("narrow-highcpu"),
        request("narrow-highcpu", answer_version="executor_evidence_v1"),
        request("narrow-hikari-negative", user_facing_answer="no inventory problem"),
    ]
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n\n", "in.jsonl")
    assert main(["gatekeeper", "check", path]) == 0
    out, _ = capsys.readouterr()
    assert [r["severity"] for r in results(out)] == ["none", "low_confid", "reject"]
    assert all("\n" not in line for line in out.splitlines())


def test_stdin_and_explicit_rules(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(request("order-service-pool"))))
    assert main(["gatekeeper", "check", "-", "--rules", str(DEFAULT_RULES_PATH)]) == 0
    [result] = results(capsys.readouterr().out)
    assert result["status"] == "pass"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"executor_structured_output": {', "not JSON"),
        ('{"executor_structured_output": null}', "tool_invocations"),
        ('{"tool_invocations": []}', "executor_structured_output"),
        ('{"executor_structured_output": null, "tool_invocations": {}}', "tool_invocations"),
        (
            '{"executor_structured_output": null, "tool_invocations": [{"id": "517", '
            '"tool_name": "query_metrics"}]}',
            "tool_invocations[0].id",
        ),
        (
            '{"executor_structured_output": [], "tool_invocations": []}',
            "executor_structured_output",
        ),
        ("[1, 2]", "expected a JSON object"),
        ('{"executor_structured_output": null, "tool_invocations": []}\nnot json\n', "line 2"),
        ("   \n", "empty input"),
    ],
)
def test_invalid_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    assert main(["gatekeeper", "check", write(tmp_path, text)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tracebound: invalid input: ")
    assert reason in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_nothing_printed_when_a_later_line_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps(request("narrow-highcpu"))
    bad = json.dumps({"executor_structured_output": None})
    assert main(["gatekeeper", "check", write(tmp_path, f"{good}\n{bad}\n")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "line 2" in err


def test_duplicate_invocation_ids_are_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = request("narrow-highcpu")
    doc["tool_invocations"].append(dict(doc["tool_invocations"][0]))
    assert main(["gatekeeper", "check", write(tmp_path, json.dumps(doc))]) == 2
    assert "more than once" in capsys.readouterr().err


def test_unreadable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gatekeeper", "check", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_bad_rules_file_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, json.dumps(request("narrow-highcpu")))
    rules = write(tmp_path, '{"rule_set_version": "x", "rules": []}', "rules.json")
    assert main(["gatekeeper", "check", path, "--rules", rules]) == 1
    err = capsys.readouterr().err
    assert "rules.json" in err
    assert err.count("\n") == 1
