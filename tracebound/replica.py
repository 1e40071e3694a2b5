"""Who a replica is: its stable id, and proof that no other live process shares it.

A replica's id names its ``transactional.id`` (``<service>-<replica>``), its
static group membership (``group.instance.id``) and its ``client.id``. Two live
processes with one id fence each other forever: each start bumps the producer
epoch and replaces the other's group membership, and both rebuild in a loop
with nothing an operator would read as "duplicate identity". So:

* the default id is the host name (a pod's name on Kubernetes), unique per host
  without configuration; several replicas on one host set their own;
* on one host, the id is held by an advisory lock for the life of the process:
  a second process with the same id (for the same cluster) exits at once with
  :class:`ReplicaInUse`, and the first keeps answering;
* across hosts, the broker tells a replaced member ``FENCED_INSTANCE_ID``; the
  loop turns that into the same error instead of rejoining and fencing back.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import IO

from tracebound.errors import TraceboundError

_NOT_ALLOWED = re.compile(r"[^a-z0-9._-]+")
_MAX_ID = 100


class ReplicaInUse(TraceboundError):
    """Another live process uses this replica's ``transactional.id``."""

    def __init__(self, transactional_id: str, holder: str) -> None:
        super().__init__(
            f"another process uses transactional.id {transactional_id} ({holder}); give each"
            " replica its own id (TRACEBOUND_<SERVICE>_REPLICA_ID)"
        )
        self.transactional_id = transactional_id


def default_replica_id() -> str:
    """The host name, lower-cased to the characters Kafka ids and file names take."""
    return replica_id_of(socket.gethostname())


def replica_id_of(name: str) -> str:
    cleaned = _NOT_ALLOWED.sub("-", name.strip().lower()).strip("-.")
    return cleaned[:_MAX_ID] or "0"


def lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"tracebound-replicas-{os.getuid()}"


class ReplicaLock:
    """An exclusive ``flock`` on ``<tmp>/tracebound-replicas-<uid>/<cluster+id>.lock``.

    The cluster's bootstrap servers are part of the name: the same role and id
    against another cluster is another identity. The kernel drops the lock when
    the process dies, however it dies, so a crashed replica never blocks its
    restart.
    """

    def __init__(self, transactional_id: str, bootstrap_servers: str) -> None:
        self.transactional_id = transactional_id
        digest = hashlib.sha256(f"{bootstrap_servers}\0{transactional_id}".encode()).hexdigest()
        self.path = lock_dir() / f"{replica_id_of(transactional_id)}-{digest[:12]}.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Hold the lock, or raise :class:`ReplicaInUse` naming the holder's pid."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise ReplicaInUse(self.transactional_id, f"pid {holder} on this host") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the descriptor drops the flock
            self._file = None

    def __enter__(self) -> ReplicaLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
