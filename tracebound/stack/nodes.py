"""The Kafka nodes of the local stack: one by default, or a small multi-broker cluster.

``tracebound up --brokers 3`` runs three nodes, each broker and controller at once
(a three-voter KRaft quorum survives the loss of any one node), on loopback ports
derived from the stack's: node *i* listens on ``kafka_port + 2(i-1)`` and its
controller on ``controller_port + 2(i-1)``, so private stacks a few ports apart never
collide. Node 1 keeps the single broker's files, so a one-node stack looks exactly
as it always did; nodes 2… get a ``node-<i>`` folder next to them.

How many nodes a state folder holds is recorded when it is first started: the data
folders are formatted for that quorum, so a later ``up`` without ``--brokers`` finds
the cluster again, and asking for another size is refused rather than half-reused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack.paths import StackPaths, node_files

PORT_STEP = 2  # each node takes a broker and a controller port


@dataclass(frozen=True, slots=True)
class Node:
    """One Kafka process: its id, its ports (in ``settings``) and its files."""

    node_id: int
    settings: StackSettings
    paths: StackPaths

    @property
    def name(self) -> str:
        return "kafka" if self.node_id == 1 else f"kafka-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{self.settings.host}:{self.settings.kafka_port}"


def recorded_count(paths: StackPaths) -> int | None:
    """The node count the state folder was started with, if it was."""
    try:
        return int(paths.kafka_brokers.read_text(encoding="utf-8").strip())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise StackError(f"{paths.kafka_brokers} is unreadable; remove it: {exc}") from exc


def broker_count(settings: StackSettings) -> int:
    """The nodes of this stack: as recorded, else as asked (``--brokers``), else one."""
    paths = StackPaths.from_settings(settings)
    recorded = recorded_count(paths)
    if recorded is not None and settings.brokers is not None and settings.brokers != recorded:
        raise StackError(
            f"{paths.kafka_dir} holds a {recorded}-broker cluster, not {settings.brokers};"
            " run `tracebound down --purge` first, or use another TRACEBOUND_STACK_STATE_DIR"
        )
    return recorded or settings.brokers or 1


def record_count(settings: StackSettings) -> int:
    """Fix the node count of the state folder (before its first start); return it."""
    paths = StackPaths.from_settings(settings)
    count = broker_count(settings)
    if recorded_count(paths) is None:
        paths.kafka_dir.mkdir(parents=True, exist_ok=True)
        paths.kafka_brokers.write_text(f"{count}\n", encoding="utf-8")
    return count


def node(settings: StackSettings, node_id: int) -> Node:
    """Node ``node_id`` (1-based) of the stack."""
    paths = StackPaths.from_settings(settings)
    if node_id == 1:
        return Node(1, settings, paths)
    step = PORT_STEP * (node_id - 1)
    folder = paths.kafka_dir / f"node-{node_id}"
    return Node(
        node_id,
        settings.model_copy(
            update={
                "kafka_port": settings.kafka_port + step,
                "controller_port": settings.controller_port + step,
            }
        ),
        replace(paths, **node_files(folder)),
    )


def nodes(settings: StackSettings) -> list[Node]:
    return [node(settings, i) for i in range(1, broker_count(settings) + 1)]


def bootstrap(settings: StackSettings) -> str:
    """Every node's address: a client started while one node is down still connects."""
    return ",".join(n.address for n in nodes(settings))


def replication(count: int) -> tuple[int, int]:
    """Replication factor and ``min.insync.replicas`` of every topic on ``count`` nodes.

    Three copies, two of which must acknowledge a write: one node may die without
    losing an acknowledged record or refusing new ones.
    """
    factor = min(count, 3)
    return factor, max(1, factor - 1)
