"""compose/docker-compose.yml runs what ``tracebound up`` runs, the same way.

No Docker engine is needed: the file is parsed and held to the local stack (the Kafka
version, the PostgreSQL major, the roles and how each is started, the published
ports, the names of the settings), and the Dockerfile to what the compose file
expects of it. ``docker compose config`` checks the file too where Docker Compose
is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.ingest.settings import IngestSettings
from services.ingest.settings import load_settings as ingest_settings
from tracebound.cli import load_settings_classes
from tracebound.settings import StackSettings, prefix_for
from tracebound.settings_check import known_variables
from tracebound.stack import postgres
from tracebound.stack.service_env import role_prefixes
from tracebound.stack.services import ROLE_INPUTS, role_module
from tracebound.topology import ROLES
from web.guard import HostRule

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "compose" / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
SERVERS = ("kafka", "postgres")
TOPICS = "topics"  # the one-shot service that creates the topics
ROLE_NAMES = tuple(r.name for r in ROLES)
# The local stack's defaults, whatever TRACEBOUND_STACK_* this process was started with.
STACK = {name: field.default for name, field in StackSettings.model_fields.items()}
INGEST_PORT = 8088
SHELL_DEFAULT = re.compile(r"\$\{[A-Z0-9_]+:-([^}]*)\}")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose["services"]
    return found


def env_of(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a container sees it (``${NAME:-default}`` → default)."""
    env = service.get("environment") or {}
    assert isinstance(env, dict), "environment is written as a mapping"
    return {str(k): SHELL_DEFAULT.sub(r"\1", str(v)) for k, v in env.items()}


def published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """``(host address, host port, container port)`` of each published port."""
    out = []
    for entry in service.get("ports") or []:
        host, host_port, container_port = str(entry).split(":")
        out.append((host, int(host_port), int(container_port)))
    return out


def test_kafka_runs_the_local_stacks_version_as_one_kraft_node(
    services: dict[str, dict[str, Any]],
) -> None:
    kafka = services["kafka"]
    image, _, tag = kafka["image"].partition(":")
    assert (image, tag) == ("apache/kafka", STACK["kafka_version"])
    env = env_of(kafka)
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"1@localhost:{STACK['controller_port']}"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert env["KAFKA_NUM_PARTITIONS"] == str(STACK["partitions"])
    assert published(kafka) == [(STACK["host"], STACK["kafka_port"], STACK["kafka_port"])]
    advertised = env["KAFKA_ADVERTISED_LISTENERS"].split(",")
    assert f"PLAINTEXT://{STACK['host']}:{STACK['kafka_port']}" in advertised
    # the roles reach the broker at an advertised listener of the compose network
    bootstrap = {env_of(services[n])["TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"] for n in ROLE_NAMES}
    assert len(bootstrap) == 1
    assert f"INTERNAL://{bootstrap.pop()}" in advertised


def test_postgres_runs_the_local_stacks_major_on_its_port(
    services: dict[str, dict[str, Any]],
) -> None:
    pg = services["postgres"]
    image, _, tag = pg["image"].partition(":")
    assert (image, tag.split(".")[0]) == ("postgres", postgres.DISTRIBUTION_MAJOR)
    port = STACK["pg_port"]
    assert published(pg) == [(STACK["host"], port, port)]
    assert pg["command"] == ["postgres", "-p", str(port)]
    env = env_of(pg)
    assert (env["POSTGRES_USER"], env["POSTGRES_DB"]) == (postgres.DB_USER, postgres.DB_NAME)
    dsns = {env_of(services[n])["TRACEBOUND_PG_DSN"] for n in ROLE_NAMES}
    assert dsns == {f"postgresql://{postgres.DB_USER}@postgres:{port}/{postgres.DB_NAME}"}


def test_the_installed_postgresql_is_the_major_compose_runs() -> None:
    binaries = postgres.find_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries on this machine")
    assert binaries.major == postgres.DISTRIBUTION_MAJOR


def test_every_role_runs_as_under_tracebound_up(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == {*SERVERS, TOPICS, *ROLE_NAMES}
    assert set(ROLE_INPUTS) == set(ROLE_NAMES)
    for name in ROLE_NAMES:
        service = services[name]
        assert service["command"] == ["python", "-m", role_module(name)], name
        assert service["build"] == {"context": "..", "dockerfile": "Dockerfile"}, name
        assert service["depends_on"] == {
            TOPICS: {"condition": "service_completed_successfully"},
            "postgres": {"condition": "service_healthy"},
        }, name
    topics = services[TOPICS]
    assert topics["command"] == ["python", "-m", "tracebound.stack.topics"]
    assert topics["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    assert (REPO / "compose" / topics["build"]["context"] / "Dockerfile").resolve() == DOCKERFILE


def test_every_variable_is_a_known_setting_the_service_reads(
    services: dict[str, dict[str, Any]],
) -> None:
    load_settings_classes()
    known, _ = known_variables(ROLE_INPUTS)
    for name in (TOPICS, *ROLE_NAMES):
        env = env_of(services[name])
        assert env, name
        assert not [v for v in env if v.upper() not in known], name
        if name in ROLE_NAMES:
            assert all(v.startswith(role_prefixes(name)) for v in env), name


def test_each_role_has_a_health_check_on_its_own_metrics_port(
    services: dict[str, dict[str, Any]],
) -> None:
    for name in (*SERVERS, *ROLE_NAMES):
        check = services[name]["healthcheck"]
        assert check["test"][0] == "CMD" and check["retries"] >= 1, name
    for name in ROLE_NAMES:
        if name == "ingest":
            continue
        env = env_of(services[name])
        port = int(env[f"{prefix_for(name)}METRICS_PORT"])
        assert 0 < port < 65536, name
        assert f"http://127.0.0.1:{port}/healthz" in services[name]["healthcheck"]["test"][-1]


def test_the_ingest_binds_every_interface_and_admits_its_published_names(
    services: dict[str, dict[str, Any]],
) -> None:
    ingest = services["ingest"]
    env = env_of(ingest)
    settings = ingest_settings(
        host=env["TRACEBOUND_INGEST_HOST"],
        port=int(env["TRACEBOUND_INGEST_PORT"]),
        allowed_hosts=env["TRACEBOUND_INGEST_ALLOWED_HOSTS"],
    )
    assert settings.host == "0.0.0.0"
    assert settings.port == INGEST_PORT == IngestSettings.model_fields["port"].default
    assert published(ingest) == [(STACK["host"], INGEST_PORT, INGEST_PORT)]
    rule = HostRule.of(settings.host, settings.port, settings.host_list)
    assert not rule.any_host
    for host in (STACK["host"], "localhost", "ingest"):
        assert rule.allows(f"{host}:{INGEST_PORT}"), host
    assert not rule.allows(f"attacker.example:{INGEST_PORT}")
    url = f"http://127.0.0.1:{INGEST_PORT}/healthz"
    assert url in ingest["healthcheck"]["test"][-1]


def test_only_loopback_is_published(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        assert all(host == STACK["host"] for host, _, _ in published(service)), name


def test_the_dockerfile_installs_the_pinned_project_and_runs_as_a_user() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    froms = re.findall(r"^FROM (\S+)", text, re.MULTILINE)
    assert froms and all(f == "python:3.11-slim" for f in froms)
    assert "pip install -c constraints.txt ." in text
    # the PYTHONPATH of the application folders names the image's Python version
    assert "lib/python3.11/site-packages/tracebound/_app" in text
    users = re.findall(r"^USER (\S+)", text, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assignments = re.findall(r"^(?:ENV|ARG)\s+(.*(?:\\\n.*)*)", text, re.MULTILINE)
    names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", " ".join(assignments))
    assert names and not [n for n in names if re.search("TOKEN|PASSWORD|SECRET|KEY", n)]


def test_docker_compose_accepts_the_file() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed")
    probe = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=30, check=False
    )
    if probe.returncode != 0:
        pytest.skip("docker compose is not available (the Docker CLI has no compose plugin)")
    done = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE_FILE), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
