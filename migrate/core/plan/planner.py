"""The migration planner: snapshot + playbook -> :class:`~migrate.core.plan.document.Plan`. Pure.

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

import json
import math
from collections import Counter, deque
from itertools import chain
from operator import attrgetter
from typing import Any, Iterable, Mapping, Sequence

from migrate.core.plan.audit import (
    audit_durability, audit_mapping, audit_size, audit_versions, audit_zookeeper, shown_ids, sort_findings,
)
from migrate.errors import BadInput
from migrate.core.model import ClusterSnapshot
from migrate.core.zookeeper.config import DynamicConfig
from migrate.core.zookeeper.change import Change, is_reached, joiner_config, single_reconfig, target_config
from migrate.core.units import format_connect, parse_connect
from migrate.core.plan.placement import DomainRules, Domains, domain_order
from migrate.core.plan.document import (
    BrokerTotal,
    MoveList,
    Finding,
    PartitionMove,
    Plan,
    RunbookStep,
    TopicTotal,
    ZkPlan,
    compute_plan_id,
    reassignment_json,
)
from migrate.core.ledger import DEFAULT_TOPIC
from migrate.core.playbook import DEFAULT_THROTTLE_BYTES_PER_S, Playbook

__all__ = [
    "build_plan",
    "plan_zookeeper",
    "build_runbook",
    "balance_leaders",
    "plan_from_reassignment_json",
    "reassignment_json",
    "RUNBOOK_COMMANDS",
    "RESOLVED_LATER_IN_RUNBOOK",
]

_UNMAPPED = 1
_REPAIR = 2
_CACHE_LIMIT = 300_000  # distinct replica tuples remembered; beyond that, computed per partition

# cache entry of a current replica tuple
_DIRECT = 4  # entry not cached: count its partitions one by one
_SLOW = _REPAIR | _DIRECT
_E_TGT, _E_FLAGS, _E_REASON, _E_SAME, _E_NADD, _E_ADDED, _E_BEFORE, _E_PLAIN, _E_IN, _E_TOPICS = range(10)


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
        return _account(cur, tgt, leader, size, self.bytes_in, self.bytes_out)


def _account(cur: tuple[int, ...], tgt: tuple[int, ...], leader: int | None, size: int | None,
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


def _estimated_seconds(bytes_in: Mapping[int, int], bytes_out: Mapping[int, int], throttle: int) -> int:
    """The copy time the busiest broker bounds from below (see :class:`~migrate.core.plan.document.Plan`)."""
    busiest = max(chain(bytes_in.values(), bytes_out.values()), default=0)
    return math.ceil(busiest / throttle) if throttle else 0


RUNBOOK_COMMANDS = {
    "audit": "kmigrate plan --playbook {playbook} -o {plan}",
    "zookeeper": "kmigrate zookeeper --playbook {playbook} --add {add} --remove {remove}",
    "verify_snapshot": "kmigrate verify snapshot -o before.json --bootstrap-server {bootstrap}",
    "partitions": "kmigrate partitions --playbook {playbook} --plan {plan}",
    "verify_compare": "kmigrate verify compare before.json",
    "joiner_config": "kmigrate zookeeper joiner-config ID --playbook {playbook}",
    "health": "kmigrate health --bootstrap-server {bootstrap} --wait",
}
"""Command templates used in the runbook (``{plan}`` is the plan file). ``health`` is the gate an operator
runs between two broker restarts; README.md's real-cluster block follows these steps in order
(``tests/unit/test_readme_order.py``)."""

RESOLVED_LATER_IN_RUNBOOK = frozenset({"mapping.new_broker_missing"})
"""Audit errors a later step of the runbook resolves: the new brokers start at its "start the new broker(s)"
step, after the first ``kmigrate plan``, and the plan is made again after it. ``kmigrate plan`` reports them
without failing; ``kmigrate partitions`` still refuses a plan that has them."""


# --------------------------------------------------------------------------- targets


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


# --------------------------------------------------------------------------- zookeeper


def _joiner_lines(committed: DynamicConfig, change: Change) -> tuple[str, ...]:
    """The lines of :func:`joiner_config` as plans have always listed them: the committed servers
    that are not joining, then the joiners (ZooKeeper reads them in any order; plan files stay
    byte-identical across versions)."""
    config = joiner_config(committed, change.add)
    joining = [j.id for j in change.add]
    order = [s.id for s in committed.servers if s.id not in joining] + joining
    return tuple(config.get(i).line() for i in order if config.get(i) is not None)


def plan_zookeeper(snapshot: ClusterSnapshot, playbook: Playbook) -> ZkPlan | None:
    """The ensemble change of the playbook, or ``None`` when it adds and removes nothing.

    Worked out by the functions ``kmigrate zookeeper`` runs (``migrate.core.zookeeper.change``: the target
    config, the one reconfig, the joiners' config), so the plan and the run cannot disagree.
    """
    zs = playbook.zookeeper
    if not zs.add and not zs.remove:
        return None
    committed = DynamicConfig(snapshot.zookeeper.servers, snapshot.zookeeper.config_version)
    joiners = tuple(sorted(zs.add, key=lambda s: s.id))
    change = Change(tuple(j.described() for j in joiners), zs.remove)
    target = target_config(committed, change)
    hosts, chroot = parse_connect(zs.connect)
    before = [f"{h}:{p}" for h, p in hosts]
    during = list(before)
    for j in joiners:
        if j.client_address not in during:
            during.append(j.client_address)
    connect_after = target.connect_string(chroot=chroot)
    if not target.connect_string():  # nothing known about the voters: keep what is left of the connect string
        removed_addrs = {s.client_address for s in committed.servers if s.id in change.remove}
        connect_after = format_connect([a for a in before if a not in removed_addrs], chroot)
    reconfig = single_reconfig(committed, target)
    return ZkPlan(
        current=committed.servers,
        joiners=joiners,
        remove=change.remove,
        from_config=committed.version,
        joiner_config=_joiner_lines(committed, change),
        reconfig_add=tuple(s.line() for s in reconfig.joining),
        reconfig_command=reconfig.zkcli(),
        connect_before=zs.connect,
        connect_during=format_connect(during, chroot),
        connect_after=connect_after,
        voters_before=committed.voter_ids,
        voters_after=target.voter_ids,
        already_done=bool(committed.servers) and is_reached(committed, target),
    )


# --------------------------------------------------------------------------- runbook


def build_runbook(
    zk: ZkPlan | None,
    mapping: Mapping[int, int],
    new_brokers: Sequence[int],
    new_racks: Mapping[int, str | None],
    *,
    has_moves: bool,
    plan_file: str = "plan.json",
    playbook_file: str = "playbook.yaml",
    bootstrap: str = "BOOTSTRAP",
    command_config: str | None = None,
) -> tuple[RunbookStep, ...]:
    """The ordered runbook: audit, ZooKeeper joiners, first rolling restart, reconfig, second
    rolling restart, new brokers, the plan again, verify snapshot, partitions, verify compare, decommission.
    Steps that do not apply (no ZooKeeper change, no broker mapping) are left out."""
    steps: list[tuple[str, str, str, str]] = []
    fields = {"plan": plan_file, "playbook": playbook_file, "bootstrap": bootstrap}
    c = {k: v.format(add="{add}", remove="{remove}", **fields) for k, v in RUNBOOK_COMMANDS.items()}
    if command_config:  # the playbook's Kafka client file: commands given no playbook need it too
        for k in ("verify_snapshot", "verify_compare", "health"):
            c[k] += f" --command-config {command_config}"
    steps.append(("kmigrate", c["audit"],
                  "Audit the cluster and the plan: durability, mapping, ZooKeeper and the size of the move.",
                  "no error finding is left (forceable ones only with --force)"))
    zk_todo = zk is not None and not zk.already_done
    if zk_todo:
        assert zk is not None
        joiners = shown_ids(j.id for j in zk.joiners)
        steps.append(("operator", f"start ZooKeeper server(s) {joiners} as joiners",
                      "Give each joiner reconfigEnabled=true, standaloneEnabled=false, a dynamicConfigFile with the "
                      "committed servers plus the joiners as observers (" + "; ".join(zk.joiner_config) + "), "
                      f"and its myid (`{c['joiner_config']}` prints that file); start them. Never list joiners as "
                      "participants in that file.",
                      f"kmigrate sees server(s) {joiners} serving (srvr) with the committed config version"))
        steps.append(("operator", f"rolling restart of the brokers with zookeeper.connect={zk.connect_during}",
                      "Restart the brokers one at a time with a zookeeper.connect that includes the new servers; "
                      f"after each, run `{c['health']}` before the next (it waits until no partition is "
                      "under-replicated or offline, every broker is registered and the controller is known).",
                      "describe_configs shows every broker's zookeeper.connect includes a new server; no "
                      "under-replicated partition"))
        add = ",".join(str(j.id) for j in zk.joiners) or "-"
        remove = ",".join(map(str, zk.remove)) or "-"
        steps.append(("kmigrate", RUNBOOK_COMMANDS["zookeeper"].format(add=add, remove=remove, **fields),
                      f"One reconfig from config version {zk.from_config if zk.from_config is None else format(zk.from_config, 'x')}: "
                      f"{zk.reconfig_command}.",
                      f"/zookeeper/config read from a new server lists exactly the voters {shown_ids(zk.voters_after)}"))
        steps.append(("operator", f"rolling restart of the brokers with zookeeper.connect={zk.connect_after}",
                      "Restart the brokers one at a time with a zookeeper.connect of the new servers only; "
                      f"after each, run `{c['health']}` before the next.",
                      "describe_configs shows no broker's zookeeper.connect names a removed server"))
    if mapping:
        racks = ", ".join(f"{b}:{new_racks.get(b) or '?'}" for b in new_brokers)
        connect = f" and zookeeper.connect={zk.connect_after}" if zk is not None else ""
        steps.append(("operator", f"start the new broker(s) {shown_ids(new_brokers)}",
                      f"Start each new broker with its broker.id and broker.rack ({racks}){connect}; then "
                      f"`{c['health']} --broker-list {','.join(map(str, sorted({*mapping, *new_brokers})))}`.",
                      "every new broker is registered, alive and reports its rack"))
    if mapping:
        steps.append(("kmigrate", c["audit"],
                      "Plan again now that the new brokers are registered: kmigrate partitions refuses a plan whose "
                      "audit did not find them (the first one, made before they started).",
                      "no error finding is left"))
    if has_moves:
        steps.append(("kmigrate", c["verify_snapshot"],
                      "Record every partition's offsets and a digest of its records before the move.",
                      "the snapshot covers every partition of the plan"))
        steps.append(("kmigrate", c["partitions"],
                      "Move the partitions in throttled batches, recorded in the bookkeeping topic; elect the "
                      "preferred leaders once a topic has moved; remove the throttles.",
                      "every partition's replicas equal its target, all in the ISR; no reassignment or throttle left"))
        steps.append(("kmigrate", c["verify_compare"],
                      "Compare the records after the move with the snapshot.",
                      "no record lost or changed"))
    old_brokers = sorted(mapping)
    old_zk = list(zk.remove) if zk is not None else []
    if old_brokers or old_zk:
        what = []
        if old_brokers:
            what.append(f"brokers {shown_ids(old_brokers)}")
        if old_zk:
            what.append(f"ZooKeeper servers {shown_ids(old_zk)}")
        steps.append(("operator", f"decommission {' and '.join(what)}",
                      "Stop and remove the old nodes once kmigrate reports them empty.",
                      "the old brokers host no replica and lead nothing; the old ZooKeeper servers are not in "
                      "/zookeeper/config"))
    return tuple(RunbookStep(i + 1, a, cmd, d, chk) for i, (a, cmd, d, chk) in enumerate(steps))


# --------------------------------------------------------------------------- the plan


def build_plan(snapshot: ClusterSnapshot, playbook: Playbook, *, allow_merge: bool = False, plan_file: str = "plan.json") -> Plan:
    """Plan the migration of ``snapshot`` described by ``playbook``.

    ``allow_merge`` turns "two old brokers map to one new broker" from an error into a warning.
    ``plan_file`` is only used in the runbook's commands. Pure and deterministic: the same
    inputs give a byte-identical :func:`~migrate.core.plan.document.plan_to_json`.
    """
    sep = playbook.migration.rack_separator
    mapping = {int(k): int(v) for k, v in playbook.brokers.mapping.items()}
    retiring = frozenset(mapping)
    keep = frozenset(playbook.brokers.keep)
    new_ids = set(mapping.values()) | set(playbook.brokers.new)

    racks: dict[int, str | None] = {b.id: b.rack for b in snapshot.brokers}
    for nid, nb in playbook.brokers.new.items():
        if racks.get(nid) is None:
            racks[nid] = nb.rack(sep)
    for nid in new_ids:
        racks.setdefault(nid, None)
    domains = Domains.from_racks(racks, sep)
    alive = {b.id for b in snapshot.brokers if b.alive}
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
    topic_totals_l: list[TopicTotal] = []
    unknown_total = 0
    for t in sorted(snapshot.topics, key=attrgetter("name")):
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
        topic_totals_l.append(TopicTotal(name, len(parts), t_moved, t_bytes, t_unknown))
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
    moves = MoveList(tuple(rows))
    del rows
    topic_totals = tuple(topic_totals_l)
    total_bytes = sum(bytes_in.values())
    throttle = playbook.migration.throttle_bytes_per_s
    estimated_seconds = _estimated_seconds(bytes_in, bytes_out, throttle)

    all_brokers = sorted(set(replicas_before) | set(replicas_after) | alive | new_ids | retiring)
    broker_totals = tuple(
        BrokerTotal(
            broker=b,
            role="old" if b in retiring else "new" if b in new_ids else "kept",
            bytes_in=bytes_in.get(b, 0),
            bytes_out=bytes_out.get(b, 0),
            replicas_before=replicas_before.get(b, 0),
            replicas_after=replicas_after.get(b, 0),
            leaders_after=leaders_after.get(b, 0),
        )
        for b in all_brokers
    )

    zk = plan_zookeeper(snapshot, playbook)
    warnings = tgts.warnings(new_ids)
    if not snapshot.zookeeper.servers and zk is not None:
        warnings.append("the snapshot lists no ZooKeeper servers: the joiner configuration and voter count are "
                        "incomplete; re-run kmigrate inspect against the ensemble")
    findings: list[Finding] = []
    findings += audit_durability(snapshot)
    findings += audit_versions(snapshot)
    findings += audit_mapping(snapshot, playbook, allow_merge=allow_merge, replica_counts=replicas_before)
    findings += audit_zookeeper(snapshot, playbook, zk)
    findings += audit_size(broker_totals, total_bytes, estimated_seconds, throttle, unknown_total, len(moves))

    new_brokers = tuple(sorted(new_ids))
    runbook = build_runbook(zk, mapping, new_brokers, {b: racks.get(b) for b in new_brokers},
                            has_moves=bool(moves), plan_file=plan_file, playbook_file=playbook.source,
                            bootstrap=playbook.kafka.bootstrap_servers, command_config=playbook.kafka.command_config)
    return Plan(
        plan_id=compute_plan_id(snapshot.cluster_id, mapping, moves, zk, presorted=True),
        cluster_id=snapshot.cluster_id,
        source=f"playbook {playbook.source}",
        mapping=dict(sorted(mapping.items())),
        new_brokers=new_brokers,
        retiring_brokers=tuple(sorted(retiring)),
        throttle_bytes_per_s=throttle,
        bookkeeping_topic=playbook.migration.bookkeeping_topic,
        max_partition_moves_per_broker=playbook.migration.max_partition_moves_per_broker,
        max_partition_moves_cluster=playbook.migration.max_partition_moves_cluster,
        moves=moves,
        topic_totals=topic_totals,
        broker_totals=broker_totals,
        total_bytes=total_bytes,
        estimated_seconds=estimated_seconds,
        zookeeper=zk,
        warnings=tuple(warnings),
        findings=sort_findings(findings),
        runbook=runbook,
    )


# --------------------------------------------------------------------------- import


def plan_from_reassignment_json(
    text: str,
    snapshot: ClusterSnapshot,
    *,
    source: str = "reassignment.json",
    throttle_bytes_per_s: int = DEFAULT_THROTTLE_BYTES_PER_S,
    bookkeeping_topic: str = DEFAULT_TOPIC,
    max_partition_moves_per_broker: int = 5,
    plan_file: str = "plan.json",
) -> Plan:
    """Import a ``kafka-reassign-partitions.sh`` file as a plan (no broker mapping, no
    ZooKeeper change). Replica order is kept as given (the first is the preferred leader).

    Raises :class:`BadInput` when the file is not that format, a topic or partition does not
    exist, a replica is not a known broker, or a replica list is empty or repeats a broker.
    """
    where = f"reassignment file {source}"
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadInput(f"{where} is not JSON ({exc}): give a file in the kafka-reassign-partitions.sh format") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list):
        raise BadInput(f'{where} has no "partitions" list: expected {{"version":1,"partitions":[...]}}')
    if doc.get("version", 1) != 1:
        raise BadInput(f"{where} has version {doc.get('version')!r}; only version 1 is known")
    topics = {t.name: t for t in snapshot.topics}
    known = {b.id for b in snapshot.brokers}
    seen: set[tuple[str, int]] = set()
    entries: list[tuple[str, Any, tuple[int, ...]]] = []
    for i, e in enumerate(doc["partitions"]):
        at = f"{where}: partitions[{i}]"
        if not isinstance(e, dict):
            raise BadInput(f"{at}: expected an object with topic, partition, replicas")
        topic, part, replicas = e.get("topic"), e.get("partition"), e.get("replicas")
        if not isinstance(topic, str):
            raise BadInput(f"{at}.topic: expected a topic name, got {topic!r}")
        if isinstance(part, bool) or not isinstance(part, int):
            raise BadInput(f"{at}.partition: expected a partition number, got {part!r}")
        if not isinstance(replicas, list) or not replicas or any(isinstance(b, bool) or not isinstance(b, int) for b in replicas):
            raise BadInput(f"{at}.replicas: expected a non-empty list of broker ids, got {replicas!r}")
        if len(set(replicas)) != len(replicas):
            raise BadInput(f"{at}.replicas: broker listed twice in {replicas}")
        log_dirs = e.get("log_dirs")
        if log_dirs is not None and (not isinstance(log_dirs, list) or len(log_dirs) != len(replicas)):
            raise BadInput(f"{at}.log_dirs: expected one entry per replica ({len(replicas)})")
        t = topics.get(topic)
        if t is None:
            raise BadInput(f"{at}.topic: topic {topic!r} does not exist in the cluster: fix the file or re-run kmigrate inspect")
        match = [p for p in t.partitions if p.partition == part]
        if not match:
            raise BadInput(f"{at}.partition: topic {topic!r} has no partition {part} (it has {len(t.partitions)})")
        unknown = [b for b in replicas if b not in known]
        if unknown:
            raise BadInput(f"{at}.replicas: broker(s) {shown_ids(unknown)} are not registered brokers ({shown_ids(sorted(known))})")
        if (topic, part) in seen:
            raise BadInput(f"{at}: {topic}-{part} is listed twice")
        seen.add((topic, part))
        entries.append((topic, match[0], tuple(replicas)))
    entries.sort(key=lambda x: (x[0], x[1].partition))
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    moves: list[PartitionMove] = []
    per_topic: dict[str, list[int]] = {}
    unknown_total = 0
    for topic, p, tgt in entries:
        if tgt == p.replicas:
            continue
        row = per_topic.setdefault(topic, [0, 0, 0])
        row[0] += 1
        moved = _account(p.replicas, tgt, p.leader, p.size_bytes, bytes_in, bytes_out)
        if moved is None:
            row[2] += 1
            unknown_total += 1
        else:
            row[1] += moved
        moves.append(PartitionMove(topic, p.partition, p.replicas, tgt, p.size_bytes))
    changed = {(m.topic, m.partition): m.target for m in moves}
    replicas_before: Counter[int] = Counter()
    replicas_after: Counter[int] = Counter()
    leaders_after: Counter[int] = Counter()
    for t in snapshot.topics:
        for p in t.partitions:
            replicas_before.update(p.replicas)
            final = changed.get((t.name, p.partition), p.replicas)
            replicas_after.update(final)
            if final:
                leaders_after[final[0]] += 1
    total_bytes = sum(bytes_in.values())
    estimated_seconds = _estimated_seconds(bytes_in, bytes_out, throttle_bytes_per_s)
    broker_totals = tuple(
        BrokerTotal(b, "kept", bytes_in.get(b, 0), bytes_out.get(b, 0), replicas_before.get(b, 0),
                    replicas_after.get(b, 0), leaders_after.get(b, 0))
        for b in sorted(set(replicas_before) | set(replicas_after) | known)
    )
    topic_totals = tuple(
        TopicTotal(name, len(topics[name].partitions), *per_topic[name]) for name in sorted(per_topic)
    )
    findings = audit_durability(snapshot) + audit_versions(snapshot)
    alive = {b.id for b in snapshot.brokers if b.alive}
    dead_targets = sorted({b for m in moves for b in m.target} - alive)
    for b in dead_targets:
        findings.append(Finding("error", "mapping.new_broker_missing", f"broker {b}",
                                f"broker {b} is a target but not alive: start it before kmigrate partitions",
                                forceable=False, blocks="partitions"))
    findings += audit_size(broker_totals, total_bytes, estimated_seconds, throttle_bytes_per_s, unknown_total, len(moves))
    runbook = build_runbook(None, {}, (), {}, has_moves=bool(moves), plan_file=plan_file)
    moves_t = tuple(moves)
    return Plan(
        plan_id=compute_plan_id(snapshot.cluster_id, {}, moves_t, None),
        cluster_id=snapshot.cluster_id,
        source=where,
        mapping={},
        new_brokers=(),
        retiring_brokers=(),
        throttle_bytes_per_s=throttle_bytes_per_s,
        bookkeeping_topic=bookkeeping_topic,
        max_partition_moves_per_broker=max_partition_moves_per_broker,
        max_partition_moves_cluster=None,
        moves=moves_t,
        topic_totals=topic_totals,
        broker_totals=broker_totals,
        total_bytes=total_bytes,
        estimated_seconds=estimated_seconds,
        zookeeper=None,
        warnings=(),
        findings=sort_findings(findings),
        runbook=runbook,
    )
