"""The local Apache Kafka broker: KRaft storage, start and stop.

The broker runs from the cached jars (:mod:`tracebound.stack.jars`) as a plain
``java … kafka.Kafka server.properties`` process in KRaft combined mode — one such
process per node (:mod:`tracebound.stack.nodes`): a single one by default,
three for ``up --brokers 3``, all started together since a quorum of controllers must
be up before any of them serves.

The storage folder is formatted once with a cluster id kept next to it; a data folder
formatted for another cluster id is never reused silently, because the broker would
refuse it anyway with a much less helpful message.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from string import Template

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack import nodes, progress
from tracebound.stack.jars import find_java, java_argv, resolve_jars
from tracebound.stack.paths import LOG4J2_TEMPLATE, SERVER_PROPERTIES_TEMPLATE, StackPaths
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
START_BANNER = "--- tracebound up"


def bootstrap(settings: StackSettings) -> str:
    return nodes.bootstrap(settings)


def _quorum(settings: StackSettings, count: int) -> str:
    """One node: a standalone dynamic quorum; several: a static quorum of every node."""
    if count == 1:
        return f"controller.quorum.bootstrap.servers={settings.host}:{settings.controller_port}"
    voters = ",".join(
        f"{i}@{settings.host}:{settings.controller_port + nodes.PORT_STEP * (i - 1)}"
        for i in range(1, count + 1)
    )
    return f"controller.quorum.voters={voters}"


def render_server_properties(
    template: str, settings: StackSettings, paths: StackPaths, node_id: int = 1, count: int = 1
) -> str:
    """Fill the config template of node ``node_id`` of ``count``; an unknown placeholder
    is a broken template. ``settings`` are the stack's (node 1's ports)."""
    step = nodes.PORT_STEP * (node_id - 1)
    replication, min_isr = nodes.replication(count)
    values = {
        "host": settings.host,
        "node_id": str(node_id),
        "kafka_port": str(settings.kafka_port + step),
        "controller_port": str(settings.controller_port + step),
        "quorum": _quorum(settings, count),
        "data_dir": str(paths.kafka_data),
        "partitions": str(settings.partitions),
        "replication": str(replication),
        "min_isr": str(min_isr),
    }
    try:
        return Template(template).substitute(values)
    except (KeyError, ValueError) as exc:
        raise StackError(f"{SERVER_PROPERTIES_TEMPLATE} has a bad placeholder: {exc}") from exc


def write_config(
    settings: StackSettings, paths: StackPaths, node_id: int = 1, count: int = 1
) -> None:
    """Render a node's ``server.properties`` and copy ``log4j2.xml`` into its folder."""
    for folder in (paths.kafka_dir, paths.kafka_data, paths.kafka_logs):
        folder.mkdir(parents=True, exist_ok=True)
    template = SERVER_PROPERTIES_TEMPLATE.read_text(encoding="utf-8")
    paths.kafka_config.write_text(
        render_server_properties(template, settings, paths, node_id, count), encoding="utf-8"
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


def format_storage(java: str, cid: str, paths: StackPaths, count: int = 1) -> None:
    """Format a node's KRaft log folder once: a standalone, single-voter quorum for one
    node; for several, the static voters its configuration names."""
    standalone = ["--standalone"] if count == 1 else []
    argv = java_argv(
        java,
        paths,
        "kafka.tools.StorageTool",
        "format",
        *standalone,
        "-t",
        cid,
        "-c",
        str(paths.kafka_config),
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise StackError(f"formatting {paths.kafka_data} failed: {last}")


def node_pid(node: nodes.Node) -> tuple[int | None, list[str]]:
    """The pid of a running node of ours (stale pid files are removed and noted)."""
    paths = node.paths
    return owned_pid(paths.kafka_pid, str(paths.kafka_config), PROGRAM, "Kafka")


def broker_pids(settings: StackSettings) -> tuple[list[int | None], list[str]]:
    """Every node's pid (None: not running), in node order, and notes."""
    pids: list[int | None] = []
    notes: list[str] = []
    for node in nodes.nodes(settings):
        pid, said = node_pid(node)
        pids.append(pid)
        notes += said
    return pids, notes


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


def wait_ready(
    members: Sequence[tuple[nodes.Node, int]], timeout_s: float = READY_TIMEOUT_S
) -> None:
    """Block until a metadata request names every node as a broker, or fail with the log
    tail of a node that exited or of the first one: topics replicated to every node
    need them all registered, and one dead node is reason enough to stop waiting."""
    first = members[0][0]
    address = ",".join(node.address for node, _ in members)
    admin = AdminClient(quiet_admin_config(address))
    deadline = time.monotonic() + timeout_s
    announced = False
    while True:
        for node, pid in members:
            if not is_alive(pid):
                node.paths.kafka_pid.unlink(missing_ok=True)
                raise StackError(
                    f"the Kafka broker on {node.address} exited while starting; "
                    f"{_failure_excerpt(node.paths)}"
                )
        if any(port_answers(n.settings.host, n.settings.kafka_port) for n, _ in members):
            try:
                if len(admin.list_topics(timeout=5).brokers) >= len(members):
                    return
            except KafkaException:
                pass
        if time.monotonic() >= deadline:
            raise StackError(
                f"the Kafka broker on {address} was not ready within {timeout_s:.0f}s; "
                f"{_failure_excerpt(first.paths)}"
            )
        if not announced:
            progress(f"waiting for the Kafka broker on {address}…")
            announced = True
        time.sleep(0.5)


def check_ports(settings: StackSettings) -> None:
    """Fail early if a foreign process holds a port of a node of ours that is not running."""
    for node, pid in zip(nodes.nodes(settings), broker_pids(settings)[0], strict=True):
        if pid is not None:
            continue
        for port, var in (
            (node.settings.kafka_port, "TRACEBOUND_STACK_KAFKA_PORT"),
            (node.settings.controller_port, "TRACEBOUND_STACK_CONTROLLER_PORT"),
        ):
            if port_in_use(node.settings.host, port):
                raise StackError(
                    f"port {port} on {node.settings.host} is in use by another process; set {var}"
                )


def _spawn(java: str, settings: StackSettings, node: nodes.Node, count: int) -> tuple[int, str]:
    """Configure (and on first start format) a node and start it; return its pid and a note."""
    paths = node.paths
    write_config(settings, paths, node.node_id, count)
    cid, notes = cluster_id(paths)
    note = "; ".join(notes)
    if formatted_cluster_id(paths) is None:
        format_storage(java, cid, paths, count)
        note = f"formatted {paths.kafka_data} for cluster {cid}"
    argv = java_argv(java, paths, PROGRAM, str(paths.kafka_config), heap=settings.kafka_heap)
    with paths.kafka_out.open("a", encoding="utf-8") as out:
        out.write(f"{START_BANNER} {time.strftime('%Y-%m-%dT%H:%M:%S%z')}: {' '.join(argv)}\n")
    pid = spawn_detached(argv, paths.kafka_out, os.environ)
    write_pid(paths.kafka_pid, pid)
    return pid, note


def start_broker(settings: StackSettings | None = None) -> list[str]:
    """Start every node of ours not running yet, wait for all; return notes."""
    settings = settings or StackSettings()
    count = nodes.record_count(settings)
    pids, notes = broker_pids(settings)
    started: list[nodes.Node] = []
    if None in pids:
        java = find_java()
        check_ports(settings)
        resolve_jars(settings, StackPaths.from_settings(settings))
        started = [n for n, pid in zip(nodes.nodes(settings), pids, strict=True) if pid is None]
        # The cluster id first (one file for all nodes), then every node at once: each
        # format is a JVM start of its own, and the quorum needs them all anyway.
        notes += cluster_id(StackPaths.from_settings(settings))[1]
        with ThreadPoolExecutor(len(started)) as pool:
            spawned = list(pool.map(lambda n: _spawn(java, settings, n, count), started))
        for node, (new, note) in zip(started, spawned, strict=True):
            notes += [note] if note else []
            pids[node.node_id - 1] = new
    wait_ready([(n, pid) for n, pid in zip(nodes.nodes(settings), pids, strict=True) if pid])
    notes += [
        f"started Kafka {settings.kafka_version} (pid {pids[n.node_id - 1]}) on {n.address}"
        for n in started
    ]
    return notes


def _stop_node(node: nodes.Node) -> list[str]:
    pid, notes = node_pid(node)
    if pid is None:
        return notes
    label = "Kafka broker" if node.node_id == 1 else f"Kafka broker {node.node_id}"
    notes.append(terminate(pid, label, STOP_TIMEOUT_S))
    node.paths.kafka_pid.unlink(missing_ok=True)
    return notes


def stop_broker(settings: StackSettings | None = None) -> list[str]:
    """Stop our nodes, each only if its pid file still names our process, and wait.

    All at once: a node stopped after the others had gone would wait in vain for a
    quorum of controllers to acknowledge its controlled shutdown.
    """
    settings = settings or StackSettings()
    every = nodes.nodes(settings)
    with ThreadPoolExecutor(len(every)) as pool:
        return [note for said in pool.map(_stop_node, every) for note in said]
