"""Is the cluster healthy enough to restart the next broker? A pure judgement of one cluster reading.

Healthy means: no under-replicated partition (ISR smaller than its replicas), no offline partition
(no leader), every expected broker registered, and the controller known. The expected brokers are
the ones the operator lists (``--broker-list``), else every broker that hosts a replica: a broker
that is down while a restart is under way then shows both as missing and in the ISRs it left.

>>> from migrate.core.model import Partition, Topic
>>> reading = ClusterReading(controller_id=1, brokers=frozenset({1, 2}),
...                          topics=(Topic("t", partitions=(Partition(0, (1, 2, 3), (1, 2), 1),)),))
>>> h = judge(reading)
>>> h.healthy, h.under_replicated, h.missing_brokers
(False, (('t', 0),), (3,))
>>> h.problems()
['1 under-replicated partition(s): t-0', 'broker(s) 3 not registered (expected 1, 2, 3; registered 1, 2)']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from migrate.core.model import Topic

SHOWN = 10
"""How many partitions a one-line problem names before it says "and N more"."""


@dataclass(frozen=True)
class ClusterReading:
    """One look at the cluster: the controller (None: unknown), the registered brokers, every topic's
    partitions (replicas, ISR, leader). ``error``: the cluster did not answer (the rest is empty)."""

    controller_id: int | None
    brokers: frozenset[int]
    topics: tuple[Topic, ...] = ()
    error: str | None = None

    @classmethod
    def unreachable(cls, error: str) -> "ClusterReading":
        return cls(controller_id=None, brokers=frozenset(), topics=(), error=error)


@dataclass(frozen=True)
class Health:
    """What :func:`judge` found. Partitions are ``(topic, partition)`` pairs, sorted."""

    under_replicated: tuple[tuple[str, int], ...]
    offline: tuple[tuple[str, int], ...]
    expected_brokers: tuple[int, ...]
    registered_brokers: tuple[int, ...]
    controller_id: int | None
    partitions: int = 0
    error: str | None = None
    missing_brokers: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        registered = set(self.registered_brokers)
        object.__setattr__(self, "missing_brokers", tuple(b for b in self.expected_brokers if b not in registered))

    @property
    def healthy(self) -> bool:
        return (self.error is None and not self.under_replicated and not self.offline and not self.missing_brokers
                and self.controller_id is not None)

    def problems(self) -> list[str]:
        """One line per kind of problem, naming the partitions and brokers (empty when healthy)."""
        if self.error is not None:
            return [f"the cluster did not answer: {self.error}"]
        out = []
        if self.under_replicated:
            out.append(f"{len(self.under_replicated)} under-replicated partition(s): {_names(self.under_replicated)}")
        if self.offline:
            out.append(f"{len(self.offline)} offline partition(s) (no leader): {_names(self.offline)}")
        if self.missing_brokers:
            out.append(f"broker(s) {_ids(self.missing_brokers)} not registered (expected {_ids(self.expected_brokers)}; "
                       f"registered {_ids(self.registered_brokers) or 'none'})")
        if self.controller_id is None:
            out.append("no controller known")
        return out

    def summary(self) -> str:
        """One line: healthy, or the counts of what is wrong."""
        if self.error is not None:
            return f"unreachable ({self.error})"
        head = (f"{len(self.under_replicated)} under-replicated, {len(self.offline)} offline of {self.partitions} "
                f"partition(s); brokers {len(self.expected_brokers) - len(self.missing_brokers)}/"
                f"{len(self.expected_brokers)} registered; controller {self.controller_id if self.controller_id is not None else 'unknown'}")
        return ("healthy: " if self.healthy else "not healthy: ") + head

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "under_replicated": [f"{t}-{p}" for t, p in self.under_replicated],
            "offline": [f"{t}-{p}" for t, p in self.offline],
            "expected_brokers": list(self.expected_brokers),
            "registered_brokers": list(self.registered_brokers),
            "missing_brokers": list(self.missing_brokers),
            "controller_id": self.controller_id,
            "partitions": self.partitions,
            "error": self.error,
            "problems": self.problems(),
        }


def judge(reading: ClusterReading, expected_brokers: Iterable[int] | None = None) -> Health:
    """The health of one reading. ``expected_brokers``: None means every broker hosting a replica."""
    under, offline, hosts, count = [], [], set(), 0
    for topic in reading.topics:
        for p in topic.partitions:
            count += 1
            hosts.update(p.replicas)
            key = (topic.name, p.partition)
            if p.leader is None or p.leader < 0:
                offline.append(key)
            if len(set(p.isr)) < len(set(p.replicas)):
                under.append(key)
    expected = sorted(set(expected_brokers) if expected_brokers is not None else hosts)
    return Health(
        under_replicated=tuple(sorted(under)),
        offline=tuple(sorted(offline)),
        expected_brokers=tuple(expected),
        registered_brokers=tuple(sorted(reading.brokers)),
        controller_id=reading.controller_id,
        partitions=count,
        error=reading.error,
    )


def _names(keys: tuple[tuple[str, int], ...]) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:SHOWN])
    return shown + (f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else "")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids))
