"""Skill files: they validate with the tools' parameter models; their triggers route questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.executor.tools import PARAMS_MODELS
from services.planner import skills as skills_module
from services.planner.routing import score
from services.planner.skills import catalogue_text, load_skills
from tracebound.errors import ConfigError

REQUIRED = {
    "diagnose-high-cpu",
    "diagnose-high-memory",
    "diagnose-slow-response",
    "diagnose-mysql-connection-pool",
    "diagnose-redis-timeout",
    "diagnose-high-disk-usage",
    "investigate-alert",
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
        assert skill.triggers.keywords or skill.fallback
        for tool, params in skill.render_params("payment-service"):
            PARAMS_MODELS[tool].model_validate(params)
            assert all("{" not in str(v) for v in params.values())


def test_skill_keywords_include_chinese() -> None:
    for skill in (s for s in load_skills() if not s.fallback):
        assert any(not k.isascii() for k in skill.triggers.keywords), skill.name


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
    assert score(skill, "这是演示").hits == ("keyword 演示",)


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
        ("query_logs", '{ query = "x", window_minutes = "{service}" }', "window_minutes"),
        ("query_logs", '{ query = "{alert_window}" }', "placeholder"),
        ("query_logs", '{ query = "x" }\nneeds = ["{region}"]', "needs may only name"),
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


def test_alert_placeholders_fill_from_the_alert() -> None:
    by_name = {s.name: s for s in load_skills()}
    logs = by_name["investigate-alert"].steps[1]
    filled = logs.fill({"{service}": "checkout", "{alert_name}": "X", "{alert_window}": 42})
    assert filled["query"] == "checkout" and filled["window_minutes"] == 42
    assert "window_minutes" not in logs.fill({"{service}": "checkout"})
