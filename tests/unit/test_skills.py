"""Skill files: they validate with the tools' parameter models; their triggers route questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.executor.tools import PARAMS_MODELS
from services.planner import skills as skills_module
from services.planner.skills import catalogue_text, load_skills, select_skill
from tracebound.errors import ConfigError

REQUIRED = {
    "diagnose-high-cpu",
    "diagnose-high-memory",
    "diagnose-slow-response",
    "diagnose-mysql-connection-pool",
    "diagnose-redis-timeout",
}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    skills_module.clear_cache()
    yield
    skills_module.clear_cache()


def test_required_skills_exist_and_validate() -> None:
    loaded = load_skills()
    assert {s.name for s in loaded} >= REQUIRED
    for skill in loaded:
        assert skill.version.startswith(skill.name)
        assert skill.resource == f"prompts/skills/{skill.name}.md"
        assert skill.body.strip()
        assert skill.triggers.keywords
        for tool, params in skill.render_params("payment-service"):
            PARAMS_MODELS[tool].model_validate(params)
            assert all("{" not in str(v) for v in params.values())


def test_skill_keywords_include_chinese() -> None:
    for skill in load_skills():
        assert any(not k.isascii() for k in skill.triggers.keywords), skill.name


@pytest.mark.parametrize(
    ("question", "alerts", "expected"),
    [
        ("payment-service 当前是否有 HighCPUUsage 告警？", (), "diagnose-high-cpu"),
        ("inventory-service 是否有 HikariCP 连接池耗尽日志", (), "diagnose-mysql-connection-pool"),
        ("order-service 内存使用率为什么这么高", (), "diagnose-high-memory"),
        ("user-service 接口响应慢，P99 很高", (), "diagnose-slow-response"),
        ("payment-service 有没有 Redis 超时", (), "diagnose-redis-timeout"),
        ("", ("SlowResponse",), "diagnose-slow-response"),
        ("cpu and memory look odd", ("HighMemoryUsage",), "diagnose-high-memory"),
    ],
)
def test_triggers_route_questions(question: str, alerts: tuple[str, ...], expected: str) -> None:
    skill, score = select_skill(load_skills(), question, alerts)
    assert skill is not None and skill.name == expected
    assert score > 0


def test_alert_hits_outweigh_keywords() -> None:
    by_name = {s.name: s for s in load_skills()}
    cpu = by_name["diagnose-high-cpu"]
    assert cpu.matches("", ["highcpuusage"]) > cpu.matches("cpu 使用率 cpu usage 负载", [])
    assert cpu.matches("CPU使用率", []) > 0  # whitespace and case do not matter


def test_nothing_matches_gives_none() -> None:
    assert select_skill(load_skills(), "what time is it", ()) == (None, 0)


def test_render_without_service_drops_the_placeholder() -> None:
    by_name = {s.name: s for s in load_skills()}
    steps = by_name["diagnose-mysql-connection-pool"].render_params(None)
    tool, params = steps[0]
    assert tool == "query_logs"
    assert "service" not in params
    assert params["query"] == "HikariCP"
    with_service = by_name["diagnose-mysql-connection-pool"].render_params("inventory-service")
    assert with_service[0][1]["query"] == "inventory-service HikariCP"
    assert with_service[0][1]["service"] == "inventory-service"


def test_catalogue_text_is_json_lines() -> None:
    lines = catalogue_text(load_skills()).splitlines()
    assert len(lines) == len(load_skills())
    assert {json.loads(line)["name"] for line in lines} >= REQUIRED


SKILL = """+++
name = "demo-skill"
version = "demo-skill-v1"
description = "demo"
[triggers]
alerts = ["DemoAlert"]
keywords = ["演示"]
[[steps]]
tool = "{tool}"
params = {params}
purpose = "p"
+++
body
"""


def load_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, params: str) -> None:
    folder = tmp_path / "skills"
    folder.mkdir()
    (folder / "demo-skill.md").write_text(
        SKILL.replace("{tool}", tool).replace("{params}", params), encoding="utf-8"
    )
    monkeypatch.setenv("TRACEBOUND_PROMPTS_DIR", str(tmp_path))
    load_skills()


def test_valid_custom_skill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_one(tmp_path, monkeypatch, "query_metrics", '{ alert_name = "DemoAlert" }')
    (skill,) = load_skills()
    assert skill.matches("这是演示", []) == 1


@pytest.mark.parametrize(
    ("tool", "params", "problem"),
    [
        ("query_prometheus", "{}", "tool"),
        ("query_logs", '{ log_topic = "application-logs" }', "query: Field required"),
        ("query_logs", '{ query = "{service}" }', "query: Field required"),
        ("query_logs", '{ query = "x", limit = 500 }', "limit"),
        ("query_metrics", '{ state = "resolved" }', "state"),
        ("query_metrics", '{ pod = "x" }', "pod: Extra inputs"),
        ("lookup_knowledge", '{ query = "x", top_k = 0 }', "top_k"),
        ("lookup_knowledge", '{ query = "{region} x" }', "placeholder"),
    ],
)
def test_bad_skill_file_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, params: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        load_one(tmp_path, monkeypatch, tool, params)
    assert "demo-skill.md" in str(info.value)


def test_bad_front_matter_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "skills"
    folder.mkdir()
    (folder / "broken.md").write_text("no front matter", encoding="utf-8")
    monkeypatch.setenv("TRACEBOUND_PROMPTS_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"broken\.md"):
        load_skills()
