"""``tracebound doctor`` run as a process against server configurations of real servers.

The acceptance of the start-up check work: against a vLLM started without a
tool parser and an o-series model refusing ``temperature`` the doctor prints
the cause and the fix and exits 1; against a healthy server it exits 0.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_servers import server_like
from tracebound.cli import main

MODEL = "served-model"


def doctor(server: FakeOpenAI, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACEBOUND_LLM_")}
    env.update(settings)
    env.update(
        TRACEBOUND_LLM_BASE_URL=server.base_url,
        TRACEBOUND_LLM_MODEL=MODEL,
        TRACEBOUND_LLM_API_KEY="sk-doctor-secret",
        TRACEBOUND_LLM_TIMEOUT_S="10",
    )
    return run_cli("doctor", *args, env=env, timeout_s=600)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    with server_like(request.param, models=(MODEL,)) as fake:
        yield fake


@pytest.mark.slow
@pytest.mark.parametrize("server", ["healthy"], indirect=True)
def test_doctor_exits_0_against_a_healthy_server(server: FakeOpenAI) -> None:
    done = doctor(server)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ready for llm mode" in done.stdout
    assert "FAIL" not in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("server", ["no-tool-parser"], indirect=True)
def test_doctor_names_the_vllm_flags_when_no_tool_parser_runs(server: FakeOpenAI) -> None:
    done = doctor(server)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "tool_calling" in line)
    assert line.lstrip().startswith("FAIL")
    assert "vLLM was started without automatic tool choice" in line
    assert "fix: vLLM: start with --enable-auto-tool-choice --tool-call-parser" in done.stdout
    assert "NOT ready for llm mode" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("server", ["temperature-rejected"], indirect=True)
def test_doctor_says_to_send_no_temperature_to_an_o_series_model(server: FakeOpenAI) -> None:
    done = doctor(server, "--json", TRACEBOUND_LLM_TEMPERATURE="0")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    failed = {c["name"]: c for c in report["checks"] if c["status"] == "fail"}
    assert list(failed) == ["temperature", "max_tokens"]
    assert "MAX_TOKENS_FIELD=max_completion_tokens" in failed["max_tokens"]["fix"]
    assert "does not accept the temperature parameter" in failed["temperature"]["detail"]
    assert "TRACEBOUND_LLM_TEMPERATURE=none" in failed["temperature"]["fix"]
    assert "sk-doctor-secret" not in done.stdout + done.stderr


@pytest.mark.parametrize("server", ["tool-call-in-content"], indirect=True)
def test_doctor_in_process_prints_the_parser_fix(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [k for k in os.environ if k.startswith("TRACEBOUND_LLM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TRACEBOUND_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("TRACEBOUND_LLM_MODEL", MODEL)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  tool_calling" in out
    assert "fix: the server's tool parser is not firing" in out and "--jinja" in out


def test_doctor_without_an_endpoint_says_which_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [k for k in os.environ if k.startswith("TRACEBOUND_LLM_")]:
        monkeypatch.delenv(name)
    assert main(["doctor"]) == 1
    assert "set TRACEBOUND_LLM_BASE_URL" in capsys.readouterr().out
