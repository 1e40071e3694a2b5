"""The local Apache Kafka broker: jars from Maven Central, KRaft storage, start and stop.

There is no Kafka distribution on the machine, only Java and Maven, so the broker's
jars are resolved once from Maven Central into the cache (a marker file written after
a complete copy tells a finished download from an interrupted one) and the broker runs
as a plain ``java … kafka.Kafka server.properties`` process in KRaft combined mode.

The storage folder is formatted once with a cluster id kept next to it; a data folder
formatted for another cluster id is never reused silently, because the broker would
refuse it anyway with a much less helpful message.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from string import Template

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack import progress
from tracebound.stack.paths import (
    KAFKA_POM,
    LOG4J2_TEMPLATE,
    SERVER_PROPERTIES_TEMPLATE,
    StackPaths,
)
from tracebound.stack.process import (
    is_alive,
    owned_pid,
    port_answers,
    port_in_use,
    spawn_detached,
    tail_lines,
    terminate,
    write_pid,
)
from tracebound.stack.topics import quiet_admin_config

PROGRAM = "kafka.Kafka"
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0
MAVEN_TIMEOUT_S = 1800.0
START_BANNER = "--- tracebound up"
JAVA_HINT = "Java 17+ is required: install openjdk-17-jre-headless"
_MAVEN_NOISE = ("[help ", "re-run maven", "for more information about", "full stack trace")


def bootstrap(settings: StackSettings) -> str:
    return f"{settings.host}:{settings.kafka_port}"


def find_java() -> str:
    """The ``java`` executable, checked to be version 17 or newer."""
    java = shutil.which("java")
    if java is None:
        raise StackError(JAVA_HINT)
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"{JAVA_HINT} ({java} does not run: {exc})") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if done.returncode != 0 or match is None:
        raise StackError(f"{JAVA_HINT} ({java} -version failed)")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_x" style
        major = int(match.group(2))
    if major < 17:
        raise StackError(f"{JAVA_HINT} (found Java {major} at {java})")
    return java


def last_maven_error(output: str) -> str:
    """The most telling line of Maven's output, without its generic help boilerplate."""
    lines = [line.strip() for line in output.splitlines()]
    errors = [line for line in lines if line.startswith(("[ERROR]", "[FATAL]"))] or lines
    for line in reversed(errors):
        text = re.sub(r"^\[(ERROR|FATAL)\]\s*", "", line)
        text = re.sub(r"\s*-> \[Help \d+\]$", "", text)
        if text and not any(noise in text.lower() for noise in _MAVEN_NOISE):
            return text
    return "no output"


def resolve_jars(settings: StackSettings, paths: StackPaths) -> Path:
    """The folder of Kafka's runtime jars, resolved with Maven when not cached yet."""
    if paths.kafka_libs_marker.is_file() and any(paths.kafka_libs.glob("*.jar")):
        return paths.kafka_libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("Maven is required to fetch the Kafka jars: install maven")
    paths.kafka_home.mkdir(parents=True, exist_ok=True)
    partial = paths.kafka_home / "libs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"resolving Kafka {settings.kafka_version} jars with Maven (first run only)…")
    argv = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(KAFKA_POM),
        "dependency:copy-dependencies",
        f"-Dkafka.version={settings.kafka_version}",
        f"-DoutputDirectory={partial}",
        "-DincludeScope=runtime",
    ]
    try:
        with paths.maven_log.open("w", encoding="utf-8") as log:
            done = subprocess.run(
                argv, stdout=log, stderr=subprocess.STDOUT, timeout=MAVEN_TIMEOUT_S, check=False
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"Maven failed to run: {exc} (log: {paths.maven_log})") from exc
    output = paths.maven_log.read_text(encoding="utf-8", errors="replace")
    if done.returncode != 0 or not any(partial.glob("*.jar")):
        raise StackError(
            f"Maven could not resolve Kafka {settings.kafka_version}: "
            f"{last_maven_error(output)} (full output: {paths.maven_log})"
        )
    shutil.rmtree(paths.kafka_libs, ignore_errors=True)
    partial.rename(paths.kafka_libs)
    jars = sorted(p.name for p in paths.kafka_libs.glob("*.jar"))
    paths.kafka_libs_marker.write_text("\n".join(jars) + "\n", encoding="utf-8")
    return paths.kafka_libs


def render_server_properties(template: str, settings: StackSettings, paths: StackPaths) -> str:
    """Fill the broker config template; an unknown placeholder is a broken template."""
    values = {
        "host": settings.host,
        "kafka_port": str(settings.kafka_port),
        "controller_port": str(settings.controller_port),
        "data_dir": str(paths.kafka_data),
        "partitions": str(settings.partitions),
    }
    try:
        return Template(template).substitute(values)
    except (KeyError, ValueError) as exc:
        raise StackError(f"{SERVER_PROPERTIES_TEMPLATE} has a bad placeholder: {exc}") from exc


def write_config(settings: StackSettings, paths: StackPaths) -> None:
    """Render ``server.properties`` and copy ``log4j2.xml`` into the state folder."""
    for folder in (paths.kafka_dir, paths.kafka_data, paths.kafka_logs):
        folder.mkdir(parents=True, exist_ok=True)
    template = SERVER_PROPERTIES_TEMPLATE.read_text(encoding="utf-8")
    paths.kafka_config.write_text(
        render_server_properties(template, settings, paths), encoding="utf-8"
    )
    shutil.copyfile(LOG4J2_TEMPLATE, paths.kafka_log4j)


def new_cluster_id() -> str:
    """16 random bytes, URL-safe base64 without padding, as Kafka's own ``Uuid`` prints."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
        if not cid.startswith("-"):  # would read as an option on the StorageTool line
            return cid


def formatted_cluster_id(paths: StackPaths) -> str | None:
    """The ``cluster.id`` in ``meta.properties`` of the data folder, if it was formatted."""
    meta = paths.kafka_data / "meta.properties"
    try:
        text = meta.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "cluster.id":
            return value.strip()
    raise StackError(f"{meta} has no cluster.id; run `tracebound down --purge` to reset it")


def cluster_id(paths: StackPaths) -> tuple[str, list[str]]:
    """Our cluster id (created on first use), checked against the formatted data folder."""
    notes: list[str] = []
    on_disk = formatted_cluster_id(paths)
    try:
        ours: str | None = paths.kafka_cluster_id.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        ours = None
    if ours is None:
        ours = on_disk or new_cluster_id()
        paths.kafka_dir.mkdir(parents=True, exist_ok=True)
        paths.kafka_cluster_id.write_text(ours + "\n", encoding="utf-8")
        if on_disk:
            notes.append(f"recovered the Kafka cluster id {ours} from {paths.kafka_data}")
    if on_disk is not None and on_disk != ours:
        raise StackError(
            f"{paths.kafka_data} belongs to Kafka cluster {on_disk}, not {ours} "
            f"(from {paths.kafka_cluster_id}); run `tracebound down --purge` to start afresh"
        )
    return ours, notes


def java_argv(java: str, paths: StackPaths, main: str, *args: str, heap: str = "") -> list[str]:
    """A JVM command line running ``main`` from the cached jars with our log4j2 config."""
    memory = [f"-Xms{heap}", f"-Xmx{heap}"] if heap else []
    return [
        java,
        *memory,
        f"-Dlog4j2.configurationFile={paths.kafka_log4j}",
        f"-Dkafka.logs.dir={paths.kafka_logs}",
        "-Djava.awt.headless=true",
        "-cp",
        f"{paths.kafka_libs}/*",
        main,
        *args,
    ]


def format_storage(java: str, cid: str, paths: StackPaths) -> None:
    """Format the KRaft log folder once (a standalone, single-voter controller quorum)."""
    argv = java_argv(
        java,
        paths,
        "kafka.tools.StorageTool",
        "format",
        "--standalone",
        "-t",
        cid,
        "-c",
        str(paths.kafka_config),
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise StackError(f"formatting {paths.kafka_data} failed: {last}")


def broker_pid(settings: StackSettings) -> tuple[int | None, list[str]]:
    """The pid of our running broker (stale pid files are removed and noted)."""
    paths = StackPaths.from_settings(settings)
    return owned_pid(paths.kafka_pid, str(paths.kafka_config), PROGRAM, "Kafka")


def _failure_excerpt(paths: StackPaths) -> str:
    """Where to look and the most telling lines: JVM output of this start, else log errors."""
    out = tail_lines(paths.kafka_out, 200)
    starts = [i for i, line in enumerate(out) if line.startswith(START_BANNER)]
    since_start = out[starts[-1] + 1 :] if starts else out
    if since_start:
        return f"see {paths.kafka_out}: {' | '.join(since_start[-3:])}"
    server_log = paths.kafka_logs / "server.log"
    recent = tail_lines(server_log, 400)
    errors = [line for line in recent if " ERROR " in line or " FATAL " in line]
    return f"see {server_log}: {' | '.join((errors or recent)[-3:]) or '(log is empty)'}"


def wait_ready(settings: StackSettings, pid: int, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Block until the broker answers a metadata request (or fail with its log tail)."""
    paths = StackPaths.from_settings(settings)
    address = bootstrap(settings)
    admin = AdminClient(quiet_admin_config(address))
    deadline = time.monotonic() + timeout_s
    announced = False
    while True:
        if not is_alive(pid):
            paths.kafka_pid.unlink(missing_ok=True)
            raise StackError(f"the Kafka broker exited while starting; {_failure_excerpt(paths)}")
        if port_answers(settings.host, settings.kafka_port):
            try:
                if admin.list_topics(timeout=5).brokers:
                    return
            except KafkaException:
                pass
        if time.monotonic() >= deadline:
            raise StackError(
                f"the Kafka broker on {address} was not ready within {timeout_s:.0f}s; "
                f"{_failure_excerpt(paths)}"
            )
        if not announced:
            progress(f"waiting for the Kafka broker on {address}…")
            announced = True
        time.sleep(0.5)


def check_ports(settings: StackSettings) -> None:
    """Fail early if a foreign process holds the broker or controller port."""
    for port, var in (
        (settings.kafka_port, "TRACEBOUND_STACK_KAFKA_PORT"),
        (settings.controller_port, "TRACEBOUND_STACK_CONTROLLER_PORT"),
    ):
        if port_in_use(settings.host, port):
            raise StackError(
                f"port {port} on {settings.host} is in use by another process; set {var}"
            )


def start_broker(settings: StackSettings | None = None) -> list[str]:
    """Start the broker unless ours already runs; return notes about what happened."""
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    pid, notes = broker_pid(settings)
    if pid is not None:
        wait_ready(settings, pid)
        return notes
    java = find_java()
    check_ports(settings)
    resolve_jars(settings, paths)
    write_config(settings, paths)
    cid, cid_notes = cluster_id(paths)
    notes += cid_notes
    if formatted_cluster_id(paths) is None:
        format_storage(java, cid, paths)
        notes.append(f"formatted {paths.kafka_data} for cluster {cid}")
    argv = java_argv(java, paths, PROGRAM, str(paths.kafka_config), heap=settings.kafka_heap)
    with paths.kafka_out.open("a", encoding="utf-8") as out:
        out.write(f"{START_BANNER} {time.strftime('%Y-%m-%dT%H:%M:%S%z')}: {' '.join(argv)}\n")
    pid = spawn_detached(argv, paths.kafka_out, os.environ)
    write_pid(paths.kafka_pid, pid)
    wait_ready(settings, pid)
    notes.append(f"started Kafka {settings.kafka_version} (pid {pid}) on {bootstrap(settings)}")
    return notes


def stop_broker(settings: StackSettings | None = None) -> list[str]:
    """Stop our broker (only if the pid file still names our process) and wait for it."""
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    pid, notes = broker_pid(settings)
    if pid is None:
        return notes
    notes.append(terminate(pid, "Kafka broker", STOP_TIMEOUT_S))
    paths.kafka_pid.unlink(missing_ok=True)
    return notes
