"""The model-endpoint probe against server configurations imitating real servers.

The real ``openai`` client talks HTTP to the local fake server; each
configuration reproduces a documented behaviour (vLLM without a tool parser, a
tool call left in ``content``, an o-series model refusing ``temperature``).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.support import fake_servers
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_servers import server_like
from tests.support.prometheus import free_port
from tracebound.llm import OpenAIChatModel
from tracebound.llm.probe import STARTUP_SKIPS, EndpointProbe, probe_endpoint, safe_target
from tracebound.llm.probe_report import Check, ProbeReport
from tracebound.llm.settings import LLMSettings

MODEL = "qwen2.5-7b-instruct"


def settings_for(base_url: str, **overrides: object) -> LLMSettings:
    values: dict[str, object] = {
        "base_url": base_url,
        "api_key": "sk-probe-secret",
        "model": MODEL,
        "timeout_s": 5,
        "max_retries": 0,
    }
    values.update(overrides)
    return LLMSettings.model_validate(values)


@pytest.fixture
def served() -> Iterator[dict[str, FakeOpenAI]]:
    """One started server per configuration, torn down after the test."""
    started: dict[str, FakeOpenAI] = {}
    try:
        for name in fake_servers.SERVER_CONFIGURATIONS:
            started[name] = server_like(name, models=(MODEL, "other-model")).start()
        yield started
    finally:
        for server in started.values():
            server.stop()


def by_name(report: ProbeReport) -> dict[str, Check]:
    return {check.name: check for check in report.checks}


def probe(server: FakeOpenAI, **overrides: object) -> ProbeReport:
    return probe_endpoint(settings_for(server.base_url, **overrides))


def test_a_healthy_server_passes_every_check(served: dict[str, FakeOpenAI]) -> None:
    report = probe(served["healthy"])
    checks = by_name(report)
    assert report.ok, report
    assert [c.name for c in report.checks] == [
        "reachable",
        "model",
        "temperature",
        "max_tokens",
        "tool_calling",
        "json_mode",
        "json_schema",
        "context_window",
        "tokenizer",
    ]
    assert all(c.status == "ok" for c in report.checks), report
    assert "32768 tokens" in checks["context_window"].detail
    assert "counts no tokens" in checks["tokenizer"].detail


def test_vllm_without_tool_parser_names_both_flags(served: dict[str, FakeOpenAI]) -> None:
    report = probe(served["no-tool-parser"])
    tools = by_name(report)["tool_calling"]
    assert not report.ok and not report.down
    assert tools.status == "fail"
    assert "--enable-auto-tool-choice" in tools.detail  # the server's own words
    assert "--enable-auto-tool-choice --tool-call-parser" in tools.fix
    assert [c.name for c in report.failures] == ["tool_calling"]


def test_a_tool_call_left_in_content_is_a_parser_that_does_not_fire(
    served: dict[str, FakeOpenAI],
) -> None:
    report = probe(served["tool-call-in-content"])
    tools = by_name(report)["tool_calling"]
    assert tools.status == "fail"
    assert "as text in content" in tools.detail
    assert "--tool-call-parser" in tools.fix and "--jinja" in tools.fix


def test_a_refused_temperature_says_how_to_send_none(served: dict[str, FakeOpenAI]) -> None:
    report = probe(served["temperature-rejected"], temperature=0)
    checks = by_name(report)
    assert not report.ok
    assert checks["temperature"].status == "fail"
    assert "Unsupported parameter: 'temperature'" in checks["temperature"].detail
    assert "TRACEBOUND_LLM_TEMPERATURE=none" in checks["temperature"].fix
    assert "drop_params" in checks["temperature"].fix
    # every role call sends the reply limit: a refusal fails, naming the other field
    assert checks["max_tokens"].status == "fail"
    assert "TRACEBOUND_LLM_MAX_TOKENS_FIELD=max_completion_tokens" in checks["max_tokens"].fix
    assert checks["tool_calling"].status == "ok"


def test_no_temperature_configured_passes_an_o_series_model(
    served: dict[str, FakeOpenAI],
) -> None:
    report = probe(
        served["temperature-rejected"], temperature=None, max_tokens_field="max_completion_tokens"
    )
    assert report.ok, report
    assert not any("temperature" in r.body for r in served["temperature-rejected"].requests)


def test_an_unserved_model_lists_the_served_names(served: dict[str, FakeOpenAI]) -> None:
    report = probe(served["healthy"], model="gpt-4o")
    model = by_name(report)["model"]
    assert model.status == "fail"
    assert "'gpt-4o' is not served" in model.detail
    assert MODEL in model.detail and "other-model" in model.detail
    assert "TRACEBOUND_LLM_MODEL" in model.fix
    assert [c.name for c in report.checks] == ["reachable", "model", "checks"]


def test_a_base_url_without_v1_is_a_404_on_models(served: dict[str, FakeOpenAI]) -> None:
    base = served["healthy"].base_url.removesuffix("/v1")
    report = probe_endpoint(settings_for(base))
    reachable = by_name(report)["reachable"]
    assert reachable.status == "fail" and "404" in reachable.detail
    assert "/v1" in reachable.fix
    assert not report.down


def test_an_endpoint_that_is_down_is_down_not_misconfigured() -> None:
    report = probe_endpoint(settings_for(f"http://127.0.0.1:{free_port()}/v1", timeout_s=2))
    assert not report.ok and report.down
    assert by_name(report)["reachable"].detail.endswith("could not connect")


def test_a_refused_key_is_reported_as_such() -> None:
    with FakeOpenAI(models=(MODEL,), api_key="sk-the-right-one") as server:
        report = probe_endpoint(settings_for(server.base_url))
    reachable = by_name(report)["reachable"]
    assert reachable.status == "fail" and "HTTP 401" in reachable.detail
    assert "TRACEBOUND_LLM_API_KEY" in reachable.fix
    assert "sk-probe-secret" not in repr(report)


@pytest.mark.parametrize(
    ("listed", "props", "status", "expected"),
    [
        (4096, None, "fail", "vLLM --max-model-len"),
        (None, {"default_generation_settings": {"n_ctx": 4096}}, "fail", "--ctx-size"),
        (None, {"default_generation_settings": {"n_ctx": 16384}}, "ok", "16384 tokens"),
        (None, None, "warn", "TRACEBOUND_LLM_CONTEXT_WINDOW"),
    ],
)
def test_context_window_compared_with_the_configured_one(
    listed: int | None, props: dict[str, object] | None, status: str, expected: str
) -> None:
    server = server_like("healthy", models=(MODEL,), max_model_len=listed)
    if props is not None:
        server.get_bodies["/props"] = props
    with server:
        check = by_name(probe(server, context_window=8192))["context_window"]
    assert check.status == status, check
    assert expected in check.detail + check.fix


def test_the_startup_subset_leaves_out_unsent_parameters(served: dict[str, FakeOpenAI]) -> None:
    report = probe_endpoint(settings_for(served["healthy"].base_url), skip=STARTUP_SKIPS)
    names = {c.name for c in report.checks}
    assert not names & STARTUP_SKIPS
    assert {"reachable", "model", "temperature", "max_tokens", "tool_calling", "json_mode"} <= names


def test_no_base_url_is_a_failed_configuration() -> None:
    report = probe_endpoint(LLMSettings.model_validate({"base_url": None}))
    assert not report.ok
    assert report.checks[0].name == "configured"
    assert "TRACEBOUND_LLM_BASE_URL" in report.checks[0].fix


def test_the_printed_target_carries_no_credentials() -> None:
    assert safe_target("https://user:pw@host.example:8443/v1/?key=1") == (
        "https://host.example:8443/v1"
    )


def test_temperature_none_is_never_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_LLM_TEMPERATURE", "none")
    with FakeOpenAI() as server:
        monkeypatch.setenv("TRACEBOUND_LLM_BASE_URL", server.base_url)
        settings = LLMSettings()
        assert settings.temperature is None
        OpenAIChatModel(settings).complete([{"role": "user", "content": "hi"}])
    assert "temperature" not in server.requests[0].body


def _llama_like(models_status: int, health: tuple[int, str], busy: bool) -> httpx.MockTransport:
    """llama-server as the probe sees it: /v1/models, /health and /slots (chat times out)."""

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/models":
            listing = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            body = listing if models_status == 200 else {"error": {"message": "Loading model"}}
            return httpx.Response(models_status, json=body)
        if path == "/health":
            return httpx.Response(health[0], text=health[1])
        if path == "/slots":
            return httpx.Response(200, json=[{"id": 0, "is_processing": busy}])
        raise httpx.ReadTimeout("the only slot is working", request=request)

    return httpx.MockTransport(handle)


def _probe_llama(transport: httpx.MockTransport) -> ProbeReport:
    settings = settings_for("http://127.0.0.1:8080/v1")
    client = openai.OpenAI(
        base_url=settings.base_url,
        api_key="x",
        max_retries=0,
        http_client=httpx.Client(transport=transport),
    )
    probe = EndpointProbe(
        settings, client=client, http=httpx.Client(transport=transport), skip=STARTUP_SKIPS
    )
    return probe.run()


def test_a_busy_single_slot_server_is_alive_not_down() -> None:
    report = _probe_llama(_llama_like(200, (200, '{"status":"ok"}'), busy=True))
    checks = by_name(report)
    assert report.ok and not report.down
    assert checks["tool_calling"].status == "warn" and "busy" in checks["tool_calling"].detail
    # The same timeouts with an idle slot are a server that does not answer.
    idle = _probe_llama(_llama_like(200, (200, '{"status":"ok"}'), busy=False))
    assert not idle.ok and idle.down


def test_a_loading_server_is_alive_not_down() -> None:
    report = _probe_llama(_llama_like(503, (503, '{"error":{"message":"Loading model"}}'), False))
    assert report.ok and not report.down
    assert "loading" in by_name(report)["reachable"].detail
