"""One partition's move, as pure values: where it is, where it goes, how much it copies.

:class:`PartitionMove` is the one move type of kmigrate: the plan's moves
(:class:`migrate.core.plan.document.MoveList`) and the partitions runner's are both of it. :class:`InFlight`
is a reassignment as the cluster lists it; :func:`plan_targets` gives the targets of topics by the
planner's rule; :func:`copied` counts the bytes a move has copied so far.

    >>> m = PartitionMove("t", 0, (1, 2), (4, 5), size_bytes=10)
    >>> m.adding, m.removing, m.bytes_to_copy
    ((4, 5), (1, 2), 20)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from migrate.core.model import Broker, Partition, Topic
from migrate.core.plan.targets import replica_targets

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)


@dataclass(frozen=True)
class PartitionMove:
    """One partition to move: its replicas when the move was planned (``current``, first is the
    preferred leader) and its ``target`` (the full new replica list, preferred leader first).
    ``size_bytes`` is the data each new replica copies (``None``: unknown, in a plan only).

    A plan stores its moves as plain rows ``(topic, partition, current, target, bytes_to_move)``
    (:attr:`row`, :meth:`from_row`), the form its JSON is written from.

    >>> PartitionMove.from_row(("t", 0, (1, 2), (4, 2), 100)).size_bytes
    100
    >>> PartitionMove("t", 0, (1, 2), (4, 5), None).bytes_to_move is None
    True
    """

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int | None = 0
    lane: str = field(default="", compare=False)  # "large" | "small": how the scheduler admitted it

    @classmethod
    def from_row(cls, row: tuple) -> "PartitionMove":
        """A plan's row ``(topic, partition, current, target, bytes_to_move)`` as a move."""
        topic, partition, current, target, moved = row
        if moved is None:
            return cls(topic, partition, current, target, None)
        adding = sum(1 for b in target if b not in current)
        return cls(topic, partition, current, target, moved // adding if adding else 0)

    @property
    def row(self) -> tuple:
        """``(topic, partition, current, target, bytes_to_move)``, as a plan stores it."""
        return (self.topic, self.partition, self.current, self.target, self.bytes_to_move)

    @property
    def bytes_to_move(self) -> int | None:
        """``size_bytes`` x the replicas added; ``None`` when the size is unknown."""
        return None if self.size_bytes is None else self.size_bytes * len(self.adding)

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)

    @property
    def brokers(self) -> frozenset[int]:
        """Brokers that carry the copy: the source (the leader, normally the first current replica)
        and every new replica. The per-broker cap counts a move on each of them, as Cruise
        Control does (its ``oldLeader`` and ``replicasToAdd``); a follower that only drops its
        replica does no work."""
        if not self.adding:
            return frozenset()
        return frozenset(self.adding) | frozenset(self.current[:1])

    @property
    def bytes_to_copy(self) -> int:
        """Bytes the move copies (0 when the size is unknown)."""
        return (self.size_bytes or 0) * len(self.adding)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def needed(self) -> bool:
        """False when the partition already sits on its target (order included)."""
        return tuple(self.current) != tuple(self.target)


@dataclass(frozen=True)
class InFlight:
    """An ongoing reassignment as ``ListPartitionReassignments`` shows it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def target(self) -> tuple[int, ...]:
        """Where the reassignment goes: the full replica list without the replicas leaving."""
        return tuple(b for b in self.replicas if b not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """Where it came from (where a cancel sends it back)."""
        return tuple(b for b in self.replicas if b not in self.adding)


@dataclass(frozen=True)
class Totals:
    """Bytes to copy and copied for a set of moves, for progress bars."""

    total_bytes: int = 0
    copied_bytes: int = 0

    def add(self, other: "Totals") -> "Totals":
        return Totals(self.total_bytes + other.total_bytes, self.copied_bytes + other.copied_bytes)


def copied(move: PartitionMove, sizes: Mapping[ReplicaKey, int | None], finished: bool) -> Totals:
    """Bytes copied so far for ``move``: each added replica's size, capped at the source size."""
    total = move.bytes_to_copy
    if finished:
        return Totals(total, total)
    done = 0
    for b in move.adding:
        s = sizes.get((move.topic, move.partition, b)) or 0
        done += min(s, move.size_bytes or 0)
    return Totals(total, done)


def plan_targets(topics: Sequence[Topic], brokers: Sequence[Broker], mapping: Mapping[int, int],
                 keep: Iterable[int] = ()) -> tuple[dict[tuple[str, int], tuple[int, ...]], list[str]]:
    """Target replicas of every partition of ``topics`` that must move, by the planner's rule
    (:func:`migrate.core.plan.targets.replica_targets`, what :func:`migrate.core.plan.planner.build_plan`
    plans with: each old id replaced in place by its new id, an id
    without mapping kept with a warning, invalid lists repaired across racks, preferred leaders
    balanced), and the planner's warnings. Partitions already on target are absent.

    ``topics`` carry the replicas to plan from: for a partition in flight, pass the replicas it
    came from (:attr:`InFlight.original`). ``brokers`` need ``id`` and ``rack``.

    >>> from migrate.core.model import Broker, Partition, Topic
    >>> t = Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1),))
    >>> bs = [Broker(i, "h", 9092, f"AD-{(i - 1) % 3 + 1}/FD-1") for i in (1, 2, 4, 5)]
    >>> sorted(plan_targets([t], bs, {1: 4, 2: 5})[0][("t", 0)])
    [4, 5]
    """
    if not topics:
        return {}, []
    targets = replica_targets(topics, {b.id: b.rack for b in brokers}, {b.id for b in brokers if b.alive},
                              {int(k): int(v) for k, v in mapping.items()}, keep)
    return {(t, p): tuple(target) for t, p, _, target, _ in targets.rows}, list(targets.warnings)


def errors_line(errors: Mapping[tuple[str, int], str]) -> str:
    """Per-partition errors in one line, the first five named.

    >>> errors_line({("t", 1): "E", ("t", 0): "F"})
    't-0: F, t-1: E'
    """
    items = sorted(errors.items())
    shown = ", ".join(f"{t}-{p}: {e}" for (t, p), e in items[:5])
    return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")


def partition_of(topic: Topic | None, partition: int) -> Partition | None:
    """The partition numbered ``partition`` of ``topic`` (``None`` when either is missing)."""
    if topic is None:
        return None
    for p in topic.partitions:
        if p.partition == partition:
            return p
    return None


def leader_not_preferred(p: Partition) -> bool:
    """True when the partition is led by another broker than its first replica (its preferred
    leader), or has no leader."""
    return bool(p.replicas) and p.leader != p.replicas[0]
