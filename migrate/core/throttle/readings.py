"""From what a ``kmigrate partitions`` run reads to what the controller takes (pure).

* :func:`window_from_acks`: the canary's acks of one window (acked at, partition, latency), the
  partitions' leaders and the sends still waiting for an ack -> a :class:`~.signals.LatencyWindow`
  (a wait still going on counts as a stall of the partition's leader);
* :func:`health_from_partitions`: the partitions the run describes anyway, those *not being moved*
  -> the rails of :class:`~.signals.Health` (under min ISR; followers out of the ISR);
* :func:`window_from_live`: an operator's canary report read back -> the same window, without leaders;
* :func:`copy_rates`: two looks at the replicas' sizes -> the bounds of :class:`~.signals.Health` (the
  inflow into the partitions each broker copies, the rate its copies achieved);
* :func:`broker_limits`: the moves in flight the controller allows per broker, within the
  operator's cap, as :attr:`migrate.core.partitions.scheduler.Caps.broker_limits`.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from migrate.core.partitions.moves import ReplicaKey
from migrate.core.report.live import LiveSignal
from migrate.core.throttle.signals import Health, LatencyWindow

MIN_BROKER_SAMPLES = 100
"""Acks a broker's partitions need in one window for their own p99 to count. Fewer, and that p99 is
the window's slowest ack or close to it (the default canary writes 50 a second over one partition
per broker, a 5 s window gives each of 6 brokers about 40): one slow ack would halve the broker's
rate. Such a broker is held to the cluster's p99 (which its acks are part of) and to its stalls."""


def window_from_acks(at_s: float, acks: Iterable[tuple[float, int, float]], leaders: Mapping[int, int],
                     waiting_since: Mapping[int, float] | None = None,
                     min_broker_samples: int = MIN_BROKER_SAMPLES) -> LatencyWindow:
    """The window ending at ``at_s``: ``acks`` as (acked at, canary partition, latency s), counted
    for the partition's leader in ``leaders`` (partition -> broker; an unknown leader counts for
    the cluster's p99 only, as broker -1); ``waiting_since`` (partition -> when its oldest
    unacknowledged send left) makes a stall of ``at_s`` minus it for that leader. A broker's own
    p99 is given only from ``min_broker_samples`` acks (see :data:`MIN_BROKER_SAMPLES`).

    >>> w = window_from_acks(10.0, [(9.0, 0, 0.01), (9.5, 1, 0.02)], {0: 1, 1: 2}, {1: 7.0}, min_broker_samples=1)
    >>> w.p99_s, dict(w.p99_by_broker), dict(w.stall_by_broker)
    (0.02, {1: 0.01, 2: 0.02}, {2: 3.0})
    >>> dict(window_from_acks(10.0, [(9.0, 0, 0.01), (9.5, 1, 0.02)], {0: 1, 1: 2}).p99_by_broker)
    {}
    """
    pairs = [(leaders.get(p, -1), latency) for _at, p, latency in acks]
    stalls: dict[int, float] = {}
    for p, since in (waiting_since or {}).items():
        b = leaders.get(p)
        if b is not None and at_s - since > stalls.get(b, 0.0):
            stalls[b] = round(at_s - since, 3)
    w = LatencyWindow.from_acks(at_s, pairs, stalls)
    counts: dict[int, int] = {}
    for b, _latency in pairs:
        counts[b] = counts.get(b, 0) + 1
    own = {b: v for b, v in w.p99_by_broker.items() if b != -1 and counts.get(b, 0) >= min_broker_samples}
    if own != dict(w.p99_by_broker):
        w = LatencyWindow(w.at_s, w.p99_s, w.samples, own, w.stall_by_broker)
    return w


def health_from_partitions(partitions: Iterable[tuple[str, int, tuple[int, ...], tuple[int, ...]]],
                           min_isr: Mapping[str, int], moving: Iterable[tuple[str, int]]) -> Health:
    """The rails from (topic, partition, replicas, isr) of partitions read now: those not in
    ``moving`` with fewer in-sync replicas than their topic's ``min.insync.replicas`` (at most their
    replica count) are under min ISR; those with a replica out of the ISR otherwise are lagging.

    >>> h = health_from_partitions([("t", 0, (1, 2, 3), (1,)), ("t", 1, (1, 2, 3), (1, 2)),
    ...                             ("t", 2, (1, 2, 3), (1,))], {"t": 2}, [("t", 2)])
    >>> h.under_min_isr, h.lagging
    (('t-0',), ('t-1',))
    """
    skip = set(moving)
    under: list[str] = []
    lagging: list[str] = []
    for topic, partition, replicas, isr in partitions:
        if (topic, partition) in skip or not replicas:
            continue
        need = min(min_isr.get(topic, 1), len(replicas))
        if len(isr) < need:
            under.append(f"{topic}-{partition}")
        elif set(replicas) - set(isr):
            lagging.append(f"{topic}-{partition}")
    return Health(under_min_isr=tuple(sorted(under)), lagging=tuple(sorted(lagging)))


def broker_limits(moves: Mapping[int, int], per_broker: int) -> tuple[tuple[int, int], ...]:
    """(broker, moves in flight allowed) for every broker the controller steers, never above the
    operator's ``per_broker`` cap, at least 1.

    >>> broker_limits({5: 2, 4: 9}, 5)
    ((4, 5), (5, 2))
    """
    return tuple((b, max(1, min(per_broker, n))) for b, n in sorted(moves.items()))


STALE_AFTER_S = 5.0
"""An operator's canary report not rewritten for this long (it writes every second) gives no signal: the
law's fail-safe applies."""


def window_from_live(at_s: float, live: LiveSignal | None, now_unix: float, window_s: float,
                     stale_after_s: float = STALE_AFTER_S) -> LatencyWindow:
    """The window ending at ``now_unix`` (wall clock) from an operator's canary report read back
    (:class:`~migrate.core.report.live.LiveSignal`), stamped ``at_s`` on the runner's clock: the p99 of its
    acks (merged histograms), their count, the longest stall (for every broker: the report does not say
    which broker led the partition). Silent (no signal) when there is no report, it is older than
    ``stale_after_s``, or it had no ack in the window.

    >>> from migrate.core.report.live import LiveSignal
    >>> from migrate.core.report.timeline import Bucket, bin_of
    >>> live = LiveSignal(100.0, 109.5, 1.0, 0, tuple(Bucket(50, 0, {bin_of(20.0): 50}, 20.0, 0.1) for _ in range(10)))
    >>> w = window_from_live(7.0, live, 110.0, 5.0); w.samples, round(w.p99_s, 3), w.stall_s
    (250, 0.02, 0.1)
    >>> window_from_live(7.0, live, 120.0, 5.0).has_signal
    False
    """
    if live is None or live.age_s(now_unix) > stale_after_s:
        return LatencyWindow.silent(at_s)
    f = live.figures(now_unix - window_s, now_unix)
    if not f.acks or f.p99_ms is None:
        return LatencyWindow.silent(at_s)
    return LatencyWindow(at_s, f.p99_ms / 1000.0, f.acks, stall_s=f.stall_s)


def copy_rates(before: Mapping[ReplicaKey, int], after: Mapping[ReplicaKey, int], seconds: float,
               moves: Iterable[tuple[str, int, tuple[int, ...], tuple[int, ...]]]) -> tuple[dict[int, int], dict[int, int]]:
    """(inflow, copied) per broker taking a copy, in bytes/s, from two looks at replica sizes ``seconds`` apart
    (``(topic, partition, broker) -> bytes``). ``moves``: (topic, partition, current replicas, replicas being
    added). A broker's *copied* rate is what its added replicas grew by; its *inflow* is what the partitions it
    copies grew by on their current replicas (the largest growth among them: the leader's, or an in-sync
    follower's), the data the copy must also take. A replica missing from either look (its broker did not
    answer, the move began or ended between them) counts for nothing; a shrinking one (retention) as 0.

    >>> before = {("t", 0, 1): 1000, ("t", 0, 4): 0, ("t", 1, 2): 500, ("t", 1, 4): 100}
    >>> after = {("t", 0, 1): 1500, ("t", 0, 4): 800, ("t", 1, 2): 400, ("t", 1, 4): 300}
    >>> copy_rates(before, after, 2.0, [("t", 0, (1,), (4,)), ("t", 1, (2,), (4,))])
    ({4: 250}, {4: 500})
    >>> copy_rates(before, after, 0.0, [("t", 0, (1,), (4,))])
    ({}, {})
    """
    inflow: dict[int, float] = {}
    copied: dict[int, float] = {}
    if seconds <= 0:
        return {}, {}

    def grew(key: ReplicaKey) -> float | None:
        a, b = before.get(key), after.get(key)
        return None if a is None or b is None else max(0, b - a) / seconds

    for topic, partition, current, adding in moves:
        growths = [g for g in (grew((topic, partition, c)) for c in current) if g is not None]
        for b in adding:
            g = grew((topic, partition, b))
            if g is None:
                continue
            copied[b] = copied.get(b, 0.0) + g
            inflow[b] = inflow.get(b, 0.0) + (max(growths) if growths else 0.0)
    return {b: round(v) for b, v in inflow.items()}, {b: round(v) for b, v in copied.items()}
