"""Prompt sizes by the server's count where it gives one, else a calibrated estimate."""

from __future__ import annotations

import json

import httpx

from tracebound.llm.budget import PromptBudget, family_for
from tracebound.llm.settings import LLMSettings
from tracebound.llm.tokens import Calibration, ServerTokenizer

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi 你好"}]


def llama_server(request: httpx.Request) -> httpx.Response:
    """What llama-server answers on its native endpoints (a token per character here)."""
    body = json.loads(request.content or b"{}")
    if request.url.path == "/apply-template":
        prompt = "".join(
            f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in body["messages"]
        )
        return httpx.Response(200, json={"prompt": prompt})
    if request.url.path == "/tokenize" and "content" in body:
        return httpx.Response(200, json={"tokens": list(range(len(body["content"])))})
    return httpx.Response(404)


def vllm_server(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content or b"{}")
    if request.url.path == "/tokenize" and "content" not in body:
        size = len(json.dumps(body.get("messages") or body.get("prompt")))
        return httpx.Response(200, json={"count": size, "tokens": [], "max_model_len": 4096})
    return httpx.Response(400, json={"error": "bad request"})


def test_llama_cpp_counts_the_rendered_template() -> None:
    client = httpx.Client(transport=httpx.MockTransport(llama_server))
    counter = ServerTokenizer("http://127.0.0.1:8080/v1", "smollm2", client)
    rendered = "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi 你好<|im_end|>\n"
    assert counter.count(MESSAGES, None) == len(rendered)
    assert counter.kind == "llama.cpp"
    tools = [{"name": "query_logs", "parameters": {}}]
    with_tools = counter.count(MESSAGES, tools)
    assert with_tools is not None and with_tools > len(rendered)


def test_vllm_counts_the_messages_itself() -> None:
    client = httpx.Client(transport=httpx.MockTransport(vllm_server))
    counter = ServerTokenizer("http://127.0.0.1:8000/v1", "qwen", client)
    assert counter.count(MESSAGES, None) == len(json.dumps(MESSAGES))
    assert counter.kind == "vllm"


def test_a_server_without_a_tokenizer_is_asked_once() -> None:
    asked: list[str] = []

    def none(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(404)

    counter = ServerTokenizer(
        "http://127.0.0.1:1/v1", "m", httpx.Client(transport=httpx.MockTransport(none))
    )
    assert counter.count(MESSAGES, None) is None
    assert counter.count(MESSAGES, None) is None
    assert counter.kind == "none" and len(asked) == 2  # the two probes, once


def test_the_calibrated_ratio_only_grows() -> None:
    calibration = Calibration()
    assert calibration.ratio("m") == 1.0
    assert calibration.observe("m", 100, 180) == 1.8
    assert calibration.observe("m", 100, 120) == 1.8  # a smaller ratio never lowers it
    assert calibration.observe("m", 100, None) == 1.8  # a reply without usage teaches nothing
    assert calibration.scaled("m", 10) == 18 and calibration.ratio("other") == 1.0
    (family,) = list(calibration.collect())
    assert [(s.labels["model"], s.value) for s in family.samples] == [("m", 1.8)]


def test_the_budget_takes_the_servers_count_over_the_estimate() -> None:
    settings = LLMSettings.model_construct()
    counted = PromptBudget.from_settings(settings, "smollm2", counter=lambda m, t: 4242)
    assert counted.estimate(MESSAGES, None) == 4242
    silent = PromptBudget.from_settings(settings, "smollm2", counter=lambda m, t: None)
    assert silent.estimate(MESSAGES, None) >= 1
    assert silent.family == family_for("smollm2")
