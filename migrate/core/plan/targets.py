"""Where every partition's replicas go, pure: the planner's rule for a broker mapping, without the
rest of a plan (no audit, no ZooKeeper section, no runbook). :func:`replica_targets` is what
:func:`migrate.core.plan.planner.build_plan` plans its moves with, and what the partitions runner plans
partitions outside its plan with (:func:`migrate.core.partitions.moves.plan_targets`), so the two agree.

Broker replacement (the procedure):

1. Every replica id that is a key of ``brokers.mapping`` is replaced by its new id, in place:
   the partition keeps its layout and order. An id with no mapping keeps its value (a warning
   says so: the topic may have been moved already, or the broker stays).
2. A replica list that the mapping leaves invalid is repaired slot by slot (replicas that stay
   where they are win, then earlier slots): a broker twice (``(1, 4, 5)`` with ``1 -> 4``), a broker that is itself retiring, or
   two replicas in one availability domain (AD) while there are at least as many ADs as
   replicas (then one fault domain while there are enough fault domains). The replacement is
   the next live, non-retiring broker in a new AD (else a new fault domain, else any), taken in
   the rack-alternated order from a rotating position (deterministic, and repairs spread).
3. Preferred leaders (first replicas) of the moved partitions are chosen once, evenly: greedy
   in topic/partition order (the mapped first replica while its broker is below the even share,
   else the least-led replica, earlier position on ties), then improved
   along alternating paths until no path leads from a broker with ``L`` leaders to one with
   ``L - 2`` or fewer. That is an optimal semi-matching (Harvey et al., 2003): it minimises
   the largest leader count and maximises the smallest, so whenever leader counts within one
   of even are achievable at all (always for a balanced cluster mapped one to one) the plan
   has them. Only the order changes, never the set, so AD distinctness is kept. Partitions
   that do not move keep their leaders and count as fixed.

Everything is deterministic: topics and partitions are processed sorted, ties broken by
position then id; the input order of topics does not matter. Work per partition is O(RF).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, Iterable, Mapping, Sequence

from migrate.core.model import DEFAULT_RACK_SEPARATOR, Topic
from migrate.core.plan.placement import DomainRules, Domains, domain_order

__all__ = ["ReplicaTargets", "replica_targets", "balance_leaders", "account_bytes", "shown_ids"]

_UNMAPPED = 1
_REPAIR = 2
_CACHE_LIMIT = 300_000  # distinct replica tuples remembered; beyond that, computed per partition

# cache entry of a current replica tuple
_DIRECT = 4  # entry not cached: count its partitions one by one
_SLOW = _REPAIR | _DIRECT
_E_TGT, _E_FLAGS, _E_REASON, _E_SAME, _E_NADD, _E_ADDED, _E_BEFORE, _E_PLAIN, _E_IN, _E_TOPICS = range(10)

_MAX_LISTED = 8


def shown_ids(ids: Iterable[object], limit: int = _MAX_LISTED) -> str:
    """Ids for a message: the first ``limit``, then ``and N more``."""
    items = list(ids)
    shown = ", ".join(map(str, items[:limit]))
    if len(items) > limit:
        shown += f" and {len(items) - limit} more"
    return shown


class _Direct:
    """Counters for partitions handled one by one (repaired, or beyond the cache limit)."""

    def __init__(self) -> None:
        self.replicas_before: list[int] = []
        self.replicas_after: list[int] = []
        self.fixed_leaders: list[int] = []
        self.bytes_in: dict[int, int] = {}
        self.bytes_out: dict[int, int] = {}

    def before(self, cur: tuple[int, ...]) -> None:
        self.replicas_before.extend(cur)

    def unchanged(self, cur: tuple[int, ...]) -> None:
        self.replicas_after.extend(cur)
        if cur:
            self.fixed_leaders.append(cur[0])

    def moved(self, cur: tuple[int, ...], tgt: tuple[int, ...], leader: int | None, size: int | None) -> int | None:
        self.replicas_after.extend(tgt)
        return account_bytes(cur, tgt, leader, size, self.bytes_in, self.bytes_out)


def account_bytes(cur: tuple[int, ...], tgt: tuple[int, ...], leader: int | None, size: int | None,
             bytes_in: dict[int, int], bytes_out: dict[int, int]) -> int | None:
    """The bytes one partition's move copies (``None``: size unknown): ``size`` into every broker that
    joins, ``size x joiners`` out of the sending broker (the current leader if it is a current
    replica, else the first current replica)."""
    if size is None:
        return None
    added = [b for b in tgt if b not in cur]
    moved = size * len(added)
    if moved:
        for b in added:
            bytes_in[b] = bytes_in.get(b, 0) + size
        src = leader if leader is not None and leader >= 0 and leader in cur else cur[0]
        bytes_out[src] = bytes_out.get(src, 0) + moved
    return moved


# --------------------------------------------------------------------------- repairs


class _Targets:
    """Maps current replica tuples to target tuples (cached per distinct tuple) and repairs."""

    def __init__(
        self,
        mapping: Mapping[int, int],
        keep: frozenset[int],
        rules: DomainRules,
        walk: Sequence[int],
    ):
        self.mapping = mapping
        self.retiring = frozenset(mapping)
        self.keep = keep
        self.rules = rules
        self.walk = list(walk)
        self.pos_of = {b: i for i, b in enumerate(self.walk)}
        self.pos = 0
        self.repairs: dict[str, dict[str, list[int]]] = {}
        self.unmapped: dict[int, list[Any]] = {}  # broker -> [partitions, set of topics]
        self.short: dict[str, list[int]] = {}

    def entry(self, cur: tuple[int, ...]) -> list[Any]:
        """The cache entry of a current replica tuple (see the ``_E_*`` indexes)."""
        m = self.mapping
        tgt = tuple(map(m.get, cur, cur))
        flags = 0
        keep = self.keep
        for b in cur:
            if b not in m and b not in keep:
                flags |= _UNMAPPED
                break
        reason = ""
        if len(set(tgt)) != len(tgt):
            reason = "the mapping puts two replicas on one broker"
        elif any(b in self.retiring for b in tgt):
            reason = "the mapping targets a broker that is itself retiring"
        elif not self.rules.satisfied(tgt):
            reason = "the mapping puts two replicas in one availability or fault domain"
        if reason:
            flags |= _REPAIR
        same = tgt == cur
        added = tuple(b for b in tgt if b not in cur)
        return [tgt, flags, reason, same, len(added), added, 0, 0, 0, set() if flags & _UNMAPPED else None]

    def repair(self, topic: str, partition: int, cur: tuple[int, ...], tgt: tuple[int, ...], reason: str) -> tuple[int, ...]:
        rules = self.rules
        # replicas that stay where they are win conflicts: the replica that moves anyway yields
        slots = rules.keep_in_order(tgt, forbidden=self.retiring, first=frozenset(cur))
        chosen = [b for b in slots if b is not None]
        walk, n = self.walk, len(self.walk)
        for i, b in enumerate(slots):
            if b is not None:
                continue
            pick = rules.choose(chosen, (walk[(self.pos + k) % n] for k in range(n))) if n else None
            if pick is None:
                # not enough brokers: keep the original broker if it is not a duplicate
                orig = tgt[i]
                if orig not in chosen:
                    slots[i] = orig
                    chosen.append(orig)
                continue
            slots[i] = pick
            chosen.append(pick)
            self.pos = self.pos_of[pick] + 1
        out = tuple(b for b in slots if b is not None)
        self.repairs.setdefault(topic, {}).setdefault(reason, []).append(partition)
        if len(out) < len(tgt):
            self.short.setdefault(topic, []).append(partition)
        return out

    def note_unmapped(self, cur: tuple[int, ...], partitions: int, topics: Iterable[str]) -> None:
        """Record ``partitions`` partitions (of ``topics``) with replicas ``cur`` that hold
        brokers neither mapped nor kept."""
        m, keep = self.mapping, self.keep
        for b in cur:
            if b not in m and b not in keep:
                entry = self.unmapped.get(b)
                if entry is None:
                    entry = self.unmapped[b] = [0, set()]
                entry[0] += partitions
                entry[1].update(topics)

    def warnings(self, new_ids: set[int]) -> list[str]:
        out: list[str] = []
        for b in sorted(self.unmapped):
            count, topics = self.unmapped[b]
            names = shown_ids(sorted(topics), 3)
            if b in new_ids:
                out.append(f"broker {b} already holds replicas of {count} partition(s) (topics {names}); they stay "
                           "(the topic may have been moved already)")
            else:
                out.append(f"broker {b} is not in brokers.mapping: its replicas in {count} partition(s) (topics {names}) "
                           "stay where they are (the topic may have been moved already)")
        for topic in sorted(self.repairs):
            for reason in sorted(self.repairs[topic]):
                parts = self.repairs[topic][reason]
                out.append(f"topic {topic}: partition(s) {shown_ids(parts)}: {reason}; another live broker was chosen, "
                           "in an unused availability domain where possible")
        for topic in sorted(self.short):
            out.append(f"topic {topic}: partition(s) {shown_ids(self.short[topic])} lose a replica: not enough brokers "
                       "after the move for their replication factor")
        return out

# --------------------------------------------------------------------------- leaders


def balance_leaders(
    targets: Sequence[Sequence[int]],
    fixed_leaders: Mapping[int, int] | None = None,
    brokers: Iterable[int] = (),
) -> list[int]:
    """Choose a leader (one of its replicas) for each replica set so leader counts are balanced.

    ``fixed_leaders`` counts leaders that cannot move (partitions that are not reassigned);
    ``brokers`` are extra brokers to count even with no leader. Returns the chosen leader of
    each target. The result is an optimal semi-matching: no alternating path leads from a
    broker with ``L`` leaders to one with ``L - 2`` or fewer, so it minimises the largest count
    and maximises the smallest.

    >>> balance_leaders([(1, 2), (1, 2), (1, 3), (1, 3)])
    [2, 1, 3, 3]
    """
    load: dict[int, int] = {}
    for t in targets:
        if not t:
            raise ValueError("a partition with no replica has no leader")
    for b in chain(brokers, fixed_leaders or (), set(chain.from_iterable(targets))):
        load.setdefault(b, 0)
    if fixed_leaders:
        for b, c in fixed_leaders.items():
            load[b] = load.get(b, 0) + c
    # Greedy: keep the first replica (the mapped preferred leader) while its broker is below
    # the even share, else take the least-led replica (earlier position on ties).
    total = sum(load.values()) + len(targets)
    cap = -(-total // len(load)) if load else 0
    get = load.__getitem__
    leaders: list[int] = []
    append = leaders.append
    for t in targets:
        best = t[0]
        if load[best] >= cap:
            best = min(t, key=get)
        load[best] += 1
        append(best)
    _improve(targets, leaders, load)
    return leaders


def _improve(targets: Sequence[Sequence[int]], leaders: list[int], load: dict[int, int]) -> None:
    """Shift leaders along alternating paths until no cost-reducing path is left."""
    if not load or max(load.values()) - min(load.values()) <= 1:
        return
    led: dict[int, dict[int, None]] = {b: {} for b in load}
    for i, b in enumerate(leaders):
        led[b][i] = None
    order_key = lambda b: (-load[b], b)  # noqa: E731
    while True:
        lowest = min(load.values())
        done: set[int] = set()
        improved = False
        for u in sorted(load, key=order_key):
            lu = load[u]
            if lu - lowest < 2:
                break
            if u in done:
                continue
            limit = lu - 2
            parent: dict[int, tuple[int, int] | None] = {u: None}
            queue = deque([u])
            found = None
            while queue and found is None:
                x = queue.popleft()
                for i in led[x]:
                    for v in targets[i]:
                        if v in parent:
                            continue
                        parent[v] = (x, i)
                        if load[v] <= limit:
                            found = v
                            break
                        queue.append(v)
                    if found is not None:
                        break
            if found is None:
                for v in parent:
                    if load[v] <= lu:
                        done.add(v)
                continue
            w = found
            step = parent[w]
            while step is not None:
                x, i = step
                leaders[i] = w
                del led[x][i]
                led[w][i] = None
                w = x
                step = parent[w]
            load[found] += 1
            load[u] -= 1
            improved = True
            break
        if not improved:
            return


# --------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class ReplicaTargets:
    """The planner's rule applied to a set of topics.

    ``rows``: one ``(topic, partition, current, target, bytes_to_move)`` per partition that moves, sorted
    by topic and partition, the target's preferred leader first (``bytes_to_move`` None when the size is
    unknown); ``topic_rows``: ``(topic, partitions, moved, bytes_to_move, unknown_sizes)`` per topic. The
    counters are per broker: replicas before and after, leaders after, bytes copied in and sent out.
    """

    rows: tuple[tuple[Any, ...], ...]
    topic_rows: tuple[tuple[str, int, int, int, int], ...]
    replicas_before: Counter[int]
    replicas_after: Counter[int]
    leaders_after: Counter[int]
    bytes_in: dict[int, int]
    bytes_out: dict[int, int]
    unknown_total: int
    warnings: tuple[str, ...]


def replica_targets(
    topics: Iterable[Topic],
    racks: Mapping[int, str | None],
    alive: Iterable[int],
    mapping: Mapping[int, int],
    keep: Iterable[int] = (),
    new: Iterable[int] = (),
    separator: str = DEFAULT_RACK_SEPARATOR,
) -> ReplicaTargets:
    """The targets of every partition of ``topics`` by the procedure (see the module docstring).

    ``racks``: each broker's rack (the new brokers' too when known); ``alive``: the live broker ids;
    ``mapping``: old broker id -> new broker id; ``keep``: brokers that stay; ``new``: new broker ids
    beyond the mapping's. Pure and deterministic.

    >>> from migrate.core.model import Partition, Topic
    >>> t = Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1, 10),))
    >>> replica_targets([t], {1: "AD-1", 2: "AD-2", 4: "AD-1", 5: "AD-2"}, {1, 2, 4, 5}, {1: 4, 2: 5}).rows
    (('t', 0, (1, 2), (4, 5), 20),)
    """
    retiring = frozenset(mapping)
    keep = frozenset(keep)
    new_ids = set(mapping.values()) | set(new)
    racks = dict(racks)
    for nid in new_ids:
        racks.setdefault(nid, None)
    alive = set(alive)
    domains = Domains.from_racks(racks, separator)
    available = sorted((alive | new_ids) - retiring)
    rules = DomainRules(domains, available)
    walk = domain_order(available, domains)
    tgts = _Targets(mapping, keep, rules, walk)

    # -- pass 1: targets, sizes and per-topic totals. The work that depends only on a partition's
    # current replica tuple (mapping, checks, which replicas are new) is done once per distinct
    # tuple and cached with counters; per partition it is O(1) beyond reading the partition.
    cache: dict[tuple[int, ...], list[Any]] = {}
    cache_get = cache.get
    new_entry = tgts.entry
    by_partition = attrgetter("partition")
    direct = _Direct()  # partitions not covered by a cache entry's counters (repairs, cache full)
    bytes_out: dict[int, int] = {}
    out_get = bytes_out.get
    mv_topic: list[str] = []
    mv_p: list[Any] = []
    mv_tgt: list[tuple[int, ...]] = []
    mv_bytes: list[int | None] = []
    mvt_add, mvp_add, mvtg_add, mvb_add = mv_topic.append, mv_p.append, mv_tgt.append, mv_bytes.append
    topic_rows: list[tuple[str, int, int, int, int]] = []
    unknown_total = 0
    for t in sorted(topics, key=attrgetter("name")):
        name = t.name
        parts = t.partitions
        t_moved = t_bytes = t_unknown = 0
        for p in sorted(parts, key=by_partition):
            cur = p.replicas
            e = cache_get(cur)
            if e is None:
                e = new_entry(cur)
                if len(cache) < _CACHE_LIMIT:
                    cache[cur] = e
                else:
                    e[_E_FLAGS] |= _DIRECT
            flags = e[_E_FLAGS]
            if flags & _SLOW:
                if flags & _DIRECT:
                    direct.before(cur)
                    if flags & _UNMAPPED:
                        tgts.note_unmapped(cur, 1, (name,))
                else:
                    e[_E_BEFORE] += 1
                    if flags & _UNMAPPED:
                        e[_E_TOPICS].add(name)
                tgt = tgts.repair(name, p.partition, cur, e[_E_TGT], e[_E_REASON]) if flags & _REPAIR else e[_E_TGT]
                if tgt == cur:
                    direct.unchanged(cur)
                    continue
                moved = direct.moved(cur, tgt, p.leader, p.size_bytes)
            else:
                e[_E_BEFORE] += 1
                e[_E_PLAIN] += 1
                if flags:
                    e[_E_TOPICS].add(name)
                if e[_E_SAME]:
                    continue
                tgt = e[_E_TGT]
                size = p.size_bytes
                if size is None:
                    moved = None
                else:
                    moved = size * e[_E_NADD]
                    if moved:
                        e[_E_IN] += size
                        # the entry sends from cur[0]; correct it when another replica leads
                        src = p.leader
                        if src != cur[0] and src is not None and src >= 0 and src in cur:
                            bytes_out[src] = out_get(src, 0) + moved
                            bytes_out[cur[0]] = out_get(cur[0], 0) - moved
            mvt_add(name)
            mvp_add(p)
            mvtg_add(tgt)
            mvb_add(moved)
            t_moved += 1
            if moved is None:
                t_unknown += 1
            else:
                t_bytes += moved
        topic_rows.append((name, len(parts), t_moved, t_bytes, t_unknown))
        unknown_total += t_unknown

    # -- counters from the cache entries, then the partitions counted one by one
    replicas_before: Counter[int] = Counter(direct.replicas_before)
    replicas_after: Counter[int] = Counter(direct.replicas_after)
    fixed: Counter[int] = Counter(direct.fixed_leaders)
    bytes_in: dict[int, int] = dict(direct.bytes_in)
    for b, v in direct.bytes_out.items():
        bytes_out[b] = bytes_out.get(b, 0) + v
    for cur, e in cache.items():
        n_before, n_plain = e[_E_BEFORE], e[_E_PLAIN]
        for b in cur:
            replicas_before[b] += n_before
        if e[_E_TOPICS]:
            tgts.note_unmapped(cur, n_before, e[_E_TOPICS])
        if not n_plain:
            continue
        if e[_E_SAME]:
            if cur:
                fixed[cur[0]] += n_plain
            for b in cur:
                replicas_after[b] += n_plain
        else:
            for b in e[_E_TGT]:
                replicas_after[b] += n_plain
            if e[_E_IN]:
                for b in e[_E_ADDED]:
                    bytes_in[b] = bytes_in.get(b, 0) + e[_E_IN]
                bytes_out[cur[0]] = bytes_out.get(cur[0], 0) + e[_E_IN] * e[_E_NADD]
    del cache

    # -- pass 2: leaders
    leaders = balance_leaders(mv_tgt, fixed, replicas_after)
    leaders_after = Counter(fixed)
    leaders_after.update(leaders)

    # -- pass 3: the moves, preferred leader first
    rows: list[tuple[Any, ...]] = []
    rows_add = rows.append
    for name, p, tgt, ld, moved in zip(mv_topic, mv_p, mv_tgt, leaders, mv_bytes):
        if tgt[0] != ld:
            tgt = (ld,) + tuple([b for b in tgt if b != ld])
        rows_add((name, p.partition, p.replicas, tgt, moved))
    del mv_topic, mv_p, mv_tgt, leaders, mv_bytes
    return ReplicaTargets(tuple(rows), tuple(topic_rows), replicas_before, replicas_after, leaders_after, bytes_in,
                          bytes_out, unknown_total, tuple(tgts.warnings(new_ids)))
