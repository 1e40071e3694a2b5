"""What a service was started with: the variables it reads, secrets hashed, changes."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings, SettingsConfigDict

from tracebound.stack.service_env import (
    COMMON_PREFIXES,
    ROLE_PREFIXES,
    EnvRecord,
    is_secret,
    read_record,
    record_path,
    relevant_env,
    without_credentials,
    write_record,
)
from tracebound.stack.services import ROLE_INPUTS, role_module

DSN = "postgresql://tracebound:s3cret-pw@127.0.0.1:5432/tracebound"
ENV = {
    "TRACEBOUND_TOOLS_METRICS_BACKEND": "prometheus",
    "TRACEBOUND_TOOLS_PROMETHEUS_URL": "http://admin:hunter22@prom.local:9090/",
    "TRACEBOUND_PG_DSN": DSN,
    "TRACEBOUND_LLM_API_KEY": "sk-very-secret",
    "TRACEBOUND_GATEKEEPER_BATCH_SIZE": "50",
    "TRACEBOUND_EXECUTOR_MODE": "llm",
    "HOME": "/root",
}
# Settings classes a role's modules define without the role reading them: the
# planner validates steps with the tools' parameter models, the composer shares the
# verifier's fact model; no service reads the stack's own settings.
DEFINED_NOT_READ: dict[str, set[str]] = {
    "planner": {"TRACEBOUND_TOOLS_"},
    "composer": {"TRACEBOUND_VERIFIER_"},
}


def test_a_role_reads_its_own_the_common_and_its_declared_prefixes_only() -> None:
    executor = relevant_env("executor", ENV)
    assert set(executor) == {
        "TRACEBOUND_TOOLS_METRICS_BACKEND",
        "TRACEBOUND_TOOLS_PROMETHEUS_URL",
        "TRACEBOUND_PG_DSN",
        "TRACEBOUND_LLM_API_KEY",
        "TRACEBOUND_EXECUTOR_MODE",
    }
    assert set(relevant_env("gatekeeper", ENV)) == {
        "TRACEBOUND_PG_DSN",
        "TRACEBOUND_GATEKEEPER_BATCH_SIZE",
    }
    assert relevant_env("sentinel", {"tracebound_sentinel_batch_size": "1"}) == {
        "TRACEBOUND_SENTINEL_BATCH_SIZE": "1"
    }


# Run in a fresh interpreter: what every role imports (libraries, the event catalog,
# the service runtime; none defines settings beyond tracebound.settings') is
# imported once, then each role's modules in a forked child of its own, so one
# role's classes never count for another's.
PREFIXES_BY_ROLE = """
import importlib, json, os, sys
import confluent_kafka, httpx, openai, psycopg, pydantic_settings, prometheus_client
import tracebound.events, tracebound.runtime
from tracebound.settings import settings_classes
for module in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        importlib.import_module(module + ".__main__")
        found = {str(c.model_config.get("env_prefix") or "") for c in settings_classes()}
        print(json.dumps([module, sorted(found)]), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.mark.slow
def test_the_prefix_table_matches_the_settings_classes_each_role_defines() -> None:
    modules = {role_module(role): role for role in ROLE_INPUTS}
    out = subprocess.run(
        [sys.executable, "-c", PREFIXES_BY_ROLE, *modules],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    seen = dict(json.loads(line) for line in out.stdout.splitlines())
    assert set(seen) == set(modules), out.stderr
    for module, prefixes in seen.items():
        role = modules[module]
        defined = set(prefixes) - {"", "TRACEBOUND_STACK_"} - DEFINED_NOT_READ.get(role, set())
        own = f"TRACEBOUND_{role.upper()}_"
        assert defined - {own} == {*COMMON_PREFIXES, *ROLE_PREFIXES[role]}, role


def test_secrets_are_kept_only_as_salted_hashes() -> None:
    record = EnvRecord.of("executor", 42, ENV)
    text = json.dumps(record.to_json())
    for secret in ("s3cret-pw", "hunter22", "sk-very-secret"):
        assert secret not in text
    assert record.env["TRACEBOUND_TOOLS_METRICS_BACKEND"] == "prometheus"
    assert record.env["TRACEBOUND_PG_DSN"].startswith("sha256:")
    assert record.shows("TRACEBOUND_PG_DSN") == "postgresql://tracebound@127.0.0.1:5432/tracebound"
    assert record.shows("TRACEBOUND_TOOLS_PROMETHEUS_URL") == "http://admin@prom.local:9090/"
    assert record.shows("TRACEBOUND_LLM_API_KEY") == "(secret)"
    other = EnvRecord.of("executor", 42, ENV)
    assert other.env["TRACEBOUND_PG_DSN"] != record.env["TRACEBOUND_PG_DSN"]  # own salt


def test_secret_detection_by_name_and_by_credentials_in_a_url() -> None:
    assert is_secret("TRACEBOUND_INGEST_TOKEN", "abc")
    assert is_secret("TRACEBOUND_KAFKA_SASL_PASSWORD", "abc")
    assert is_secret("TRACEBOUND_TOOLS_LOKI_URL", "https://u:p@loki:3100")
    assert is_secret("TRACEBOUND_TOOLS_LOKI_URL", "https://loki:3100/?token=abc")
    assert not is_secret("TRACEBOUND_TOOLS_LOKI_URL", "https://loki:3100/")
    assert not is_secret("TRACEBOUND_TOOLS_METRICS_BACKEND", "prometheus")


def test_urls_lose_their_password_and_query() -> None:
    assert without_credentials("http://u:p@h:1/x?token=t") == "http://u@h:1/x"
    assert without_credentials("http://[::1]:9090") == "http://[::1]:9090"
    assert without_credentials("prometheus") is None
    assert without_credentials("http://h:notaport") is None


def test_changes_name_each_changed_set_and_unset_variable_never_a_value() -> None:
    record = EnvRecord.of("executor", 7, ENV)
    assert record.changes(ENV) == []
    now = {**ENV, "TRACEBOUND_TOOLS_METRICS_BACKEND": "demo", "TRACEBOUND_TOOLS_LOGS_BACKEND": "x"}
    del now["TRACEBOUND_EXECUTOR_MODE"]
    now["TRACEBOUND_PG_DSN"] = DSN.replace("s3cret-pw", "rotated")
    now["TRACEBOUND_GATEKEEPER_BATCH_SIZE"] = "99"  # not the executor's
    assert record.changes(now) == [
        "TRACEBOUND_EXECUTOR_MODE unset",
        "TRACEBOUND_PG_DSN changed",
        "TRACEBOUND_TOOLS_LOGS_BACKEND set",
        "TRACEBOUND_TOOLS_METRICS_BACKEND changed",
    ]


def test_the_record_is_private_and_belongs_to_one_pid(tmp_path: Path) -> None:
    record = EnvRecord.of("executor", 1234, ENV)
    write_record(tmp_path, record)
    path = record_path(tmp_path, "executor")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_record(tmp_path, "executor", 1234) == record
    assert read_record(tmp_path, "executor", 999) is None  # an earlier process's
    assert read_record(tmp_path, "planner", 1234) is None
    path.write_text("{not json", encoding="utf-8")
    assert read_record(tmp_path, "executor", 1234) is None


def test_mode_comes_from_the_record_and_only_roles_with_a_model_have_one() -> None:
    assert EnvRecord.of("executor", 1, ENV).mode() == "llm"
    assert EnvRecord.of("planner", 1, {}).mode() == "rules"
    assert EnvRecord.of("gatekeeper", 1, ENV).mode() is None


class _Tools(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_TOOLS_")

    metrics_backend: str = "request"
    logs_backend: str | None = None
    prometheus_url: str | None = None
    loki_url: str | None = None
    timeout_s: float = 5.0


def test_backends_are_the_recorded_ones_or_the_defaults_with_urls_without_credentials() -> None:
    executor = EnvRecord.of("executor", 1, ENV)
    assert executor.backends([_Tools]) == {
        "metrics": "prometheus",
        "logs": "none",
        "prometheus_url": "http://admin@prom.local:9090/",
    }
    assert EnvRecord.of("executor", 1, {}).backends([_Tools]) == {
        "metrics": "request",
        "logs": "none",
    }
    assert EnvRecord.of("gatekeeper", 1, ENV).backends([_Tools]) == {}
