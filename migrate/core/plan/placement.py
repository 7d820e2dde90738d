"""Replica placement across availability domains (AD) and fault domains (FD). Pure.

A broker's rack ``"AD-1/FD-2"`` names its availability domain ``AD-1`` and, inside it, its fault
domain; the fault-domain key is the pair ``("AD-1", "FD-2")`` (FD-2 of AD-1 is not FD-2 of AD-2).

Rules, in order of strength:

1. replicas of one partition are distinct brokers;
2. they are in distinct ADs whenever there are at least as many ADs as replicas;
3. then in distinct fault domains whenever there are enough of them;
4. otherwise the round-robin order decides.

The round robin (:func:`round_robin`) is the one of the migration procedure: brokers sorted by
id, placement starts at ``start_broker``, and replica ``r`` of partition ``p`` goes to
``brokers[(start + p + r) % n]``::

    >>> round_robin([1, 2, 3, 4, 5, 6], 3, 3, start_broker=3)
    [(3, 4, 5), (4, 5, 6), (5, 6, 1)]

:func:`place_replicas` applies it to a rack-aware broker order (ADs interleaved, as Kafka's
rack-alternated list) and walks past brokers that would break rules 2-3.
:func:`assign_new_topic` gives explicit assignments for a new topic
(``kmigrate topics create --exclude-brokers 1,2,3``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from migrate.errors import BadInput
from migrate.core.model import DEFAULT_RACK_SEPARATOR, ClusterSnapshot, parse_rack

FdKey = tuple[str, "str | None"]


@dataclass(frozen=True)
class Domains:
    """The AD and fault-domain key of each broker (``None`` when its rack is unknown)."""

    ad: Mapping[int, str | None]
    fd: Mapping[int, FdKey | None]

    @classmethod
    def from_racks(cls, racks: Mapping[int, str | None], separator: str = DEFAULT_RACK_SEPARATOR) -> "Domains":
        ad: dict[int, str | None] = {}
        fd: dict[int, FdKey | None] = {}
        for bid, rack in racks.items():
            a, f = parse_rack(rack, separator)
            ad[bid] = a
            fd[bid] = (a, f) if a is not None else None
        return cls(ad, fd)

    def count_ads(self, brokers: Iterable[int]) -> int:
        """Number of distinct known ADs among ``brokers``."""
        get = self.ad.get
        return len({a for a in map(get, brokers) if a is not None})

    def count_fds(self, brokers: Iterable[int]) -> int:
        """Number of distinct known fault domains among ``brokers``."""
        get = self.fd.get
        return len({f for f in map(get, brokers) if f is not None})


@dataclass(frozen=True)
class Placement:
    """Explicit replica assignments for partitions 0..n-1 and the warnings of the placement."""

    assignments: tuple[tuple[int, ...], ...]
    warnings: tuple[str, ...] = ()

    @property
    def replica_assignment(self) -> str:
        """The ``kafka-topics.sh --replica-assignment`` form: ``"3:4:5,4:5:6"``."""
        return ",".join(":".join(map(str, a)) for a in self.assignments)

    def as_lists(self) -> list[list[int]]:
        """The AdminClient ``NewTopic(replica_assignment=...)`` form."""
        return [list(a) for a in self.assignments]


# --------------------------------------------------------------------------- round robin


def _check_counts(n_brokers: int, partitions: int, replication_factor: int) -> None:
    if partitions < 1:
        raise BadInput(f"partition count {partitions} must be at least 1")
    if replication_factor < 1:
        raise BadInput(f"replication factor {replication_factor} must be at least 1")
    if replication_factor > n_brokers:
        raise BadInput(
            f"replication factor {replication_factor} needs at least {replication_factor} brokers, "
            f"only {n_brokers} available: lower the replication factor or add brokers"
        )


def _start_index(order: Sequence[int], start_broker: int | None) -> int:
    if start_broker is None:
        return 0
    try:
        return order.index(start_broker)
    except ValueError:
        shown = ", ".join(map(str, sorted(order)))
        raise BadInput(f"start broker {start_broker} is not one of the brokers ({shown}): pick one of them") from None


def round_robin(
    broker_ids: Iterable[int], partitions: int, replication_factor: int, start_broker: int | None = None
) -> list[tuple[int, ...]]:
    """Plain round robin: brokers sorted by id, ``p``'s replica ``r`` on ``brokers[(start+p+r) % n]``.

    ``start`` is the index of ``start_broker`` (default: the first broker). Raises
    :class:`BadInput` when the replication factor exceeds the number of brokers.
    """
    order = sorted(set(broker_ids))
    n = len(order)
    _check_counts(n, partitions, replication_factor)
    start = _start_index(order, start_broker)
    return [tuple(order[(start + p + r) % n] for r in range(replication_factor)) for p in range(partitions)]


def rack_alternated(broker_ids: Iterable[int], domains: Domains) -> list[int]:
    """Brokers ordered so that consecutive ones are in different ADs where possible.

    Like Kafka's rack-alternated list: ADs sorted by name, brokers of each AD sorted by id, then
    one broker of each AD in turn. Brokers without a rack come last, sorted by id.

    >>> d = Domains.from_racks({1: "A/1", 2: "A/2", 3: "B/1", 4: "B/2"})
    >>> rack_alternated([1, 2, 3, 4], d)
    [1, 3, 2, 4]
    """
    by_ad: dict[str, list[int]] = {}
    unknown: list[int] = []
    for b in sorted(set(broker_ids)):
        a = domains.ad.get(b)
        if a is None:
            unknown.append(b)
        else:
            by_ad.setdefault(a, []).append(b)
    queues = [by_ad[a] for a in sorted(by_ad)]
    out: list[int] = []
    i = 0
    while True:
        progressed = False
        for q in queues:
            if i < len(q):
                out.append(q[i])
                progressed = True
        if not progressed:
            break
        i += 1
    return out + unknown


def alternates(order: Sequence[int], domains: Domains) -> bool:
    """True when consecutive brokers of ``order`` (cyclically) are never in the same known AD,
    or when there is nothing to alternate (fewer than two known ADs)."""
    n = len(order)
    if domains.count_ads(order) < 2:
        return True
    ad = domains.ad
    for i in range(n):
        a, b = ad.get(order[i]), ad.get(order[(i + 1) % n])
        if a is not None and a == b:
            return False
    return True


def domain_order(broker_ids: Iterable[int], domains: Domains) -> list[int]:
    """The order placement walks: sorted by id if that already alternates ADs, else
    :func:`rack_alternated`."""
    ids = sorted(set(broker_ids))
    return ids if alternates(ids, domains) else rack_alternated(ids, domains)


# --------------------------------------------------------------------------- domain-aware choice


class DomainRules:
    """What a partition's replica set should achieve, given the brokers available.

    With ``n_ads`` known ADs and ``n_fds`` known fault domains among the available brokers, a set
    of ``rf`` replicas may repeat an AD at most ``rf - min(rf, n_ads)`` times and a fault domain
    at most ``rf - min(rf, n_fds)`` times (brokers with unknown racks never count as repeats).
    """

    __slots__ = ("domains", "n_ads", "n_fds", "_ad", "_fd")

    def __init__(self, domains: Domains, available: Iterable[int]):
        available = list(available)
        self.domains = domains
        self.n_ads = domains.count_ads(available)
        self.n_fds = domains.count_fds(available)
        self._ad = domains.ad
        self._fd = domains.fd

    def slack(self, rf: int) -> tuple[int, int]:
        """Allowed (AD repeats, FD repeats) for ``rf`` replicas."""
        return rf - min(rf, self.n_ads), rf - min(rf, self.n_fds)

    def satisfied(self, replicas: Sequence[int]) -> bool:
        """True when ``replicas`` are distinct and within both slacks."""
        rf = len(replicas)
        if len(set(replicas)) != rf:
            return False
        ad_slack, fd_slack = self.slack(rf)
        ad_get, fd_get = self._ad.get, self._fd.get
        ads = [a for a in map(ad_get, replicas) if a is not None]
        if len(ads) - len(set(ads)) > ad_slack:
            return False
        fds = [f for f in map(fd_get, replicas) if f is not None]
        return len(fds) - len(set(fds)) <= fd_slack

    def keep_in_order(
        self,
        replicas: Sequence[int],
        forbidden: "set[int] | frozenset[int] | None" = None,
        first: "set[int] | frozenset[int] | tuple[int, ...]" = (),
    ) -> list[int | None]:
        """Keep each replica that is not forbidden, not a duplicate and within the slacks; the
        others become ``None`` (slots to refill with :meth:`choose`). Replicas in ``first`` are
        considered before the others (e.g. replicas that stay where they are, so that a conflict
        is solved by moving a replica that moves anyway), then the rest in list order."""
        rf = len(replicas)
        ad_slack, fd_slack = self.slack(rf)
        out: list[int | None] = [None] * rf
        seen: set[int] = set()
        used_ads: set[str] = set()
        used_fds: set[FdKey] = set()
        ad_rep = fd_rep = 0
        order = [i for i in range(rf) if replicas[i] in first] + [i for i in range(rf) if replicas[i] not in first]
        for i in order:
            b = replicas[i]
            if b in seen or (forbidden is not None and b in forbidden):
                continue
            a, f = self._ad.get(b), self._fd.get(b)
            new_ad_rep = ad_rep + (1 if a is not None and a in used_ads else 0)
            new_fd_rep = fd_rep + (1 if f is not None and f in used_fds else 0)
            if new_ad_rep > ad_slack or new_fd_rep > fd_slack:
                continue
            ad_rep, fd_rep = new_ad_rep, new_fd_rep
            seen.add(b)
            if a is not None:
                used_ads.add(a)
            if f is not None:
                used_fds.add(f)
            out[i] = b
        return out

    def choose(self, chosen: Sequence[int], candidates: Iterable[int]) -> int | None:
        """The first candidate (in the given order) of the best class, not already chosen:
        a new AD, else a new fault domain, else any. ``None`` when no candidate is left."""
        ad_get, fd_get = self._ad.get, self._fd.get
        used_ads = {a for a in map(ad_get, chosen) if a is not None}
        used_fds = {f for f in map(fd_get, chosen) if f is not None}
        chosen_set = set(chosen)
        best: int | None = None
        best_class = 3
        for c in candidates:
            if c in chosen_set:
                continue
            a = ad_get(c)
            if a is not None and a not in used_ads:
                return c  # class 0: cannot do better
            f = fd_get(c)
            cls = 1 if (f is not None and f not in used_fds) else 2
            if cls < best_class:
                best, best_class = c, cls
        return best


def _cyclic(order: Sequence[int], start: int) -> Iterator[int]:
    n = len(order)
    for k in range(n):
        yield order[(start + k) % n]


def _domain_warnings(order: Sequence[int], domains: Domains, rf: int, rules: DomainRules) -> list[str]:
    warnings: list[str] = []
    unknown = [b for b in order if domains.ad.get(b) is None]
    if unknown and len(unknown) < len(order):
        warnings.append(
            f"brokers {', '.join(map(str, sorted(unknown)))} have no rack: they are placed without "
            "availability-domain checks; set broker.rack on them"
        )
    if rules.n_ads and rules.n_ads < rf:
        ads = sorted({domains.ad[b] for b in order if domains.ad.get(b) is not None})  # type: ignore[type-var]
        warnings.append(
            f"only {rules.n_ads} availability domains ({', '.join(ads)}) for replication factor {rf}: "
            "some partitions get two replicas in one availability domain"
            + (" (in distinct fault domains)" if rules.n_fds >= rf else "")
        )
    if rules.n_fds and rules.n_fds < rf:
        warnings.append(
            f"only {rules.n_fds} fault domains for replication factor {rf}: some partitions get two "
            "replicas in one fault domain"
        )
    return warnings


def place_replicas(
    racks: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    start_broker: int | None = None,
    separator: str = DEFAULT_RACK_SEPARATOR,
) -> Placement:
    """Rack-aware round robin over the brokers of ``racks`` (broker id -> ``broker.rack``).

    The walk order is :func:`domain_order`. Partition ``p`` starts at position ``start + p``;
    replica ``r`` is the first broker from position ``start + p + r`` on (cyclically) that is
    in a new AD, else in a new fault domain, else any unused broker. When the brokers already
    alternate ADs this is exactly :func:`round_robin`.
    """
    domains = Domains.from_racks(racks, separator)
    order = domain_order(racks, domains)
    n = len(order)
    _check_counts(n, partitions, replication_factor)
    start = _start_index(order, start_broker)
    rules = DomainRules(domains, order)
    out: list[tuple[int, ...]] = []
    for p in range(partitions):
        chosen: list[int] = []
        for r in range(replication_factor):
            pick = rules.choose(chosen, _cyclic(order, start + p + r))
            assert pick is not None  # replication_factor <= n
            chosen.append(pick)
        out.append(tuple(chosen))
    return Placement(tuple(out), tuple(_domain_warnings(order, domains, replication_factor, rules)))


def assign_new_topic(
    snapshot: ClusterSnapshot,
    partitions: int,
    replication_factor: int,
    *,
    topic: str | None = None,
    exclude_brokers: Iterable[int] = (),
    start_broker: int | None = None,
    separator: str = DEFAULT_RACK_SEPARATOR,
) -> Placement:
    """Explicit assignments for a new topic on the live brokers of ``snapshot`` minus
    ``exclude_brokers`` (``kmigrate topics create --exclude-brokers 1,2,3``).

    Without ``start_broker`` the start is derived from the topic name (CRC-32, so it is
    deterministic and spreads the first replicas of many topics), or the first broker when no
    name is given. Raises :class:`BadInput` when too few brokers remain.
    """
    excluded = set(exclude_brokers)
    live = {b.id: b.rack for b in snapshot.brokers if b.alive}
    racks = {bid: rack for bid, rack in live.items() if bid not in excluded}
    warnings: list[str] = []
    unknown = sorted(excluded - set(live))
    if unknown:
        warnings.append(f"excluded brokers {', '.join(map(str, unknown))} are not registered; nothing to exclude there")
    if len(racks) < replication_factor:
        after = f" after excluding {', '.join(map(str, sorted(excluded)))}" if excluded else ""
        raise BadInput(
            f"replication factor {replication_factor} needs {replication_factor} live brokers but only "
            f"{len(racks)} remain{after}: lower the replication factor or exclude fewer brokers"
        )
    if start_broker is not None and start_broker not in racks:
        raise BadInput(
            f"start broker {start_broker} is not a live, non-excluded broker "
            f"({', '.join(map(str, sorted(racks)))}): pick one of them"
        )
    if start_broker is None and topic:
        domains = Domains.from_racks(racks, separator)
        order = domain_order(racks, domains)
        start_broker = order[zlib.crc32(topic.encode("utf-8")) % len(order)]
    placement = place_replicas(racks, partitions, replication_factor, start_broker=start_broker, separator=separator)
    return Placement(placement.assignments, tuple(warnings) + placement.warnings)
