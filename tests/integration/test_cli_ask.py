"""`tracebound ask` in both languages and `tracebound answers --follow` from another process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.kafka_io import REPO
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle

CLI = [sys.executable, "-m", "tracebound.cli"]


def _env(stack: StackHandle) -> dict[str, str]:
    return {**stack.env(), "PYTHONPATH": str(REPO)}


def test_ask_in_both_languages_and_follow_answers(stack: StackHandle, tmp_path: Path) -> None:
    follow_out = tmp_path / "follow.jsonl"
    with running_pipeline(stack, tmp_path / "svc"), follow_out.open("wb") as sink:
        follower = subprocess.Popen(
            [*CLI, "answers", "--follow", "--json"], env=_env(stack), stdout=sink, cwd=REPO
        )
        time.sleep(3)  # let the follower take its end offsets before the questions
        zh = subprocess.run(
            [
                *CLI,
                "ask",
                "payment-service 当前是否有 HighCPUUsage 告警？",
                "--json",
                "--wait",
                "120",
            ],
            env=_env(stack),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=REPO,
        )
        en = subprocess.run(
            [
                *CLI,
                "ask",
                "Are there HikariCP pool exhaustion logs for inventory-service?",
                "--wait",
                "120",
            ],
            env=_env(stack),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=REPO,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and follow_out.read_text().count("\n") < 2:
            time.sleep(0.5)
        follower.send_signal(signal.SIGINT)
        follower.wait(30)
    assert zh.returncode == 0, zh.stderr
    answer = json.loads(zh.stdout)
    assert answer["verdict"] == "PASS" and answer["run_id"]
    assert (
        "payment-service" in answer["user_facing_answer"] and "92%" in answer["user_facing_answer"]
    )
    assert en.returncode == 0, en.stderr
    assert "no matching evidence" in en.stdout
    followed = [json.loads(line) for line in follow_out.read_text().splitlines() if line.strip()]
    assert answer["run_id"] in {a["run_id"] for a in followed}, "answers --follow saw the answer"


def test_ask_rejects_an_empty_question(stack: StackHandle) -> None:
    done = subprocess.run(
        [*CLI, "ask", "  "], env=_env(stack), capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 2 and "invalid input" in done.stderr
