"""Prompt files: every one loads, renders with its documented variables, and audits by version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.planner.skills import load_skills
from tracebound import prompts
from tracebound.errors import ConfigError
from tracebound.prompts import load_prompt, load_prompts, prompt_audit

EXPECTED = {
    "chat_planner": "chat-planner-v4",
    "chat_executor": "chat-executor-v5",
    "chat_verifier": "chat-verifier-v5",
    "chat_verifier_small": "chat-verifier-small-v3",
    "chat_composer": "chat-composer-v2",
    "aiops_planner": "aiops-planner-v4",
}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    prompts.clear_cache()
    yield
    prompts.clear_cache()


def test_every_expected_prompt_exists_with_its_version() -> None:
    loaded = {p.name: p.version for p in load_prompts()}
    assert loaded == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_prompt_renders_with_its_documented_variables(name: str) -> None:
    prompt = load_prompt(name)
    assert prompt.variables, "a prompt documents the variables it needs"
    values = {var: f"<<{var.upper()}-VALUE>>" for var in prompt.variables}
    rendered = prompt.render(**values)
    for value in values.values():
        assert value in rendered
    assert "$." in rendered or name.endswith("planner")  # $$ escapes survive as literal $
    assert prompt.resource == f"prompts/{name.replace('_', '-')}.md"


def test_structured_values_render_as_json() -> None:
    prompt = load_prompt("chat-composer")
    rendered = prompt.render(
        query="q", language="zh", composer_input={"verdict": "PASS", "allowed_claims": []}
    )
    assert '"verdict": "PASS"' in rendered
    assert (
        load_prompt("chat-executor")
        .render(language="en", plan=["step"], scope="narrow", retry_context=None, example="{}")
        .count("null")
        >= 1
    )


def test_hyphen_and_underscore_names_are_the_same_prompt() -> None:
    assert load_prompt("chat-executor") is load_prompt("chat_executor")


def test_missing_value_names_prompt_and_key() -> None:
    prompt = load_prompt("chat-composer")
    with pytest.raises(ConfigError, match=r"chat_composer.*composer_input"):
        prompt.render(query="q", language="en")


def test_executor_prompt_states_the_contract() -> None:
    text = load_prompt("chat-executor").template.template
    for phrase in (
        "executor_evidence_v2",
        "VERBATIM",
        "diagnosis_summary",
        "user_facing_answer",
        "$$.no_evidence",
        "negative_observation",
        "do not widen",
        "untrusted data",
    ):
        assert phrase in text, phrase


def test_composer_prompt_names_the_safe_negative_wording() -> None:
    text = load_prompt("chat-composer").template.template
    assert "当前查询未检索到匹配证据" in text
    assert "the current query found no matching evidence" in text
    for forbidden in ("问题不存在", "已排除", "确认没有", "日志层面已排除", "ruled out"):
        assert forbidden in text


def test_audit_names_versions_and_resources_only() -> None:
    executor = load_prompt("chat-executor")
    skill = load_skills()[0]
    audit = prompt_audit([executor], [skill])
    assert audit.version == "chat-prompts-v1"
    names = [(ref.name, ref.version, ref.resource) for ref in audit.prompts]
    assert names[0] == ("chat_executor", "chat-executor-v5", "prompts/chat-executor.md")
    assert names[1][0] == skill.name and names[1][2].startswith("prompts/skills/")
    assert "VERBATIM" not in audit.model_dump_json()


def write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.md").write_text(text, encoding="utf-8")


GOOD = '+++\nname = "demo"\nversion = "demo-v2"\nvariables = ["query"]\n+++\n'
GOOD += "Ask: $query costs $$5\n"


def test_env_override_switches_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "demo", GOOD)
    monkeypatch.setenv("TRACEBOUND_PROMPTS_DIR", str(tmp_path))
    prompt = load_prompt("demo")
    assert prompt.version == "demo-v2"
    assert prompt.render(query="why") == "Ask: why costs $5\n"
    assert prompt.resource == (tmp_path / "demo.md").resolve().as_posix()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter\n", "missing '\\+\\+\\+'"),
        ('+++\nname = "demo"\nversion = "v"\n', "not closed"),
        ('+++\nname = "demo\n+++\nbody\n', "invalid TOML"),
        ('+++\nname = "demo"\n+++\nbody\n', "version"),
        ('+++\nname = "other"\nversion = "v"\n+++\nbody\n', "does not match the file name"),
        ('+++\nname = "demo"\nversion = "v"\n+++\ncosts $.5\n', "invalid placeholder"),
        ('+++\nname = "demo"\nversion = "v"\nvariables = []\n+++\n$query\n', "differ"),
    ],
)
def test_bad_files_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    write(tmp_path, "demo", text)
    monkeypatch.setenv("TRACEBOUND_PROMPTS_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=message) as info:
        load_prompt("demo")
    assert "demo.md" in str(info.value)


def test_unknown_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_PROMPTS_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="nope"):
        load_prompt("nope")
