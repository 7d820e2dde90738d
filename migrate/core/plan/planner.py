"""The migration planner: snapshot + playbook -> :class:`~migrate.core.plan.document.Plan`. Pure.

Where each replica goes (the procedure: the mapping, repairs, balanced preferred leaders) is
:func:`migrate.core.plan.targets.replica_targets`'s rule; the planner adds what a plan holds around
those moves: the per-topic and per-broker totals, the estimated copy time, the ZooKeeper section
(:func:`plan_zookeeper`), the audit's findings and the runbook (:func:`build_runbook`).

Everything is deterministic: topics and partitions are processed sorted, ties broken by
position then id; the input order of topics does not matter. Work per partition is O(RF).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from itertools import chain
from typing import Any, Mapping, Sequence

from migrate.core.plan.audit import (
    audit_durability, audit_mapping, audit_size, audit_versions, audit_zookeeper, sort_findings,
)
from migrate.errors import BadInput
from migrate.core.kraft.config import format_command
from migrate.core.model import ClusterSnapshot
from migrate.core.zookeeper.config import DynamicConfig
from migrate.core.zookeeper.change import Change, is_reached, joiner_config, single_reconfig, target_config
from migrate.core.throttle.options import AutoThrottle, auto_throttle
from migrate.core.units import format_connect, format_rate, parse_connect
from migrate.core.versions import release_tuple
from migrate.core.plan.targets import account_bytes, replica_targets, shown_ids
from migrate.core.plan.document import (
    BrokerTotal,
    MoveList,
    Finding,
    ROLL_FETCH_SETTINGS,
    ROLL_STALL_HINT,
    PartitionMove,
    Plan,
    RunbookStep,
    TopicTotal,
    ZkPlan,
    compute_plan_id,
    reassignment_json,
)
from migrate.core.kraft.runbook import kraft_steps, numbered, upgrade_steps
from migrate.core.plan.kraft_cluster import controller_steps, retire_steps
from migrate.core.ledger import DEFAULT_TOPIC
from migrate.core.playbook import DEFAULT_THROTTLE_BYTES_PER_S, Playbook

__all__ = [
    "build_plan",
    "plan_zookeeper",
    "build_runbook",
    "plan_from_reassignment_json",
    "reassignment_json",
    "RUNBOOK_COMMANDS",
    "RESOLVED_LATER_IN_RUNBOOK",
]


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
    if zs is None or (not zs.add and not zs.remove):  # no zookeeper: section (a KRaft cluster), or no change
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
    kraft: bool = False,
    cluster_id: str | None = None,
    bootstrap_controller: str | None = None,
    bootstrap_after: str | None = None,
) -> tuple[RunbookStep, ...]:
    """The ordered runbook: audit, ZooKeeper joiners, first rolling restart, reconfig, second
    rolling restart, new brokers, the plan again, verify snapshot, partitions, verify compare, decommission.
    Steps that do not apply (no ZooKeeper change, no broker mapping) are left out. ``kraft``: a KRaft cluster (no
    ZooKeeper): new brokers are formatted and registered with the controllers, old ones stopped and unregistered
    (``kmigrate brokers unregister``, at ``bootstrap_controller``: the controllers' listeners, and ``bootstrap_after``:
    brokers that stay, when known)."""
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
                      "under-replicated or offline, every broker is registered and the controller is known). "
                      + ROLL_STALL_HINT,
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
        gate = f"`{c['health']} --broker-list {','.join(map(str, sorted({*mapping, *new_brokers})))}`"
        if kraft:
            start = (f"Start each new broker with process.roles=broker, its node.id and broker.rack ({racks}) and the "
                     f"controller.quorum settings the other brokers run with, {FETCH_SETTINGS_TEXT}, its log dirs "
                     "formatted first "
                     f"({' '.join(format_command(cluster_id or '<cluster id>', 'server.properties'))}); then {gate}.")
        else:
            start = (f"Start each new broker with its broker.id and broker.rack ({racks}){connect}, and "
                     f"{FETCH_SETTINGS_TEXT} as the first roll gave the others; then {gate}.")
        steps.append(("operator", f"start the new broker(s) {shown_ids(new_brokers)}", start,
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
        if kraft and not old_zk:  # stopped, then unregistered: a stale registration blocks the next MV upgrade
            steps += retire_steps(old_brokers, bootstrap=bootstrap_after or bootstrap, bootstrap_controller=bootstrap_controller,
                                  command_config=command_config)
        else:
            how = "Stop and remove the old nodes once kmigrate reports them empty."
            check = "the old brokers host no replica and lead nothing; the old ZooKeeper servers are not in /zookeeper/config"
            steps.append(("operator", f"decommission {' and '.join(what)}", how, check))
    return tuple(RunbookStep(i + 1, a, cmd, d, chk) for i, (a, cmd, d, chk) in enumerate(steps))


def with_kraft(runbook: Sequence[RunbookStep], snapshot: ClusterSnapshot, playbook: Playbook) -> tuple[RunbookStep, ...]:
    """``runbook`` with the KRaft migration of ``playbook.kraft`` (``migrate.core.kraft.runbook``): the upgrade to
    3.9 right after the audit when the cluster needs it, the migration after the plan's own steps."""
    assert playbook.kraft is not None and playbook.zookeeper is not None  # the playbook refuses kraft: without zookeeper:
    bootstrap, command_config = playbook.kafka.bootstrap_servers, playbook.kafka.command_config
    rows = [(s.actor, s.command, s.description, s.check) for s in runbook]
    rows[1:1] = upgrade_steps(snapshot, bootstrap, command_config)
    rows += kraft_steps(playbook.kraft, cluster_id=snapshot.cluster_id,
                        zookeeper_servers=tuple(s.id for s in snapshot.zookeeper.servers),
                        zookeeper_connect=playbook.zookeeper.connect, playbook_file=playbook.source,
                        bootstrap=bootstrap, command_config=command_config)
    return numbered(rows, 1)


def _oldest_release(snapshot: ClusterSnapshot) -> str | None:
    releases = sorted({b.version for b in snapshot.brokers if b.alive and b.version},
                      key=lambda v: release_tuple(v) or (0, 0))
    return releases[0] if releases else None


def with_controllers(runbook: Sequence[RunbookStep], snapshot: ClusterSnapshot,
                     playbook: Playbook, kraft_version: int | None = None) -> tuple[RunbookStep, ...]:
    """``runbook`` with the controller quorum's move of ``playbook.controllers`` (``migrate.core.plan.kraft_cluster``)
    right after the audit, before the brokers move: the new brokers then start knowing the new controllers.
    ``kraft_version``: the cluster's finalized one when read (0: a static quorum, made dynamic first)."""
    assert playbook.controllers is not None
    rows = [(s.actor, s.command, s.description, s.check) for s in runbook]
    rows[1:1] = controller_steps(playbook.controllers, bootstrap=playbook.kafka.bootstrap_servers,
                                 command_config=playbook.kafka.command_config,
                                 kafka_version=_oldest_release(snapshot), kraft_version=kraft_version)
    return numbered(rows, 1)


def audit_controllers(snapshot: ClusterSnapshot, playbook: Playbook, kraft_version: int | None) -> list[Finding]:
    """An error (it blocks the controller move, not the brokers') when the playbook moves the controllers of a static
    quorum on a release that cannot make it dynamic (3.9, 4.0); a static quorum on 4.1+ is a runbook step instead."""
    from migrate.core.controllers.plan import STATIC_CONVERSION_FROM, static_quorum_refusal

    c = playbook.controllers
    if c is None or not (c.add or c.remove) or kraft_version != 0:
        return []
    oldest = _oldest_release(snapshot)
    release = release_tuple(oldest) if oldest else None
    if release is not None and release >= STATIC_CONVERSION_FROM:
        return []
    return [Finding("error", "controllers.static_quorum", "controllers", static_quorum_refusal(0, release) or "",
                    blocks="controllers")]


# --------------------------------------------------------------------------- the plan


def build_plan(snapshot: ClusterSnapshot, playbook: Playbook, *, allow_merge: bool = False, plan_file: str = "plan.json",
               kraft_version: int | None = None) -> Plan:
    """Plan the migration of ``snapshot`` described by ``playbook``.

    ``allow_merge`` turns "two old brokers map to one new broker" from an error into a warning.
    ``kraft_version``: a KRaft cluster's finalized ``kraft.version`` when read (0: a static controller quorum).
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
    alive = {b.id for b in snapshot.brokers if b.alive}
    placed = replica_targets(snapshot.topics, racks, alive, mapping, keep, playbook.brokers.new, sep)
    replicas_before, replicas_after, leaders_after = placed.replicas_before, placed.replicas_after, placed.leaders_after
    bytes_in, bytes_out, unknown_total = placed.bytes_in, placed.bytes_out, placed.unknown_total
    moves = MoveList(placed.rows)
    topic_totals = tuple(TopicTotal(*row) for row in placed.topic_rows)
    total_bytes = sum(bytes_in.values())
    auto = _auto_throttle(playbook)
    throttle = playbook.migration.throttle_bytes_per_s if auto is None else auto.settings.start_rate
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
    warnings = list(placed.warnings)
    if not snapshot.zookeeper.servers and zk is not None:
        warnings.append("the snapshot lists no ZooKeeper servers: the joiner configuration and voter count are "
                        "incomplete; re-run kmigrate inspect against the ensemble")
    findings: list[Finding] = []
    findings += audit_durability(snapshot)
    findings += audit_versions(snapshot)
    findings += audit_mapping(snapshot, playbook, allow_merge=allow_merge, replica_counts=replicas_before)
    findings += audit_zookeeper(snapshot, playbook, zk)
    findings += audit_size(broker_totals, total_bytes, estimated_seconds, throttle, unknown_total, len(moves))
    if auto is not None and moves:
        findings.append(_auto_finding(auto))
    findings += audit_controllers(snapshot, playbook, kraft_version)

    new_brokers = tuple(sorted(new_ids))
    runbook = build_runbook(zk, mapping, new_brokers, {b: racks.get(b) for b in new_brokers},
                            has_moves=bool(moves), plan_file=plan_file, playbook_file=playbook.source,
                            bootstrap=playbook.kafka.bootstrap_servers, command_config=playbook.kafka.command_config,
                            kraft=not snapshot.zookeeper.connect, cluster_id=snapshot.cluster_id,
                            bootstrap_controller=playbook.controllers.bootstrap_after if playbook.controllers else None,
                            bootstrap_after=",".join([f"{b.host}:{b.port}" for b in snapshot.brokers
                                                      if b.alive and b.id not in mapping][:3]) or None)
    if playbook.controllers is not None:
        runbook = with_controllers(runbook, snapshot, playbook, kraft_version)
    if playbook.kraft is not None:
        runbook = with_kraft(runbook, snapshot, playbook)
        if zk is not None:
            warnings.append("the playbook both changes the ZooKeeper servers (zookeeper.add / remove) and leaves "
                            "ZooKeeper (kraft:): the swap is work thrown away; drop zookeeper.add and remove")
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


FETCH_SETTINGS_TEXT = " and ".join(f"{k}={v}" for k, v in ROLL_FETCH_SETTINGS.items())


def _auto_throttle(playbook: Playbook) -> AutoThrottle | None:
    """The playbook's ``migration.throttle: auto`` as :class:`~migrate.core.throttle.options.AutoThrottle`
    (BadInput, one line, without ``migration.latency_budget``), or ``None`` for a fixed throttle."""
    m = playbook.migration
    return auto_throttle(None, None, "auto" if m.throttle_auto else None, m.latency_budget)


def _auto_finding(auto: AutoThrottle) -> Finding:
    st = auto.settings
    return Finding("info", "throttle.auto", "cluster",
                   f"migration.throttle: auto: each broker's rate starts at {format_rate(st.start_rate)} and is steered "
                   f"by the canary's acks=all p99 (at most {auto.budget.seconds * 1000:g} ms above its p99 at rest) "
                   f"between {format_rate(st.min_rate)} and {format_rate(st.max_rate)}; the estimate is at the "
                   "start rate: shorter where the clients allow more, longer where they do not")


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
        moved = account_bytes(p.replicas, tgt, p.leader, p.size_bytes, bytes_in, bytes_out)
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
