"""Where the local stack keeps its files.

Everything mutable lives under ``StackSettings.state_dir`` (one sub-folder per server,
so ``down --purge`` can drop exactly the data it owns); everything that is merely
downloaded (the Kafka jars, the Maven log) lives under ``StackSettings.cache_dir`` so
purging state never forces a new download.

PostgreSQL refuses to run as root, so when root starts the stack the server runs as
the ``postgres`` system user and must be able to *traverse* the folders above its data
directory. The default state folder sits under ``/root`` (mode 0700); rather than
opening that folder to everybody we add a single ACL entry granting the ``postgres``
user search permission only (the equivalent of ``setfacl -m u:postgres:x``), written
directly as the kernel's ``system.posix_acl_access`` attribute so no extra package is
needed.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from tracebound.errors import StackError
from tracebound.settings import StackSettings

# The local stack's own Kafka files, shipped inside the package (next to this module).
CONFIG_DIR = Path(__file__).resolve().parent / "config"
SERVER_PROPERTIES_TEMPLATE = CONFIG_DIR / "server.properties.template"
LOG4J2_TEMPLATE = CONFIG_DIR / "log4j2.xml"
KAFKA_POM = CONFIG_DIR / "kafka" / "pom.xml"


@dataclass(frozen=True, slots=True)
class StackPaths:
    """Every file and folder the stack reads or writes, derived from the settings."""

    state_dir: Path
    cache_dir: Path
    lock_file: Path
    # Kafka
    kafka_dir: Path
    kafka_data: Path
    kafka_logs: Path
    kafka_out: Path
    kafka_pid: Path
    kafka_config: Path
    kafka_log4j: Path
    kafka_cluster_id: Path
    kafka_brokers: Path
    kafka_home: Path
    kafka_libs: Path
    kafka_libs_marker: Path
    maven_log: Path
    # PostgreSQL
    pg_dir: Path
    pg_data: Path
    pg_run: Path
    pg_log: Path
    pg_pid: Path
    apt_log: Path

    @classmethod
    def from_settings(cls, settings: StackSettings) -> StackPaths:
        state = settings.state_dir.expanduser().absolute()
        cache = settings.cache_dir.expanduser().absolute()
        kafka = state / "kafka"
        kafka_home = cache / f"kafka-{settings.kafka_version}"
        pg = state / "postgres"
        return cls(
            state_dir=state,
            cache_dir=cache,
            lock_file=state / "stack.lock",
            **node_files(kafka),
            kafka_cluster_id=kafka / "cluster.id",
            kafka_brokers=kafka / "brokers",
            kafka_home=kafka_home,
            kafka_libs=kafka_home / "libs",
            kafka_libs_marker=kafka_home / "libs.complete",
            maven_log=kafka_home / "maven.log",
            pg_dir=pg,
            pg_data=pg / "data",
            pg_run=pg / "run",
            pg_log=pg / "postgres.log",
            pg_pid=pg / "data" / "postmaster.pid",
            apt_log=cache / "apt.log",
        )


def node_files(folder: Path) -> dict[str, Path]:
    """The files of one Kafka node kept in ``folder`` (its data, logs, pid, config)."""
    return {
        "kafka_dir": folder,
        "kafka_data": folder / "data",
        "kafka_logs": folder / "logs",
        "kafka_out": folder / "kafka.out",
        "kafka_pid": folder / "kafka.pid",
        "kafka_config": folder / "server.properties",
        "kafka_log4j": folder / "log4j2.xml",
    }


# --- search permission for a service user -------------------------------------------

_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    0x01,
    0x02,
    0x04,
    0x08,
    0x10,
    0x20,
)
_ACL_UNDEFINED_ID = 0xFFFFFFFF
_SEARCH = 0o1

AclEntry = tuple[int, int, int]  # (tag, perm, id)


def decode_acl(raw: bytes) -> list[AclEntry]:
    """Parse a ``system.posix_acl_access`` value into (tag, perm, id) entries."""
    if len(raw) < 4 or (len(raw) - 4) % 8 or struct.unpack_from("<I", raw)[0] != _ACL_VERSION:
        raise ValueError("not a version 2 POSIX ACL")
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def encode_acl(entries: list[AclEntry]) -> bytes:
    """Serialise entries in the order the kernel requires (by tag, then id)."""
    ordered = sorted(entries, key=lambda e: (e[0], e[2]))
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in ordered)


def with_user_search(entries: list[AclEntry], uid: int) -> list[AclEntry]:
    """Return ``entries`` plus search permission for ``uid``, keeping the group class intact.

    The mask is recomputed as the union of the group-class entries, so adding a named
    user never widens what the owning group may do.
    """
    out = [e for e in entries if e[0] != _ACL_MASK and not (e[0] == _ACL_USER and e[2] == uid)]
    previous = next((e[1] for e in entries if e[0] == _ACL_USER and e[2] == uid), 0)
    out.append((_ACL_USER, previous | _SEARCH, uid))
    mask = 0
    for tag, perm, _ in out:
        if tag in (_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP):
            mask |= perm
    out.append((_ACL_MASK, mask, _ACL_UNDEFINED_ID))
    return out


def _read_acl(path: Path) -> list[AclEntry] | None:
    try:
        return decode_acl(os.getxattr(path, _ACL_XATTR))
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP):
            return None
        raise


def _minimal_acl(mode: int) -> list[AclEntry]:
    return [
        (_ACL_USER_OBJ, (mode >> 6) & 7, _ACL_UNDEFINED_ID),
        (_ACL_GROUP_OBJ, (mode >> 3) & 7, _ACL_UNDEFINED_ID),
        (_ACL_OTHER, mode & 7, _ACL_UNDEFINED_ID),
    ]


def can_search(path: Path, uid: int, gids: set[int]) -> bool:
    """Whether ``uid`` (member of ``gids``) may traverse directory ``path``."""
    st = path.stat()
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    acl = _read_acl(path)
    if acl is not None:
        mask = next((p for t, p, _ in acl if t == _ACL_MASK), 7)
        named = next((p for t, p, i in acl if t == _ACL_USER and i == uid), None)
        if named is not None:
            return bool(named & mask & _SEARCH)
    if st.st_gid in gids:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def grant_search(path: Path, uid: int, gids: set[int], user: str) -> list[Path]:
    """Let ``uid`` traverse every folder from ``/`` down to ``path``; return what changed."""
    changed: list[Path] = []
    for folder in [*reversed(path.parents), path]:
        if can_search(folder, uid, gids):
            continue
        entries = _read_acl(folder) or _minimal_acl(folder.stat().st_mode)
        try:
            os.setxattr(folder, _ACL_XATTR, encode_acl(with_user_search(entries, uid)))
        except OSError as exc:
            raise StackError(
                f"the {user} user cannot enter {folder} and an ACL could not be added "
                f"({exc.strerror}); set TRACEBOUND_STACK_STATE_DIR to a folder it can "
                f"reach, or run: setfacl -m u:{user}:x {folder}"
            ) from exc
        changed.append(folder)
    return changed
