"""Pre-flight audit: pure checks over a snapshot, a playbook and the planned figures.

Each check returns :class:`~migrate.core.plan.document.Finding` objects: a severity (``error`` stops the
migration unless it is ``forceable`` and the operator passes ``--force``; ``warning``; ``info``
for figures), a stable rule code, the subject, a one-line message and, for errors, which
command it blocks (``all``, ``zookeeper`` or ``partitions``; the runner re-audits before each).

Rule codes:

=================================  ========  =========  =======================================
code                               severity  forceable  when
=================================  ========  =========  =======================================
durability.replication_factor      warning              RF < 3
durability.min_insync_low          warning              min.insync.replicas < 2
durability.min_insync_equals_rf    warning              min.insync.replicas == RF
durability.min_insync_above_rf     error     yes        min.insync.replicas > RF
durability.unclean_election        warning              unclean.leader.election.enable=true
durability.under_replicated        error     no         len(isr) < len(replicas) now
durability.offline                 error     no         leader None/-1 now
reassignment.ongoing               warning              reassignments already running
mapping.unmapped_broker            error     no         an old broker with replicas is not mapped
mapping.target_is_old              error     no         a new id is also an old id
mapping.shared_target              error     yes*       two old ids map to one new id
mapping.new_broker_missing         error     no         a new broker is not registered/alive
mapping.rack_unknown               warning              a new broker's rack is unknown
mapping.rack_mismatch              warning              registered rack differs from playbook
mapping.not_enough_brokers         error     no         fewer brokers after than a topic's RF
mapping.unknown_old_broker         warning              a mapped old broker is unknown, empty
kafka.version                      error     no         a broker release outside 2.4-3.9
kafka.version_unknown              warning              a live broker's release is unknown
kafka.mixed_versions               warning              brokers on two or more releases
kafka.protocol_mismatch            warning              brokers differ in inter.broker.protocol
kafka.hidden_broker_rates          warning              a broker (before 2.8) hides its throttle rates
zookeeper.version                  error     no         a server older than 3.5.0
zookeeper.version_unknown          warning              a server's version is unknown
zookeeper.reconfig_disabled        error     no         reconfigEnabled=false
zookeeper.reconfig_unknown         warning              reconfigEnabled unknown
zookeeper.joiner_id_order          error     no         a joiner id <= a current id
zookeeper.joiner_is_participant    error     no         a joiner is already a voter
zookeeper.remove_unknown           warning              a removed id is not in the ensemble
zookeeper.voters                   error/warn           0 or 1 voter (error), 2 or even (warn)
zookeeper.unreachable              warning              a server did not answer
zookeeper.broker_connect           warning              brokers' zookeeper.connect lacks new servers
size.estimate                      info                 bytes to move and estimated time
size.unknown                       warning              partitions of unknown size
=================================  ========  =========  =======================================

(*) a warning instead when the caller allows merging (``allow_merge=True``).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from migrate.core.model import ClusterSnapshot, parse_rack
from migrate.core.plan.document import BrokerTotal, Finding, ZkPlan
from migrate.core.plan.targets import shown_ids
from migrate.core.playbook import Playbook
from migrate.core.versions import KAFKA_RANGE, KRAFT_RANGE, hides_broker_rates, release_tuple, supports_reconfig
from migrate.core.units import format_bytes, format_duration, format_rate, parse_connect, split_host_port
from migrate.core.zookeeper.config import PARTICIPANT
from migrate.core.zookeeper.change import low_joiner_ids, voter_count_risk

_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Errors first, then warnings, then info; by code and subject within each."""
    return tuple(sorted(findings, key=lambda f: (_SEVERITY_RANK.get(f.severity, 9), f.code, f.subject, f.message)))


def blocking_findings(findings: Iterable[Finding], *, step: str | None = None, force: bool = False) -> tuple[Finding, ...]:
    """The errors that stop ``step`` (``zookeeper``/``partitions``; ``None`` = any), honouring
    ``force`` for forceable ones."""
    out = []
    return tuple(f for f in findings if f.blocking(step, force))


def tolerance(voters: int) -> str:
    """``"3 voters tolerate 1 failure"``."""
    failures = max(0, (voters - 1) // 2)
    return f"{voters} voter{'s' if voters != 1 else ''} tolerate{'s' if voters == 1 else ''} {failures} failure{'s' if failures != 1 else ''}"


# --------------------------------------------------------------------------- durability


def audit_durability(snapshot: ClusterSnapshot) -> list[Finding]:
    """Topic durability settings and the health of every partition now."""
    out: list[Finding] = []
    for t in sorted(snapshot.topics, key=lambda t: t.name):
        subject = f"topic {t.name}"
        rf = t.replication_factor
        if 0 < rf < 3:
            out.append(Finding("warning", "durability.replication_factor", subject,
                               f"replication factor {rf}: one broker failure during the move can leave "
                               f"{rf - 1} in-sync copies; raise it to 3 before migrating if you can"))
        mir_text = t.configs.get("min.insync.replicas")
        if mir_text is not None:
            try:
                mir = int(mir_text)
            except ValueError:
                mir = None
                out.append(Finding("warning", "durability.min_insync_low", subject,
                                   f"min.insync.replicas {mir_text!r} is not a number; set it to 2"))
            if mir is not None and rf:
                if mir > rf:
                    out.append(Finding("error", "durability.min_insync_above_rf", subject,
                                       f"min.insync.replicas {mir} > replication factor {rf}: producers with acks=all "
                                       f"cannot write; set min.insync.replicas to {max(1, rf - 1)} or raise the replication factor",
                                       forceable=True, blocks="partitions"))
                elif mir == rf and rf > 1:  # RF 1 is reported by the replication-factor rule
                    out.append(Finding("warning", "durability.min_insync_equals_rf", subject,
                                       f"min.insync.replicas {mir} == replication factor {rf}: one replica down "
                                       f"(also while it catches up) stops acks=all writes; use {max(1, rf - 1)}"))
                if mir < 2:
                    out.append(Finding("warning", "durability.min_insync_low", subject,
                                       f"min.insync.replicas {mir}: an acknowledged write may live on one broker only; use 2"))
        if str(t.configs.get("unclean.leader.election.enable", "")).strip().lower() == "true":
            out.append(Finding("warning", "durability.unclean_election", subject,
                               "unclean.leader.election.enable=true: a lagging replica may become leader and "
                               "lose acknowledged records; set it to false for the migration"))
        under: list[int] = []
        offline: list[int] = []
        for p in t.partitions:
            if p.leader is None or p.leader < 0:
                offline.append(p.partition)
            elif len(p.isr) < len(p.replicas):
                under.append(p.partition)
        if under:
            out.append(Finding("error", "durability.under_replicated", subject,
                               f"{len(under)} partition(s) under-replicated now ({shown_ids(under)}): bring every "
                               "replica back into the ISR before migrating", forceable=False, blocks="all"))
        if offline:
            out.append(Finding("error", "durability.offline", subject,
                               f"{len(offline)} partition(s) offline now ({shown_ids(offline)}): restore their "
                               "leaders before migrating", forceable=False, blocks="all"))
    if snapshot.ongoing_reassignments:
        keys = sorted(snapshot.ongoing_reassignments)
        out.append(Finding("warning", "reassignment.ongoing", "cluster",
                           f"{len(keys)} reassignment(s) in progress ({shown_ids(f'{t}-{p}' for t, p in keys)}): "
                           "let them finish or cancel them before kmigrate partitions"))
    return out


# --------------------------------------------------------------------------- mapping


def _by_value(pairs: Iterable[tuple[int, str]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for b, v in sorted(pairs):
        out.setdefault(v, []).append(b)
    return out


def _listed(groups: Mapping[str, list[int]]) -> str:
    return ", ".join(f"{v} (broker{'s' if len(ids) > 1 else ''} {shown_ids(ids)})" for v, ids in sorted(groups.items()))


def audit_versions(snapshot: ClusterSnapshot) -> list[Finding]:
    """The brokers' Kafka releases (ApiVersions) and ``inter.broker.protocol.version``, and the ZooKeeper
    servers' releases (``srvr``): what is out of range, a rolling upgrade half done, what kmigrate uses.

    >>> from migrate.core.model import Broker, ZkEnsemble
    >>> snap = ClusterSnapshot(zookeeper=ZkEnsemble(connect="zk:2181", config_version=None, servers=(), server_versions={1: "3.5.7"}), brokers=(
    ...     Broker(id=1, host="h1", port=9092, version="2.4", protocol_version="2.4-IV1"),
    ...     Broker(id=2, host="h2", port=9092, version="2.8", protocol_version="2.4-IV1")))
    >>> [f.code for f in audit_versions(snap)]
    ['kafka.hidden_broker_rates', 'kafka.mixed_versions']
    """
    out: list[Finding] = []
    live = [b for b in snapshot.brokers if b.alive]
    releases = _by_value((b.id, b.version) for b in live if b.version)
    if not releases:  # a cluster file of an earlier kmigrate (no release read): nothing to say
        return out
    # a KRaft cluster (no ZooKeeper read) may run Kafka 4 (KRaft only) up to the newest release kmigrate knows
    kraft = not snapshot.zookeeper.connect
    high = KRAFT_RANGE[1] if kraft else KAFKA_RANGE[1]
    for release, ids in sorted(releases.items()):
        minor = release_tuple(release)
        if minor is not None and not KAFKA_RANGE[0] <= minor <= high:
            supported = f"2.4 to {high[0]}.{high[1]}" + (" (KRaft)" if kraft else ", ZooKeeper mode")
            out.append(Finding("error", "kafka.version", f"broker {shown_ids(ids)}",
                               f"Kafka {release} is outside the releases kmigrate supports ({supported}): "
                               "below 2.4 there is no reassignment API (KIP-455); upgrade the brokers first",
                               forceable=False, blocks="all"))
    unknown = sorted(b.id for b in live if not b.version)
    if unknown:
        out.append(Finding("warning", "kafka.version_unknown", f"broker {shown_ids(unknown)}",
                           "the Kafka release is unknown (the broker did not answer ApiVersions)"))
    protocols = _by_value((b.id, b.protocol_version) for b in live if b.protocol_version)
    hidden = sorted(b for release, ids in releases.items() for b in ids if hides_broker_rates(release))
    if hidden:
        out.append(Finding("warning", "kafka.hidden_broker_rates", f"broker {shown_ids(hidden)}",
                           "these brokers do not list their leader/follower.replication.throttled.rate in "
                           "DescribeConfigs (seen on Kafka 2.4; 2.8 lists them): kmigrate partitions reads them "
                           "from ZooKeeper (/config/brokers/<id>; --zookeeper or the playbook's) and restores a "
                           "rate someone else set; without ZooKeeper it refuses to start (or, with "
                           "--ignore-hidden-broker-rates, removes such a rate with its own)"))
    if len(releases) > 1:
        out.append(Finding("warning", "kafka.mixed_versions", "brokers",
                           f"brokers run several Kafka releases: {_listed(releases)}: a rolling upgrade is not "
                           "finished; kmigrate uses only what every release answers, and the new brokers must "
                           "run with the same inter.broker.protocol.version as the old ones until it is"))
    if len(protocols) > 1:
        out.append(Finding("warning", "kafka.protocol_mismatch", "brokers",
                           f"inter.broker.protocol.version differs: {_listed(protocols)}: give every broker, new "
                           "ones included, the lowest value until the rolling upgrade is done"))
    return out


def versions_summary(snapshot: ClusterSnapshot) -> str | None:
    """One line naming the brokers' releases and ``inter.broker.protocol.version`` and the ZooKeeper servers'
    releases, and what kmigrate uses on them (``plan`` and ``inspect`` print it); None when no release was read.

    >>> from migrate.core.model import Broker, ZkEnsemble
    >>> versions_summary(ClusterSnapshot(zookeeper=ZkEnsemble(connect="zk", config_version=None, servers=(),
    ...     server_versions={1: "3.5.7"}), brokers=(Broker(id=1, host="h", port=9092, version="2.4"),)))[:48]
    'Kafka 2.4 (broker 1); ZooKeeper 3.5.7 (server 1)'
    """
    live = [b for b in snapshot.brokers if b.alive]
    releases = _by_value((b.id, b.version) for b in live if b.version)
    zk = _by_value(snapshot.zookeeper.server_versions.items())
    if not releases and not zk:
        return None
    parts = [f"Kafka {_listed(releases)}" if releases else "Kafka release unknown"]
    protocols = _by_value((b.id, b.protocol_version) for b in live if b.protocol_version)
    if protocols:
        parts.append(f"inter.broker.protocol.version {_listed(protocols)}")
    if zk:
        parts.append("ZooKeeper " + ", ".join(f"{v} (server{'s' if len(ids) > 1 else ''} {shown_ids(ids)})"
                                              for v, ids in sorted(zk.items())))
    return ("; ".join(parts) + ": kmigrate writes throttle lists whole (SET and DELETE, never APPEND or SUBTRACT, "
            "which Kafka 2.4 fails on an empty list) and moves partitions with the reassignment API (KIP-455, 2.4+)")


def audit_mapping(
    snapshot: ClusterSnapshot,
    playbook: Playbook,
    *,
    allow_merge: bool = False,
    replica_counts: Mapping[int, int] | None = None,
) -> list[Finding]:
    """The broker mapping against the cluster. ``replica_counts`` (broker -> replicas hosted
    now) is computed when not given."""
    out: list[Finding] = []
    mapping = dict(playbook.brokers.mapping)
    if not mapping and not playbook.brokers.new:
        return out
    sep = playbook.migration.rack_separator
    if replica_counts is None:
        counts: Counter[int] = Counter()
        for t in snapshot.topics:
            for p in t.partitions:
                counts.update(p.replicas)
        replica_counts = counts
    registered = {b.id: b for b in snapshot.brokers}
    alive = {b.id for b in snapshot.brokers if b.alive}
    old = set(mapping)
    new = set(mapping.values()) | set(playbook.brokers.new)
    keep = set(playbook.brokers.keep)

    for b in sorted(replica_counts):
        if replica_counts[b] and b not in old and b not in new and b not in keep:
            out.append(Finding("error", "mapping.unmapped_broker", f"broker {b}",
                               f"broker {b} hosts {replica_counts[b]} replica(s) but is not in brokers.mapping: "
                               f"map it (brokers.mapping: {{{b}: NEW_ID}}) or list it in brokers.keep",
                               forceable=False, blocks="partitions"))
    for o in sorted(old):
        if o not in registered and not replica_counts.get(o):
            out.append(Finding("warning", "mapping.unknown_old_broker", f"broker {o}",
                               f"broker {o} in brokers.mapping is not registered and hosts no replicas: nothing moves "
                               "from it; check the id"))
    both = sorted(old & set(mapping.values()))
    for b in both:
        sources = sorted(o for o, n in mapping.items() if n == b)
        out.append(Finding("error", "mapping.target_is_old", f"broker {b}",
                           f"broker {b} is both an old broker and the new id of {shown_ids(sources)}: "
                           "give the new broker an id that is not in use", forceable=False, blocks="partitions"))
    by_target: dict[int, list[int]] = {}
    for o, n in mapping.items():
        by_target.setdefault(n, []).append(o)
    for n in sorted(by_target):
        sources = sorted(by_target[n])
        if len(sources) > 1:
            if allow_merge:
                out.append(Finding("warning", "mapping.shared_target", f"broker {n}",
                                   f"old brokers {shown_ids(sources)} all move to broker {n}: it receives all their replicas"))
            else:
                out.append(Finding("error", "mapping.shared_target", f"broker {n}",
                                   f"old brokers {shown_ids(sources)} all map to broker {n}: give each its own new broker, "
                                   "or allow merging explicitly", forceable=True, blocks="partitions"))
    for n in sorted(new - old):
        b = registered.get(n)
        if n not in alive:
            out.append(Finding("error", "mapping.new_broker_missing", f"broker {n}",
                               f"new broker {n} is {'registered but not alive' if b else 'not registered'}: start it "
                               f"(broker.id={n}) before kmigrate partitions", forceable=False, blocks="partitions"))
        declared = playbook.brokers.new.get(n)
        live_rack = b.rack if b else None
        if live_rack is None and declared is None:
            out.append(Finding("warning", "mapping.rack_unknown", f"broker {n}",
                               f"the rack of new broker {n} is unknown: add it under brokers.new with its "
                               "availability_domain and fault_domain, and set broker.rack"))
        elif live_rack is not None and declared is not None:
            if parse_rack(live_rack, sep) != (declared.availability_domain, declared.fault_domain):
                out.append(Finding("warning", "mapping.rack_mismatch", f"broker {n}",
                                   f"broker {n} is registered with rack {live_rack!r} but the playbook says "
                                   f"{declared.rack(sep)!r}: the registered rack is used; fix one of them"))
    after = (alive | new) - old
    n_after = len(after)
    for t in sorted(snapshot.topics, key=lambda t: t.name):
        rf = t.replication_factor
        if rf > n_after:
            out.append(Finding("error", "mapping.not_enough_brokers", f"topic {t.name}",
                               f"replication factor {rf} but only {n_after} broker(s) after the move: add new "
                               "brokers to brokers.mapping/brokers.new", forceable=False, blocks="partitions"))
    return out


# --------------------------------------------------------------------------- zookeeper


def _connect_hosts(connect: str) -> set[tuple[str, int]] | None:
    try:
        return set(parse_connect(connect)[0])
    except Exception:  # noqa: BLE001 - a broker's unreadable connect string is reported as unknown
        return None


def audit_zookeeper(snapshot: ClusterSnapshot, playbook: Playbook, zk: ZkPlan | None) -> list[Finding]:
    """The ZooKeeper ensemble and its planned change (``zk`` from the planner)."""
    out: list[Finding] = []
    if zk is None:
        return out
    ens = snapshot.zookeeper
    current_ids = [s.id for s in zk.current]
    joiner_ids = [j.id for j in zk.joiners]
    if zk.already_done:
        return out
    for sid in sorted(set(current_ids) | set(ens.server_versions)):
        v = ens.server_versions.get(sid)
        supported = supports_reconfig(v)
        if supported is None:
            out.append(Finding("warning", "zookeeper.version_unknown", f"zookeeper server {sid}",
                               f"the version of ZooKeeper server {sid} is unknown: dynamic reconfiguration needs 3.5.0 or later"))
        elif not supported:
            out.append(Finding("error", "zookeeper.version", f"zookeeper server {sid}",
                               f"ZooKeeper server {sid} runs {v}: dynamic reconfiguration needs 3.5.0 or later; "
                               "upgrade the ensemble first", forceable=False, blocks="zookeeper"))
    if ens.reconfig_enabled is False:
        out.append(Finding("error", "zookeeper.reconfig_disabled", "zookeeper",
                           "reconfigEnabled is false: set reconfigEnabled=true (and a dynamicConfigFile) on every "
                           "server with a rolling restart", forceable=False, blocks="zookeeper"))
    elif ens.reconfig_enabled is None:
        out.append(Finding("warning", "zookeeper.reconfig_unknown", "zookeeper",
                           "could not tell whether reconfigEnabled=true: kmigrate zookeeper checks it again"))
    top, low = low_joiner_ids(current_ids, joiner_ids)
    if low:
        out.append(Finding("error", "zookeeper.joiner_id_order", "zookeeper",
                           f"joiner id(s) {shown_ids(low)} not greater than current id {top}: give joiners ids above "
                           f"{top} (e.g. {top + 1})", forceable=False, blocks="zookeeper"))
    participants = {s.id for s in zk.current if s.role == PARTICIPANT}
    already = sorted(set(joiner_ids) & participants)
    if already:
        out.append(Finding("error", "zookeeper.joiner_is_participant", "zookeeper",
                           f"joiner(s) {shown_ids(already)} are already voting members: remove them from zookeeper.add",
                           forceable=False, blocks="zookeeper"))
    missing = sorted(set(zk.remove) - set(current_ids))
    if missing and zk.current:
        out.append(Finding("warning", "zookeeper.remove_unknown", "zookeeper",
                           f"server(s) {shown_ids(missing)} to remove are not in the committed configuration "
                           f"({shown_ids(current_ids)}): already removed?"))
    voters = len(zk.voters_after)
    risk = voter_count_risk(voters)
    if risk == "none":
        out.append(Finding("error", "zookeeper.voters", "zookeeper",
                           "the new configuration has no voting member: add joiners or remove fewer servers",
                           forceable=False, blocks="zookeeper"))
    elif risk == "one":
        out.append(Finding("error", "zookeeper.voters", "zookeeper",
                           f"the new configuration has 1 voter ({tolerance(1)}): use 3 or 5; --force accepts it",
                           forceable=True, blocks="zookeeper"))
    elif risk in ("two", "even"):
        out.append(Finding("warning", "zookeeper.voters", "zookeeper",
                           f"the new configuration has {voters} voters: {tolerance(voters)}; "
                           f"{tolerance(voters - 1)}, {tolerance(voters + 1)}: use an odd number"))
    unreachable = sorted(sid for sid, mode in ens.server_modes.items() if mode == "unreachable")
    if unreachable:
        out.append(Finding("warning", "zookeeper.unreachable", "zookeeper",
                           f"server(s) {shown_ids(unreachable)} did not answer: the ensemble "
                           f"({tolerance(len(zk.voters_before))}) has less margin during the change"))
    new_hosts: set[tuple[str, int]] = set()
    for j in zk.joiners:
        if j.client_address:
            new_hosts.add(split_host_port(j.client_address))
    if zk.remove and new_hosts:
        lacking: list[str] = []
        for b in sorted(snapshot.brokers, key=lambda b: b.id):
            if not b.alive:
                continue
            hosts = _connect_hosts(b.zookeeper_connect) if b.zookeeper_connect else None
            if hosts is None:
                lacking.append(f"{b.id} (unknown)")
            elif not hosts & new_hosts:
                lacking.append(str(b.id))
        if lacking:
            out.append(Finding("warning", "zookeeper.broker_connect", "brokers",
                               f"broker(s) {shown_ids(lacking)} have a zookeeper.connect without any new server: restart "
                               f"them with zookeeper.connect={zk.connect_during} before kmigrate zookeeper removes "
                               f"{shown_ids(zk.remove)}"))
    return out


# --------------------------------------------------------------------------- size


def audit_size(
    broker_totals: Sequence[BrokerTotal],
    total_bytes: int,
    estimated_seconds: int,
    throttle_bytes_per_s: int,
    unknown_sizes: int = 0,
    partitions_moved: int = 0,
) -> list[Finding]:
    """Figures: bytes per broker in/out, the busiest broker and the estimated time."""
    out: list[Finding] = []
    if partitions_moved == 0:
        return out
    busiest_in = max(broker_totals, key=lambda b: (b.bytes_in, -b.broker), default=None)
    busiest_out = max(broker_totals, key=lambda b: (b.bytes_out, -b.broker), default=None)
    parts = [f"{partitions_moved} partition(s), {format_bytes(total_bytes)} to copy"]
    if busiest_in is not None:
        parts.append(f"busiest receiver broker {busiest_in.broker} ({format_bytes(busiest_in.bytes_in)} in)")
    if busiest_out is not None:
        parts.append(f"busiest sender broker {busiest_out.broker} ({format_bytes(busiest_out.bytes_out)} out)")
    parts.append(f"about {format_duration(estimated_seconds)} at {format_rate(throttle_bytes_per_s)}")
    out.append(Finding("info", "size.estimate", "cluster", "; ".join(parts)))
    if unknown_sizes:
        out.append(Finding("warning", "size.unknown", "cluster",
                           f"{unknown_sizes} moved partition(s) have an unknown size and are not in the estimate: "
                           "re-run kmigrate inspect with access to describe_log_dirs"))
    return out


