"""The private PostgreSQL cluster: binaries, initdb, start, database, stop.

The stack never touches a system-wide PostgreSQL service: it runs its own cluster from
the distribution's server binaries with the data folder, socket folder and log inside
the state folder and TCP only on loopback. ``trust`` authentication is acceptable for
exactly that reason (nothing outside this machine can connect).

PostgreSQL refuses to run as root, so as root every server binary runs as the
``postgres`` system user (``runuser -u postgres --``) and the folders it writes are
chowned to it. Its own ``postmaster.pid`` serves as the pid file.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack import apt, progress
from tracebound.stack.paths import StackPaths, grant_search
from tracebound.stack.process import (
    is_alive,
    owned_pid,
    port_answers,
    port_in_use,
    tail,
    terminate,
)

SERVICE_USER = "postgres"
DB_USER = "tracebound"
DB_NAME = "tracebound"
BIN_ROOT = Path("/usr/lib/postgresql")
# The major of the distribution's ``postgresql`` package on the system the stack is made
# for (Debian 12); compose/docker-compose.yml runs the same (tests/unit/test_compose.py).
DISTRIBUTION_MAJOR = "15"
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 60
_SOCKET_PATH_MAX = 107  # sizeof(sun_path) - 1 on Linux
INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package "
    "postgresql (as root: apt-get install postgresql)"
)


@dataclass(frozen=True, slots=True)
class Binaries:
    bin_dir: Path
    major: str

    @property
    def initdb(self) -> str:
        return str(self.bin_dir / "initdb")

    @property
    def pg_ctl(self) -> str:
        return str(self.bin_dir / "pg_ctl")


def dsn(settings: StackSettings) -> str:
    return f"postgresql://{DB_USER}@{settings.host}:{settings.pg_port}/{DB_NAME}"


def _major(version_dir: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version_dir.name)) or (0,)


def find_binaries(wanted_major: str | None = None) -> Binaries | None:
    """Server binaries: ``wanted_major`` if given and installed, else the newest found."""
    candidates = sorted(
        (d for d in BIN_ROOT.glob("*") if (d / "bin" / "initdb").is_file()), key=_major
    )
    if wanted_major is not None:
        candidates = [d for d in candidates if d.name == wanted_major] or candidates
    if candidates:
        return Binaries(candidates[-1] / "bin", candidates[-1].name)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):  # other layouts: ask the binary for its version
        done = subprocess.run(
            [initdb, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        match = re.search(r"(\d+)\.\d+", done.stdout)
        if match:
            return Binaries(Path(initdb).resolve().parent, match.group(1))
    return None


def install_binaries(paths: StackPaths) -> Binaries:
    """Install the distribution's PostgreSQL with apt-get (root only) and find it."""
    apt.install(["postgresql"], paths.apt_log, INSTALL_HINT)
    found = find_binaries()
    if found is None:
        raise StackError(f"{INSTALL_HINT}; apt-get reported success (log: {paths.apt_log})")
    return found


def _service_account() -> pwd.struct_passwd | None:
    """The account the server runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise StackError(
            f"PostgreSQL refuses to run as root and there is no {SERVICE_USER!r} user; "
            "install the Debian package postgresql or run tracebound as a normal user"
        ) from None


def _run(argv: list[str], paths: StackPaths, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run a server binary, as the service account when we are root."""
    if _service_account() is not None:
        argv = ["runuser", "-u", SERVICE_USER, "--", *argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        argv,
        cwd=paths.pg_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _prepare_dirs(paths: StackPaths) -> list[str]:
    """Create data, socket and log locations writable by the account running the server."""
    for folder in (paths.pg_dir, paths.pg_data, paths.pg_run):
        folder.mkdir(parents=True, exist_ok=True)
    paths.pg_data.chmod(0o700)
    paths.pg_log.touch(exist_ok=True)
    account = _service_account()
    if account is None:
        return []
    for target in (paths.pg_data, paths.pg_run, paths.pg_log):
        os.chown(target, account.pw_uid, account.pw_gid)
    gids = set(os.getgrouplist(SERVICE_USER, account.pw_gid))
    opened = grant_search(paths.pg_dir, account.pw_uid, gids, SERVICE_USER)
    return [f"granted the {SERVICE_USER} user search access to {p} (ACL)" for p in opened]


def data_version(paths: StackPaths) -> str | None:
    try:
        return (paths.pg_data / "PG_VERSION").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


def _initdb(binaries: Binaries, paths: StackPaths) -> None:
    argv = [
        binaries.initdb,
        "-D",
        str(paths.pg_data),
        "-U",
        DB_USER,
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-locale",
    ]
    done = _run(argv, paths, 300)
    with paths.pg_log.open("a", encoding="utf-8") as log:
        log.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise StackError(f"initdb failed: {tail(paths.pg_log, 1)} (log: {paths.pg_log})")


def server_pid(settings: StackSettings) -> tuple[int | None, list[str]]:
    """The postmaster pid of our cluster; a stale ``postmaster.pid`` is removed and noted."""
    paths = StackPaths.from_settings(settings)
    return owned_pid(paths.pg_pid, str(paths.pg_data), "postgres", "PostgreSQL", adopt=False)


def ensure_database(settings: StackSettings) -> list[str]:
    """Create the ``tracebound`` database unless it exists."""
    try:
        with psycopg.connect(
            host=settings.host,
            port=settings.pg_port,
            user=DB_USER,
            dbname="postgres",
            connect_timeout=10,
            autocommit=True,
        ) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone():
                return []
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))
    except psycopg.Error as exc:
        raise StackError(f"cannot prepare database {DB_NAME}: {str(exc).strip()}") from exc
    return [f"created database {DB_NAME}"]


def check_port(settings: StackSettings) -> None:
    """Fail early if a foreign process holds the PostgreSQL port."""
    if port_in_use(settings.host, settings.pg_port):
        raise StackError(
            f"port {settings.pg_port} on {settings.host} is in use by another process; "
            "set TRACEBOUND_STACK_PG_PORT"
        )


def _wait_answering(settings: StackSettings, paths: StackPaths, pid: int) -> None:
    """Wait for a postmaster that is ours but still starting (or recovering) to listen."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not port_answers(settings.host, settings.pg_port):
        if not is_alive(pid) or time.monotonic() >= deadline:
            raise StackError(
                f"PostgreSQL (pid {pid}) does not answer on {settings.host}:{settings.pg_port}; "
                f"see {paths.pg_log}: {tail(paths.pg_log, 3)}"
            )
        time.sleep(0.5)


def start_server(settings: StackSettings | None = None) -> list[str]:
    """Start our cluster unless it already runs; return notes about what happened."""
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    pid, notes = server_pid(settings)
    if pid is not None:
        _wait_answering(settings, paths, pid)
        return notes + ensure_database(settings)
    check_port(settings)
    socket_path = paths.pg_run / f".s.PGSQL.{settings.pg_port}"
    if len(str(socket_path)) > _SOCKET_PATH_MAX:
        raise StackError(
            f"{socket_path} is too long for a Unix socket; use a shorter TRACEBOUND_STACK_STATE_DIR"
        )
    version = data_version(paths)
    binaries = find_binaries(version) or install_binaries(paths)
    if version is not None and version != binaries.major:
        raise StackError(
            f"{paths.pg_data} was created by PostgreSQL {version} but only {binaries.major} is "
            "installed; install that version or run `tracebound down --purge`"
        )
    notes += _prepare_dirs(paths)
    if version is None:
        progress(f"creating the PostgreSQL {binaries.major} cluster in {paths.pg_data}…")
        _initdb(binaries, paths)
        notes.append(f"initialised {paths.pg_data} (PostgreSQL {binaries.major})")
    options = shlex.join(
        [
            "-p",
            str(settings.pg_port),
            "-k",
            str(paths.pg_run),
            "-c",
            f"listen_addresses={settings.host}",
        ]
    )
    argv = [
        binaries.pg_ctl,
        "start",
        "-w",
        "-t",
        str(START_TIMEOUT_S),
        "-D",
        str(paths.pg_data),
        "-l",
        str(paths.pg_log),
        "-o",
        options,
    ]
    done = _run(argv, paths, START_TIMEOUT_S + 30)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
        raise StackError(f"{said}; see {paths.pg_log}: {tail(paths.pg_log, 3)}")
    pid, _ = server_pid(settings)
    notes.append(
        f"started PostgreSQL {binaries.major} (pid {pid}) on {settings.host}:{settings.pg_port}"
    )
    return notes + ensure_database(settings)


def stop_server(settings: StackSettings | None = None) -> list[str]:
    """Fast shutdown of our cluster (clients are disconnected, no recovery needed later)."""
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    pid, notes = server_pid(settings)
    if pid is None:
        return notes
    binaries = find_binaries(data_version(paths))
    if binaries is not None:
        argv = [
            binaries.pg_ctl,
            "stop",
            "-D",
            str(paths.pg_data),
            "-m",
            "fast",
            "-w",
            "-t",
            str(STOP_TIMEOUT_S),
        ]
        if _run(argv, paths, STOP_TIMEOUT_S + 30).returncode == 0:
            notes.append(f"stopped PostgreSQL (pid {pid})")
            return notes
    # pg_ctl is gone or failed: SIGINT is PostgreSQL's own "fast shutdown" request.
    notes.append(terminate(pid, "PostgreSQL", STOP_TIMEOUT_S, first_signal=signal.SIGINT))
    paths.pg_pid.unlink(missing_ok=True)
    return notes
