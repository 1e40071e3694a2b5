"""Replay against the real broker and database: recorded runs, re-run three ways.

The pipeline runs as five processes and answers the demo questions; two
``EvidenceProduced`` with bad excerpts go through the real gatekeeper, so their
recorded result is a reject. Then, reading only those runs back from the topics:
a candidate rule set without the excerpt rule changes exactly the two bad runs,
a frozen-tools pipeline replay reproduces every recorded verdict — also after a
skill file was edited, because the plan's calls are read from the recorded
event — and a rules verifier replay changes nothing. Each report is also stored
in the eval tables.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from replay.store import load_report
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from tests.support import demo_evidence
from tests.support.evidence_events import evidence_event
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound.cli import main
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import EvidenceProduced, PlanProduced
from tracebound.prompts import PROMPTS_DIR, PromptSet

QUESTIONS = (
    ("payment-service 当前是否有 HighCPUUsage 告警？", "zh"),
    ("inventory-service 是否有 HikariCP 连接池耗尽日志？", "zh"),
    ("Are there HikariCP pool exhaustion logs for inventory-service?", "en"),
    ("Why is order-service using so much memory? Please analyse it.", "en"),
)
RULE = "evidence.excerpt_supported"
MEMORY_SKILL = "diagnose-high-memory"
EDITED_STEPS = """[[steps]]
tool = "lookup_knowledge"
params = { query = "edited memory runbook", top_k = 2 }
purpose = "An edited step no recorded run called."
+++
"""


def _bad_excerpt() -> EvidenceProduced:
    scenario = demo_evidence.scenarios()[0]
    output = copy.deepcopy(scenario.structured_output)
    output["claims"][0]["evidence_bindings"][0]["evidence_excerpt"] = "CPU usage is 12%, all fine"
    return evidence_event(output, scenario.tool_invocations)


@pytest.fixture(scope="module")
def recorded(stack: StackHandle, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    asked = [new_request(q, language=lang) for q, lang in QUESTIONS]
    bad = [_bad_excerpt(), _bad_excerpt()]
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path_factory.mktemp("services")):
        publish(stack.kafka, [*asked, *bad])
        wanted = {e.run_id for e in [*asked, *bad]}
        answers = reader.wait_for(wanted, timeout_s=180)
    reader.close()
    assert set(answers) == wanted
    return {
        "asked": [e.run_id for e in asked],
        "bad": [e.run_id for e in bad],
        "verdicts": {run_id: a.verdict for run_id, a in answers.items()},
    }


@pytest.fixture
def env(stack: StackHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS", stack.bootstrap)
    monkeypatch.setenv("TRACEBOUND_PG_DSN", stack.pg_dsn)


def _replay(tmp_path: Path, run_ids: list[str], *args: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    runs = [a for r in run_ids for a in ("--run", r)]
    assert main(["replay", *args, *runs, "--out", str(out)]) == 0
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _without_rule(tmp_path: Path) -> Path:
    rules = json.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    rules["rule_set_version"] = "candidate-no-excerpt"
    for rule in rules["rules"]:
        if rule["id"] == RULE:
            rule["enabled"] = False
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules), encoding="utf-8")
    return path


@pytest.mark.usefixtures("env")
def test_gatekeeper_replay_lists_exactly_the_runs_a_disabled_rule_decided(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    assert all(recorded["verdicts"][r] == "REJECT" for r in recorded["bad"])
    runs = recorded["asked"] + recorded["bad"]
    rules = _without_rule(tmp_path)
    report = _replay(tmp_path, runs, "--stage", "gatekeeper", "--rules", str(rules))
    summary = report["summary"]
    assert summary["without_recorded_result"] == 0
    assert summary["runs_changed"] == sorted(recorded["bad"])
    assert summary["rule_fires"][RULE] == {"old": 2, "new": 0}
    assert summary["severity_transitions"]["reject→none"] == 2
    stored = load_report(report["id"])
    assert stored["kind"] == "replay.gatekeeper"
    assert stored["summary"]["runs_changed"] == sorted(recorded["bad"])


@pytest.mark.usefixtures("env")
def test_gatekeeper_replay_in_one_process_gives_the_report_of_the_workers(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    runs = recorded["asked"] + recorded["bad"]
    rules = _without_rule(tmp_path)
    args = ("--stage", "gatekeeper", "--rules", str(rules), "--no-store")
    one = _replay(tmp_path, runs, *args, "--workers", "1")
    several = _replay(tmp_path, runs, *args, "--workers", "3")
    assert one["summary"]["runs_changed"] == sorted(recorded["bad"])
    assert several["summary"] == one["summary"]
    assert several["per_run"] == one["per_run"]


@pytest.mark.usefixtures("env")
def test_pipeline_replay_with_frozen_tools_reproduces_the_recorded_verdicts(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    report = _replay(tmp_path, recorded["asked"], "--stage", "pipeline", "--mode", "rules")
    summary = report["summary"]
    assert summary["runs"] == len(recorded["asked"])
    assert summary["verdict_changed"] == 0, report["per_run"]
    assert summary["unrecorded_tool_calls"] == 0
    assert summary["errors"] == 0
    for row in report["per_run"]:
        assert row["new"]["verdict"] == recorded["verdicts"][row["run_id"]]


@pytest.mark.usefixtures("env")
def test_verifier_replay_in_rules_mode_reports_no_changes(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    runs = recorded["asked"] + recorded["bad"]
    report = _replay(tmp_path, runs, "--stage", "verifier", "--mode", "rules")
    assert report["summary"]["inputs"] >= len(runs)
    assert report["summary"]["changed"] == 0, report["per_run"]
    assert report["summary"]["runs_changed"] == []


def _edited_prompts(tmp_path: Path) -> Path:
    """A copy of the prompts whose memory skill now plans one call nobody recorded."""
    folder = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, folder)
    path = folder / "skills" / f"{MEMORY_SKILL}.md"
    text = path.read_text(encoding="utf-8")
    head, _steps, tail = text.partition("[[steps]]")
    body = tail.partition("+++\n")[2]
    head = re.sub(r'version = "[^"]*"', f'version = "{MEMORY_SKILL}-edited"', head, count=1)
    path.write_text(head + EDITED_STEPS + body, encoding="utf-8")
    return folder


@pytest.mark.usefixtures("env")
def test_pipeline_replay_runs_the_recorded_plan_after_a_skill_file_changed(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    memory_q = next(q for q, _lang in QUESTIONS if "memory" in q)
    live = PlannerHandler(load_skills(PROMPTS_DIR))(new_request(memory_q))[0]
    edited = _edited_prompts(tmp_path)
    replanner = PlannerHandler(load_skills(edited), prompts=PromptSet(edited))
    replanned = replanner(new_request(memory_q))[0]
    assert isinstance(live, PlanProduced) and isinstance(replanned, PlanProduced)
    assert live.plan.execution and replanned.plan.execution
    assert replanned.plan.skill_version == f"{MEMORY_SKILL}-edited"
    assert replanned.plan.execution.calls != live.plan.execution.calls  # the edit matters

    report = _replay(
        tmp_path,
        recorded["asked"],
        "--stage",
        "pipeline",
        "--mode",
        "rules",
        "--prompt-version",
        str(edited),
    )
    summary = report["summary"]
    assert summary["runs"] == len(recorded["asked"])
    assert summary["errors"] == 0, report["per_run"]
    assert summary["unrecorded_tool_calls"] == 0, report["per_run"]
    assert summary["verdict_changed"] == 0, report["per_run"]
    for row in report["per_run"]:
        assert row["plan"] == "recorded"
        assert row["tool_calls_answered"] > 0
