"""The bench's CPU accounting: a process with its children, the stack's processes, the figure."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from bench.figures import stack_cpu_figure
from bench.processes import CpuMeter, settle, stack_processes, tree_cpu_seconds
from tracebound.stack.services import ServiceState
from tracebound.stack.stack import ComponentStatus, StackStatus

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


@pytest.mark.slow
def test_a_child_that_exited_still_counts_for_its_parent() -> None:
    meter = CpuMeter({"me": [os.getpid()]})
    subprocess.run([sys.executable, "-c", BURN], check=True)  # reaped: the parent's cutime
    assert meter.spent()["me"] >= 0.3


@pytest.mark.slow
def test_a_live_child_counts_for_its_parent() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", BURN + "import sys\nsys.stdin.read()\n"], stdin=subprocess.PIPE
    )
    try:
        before = tree_cpu_seconds(os.getpid())
        while tree_cpu_seconds(child.pid) < 0.3:
            pass
        assert tree_cpu_seconds(os.getpid()) - before >= 0.3
    finally:
        child.communicate(b"")


def test_a_process_that_is_gone_reads_nan() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert math.isnan(tree_cpu_seconds(gone.pid))


@pytest.mark.slow
def test_settling_waits_while_the_processes_stay_busy_and_no_longer() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert settle({"busy": [busy.pid]}, busy_cores=0.5, timeout_s=1.5) >= 1.5
    finally:
        busy.kill()
        busy.wait()
    assert settle({"me": [os.getpid()]}, busy_cores=0.5, timeout_s=30) < 30


def _component(name: str, pid: int | None, running: bool = True) -> ComponentStatus:
    return ComponentStatus(name, running, pid, "127.0.0.1:1", "/data")


def _service(name: str, pid: int | None, running: bool = True) -> ServiceState:
    return ServiceState(name, running, pid, f"{name}.log", None)


def test_the_stack_processes_are_the_brokers_postgres_and_the_services_but_the_roles() -> None:
    status = StackStatus(
        kafka_bootstrap="127.0.0.1:1",
        pg_dsn="postgresql://x@127.0.0.1:2/x",
        kafka=_component("kafka", 10),
        postgres=_component("postgres", 20),
        topics=(),
        services=(
            _service("ingest", 30),
            _service("executor", 40),
            _service("executor-2", 41),
            _service("projections", 50),
            _service("sentinel", None, running=False),
        ),
        more_brokers=(_component("kafka-2", 11), _component("kafka-3", 12, running=False)),
    )
    assert stack_processes(status, ("planner", "executor")) == {
        "kafka": [10, 11],
        "postgres": [20],
        "ingest": [30],
        "projections": [50],
    }


def test_the_figure_sums_the_roles_and_names_every_other_process() -> None:
    roles = {"planner": 0.2, "executor": 0.9, "gatekeeper": 0.4, "verifier": 0.5, "composer": 0.5}
    burst = {"cpu_ms_per_request": roles, "stack_cpu_ms_per_request": {"kafka": 3.0}}
    loop = {"cores": {"planner": 0.1, "executor": 0.2, "kafka": 0.6, "postgres": 0.1}}
    figure = stack_cpu_figure([burst], [loop], 50)
    assert figure.text == (
        "burst roles 2.50, kafka 3.00 ms/request;"
        " at 50/s kafka 0.60, roles 0.30, postgres 0.10 cores busy"
    )
