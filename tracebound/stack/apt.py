"""Debian packages the stack and its tests run from, installed with apt-get when missing.

Why a policy file: installing ``postgresql``, ``prometheus`` or
``prometheus-alertmanager`` would otherwise start the packages' own system services
(a second PostgreSQL cluster, a Prometheus on port 9090). The stack only ever runs
the binaries itself, on loopback, from its own state folder; so while apt-get runs,
``/usr/sbin/policy-rc.d`` answers 101 ("action forbidden"), the Debian way of telling
maintainer scripts not to start anything. A policy file that was already there is
left as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tracebound.errors import StackError
from tracebound.stack import progress
from tracebound.stack.process import tail

APT_TIMEOUT_S = 1800.0
POLICY_RC = Path("/usr/sbin/policy-rc.d")
_FORBID = "#!/bin/sh\n# written while tracebound installs packages: start no services\nexit 101\n"


@contextmanager
def services_forbidden(policy: Path = POLICY_RC) -> Iterator[None]:
    """Maintainer scripts may not start services while the block runs."""
    if policy.exists():
        yield
        return
    policy.write_text(_FORBID, encoding="utf-8")
    policy.chmod(0o755)
    try:
        yield
    finally:
        policy.unlink(missing_ok=True)


def install(packages: Sequence[str], log_path: Path, hint: str) -> None:
    """``apt-get install`` the packages (root only), none of their services started.

    ``hint`` is the error shown when we are not root: what to install by hand.
    """
    if os.geteuid() != 0:
        raise StackError(hint)
    progress(f"installing {', '.join(packages)} with apt-get (first run only)…")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = "-oDPkg::Lock::Timeout=600"  # another install in progress: wait, don't fail
    steps = (
        ["apt-get", wait, "update"],
        ["apt-get", wait, "install", "-y", "--no-install-recommends", *packages],
    )
    with log_path.open("a", encoding="utf-8") as log, services_forbidden():
        for argv in steps:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            try:
                done = subprocess.run(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=APT_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise StackError(f"{argv[0]} failed: {exc} (log: {log_path})") from exc
            if done.returncode != 0:
                raise StackError(
                    f"`{' '.join(argv)}` failed: {tail(log_path, 1)} (full output: {log_path})"
                )


def ensure_binary(binary: str, package: str, log_path: Path) -> str:
    """The path of ``binary``, installing Debian's ``package`` first when it is missing."""
    found = shutil.which(binary)
    if found:
        return found
    hint = (
        f"{binary} not found: install the Debian package {package} "
        f"(as root: apt-get install {package})"
    )
    install([package], log_path, hint)
    found = shutil.which(binary)
    if not found:
        raise StackError(f"{hint}; apt-get reported success (log: {log_path})")
    return found
