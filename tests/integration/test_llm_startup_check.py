"""A role in ``llm`` mode against a misconfigured server says so at start, loudly.

The executor process starts against a server imitating vLLM without
``--enable-auto-tool-choice``: it starts anyway (the check runs beside the
loop), logs the failed check with the vLLM flags as an error, and its
``/metrics`` shows ``tracebound_llm_ready`` 0 with the failed check.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.support.fake_servers import server_like
from tests.support.pipeline import running_pipeline
from tests.support.prometheus import free_port
from tests.support.stack import StackHandle


def test_a_misconfigured_endpoint_is_logged_and_exposed_at_start(
    stack: StackHandle, tmp_path: Path
) -> None:
    port = free_port()
    failed = 'tracebound_llm_check_failed{check="tool_calling",role="executor"} 1.0'
    with server_like("no-tool-parser") as server:
        env = {
            "TRACEBOUND_EXECUTOR_MODE": "llm",
            "TRACEBOUND_EXECUTOR_METRICS_PORT": str(port),
            "TRACEBOUND_LLM_BASE_URL": server.base_url,
            "TRACEBOUND_LLM_MAX_RETRIES": "0",
            "TRACEBOUND_LLM_TIMEOUT_S": "10",
        }
        with running_pipeline(stack, tmp_path, env, roles=("executor",)) as settings:
            metrics = ""
            deadline = time.monotonic() + 240
            while failed not in metrics:
                assert time.monotonic() < deadline, f"no failed check in /metrics:\n{metrics}"
                time.sleep(0.5)
                try:
                    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
                except httpx.TransportError:
                    continue
            assert 'tracebound_llm_ready{role="executor"} 0.0' in metrics
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).text == "ok\n"
            log = (settings.state_dir / "services" / "executor.log").read_text()
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    errors = [r["msg"] for r in records if r.get("level") == "error"]
    assert any("executor" in m and "is MISCONFIGURED" in m for m in errors), log
    assert any("--enable-auto-tool-choice --tool-call-parser" in m for m in errors), log
    assert any(r.tools for r in server.requests), "the probe never asked for a tool call"
