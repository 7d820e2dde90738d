"""Which partitions to submit next: concurrency caps, lanes, and the scheduler (pure, deterministic).

:func:`schedule` picks the next partitions to submit under a per-broker cap and a cluster cap,
smallest topics first and one partition per topic per round, so a small topic never waits for a
large one to finish; a topic's throttle lists stay under :attr:`Caps.throttle_chars`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from migrate.core.partitions.moves import PartitionMove
from migrate.core.partitions.throttles import MAX_THROTTLE_CONFIG_CHARS, config_chars, throttle_entries
from migrate.errors import BadInput

DEFAULT_MAX_MOVES_PER_BROKER = 5


@dataclass(frozen=True)
class Caps:
    """Concurrency limits: partitions moving at once per broker and in the whole cluster
    (``None``: no cluster cap), and the longest throttle list per topic.

    ``small_move_bytes``: a move copying more than this may go in the *large lane* (``None``: no
    move does). The large lane holds at most ``per_broker - per_broker // 2`` slots of a broker
    (at least one) and takes the largest moves first, where the busiest brokers are, so every
    broker's throttled bandwidth stays in use and the biggest copies do not all end up last; the
    other slots always serve the smallest topics first. The runner sets it to what the throttle
    copies in :data:`SMALL_MOVE_SECONDS`.

    ``broker_limits``: (broker, moves) pairs that lower a broker's cap below ``per_broker`` (the
    adaptive throttle's moves in flight per broker, ``--throttle auto``); empty: ``per_broker`` for all.
    """

    per_broker: int = DEFAULT_MAX_MOVES_PER_BROKER
    cluster: int | None = None
    throttle_chars: int = MAX_THROTTLE_CONFIG_CHARS
    small_move_bytes: int | None = None
    broker_limits: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.per_broker < 1:
            raise BadInput(f"--max-moves-per-broker {self.per_broker}: give 1 or more")
        if self.cluster is not None and self.cluster < 1:
            raise BadInput(f"--max-moves-cluster {self.cluster}: give 1 or more")

    @property
    def large_per_broker(self) -> int:
        return max(1, self.per_broker - self.per_broker // 2)

    def limit(self, broker: int) -> int:
        """Moves at once allowed on ``broker``: ``per_broker``, or lower as ``broker_limits`` says."""
        for b, n in self.broker_limits:
            if b == broker:
                return max(1, min(self.per_broker, n))
        return self.per_broker

    def large_limit(self, broker: int) -> int:
        """Large-lane slots of ``broker``: half its :meth:`limit` (rounded up), at least one."""
        n = self.limit(broker)
        return max(1, n - n // 2)

    def is_large(self, move: "PartitionMove") -> bool:
        """In the large lane: admitted there, or (not admitted yet / adopted) big enough for it."""
        if move.lane:
            return move.lane == "large"
        return self.fits_large_lane(move)

    def fits_large_lane(self, move: "PartitionMove") -> bool:
        """Big enough for the large lane: copies more than :attr:`small_move_bytes`."""
        return self.small_move_bytes is not None and move.bytes_to_copy > self.small_move_bytes


SMALL_MOVE_SECONDS = 1.0
"""A move the throttle copies in less than this is small (see :class:`Caps`)."""


def broker_load(in_flight: Iterable[PartitionMove]) -> dict[int, int]:
    """Partitions moving per broker (each move counts on every broker of :attr:`PartitionMove.brokers`)."""
    load: dict[int, int] = {}
    for m in in_flight:
        for b in m.brokers:
            load[b] = load.get(b, 0) + 1
    return load


def _data_brokers(m: PartitionMove) -> tuple[int, ...]:
    """Brokers that carry the copy: the new replicas (follower side) and the source (the leader,
    normally the first current replica)."""
    return tuple(dict.fromkeys((*m.adding, *m.current[:1])))


def broker_work(moves: Iterable[PartitionMove]) -> dict[int, int]:
    """Bytes each broker must carry for ``moves``: received by new replicas, sent by the source."""
    work: dict[int, int] = {}
    for m in moves:
        for b in m.adding:
            work[b] = work.get(b, 0) + m.size_bytes
        if m.current and m.adding:
            work[m.current[0]] = work.get(m.current[0], 0) + m.bytes_to_copy
    return work


def schedule(pending: Sequence[PartitionMove], in_flight: Sequence[PartitionMove], caps: Caps,
             held: frozenset[tuple[str, int]] = frozenset()) -> tuple[PartitionMove, ...]:
    """The partitions to submit now, in order.

    * A move is admitted only if every broker it involves stays within ``caps.per_broker`` and
      the cluster within ``caps.cluster`` (each move counts once on every broker that gains or
      loses its replica, as in Cruise Control).
    * The large lane goes first (moves above :attr:`Caps.small_move_bytes`), holding at most
      :attr:`Caps.large_per_broker` slots of each broker: the most work first, on the brokers
      with the most bytes left to carry, so every broker's bandwidth stays in use.
    * The small lane fills the other slots: topics take turns, one partition per topic per round,
      topics with the fewest bytes left first, so a small topic gets the next free slot even while
      large ones are moving. Within a topic, smaller partitions first (then partition number).
    * A topic's throttle lists (entries of the partitions in flight and admitted) stay within
      ``caps.throttle_chars``; at least one partition per topic is always allowed.
    * Partitions in ``held`` (short ISR) are skipped; a move that needs nothing is never returned.

    Pure and deterministic: same inputs, same answer.
    """
    load = broker_load(in_flight)
    large_load = broker_load(m for m in in_flight if caps.is_large(m))
    total = [len(in_flight)]
    candidates = [m for m in pending if m.needed and m.key not in held]
    flying: dict[str, list[PartitionMove]] = {}
    for m in in_flight:
        flying.setdefault(m.topic, []).append(m)
    chosen: list[PartitionMove] = []

    def fits_lists(m: PartitionMove) -> bool:
        group = flying.get(m.topic, [])
        if not group:
            return True
        leader, follower = throttle_entries([*group, m])
        return max(config_chars(leader), config_chars(follower)) <= caps.throttle_chars

    def admit(m: PartitionMove, lane: str) -> None:
        m = replace(m, lane=lane)
        for b in m.brokers:
            load[b] = load.get(b, 0) + 1
            if lane == "large":
                large_load[b] = large_load.get(b, 0) + 1
        total[0] += 1
        flying.setdefault(m.topic, []).append(m)
        chosen.append(m)

    def cluster_full() -> bool:
        return caps.cluster is not None and total[0] >= caps.cluster

    # -- large moves: most work first, where the busiest brokers are
    large = sorted((m for m in candidates if caps.fits_large_lane(m)), key=lambda m: (m.topic, m.partition))
    work = broker_work(candidates)  # bytes no move in flight is carrying yet
    while large and not cluster_full():
        best, best_key = None, None
        for m in large:
            if any(load.get(b, 0) + 1 > caps.limit(b) or large_load.get(b, 0) + 1 > caps.large_limit(b)
                   for b in m.brokers) or not fits_lists(m):
                continue
            key = (max(work.get(b, 0) for b in _data_brokers(m)), m.bytes_to_copy)
            if best_key is None or key > best_key:
                best, best_key = m, key
        if best is None:
            break
        admit(best, "large")
        large.remove(best)
        for b, w in broker_work([best]).items():
            work[b] = work.get(b, 0) - w
    if cluster_full():
        return tuple(chosen)

    # -- small moves: topics take turns, smallest first
    by_topic: dict[str, list[PartitionMove]] = {}
    for m in candidates:
        if not caps.fits_large_lane(m):  # large moves wait for a large-lane slot: they never crowd out small topics
            by_topic.setdefault(m.topic, []).append(m)
    for moves in by_topic.values():
        moves.sort(key=lambda m: (m.size_bytes, m.partition))
    remaining = {t: sum(m.bytes_to_copy for m in ms) for t, ms in by_topic.items()}
    order = sorted(by_topic, key=lambda t: (remaining[t], len(by_topic[t]), t))
    cursor = {t: 0 for t in order}
    progress = True
    while progress:
        progress = False
        for t in order:
            queue = by_topic[t]
            while cursor[t] < len(queue):
                if cluster_full():
                    return tuple(chosen)
                m = queue[cursor[t]]
                cursor[t] += 1
                if any(load.get(b, 0) + 1 > caps.limit(b) for b in m.brokers):
                    continue  # this one waits; try the topic's next partition
                if not fits_lists(m):
                    cursor[t] = len(queue)  # the topic's lists are full for now
                    break
                admit(m, "small")
                progress = True
                break  # next topic's turn
    return tuple(chosen)
