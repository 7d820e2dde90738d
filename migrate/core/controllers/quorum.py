"""The KRaft controller quorum as DescribeQuorum v2 shows it, with what else decides a voter change (pure).

DescribeQuorum (asked of a controller, or of a broker that forwards it to the active controller) answers with the
quorum of ``__cluster_metadata``: the leader's id and epoch, the high watermark, the voters and the observers (every
replica that fetches the metadata log without voting: new controllers started with ``--no-initial-controllers``,
removed controllers still running, and every broker), each with its id, its directory id (v2, KIP-853), its log end
offset and, seen from the leader's wall clock, the time of its last fetch and the last time it had caught up; and
(v2) the endpoints of the voters (``nodes``: voters only, never observers).

A :class:`Reading` adds what DescribeQuorum does not say and a voter change depends on: the finalized
``kraft.version`` (0: a static quorum, ``controller.quorum.voters``; 1: dynamic, KIP-853), the controllers' Kafka
release, which controllers run with ``controller.quorum.auto.join.enable=true`` (4.2+), the ids the runner confirmed
stopped, and the brokers' ids.

Times are the leader's: the leader reports its own ``lastCaughtUpTimestamp`` as its current time, so ages are taken
from it (:meth:`Quorum.leader_now_ms`), free of the clock skew between the kmigrate host and the leader's host.
Directory ids are strings as Kafka prints them (``kafka-metadata-quorum describe``, ``meta.properties``: the
URL-safe base64 of the 16 bytes, without padding). No I/O, no clock.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

ZERO_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"
"""Kafka's ``Uuid.ZERO_UUID`` as printed: what DescribeQuorum v0/v1 (and a replica without a directory id) gives."""


def kafka_uuid(raw: bytes) -> str:
    """Kafka's text form of a 16-byte uuid (``Uuid.toString``: URL-safe base64, no padding), as ``kafka-storage
    random-uuid`` prints a cluster id and ``meta.properties`` holds a ``directory.id``.

    >>> kafka_uuid(bytes(range(16)))
    'AAECAwQFBgcICQoLDA0ODw'
    """
    if len(raw) != 16:
        raise ValueError("a Kafka uuid is 16 bytes")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def directory_id_text(value: Any) -> str | None:
    """A directory id as a client decodes it (``uuid.UUID``, 16 bytes, kafka-python 3.0's hex text, or Kafka's own
    text) in Kafka's text form; None for none (Kafka's ZERO uuid: a replica that sent none, DescribeQuorum v0/v1).

    >>> directory_id_text(uuid.UUID(bytes=bytes(range(16)))), directory_id_text(uuid.UUID(int=0))
    ('AAECAwQFBgcICQoLDA0ODw', None)
    >>> directory_id_text("00010203-0405-0607-0809-0a0b0c0d0e0f"), directory_id_text("AAECAwQFBgcICQoLDA0ODw")
    ('AAECAwQFBgcICQoLDA0ODw', 'AAECAwQFBgcICQoLDA0ODw')
    >>> directory_id_text(ZERO_DIRECTORY_ID), directory_id_text(None)
    (None, None)
    """
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, (bytes, bytearray)) and len(value) == 16:
        raw = bytes(value)
    else:
        text = str(value)
        try:
            raw = uuid.UUID(text).bytes
        except ValueError:
            try:
                raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            except ValueError:
                return text
            if len(raw) != 16:
                return text
    return None if raw == bytes(16) else kafka_uuid(raw)


STATIC, DYNAMIC = 0, 1
"""The finalized ``kraft.version`` of a static quorum (``controller.quorum.voters``) and of a dynamic one (KIP-853)."""


@dataclass(frozen=True)
class Endpoint:
    """One listener of a controller: its name (``CONTROLLER``), host and port."""

    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        """``host:port``, brackets around an IPv6 host.

        >>> Endpoint("CONTROLLER", "::1", 9093).address
        '[::1]:9093'
        """
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Replica:
    """One replica of the metadata log as the leader sees it. ``None`` where Kafka reports -1 (unknown)."""

    id: int
    directory_id: str | None = None
    log_end_offset: int | None = None
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None


@dataclass(frozen=True)
class Quorum:
    """DescribeQuorum's answer for ``__cluster_metadata``: ``leader_id`` None when no leader is known."""

    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...] = ()
    nodes: Mapping[int, tuple[Endpoint, ...]] = field(default_factory=dict)

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(sorted(r.id for r in self.voters))

    @property
    def observer_ids(self) -> tuple[int, ...]:
        return tuple(sorted(r.id for r in self.observers))

    def voter(self, node_id: int) -> Replica | None:
        return next((r for r in self.voters if r.id == node_id), None)

    def observer(self, node_id: int) -> Replica | None:
        return next((r for r in self.observers if r.id == node_id), None)

    def is_voter(self, node_id: int) -> bool:
        return self.voter(node_id) is not None

    def replica(self, node_id: int) -> Replica | None:
        """The voter or observer ``node_id``, None when the quorum does not list it."""
        return self.voter(node_id) or self.observer(node_id)

    def role(self, node_id: int) -> str | None:
        """``leader``, ``voter``, ``observer``, or None when the quorum does not list the node.

        >>> q = Quorum(2, 1, 0, (Replica(1), Replica(2)), (Replica(7),))
        >>> q.role(2), q.role(1), q.role(7), q.role(9)
        ('leader', 'voter', 'observer', None)
        """
        if node_id == self.leader_id:
            return "leader"
        if self.is_voter(node_id):
            return "voter"
        return "observer" if self.observer(node_id) is not None else None

    @property
    def leader(self) -> Replica | None:
        return None if self.leader_id is None else self.voter(self.leader_id)

    @property
    def leader_log_end_offset(self) -> int | None:
        leader = self.leader
        return None if leader is None else leader.log_end_offset

    def lag(self, replica: Replica) -> int | None:
        """Records the replica is behind the leader (leader log end offset minus its own), None when unknown."""
        end = self.leader_log_end_offset
        if end is None or replica.log_end_offset is None:
            return None
        return max(0, end - replica.log_end_offset)

    def leader_now_ms(self, fallback_ms: int | None = None) -> int | None:
        """The leader's wall clock at the reading: its own ``lastCaughtUpTimestamp`` (DescribeQuorum v1+ reports the
        leader's current time there), else ``fallback_ms``."""
        leader = self.leader
        if leader is not None and leader.last_caught_up_ms is not None:
            return leader.last_caught_up_ms
        return fallback_ms

    def endpoints(self, node_id: int, listener: str | None = None) -> tuple[Endpoint, ...]:
        """The endpoints DescribeQuorum gives for voter ``node_id`` (only ``listener``'s when named)."""
        found = tuple(self.nodes.get(node_id, ()))
        return tuple(e for e in found if listener is None or e.name.upper() == listener.upper())


@dataclass(frozen=True)
class Reading:
    """One look at the cluster, everything the planner decides on.

    ``release``: the controllers' Kafka release as ``(major, minor)``, None when unknown; ``auto_join_ids``: the
    controllers running with ``controller.quorum.auto.join.enable=true``; ``stopped_ids``: controllers the runner
    confirmed stopped (their process gone, their controller listener closed); ``broker_ids``: the brokers'
    ``node.id``\\ s (registered brokers: a controller must not take one); ``stale_ids``: voters whose last fetch did not
    move on between this reading and one at least :data:`STALE_GAP_MS` earlier (:func:`stale_voters`): paused or hung,
    though their last fetch may still look recent."""

    quorum: Quorum
    kraft_version: int | None
    release: tuple[int, int] | None = None
    auto_join_ids: frozenset[int] = frozenset()
    stopped_ids: frozenset[int] = frozenset()
    broker_ids: frozenset[int] = frozenset()
    stale_ids: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        for name in ("auto_join_ids", "stopped_ids", "broker_ids", "stale_ids"):
            object.__setattr__(self, name, frozenset(getattr(self, name)))


STALE_GAP_MS = 1_000
"""A follower fetches continuously (the leader holds a fetch at most 500 ms): between two readings this far apart on
the leader's clock, every running voter has fetched again."""


def stale_voters(earlier: Quorum, now: Quorum) -> frozenset[int] | None:
    """The voters (the leader aside) whose last fetch is the same in ``now`` as in ``earlier``, or None when the two
    readings cannot tell: another leader, no leader clock, or less than :data:`STALE_GAP_MS` between them.

    >>> a = Quorum(1, 4, 100, (Replica(1, "d1", 100, None, 5_000), Replica(2, "d2", 100, 4_900, 4_900),
    ...                        Replica(3, "d3", 100, 4_800, 4_800)), ())
    >>> b = Quorum(1, 4, 100, (Replica(1, "d1", 100, None, 6_200), Replica(2, "d2", 100, 6_100, 6_100),
    ...                        Replica(3, "d3", 100, 4_800, 4_800)), ())
    >>> sorted(stale_voters(a, b)), stale_voters(a, a)
    ([3], None)
    """
    then_ms, now_ms = earlier.leader_now_ms(), now.leader_now_ms()
    if earlier.leader_id != now.leader_id or then_ms is None or now_ms is None or now_ms - then_ms < STALE_GAP_MS:
        return None
    before = {v.id: v.last_fetch_ms for v in earlier.voters}
    return frozenset(v.id for v in now.voters if v.id != now.leader_id and v.id in before
                     and v.last_fetch_ms is not None and v.last_fetch_ms == before[v.id])


# ----------------------------------------------------------- from the answer
def _ms(value) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def _replica(entry: Mapping) -> Replica:
    return Replica(int(entry["replica_id"]), directory_id_text(entry.get("replica_directory_id")), _ms(entry.get("log_end_offset")),
                   _ms(entry.get("last_fetch_timestamp")), _ms(entry.get("last_caught_up_timestamp")))


def quorum_from_answer(answer: Mapping) -> Quorum:
    """A :class:`Quorum` from DescribeQuorum's answer as a dict with Kafka's field names in snake case (kafka-python's
    ``to_dict()``), directory ids in any form :func:`directory_id_text` reads.

    >>> q = quorum_from_answer({"topics": [{"partitions": [{"leader_id": 1, "leader_epoch": 3, "high_watermark": 90,
    ...     "current_voters": [{"replica_id": 1, "replica_directory_id": "pqjm3z5kT5iT9ibrHd2aYw", "log_end_offset": 90,
    ...                         "last_fetch_timestamp": -1, "last_caught_up_timestamp": 5000}],
    ...     "observers": [{"replica_id": 7, "replica_directory_id": "AAAAAAAAAAAAAAAAAAAAAA", "log_end_offset": 88,
    ...                    "last_fetch_timestamp": 4900, "last_caught_up_timestamp": 4800}]}]}],
    ...     "nodes": [{"node_id": 1, "listeners": [{"name": "CONTROLLER", "host": "c1", "port": 9093}]}]})
    >>> q.voter_ids, q.observer(7).directory_id, q.lag(q.observer(7)), q.endpoints(1)[0].address
    ((1,), None, 2, 'c1:9093')
    """
    part = answer["topics"][0]["partitions"][0]
    leader = part.get("leader_id")
    nodes = {int(n["node_id"]): tuple(Endpoint(str(e["name"]), str(e["host"]), int(e["port"]))
                                      for e in n.get("listeners") or ())
             for n in answer.get("nodes") or ()}
    return Quorum(None if leader is None or int(leader) < 0 else int(leader), int(part.get("leader_epoch", -1)),
                  int(part.get("high_watermark", -1)),
                  tuple(_replica(v) for v in part.get("current_voters") or ()),
                  tuple(_replica(o) for o in part.get("observers") or ()), nodes)


def ids_text(ids: Iterable[int]) -> str:
    """``1, 2 and 3``.

    >>> ids_text([3, 1]), ids_text([4])
    ('1 and 3', '4')
    """
    shown = [str(i) for i in sorted(ids)]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1] if shown else "none"
