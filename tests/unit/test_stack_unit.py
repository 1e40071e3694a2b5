"""Fast checks of the local stack's pieces that need no broker and no database."""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tracebound import cli as tracebound_cli
from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack import cli, jars, kafka, paths, process
from tracebound.stack.lag import Lag
from tracebound.stack.paths import StackPaths
from tracebound.stack.service_env import EnvRecord, write_record
from tracebound.stack.services import (
    ROLE_INPUTS,
    ServiceState,
    check_roles,
    service_env,
    start_services,
)
from tracebound.stack.stack import ComponentStatus, StackStatus, TopicStatus


@pytest.fixture
def settings(tmp_path: Path) -> StackSettings:
    return StackSettings(
        state_dir=tmp_path / "state",
        cache_dir=tmp_path / "cache",
        kafka_port=29092,
        controller_port=29093,
        partitions=5,
    )


@pytest.fixture
def layout(settings: StackSettings) -> StackPaths:
    return StackPaths.from_settings(settings)


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A live process whose command line carries a unique marker."""
    marker = str(tmp_path / f"marker-{uuid.uuid4().hex}")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    # Until the child has exec'd, /proc shows the forked parent's command line.
    deadline = time.monotonic() + 10
    while marker not in process.cmdline(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield proc, marker
    finally:
        proc.kill()
        proc.wait()


# --- template rendering ----------------------------------------------------------------


def test_server_properties_render_ports_data_dir_and_partitions(
    settings: StackSettings, layout: StackPaths
) -> None:
    kafka.write_config(settings, layout)
    text = layout.kafka_config.read_text(encoding="utf-8")
    props = dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:29092"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:29093"
    assert props["log.dirs"] == str(layout.kafka_data)
    assert props["num.partitions"] == "5"
    assert props["auto.create.topics.enable"] == "false"
    assert not any("${" in value for value in props.values())
    assert "${sys:kafka.logs.dir}/server.log" in layout.kafka_log4j.read_text(encoding="utf-8")


def test_unknown_placeholder_is_a_stack_error(settings: StackSettings, layout: StackPaths) -> None:
    with pytest.raises(StackError, match="placeholder"):
        kafka.render_server_properties("port=${no_such_value}\n", settings, layout)


# --- cluster id ------------------------------------------------------------------------


def _write_meta(layout: StackPaths, cluster_id: str) -> None:
    layout.kafka_data.mkdir(parents=True, exist_ok=True)
    (layout.kafka_data / "meta.properties").write_text(
        f"#\nnode.id=1\ndirectory.id=abc\nversion=1\ncluster.id={cluster_id}\n", encoding="utf-8"
    )


def test_cluster_id_is_created_once_and_looks_like_a_kafka_uuid(layout: StackPaths) -> None:
    first, notes = kafka.cluster_id(layout)
    again, _ = kafka.cluster_id(layout)
    assert first == again
    assert notes == []
    assert len(first) == 22 and not first.startswith("-")
    assert len(base64.urlsafe_b64decode(first + "==")) == 16


def test_cluster_id_mismatch_names_the_folder_and_the_fix(layout: StackPaths) -> None:
    kafka.cluster_id(layout)
    _write_meta(layout, "AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(StackError) as err:
        kafka.cluster_id(layout)
    assert str(layout.kafka_data) in str(err.value)
    assert "tracebound down --purge" in str(err.value)


def test_matching_cluster_id_is_accepted(layout: StackPaths) -> None:
    cid, _ = kafka.cluster_id(layout)
    _write_meta(layout, cid)
    assert kafka.cluster_id(layout)[0] == cid
    assert kafka.formatted_cluster_id(layout) == cid


def test_lost_cluster_id_file_is_recovered_from_the_data(layout: StackPaths) -> None:
    _write_meta(layout, "BBBBBBBBBBBBBBBBBBBBBB")
    cid, notes = kafka.cluster_id(layout)
    assert cid == "BBBBBBBBBBBBBBBBBBBBBB"
    assert notes and "recovered" in notes[0]
    assert layout.kafka_cluster_id.read_text(encoding="utf-8").strip() == cid


# --- pid files -------------------------------------------------------------------------


def test_pid_file_of_an_exited_process_is_removed(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    pid_file = tmp_path / "x.pid"
    process.write_pid(pid_file, gone.pid)
    pid, notes = process.owned_pid(pid_file, str(tmp_path), "true", "X", adopt=False)
    assert pid is None
    assert not pid_file.exists()
    assert len(notes) == 1 and "stale" in notes[0]


def test_pid_file_naming_a_foreign_process_is_stale(
    tmp_path: Path, sleeper: tuple[subprocess.Popen[bytes], str]
) -> None:
    proc, _ = sleeper
    pid_file = tmp_path / "x.pid"
    process.write_pid(pid_file, proc.pid)
    program = Path(sys.executable).name
    pid, notes = process.owned_pid(pid_file, "/some/other/config", program, "X", adopt=False)
    assert pid is None and not pid_file.exists() and notes
    assert proc.poll() is None, "a foreign process must never be touched"


def test_live_process_with_our_marker_is_ours_and_adopted_without_pid_file(
    tmp_path: Path, sleeper: tuple[subprocess.Popen[bytes], str]
) -> None:
    proc, marker = sleeper
    program = Path(sys.executable).name
    pid_file = tmp_path / "x.pid"
    process.write_pid(pid_file, proc.pid)
    assert process.owned_pid(pid_file, marker, program, "X") == (proc.pid, [])
    pid_file.unlink()
    pid, notes = process.owned_pid(pid_file, marker, program, "X")
    assert pid == proc.pid
    assert "adopted" in notes[0]
    assert process.read_pid(pid_file) == proc.pid


def test_unreadable_pid_file_is_removed(tmp_path: Path) -> None:
    pid_file = tmp_path / "x.pid"
    pid_file.write_text("not a pid\n", encoding="utf-8")
    pid, notes = process.owned_pid(pid_file, "m", "p", "X", adopt=False)
    assert pid is None and not pid_file.exists() and "unreadable" in notes[0]


def test_detached_process_gets_its_own_session_and_stops_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "out.log"
    pid = process.spawn_detached(["/bin/sh", "-c", "echo hello; exec sleep 60"], out, os.environ)
    try:
        assert process.is_alive(pid)
        assert os.getsid(pid) == pid
        deadline = time.monotonic() + 10
        while "hello" not in out.read_text(encoding="utf-8") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "hello" in out.read_text(encoding="utf-8")
        message = process.terminate(pid, "sleeper", 10)
        assert message == f"stopped sleeper (pid {pid})"
        assert not process.is_alive(pid)
    finally:
        if process.is_alive(pid):
            os.kill(pid, signal.SIGKILL)


# --- ports -----------------------------------------------------------------------------


def test_port_in_use_detects_a_listener_we_bind_ourselves() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert process.port_in_use("127.0.0.1", port)
        assert process.port_answers("127.0.0.1", port)
    assert not process.port_in_use("127.0.0.1", port)
    assert not process.port_answers("127.0.0.1", port, timeout_s=0.5)


# --- helpers ---------------------------------------------------------------------------


def test_last_maven_error_skips_the_help_boilerplate() -> None:
    output = (
        "[ERROR] Failed to execute goal on project x: Could not resolve dependencies -> [Help 1]\n"
        "[ERROR] \n"
        "[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n"
        "[ERROR] Re-run Maven using the -X switch to enable full debug logging.\n"
        "[ERROR] For more information about the errors and possible solutions, read:\n"
        "[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/Example\n"
    )
    assert (
        jars.last_maven_error(output)
        == "Failed to execute goal on project x: Could not resolve dependencies"
    )
    assert jars.last_maven_error("") == "no output"


def test_tail_joins_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("one\n\ntwo\nthree\n", encoding="utf-8")
    assert process.tail(log, 2) == "two | three"
    assert process.tail(tmp_path / "missing.log") == "(no log yet)"


def test_acl_search_entry_keeps_the_group_class_closed() -> None:
    minimal = [(0x01, 7, 0xFFFFFFFF), (0x04, 0, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
    entries = paths.with_user_search(minimal, uid=101)
    assert (0x02, 1, 101) in entries
    assert (0x10, 1, 0xFFFFFFFF) in entries  # mask: the named user's x, nothing for the group
    assert (0x04, 0, 0xFFFFFFFF) in entries
    decoded = paths.decode_acl(paths.encode_acl(entries))
    assert [e[0] for e in decoded] == [0x01, 0x02, 0x04, 0x10, 0x20]
    again = paths.with_user_search(decoded, uid=101)
    assert sorted(again) == sorted(entries)


# --- status model and CLI --------------------------------------------------------------


def _status(topic_partitions: int | None) -> StackStatus:
    return StackStatus(
        kafka_bootstrap="127.0.0.1:19092",
        pg_dsn="postgresql://tracebound@127.0.0.1:15432/tracebound",
        kafka=ComponentStatus("kafka", True, 10, "127.0.0.1:19092", "/s/kafka/data"),
        postgres=ComponentStatus("postgres", True, 11, "127.0.0.1:15432", "/s/postgres/data"),
        topics=(TopicStatus("a", 3, True), TopicStatus("b", topic_partitions, True)),
        messages=("note one",),
    )


def test_status_is_healthy_only_when_every_topic_exists() -> None:
    assert _status(3).healthy
    sick = _status(None)
    assert not sick.healthy
    assert sick.to_dict()["topics"][1] == {"name": "b", "state": "missing", "partitions": None}
    lines = cli.format_status(sick)
    assert lines[0].split()[:4] == ["kafka", "running", "pid", "10"]
    assert lines[1].split()[-1] == "/s/postgres/data"
    assert any(line.split()[1:3] == ["b", "missing"] for line in lines)
    assert lines[-1] == "note: note one"


def test_cli_registers_up_down_status_with_handlers() -> None:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    up = parser.parse_args(["up", "--infra-only"])
    down = parser.parse_args(["down", "--purge"])
    status = parser.parse_args(["status", "--json"])
    assert up.infra_only and down.purge and status.json
    assert callable(up.handler) and callable(down.handler) and callable(status.handler)


def test_restart_takes_role_names_and_rejects_unknown_ones_with_the_valid_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["restart", "executor", "planner"]).roles == ["executor", "planner"]
    assert parser.parse_args(["restart"]).roles == []
    assert check_roles(["executor", "planner"]) == ("planner", "executor")  # start order
    assert check_roles([]) == tuple(ROLE_INPUTS)
    assert tracebound_cli.main(["restart", "executor", "exectuor"]) == 2
    err = capsys.readouterr().err
    assert "unknown role exectuor" in err
    assert ", ".join(ROLE_INPUTS) in err


def test_status_shows_a_service_s_mode_backends_and_whether_its_settings_are_current() -> None:
    env = {"TRACEBOUND_EXECUTOR_MODE": "llm", "TRACEBOUND_TOOLS_METRICS_BACKEND": "prometheus"}
    record = EnvRecord.of("executor", 10, env)
    changed = ServiceState(
        "executor", True, 10, "/s/x.log", Lag(3, exact=False), record, ("X changed",)
    )
    status = replace(_status(3), services=(changed,))
    line = cli.format_status(status)[-2]
    assert "lag ~3" in line and "mode llm" in line and "metrics=prometheus" in line
    assert "settings changed (X changed; tracebound up applies them)" in line
    shown = status.to_dict()["services"][0]
    assert (shown["lag"], shown["lag_exact"], shown["mode"]) == (3, False, "llm")
    assert shown["backends"]["metrics"] == "prometheus"
    assert shown["settings"] == "changed"
    unknown = ServiceState("gatekeeper", True, 11, "/s/g.log", Lag(0, exact=True))
    line = cli.format_status(replace(status, services=(unknown,)))[-2]
    assert "lag 0" in line and "mode" not in line
    assert "settings unknown (tracebound restart gatekeeper applies the current ones)" in line


def test_up_leaves_a_service_without_a_record_running_and_names_the_command(
    settings: StackSettings,
) -> None:
    folder = settings.state_dir.absolute() / "services"
    folder.mkdir(parents=True)
    marker = f"tracebound.state={settings.state_dir.absolute()}"
    argv = [sys.executable, "-X", marker, "-c", "import time; time.sleep(60)", "services.sentinel"]
    proc = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 10
        while marker not in process.cmdline(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        process.write_pid(folder / "sentinel.pid", proc.pid)
        messages = start_services(settings, {}, ("sentinel",))
        assert messages == [
            f"sentinel (pid {proc.pid}) runs with settings unknown to this version (no record"
            " of them); to apply the current ones run: tracebound restart sentinel"
        ]
        assert proc.poll() is None
        write_record(folder, EnvRecord.of("sentinel", proc.pid, service_env({})))
        assert start_services(settings, {}, ("sentinel",)) == []  # same settings: untouched
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
