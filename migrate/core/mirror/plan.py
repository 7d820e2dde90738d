"""``kmigrate mirror``: pure planning of a MirrorMaker 2 migration to a separate cluster.

What is decided here, from readings of both clusters (no I/O): which topics and consumer groups move,
what is created on the target (same partitions, replication factor capped by the target's brokers,
the source's effective non-default configs), what MirrorMaker will not copy (configs, ACLs), the one
``mm2.properties`` of a dedicated MirrorMaker 2, and MirrorMaker's own records read back (its Connect
offsets, status, checkpoints and heartbeats; the lag they give is in ``core/mirror/status.py``, the rights
in ``core/mirror/rights.py``). Facts about MirrorMaker 2 come from Kafka 3.9's source (see the notes the
mirror work was built from): its Connect offsets key is
``["MirrorSourceConnector",{"cluster":"source","topic":t,"partition":p}]`` with value ``{"offset":N}``,
N being the last source offset copied.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field, replace
from typing import Mapping

from migrate.errors import BadInput

SOURCE_ALIAS = "source"
TARGET_ALIAS = "target"
CONNECT_OFFSETS_TOPIC = f"mm2-offsets.{SOURCE_ALIAS}.internal"
CONNECT_STATUS_TOPIC = f"mm2-status.{SOURCE_ALIAS}.internal"
CHECKPOINTS_TOPIC = f"{SOURCE_ALIAS}.checkpoints.internal"
# offset-syncs.topic.location=target: named after the other cluster, the source (MirrorSourceConfig.offsetSyncsTopic)
OFFSET_SYNCS_TOPIC = f"mm2-offset-syncs.{SOURCE_ALIAS}.internal"
# The rest of what MirrorMaker 2 keeps on the target (MirrorMakerConfig.workerConfig's defaults, the
# identity policy's heartbeats topic), and its workers' group there.
CONNECT_CONFIGS_TOPIC = f"mm2-configs.{SOURCE_ALIAS}.internal"
HEARTBEATS_TOPIC = "heartbeats"
INTERNAL_TOPICS = (CONNECT_CONFIGS_TOPIC, CONNECT_OFFSETS_TOPIC, CONNECT_STATUS_TOPIC, CHECKPOINTS_TOPIC,
                   OFFSET_SYNCS_TOPIC, HEARTBEATS_TOPIC)
WORKER_GROUP = f"{SOURCE_ALIAS}-mm2"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"

# Topic configs MirrorMaker 2 never copies, even with config sync on (DefaultConfigPropertyFilter).
NEVER_SYNCED = ("min.insync.replicas", "unclean.leader.election.enable", "message.timestamp.type",
                "message.timestamp.difference.max.ms", "leader.replication.throttled.replicas",
                "follower.replication.throttled.replicas")
# Topic configs kmigrate does not copy either: they name the source's broker ids.
NOT_COPIED = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
# Topic configs Kafka 4.0 removed (the message formats v0/v1 went, KIP-724; KIP-937's replacement of the timestamp
# bound): a Kafka 4 target refuses a topic created with one ("Unknown topic config name") and reports none of them.
REMOVED_IN_KAFKA_4 = {
    "message.format.version": "Kafka 4 writes only the v2 record format",
    "message.downconversion.enable": "Kafka 4 serves no v0/v1 fetches",
    "message.timestamp.difference.max.ms": "written as message.timestamp.before.max.ms and after.max.ms where those "
                                           "are at their defaults, as Kafka 3.6-3.9 read it",
}
# Consumer groups MirrorMaker 2 leaves out by default (DefaultGroupFilter's groups.exclude).
GROUPS_EXCLUDED = ("console-consumer-.*", "connect-.*", "__.*")
# The replication factor of the topics MirrorMaker creates on the target (its own), at most.
INTERNAL_REPLICATION = 3


def compile_filter(text: str | None, option: str) -> re.Pattern[str]:
    """A topic or group filter (whole-name match, as Kafka's tools); ``None``: everything."""
    try:
        return re.compile(text if text is not None else ".*")
    except re.error as exc:
        raise BadInput(f"{option} {text!r} is not a valid regular expression ({exc}): fix it, e.g. 'orders|payments.*'") from None


def is_internal_topic(name: str) -> bool:
    """Topics MirrorMaker 2 treats as internal and never replicates (and Kafka's own)."""
    return (name.startswith("__") or name.startswith(".") or name.endswith(".internal") or name.endswith("-internal")
            or name == HEARTBEATS_TOPIC or name.endswith(f".{HEARTBEATS_TOPIC}") or name.startswith("mm2-"))


@dataclass(frozen=True)
class TopicReading:
    """One topic as one cluster reports it: partitions, replication factor, every config with its value
    and whether that value is Kafka's built-in default."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    defaults: frozenset[str] = frozenset()  # config names whose value is the built-in default

    def non_default(self) -> dict[str, str]:
        return {k: v for k, v in sorted(self.configs.items()) if k not in self.defaults}


@dataclass(frozen=True)
class AclReading:
    """One ACL binding, in Kafka's words (resource type, pattern type, operation, permission)."""

    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ClusterReading:
    """What the plan needs of one cluster. ``acls`` is ``None`` when the cluster has no authorizer."""

    bootstrap: str
    cluster_id: str
    brokers: int
    topics: dict[str, TopicReading]
    groups: tuple[str, ...] = ()
    acls: tuple[AclReading, ...] | None = None
    release: str | None = None  # the brokers' Kafka release, major.minor (ApiVersions), when read

    def removed_configs(self) -> frozenset[str]:
        """The topic configs this cluster does not know although older releases did (:data:`REMOVED_IN_KAFKA_4`
        on Kafka 4 and later; none when the release is unknown).

        >>> sorted(ClusterReading("b:9092", "id", 1, {}, release="4.3").removed_configs())[0]
        'message.downconversion.enable'
        >>> ClusterReading("b:9092", "id", 1, {}, release="3.9").removed_configs()
        frozenset()
        """
        if self.release is None or int(self.release.split(".")[0]) < 4:
            return frozenset()
        return frozenset(REMOVED_IN_KAFKA_4)


@dataclass(frozen=True)
class TopicPlan:
    """One topic to mirror: both sides and what kmigrate will create or report."""

    name: str
    source: TopicReading
    target: TopicReading | None
    create_replication_factor: int
    create_configs: dict[str, str]
    config_differences: dict[str, tuple[str | None, str | None]]  # existing target topic: name -> (source, target)
    never_synced: dict[str, tuple[str | None, str | None]]  # name -> (source value, target value)
    warnings: tuple[str, ...] = ()

    @property
    def to_create(self) -> bool:
        return self.target is None

    def to_dict(self) -> dict:
        return {
            "topic": self.name,
            "source": {"partitions": self.source.partitions, "replication_factor": self.source.replication_factor,
                       "min_insync_replicas": self.source.configs.get("min.insync.replicas"),
                       "configs": self.source.non_default()},
            "target": None if self.target is None else {
                "partitions": self.target.partitions, "replication_factor": self.target.replication_factor,
                "min_insync_replicas": self.target.configs.get("min.insync.replicas"),
                "configs": self.target.non_default()},
            "action": "create" if self.to_create else "exists",
            "create": None if not self.to_create else {
                "partitions": self.source.partitions, "replication_factor": self.create_replication_factor,
                "configs": self.create_configs},
            "config_differences": source_and_target(self.config_differences),
            "never_synced_by_mirrormaker": source_and_target(self.never_synced),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class AclNote:
    acl: AclReading
    reason: str


@dataclass(frozen=True)
class MirrorPlan:
    source: ClusterReading
    target: ClusterReading
    topics: tuple[TopicPlan, ...]
    groups: tuple[str, ...]
    groups_excluded: tuple[str, ...]  # match --groups but MirrorMaker's default exclusions leave them out
    topics_skipped: tuple[str, ...]  # match --topics but internal: never mirrored
    groups_filter: str
    acls_not_copied: tuple[AclNote, ...] | None  # None: the source has no authorizer

    @property
    def warnings(self) -> list[str]:
        return [w for t in self.topics for w in t.warnings]

    def to_create(self) -> list[TopicPlan]:
        return [t for t in self.topics if t.to_create]

    def topic_filter(self) -> str:
        """MirrorMaker's ``topics`` setting: exactly the planned topics (names are regex-escaped)."""
        return "|".join(re.escape(t.name) for t in self.topics)

    def to_dict(self) -> dict:
        acls = None if self.acls_not_copied is None else [
            {**n.acl.to_dict(), "reason": n.reason} for n in self.acls_not_copied]
        return {
            "source": {"bootstrap": self.source.bootstrap, "cluster_id": self.source.cluster_id, "brokers": self.source.brokers},
            "target": {"bootstrap": self.target.bootstrap, "cluster_id": self.target.cluster_id, "brokers": self.target.brokers},
            "topics": [t.to_dict() for t in self.topics],
            "topics_skipped_internal": list(self.topics_skipped),
            "groups": list(self.groups),
            "groups_excluded_by_mirrormaker": list(self.groups_excluded),
            "acls_not_copied": acls,
            "source_authorizer": self.acls_not_copied is not None,
            "warnings": self.warnings,
        }


def _acl_reason(acl: AclReading) -> str:
    kind = acl.resource_type.upper()
    if kind != "TOPIC":
        return f"{kind.lower().replace('_', '-')} ACL: MirrorMaker 2 never copies these"
    if acl.pattern_type.upper() != "LITERAL":
        return "prefixed topic ACL: MirrorMaker 2 copies only literal ones"
    if acl.permission.upper() == "ALLOW" and acl.operation.upper() == "WRITE":
        return "ALLOW WRITE: MirrorMaker 2 never copies it (the target's topics stay read-only to clients)"
    if acl.operation.upper() == "ALL":
        return "ALL: MirrorMaker 2 would copy it as READ only"
    return "topic ACL sync is off under kmigrate (sync.topic.acls.enabled=false)"


def plan_mirror(source: ClusterReading, target: ClusterReading, topics_filter: str | None = None,
                groups_filter: str | None = None) -> MirrorPlan:
    """The mirror plan, or :class:`BadInput` for a source that is the target or a target topic with
    fewer partitions than its source (nothing is changed by a refused plan)."""
    topic_re = compile_filter(topics_filter, "--topics")
    group_re = compile_filter(groups_filter, "--groups")
    if groups_filter is not None and "," in groups_filter:
        raise BadInput(f"--groups {groups_filter!r} contains a comma: MirrorMaker 2 splits its group filter at "
                       "commas; write the alternatives with | instead")
    if source.cluster_id == target.cluster_id:
        raise BadInput(f"source {source.bootstrap} and target {target.bootstrap} are the same cluster (cluster id "
                       f"{source.cluster_id}): mirroring a cluster onto itself with unchanged names loops forever; "
                       "give the new cluster as --target-bootstrap")
    matched = sorted(n for n in source.topics if topic_re.fullmatch(n))
    skipped = tuple(n for n in matched if is_internal_topic(n))
    chosen = [n for n in matched if not is_internal_topic(n)]
    if not chosen:
        raise BadInput(f"no topic of {source.bootstrap} matches --topics {topics_filter or '.*'!r} (internal topics "
                       "are never mirrored): check the regular expression, which must match whole names")
    plans = tuple(_topic_plan(source.topics[n], target.topics.get(n), target) for n in chosen)
    fewer = [p for p in plans if p.target is not None and p.target.partitions < p.source.partitions]
    if fewer:
        p = fewer[0]
        raise BadInput(f"topic {p.name} has {p.target.partitions} partitions on the target but {p.source.partitions} "  # type: ignore[union-attr]
                       "on the source: records of the missing partitions would have nowhere to go; add partitions "
                       f"on the target (kafka-topics --alter --partitions {p.source.partitions}) or delete the topic there")
    excluded_re = [re.compile(x) for x in GROUPS_EXCLUDED]
    matched_groups = sorted(g for g in source.groups if group_re.fullmatch(g))
    excluded = tuple(g for g in matched_groups if any(x.fullmatch(g) for x in excluded_re))
    acls = None if source.acls is None else tuple(AclNote(a, _acl_reason(a)) for a in source.acls)
    return MirrorPlan(source, target, plans, tuple(g for g in matched_groups if g not in excluded), excluded, skipped,
                      groups_filter if groups_filter is not None else ".*", acls)


def config_differences(src: TopicReading, tgt: TopicReading) -> dict[str, tuple[str | None, str | None]]:
    """name -> (source value, target value) of the configs that differ, among those non-default on
    either side (throttle lists, which name broker ids, left out)."""
    keys = (set(src.non_default()) | set(tgt.non_default())) - set(NOT_COPIED)
    return {k: (src.configs.get(k), tgt.configs.get(k)) for k in sorted(keys) if src.configs.get(k) != tgt.configs.get(k)}


def source_and_target(pairs: Mapping[str, tuple[str | None, str | None]]) -> dict[str, dict[str, str | None]]:
    """Config name -> (source value, target value) in the JSON form of every mirror document.

    >>> source_and_target({"retention.ms": ("1", "2")})
    {'retention.ms': {'source': '1', 'target': '2'}}
    """
    return {k: {"source": s, "target": t} for k, (s, t) in pairs.items()}


def heartbeat_timestamp(value: bytes | None) -> int | None:
    """The timestamp (ms) of a record of MirrorMaker's ``heartbeats`` topic (``version:INT16, timestamp:INT64``)."""
    if value is None or len(value) < 10:
        return None
    return struct.unpack_from(">hq", value, 0)[1]


TIMESTAMP_BOUNDS = ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms")


def _as_on(src: TopicReading, removed: frozenset[str]) -> TopicReading:
    """The source topic's configs as a target without the ``removed`` configs would hold them: those left out, and
    ``message.timestamp.difference.max.ms`` carried by the bounds it stood for (Kafka 3.6-3.9 use its value for
    ``message.timestamp.before.max.ms`` and ``after.max.ms`` while these are at their defaults, KIP-937).

    >>> t = TopicReading("t", 1, 1, {"message.timestamp.difference.max.ms": "60000", "message.format.version": "2.8",
    ...     "message.timestamp.before.max.ms": "9223372036854775807", "message.timestamp.after.max.ms": "5000"},
    ...     frozenset({"message.timestamp.before.max.ms"}))
    >>> _as_on(t, frozenset(REMOVED_IN_KAFKA_4)).non_default()
    {'message.timestamp.after.max.ms': '5000', 'message.timestamp.before.max.ms': '60000'}
    >>> _as_on(t, frozenset()) is t
    True
    """
    if not removed:
        return src
    non_default = src.non_default()
    configs = {k: v for k, v in src.configs.items() if k not in removed}
    defaults = set(src.defaults) - removed
    difference = non_default.get("message.timestamp.difference.max.ms")
    if difference is not None and "message.timestamp.difference.max.ms" in removed:
        for bound in TIMESTAMP_BOUNDS:
            if bound not in non_default:
                configs[bound] = difference
                defaults.discard(bound)
    return replace(src, configs=configs, defaults=frozenset(defaults))


def _topic_plan(src: TopicReading, tgt: TopicReading | None, target: ClusterReading) -> TopicPlan:
    rf = min(src.replication_factor, max(target.brokers, 1))
    warnings: list[str] = []
    if tgt is None and rf < src.replication_factor:
        warnings.append(f"topic {src.name}: replication factor {src.replication_factor} on the source, capped to {rf} "
                        f"on the target ({target.brokers} broker{'s' if target.brokers != 1 else ''})")
    removed = target.removed_configs()
    dropped = sorted(k for k in src.non_default() if k in removed)
    if dropped and tgt is None:
        warnings.append(f"topic {src.name}: " + ", ".join(f"{k}={src.configs[k]}" for k in dropped)
                        + f" not copied: the target (Kafka {target.release.split('.')[0]}) has no such topic config ("
                        + "; ".join(REMOVED_IN_KAFKA_4[k] for k in dropped) + ")")
    original, src = src, _as_on(src, removed)
    create = {k: v for k, v in src.non_default().items() if k not in NOT_COPIED}
    if tgt is None and "min.insync.replicas" in create and int(create["min.insync.replicas"]) > rf:
        warnings.append(f"topic {src.name}: min.insync.replicas={create['min.insync.replicas']} is more than its "
                        f"replication factor {rf} on the target: producers with acks=all will be refused there")
    diffs = config_differences(src, tgt) if tgt is not None else {}
    if tgt is not None:
        if tgt.partitions > src.partitions:
            warnings.append(f"topic {src.name}: {tgt.partitions} partitions on the target, {src.partitions} on the "
                            "source: the extra partitions get no mirrored records")
        if diffs:
            warnings.append(f"topic {src.name} exists on the target with other configs: "
                            + ", ".join(f"{k}={t} (source {s})" for k, (s, t) in diffs.items()))
    never = {k: (src.configs.get(k), None if tgt is None else tgt.configs.get(k)) for k in NEVER_SYNCED
             if k not in NOT_COPIED and (k in create or (tgt is not None and src.configs.get(k) != tgt.configs.get(k)))}
    return TopicPlan(src.name, original, tgt, rf, create, diffs, never, tuple(warnings))


# ====================================================================== mm2.properties


@dataclass(frozen=True)
class MirrorDefinition:
    """The one definition of kmigrate's MirrorMaker 2 flow from the source to the target, rendered as a
    dedicated MirrorMaker's ``mm2.properties`` (:func:`mm2_properties`) or as Kafka Connect connector
    configs (``core/mirror/connect.py``), so the two cannot disagree."""

    source_bootstrap: str
    target_bootstrap: str
    source_client: dict[str, str]  # Java client properties of --source-command-config
    target_client: dict[str, str]
    connector: dict[str, str]  # every connector of the flow gets these (MirrorMaker's connector keys)
    source_consumer: dict[str, str]  # MirrorMaker's consumer on the source
    target_worker: dict[str, str]  # the target's Connect worker (the worker that runs the connectors)
    worker: dict[str, str]  # Connect worker keys of every herder (its internal topics)
    # Connect's own connector keys (not MirrorMaker's: a dedicated MirrorMaker passes them on only
    # under the flow's prefix, source->target.*)
    framework: dict[str, str] = field(default_factory=dict)


def target_topic(source_topic: str) -> str:
    """The target's name of a mirrored source topic: the same (:func:`mirror_definition` sets
    ``IdentityReplicationPolicy``; the default policy would prefix the source's alias).

    >>> target_topic("orders")
    'orders'
    """
    return source_topic


def mirror_definition(plan: MirrorPlan, source_client: dict[str, str], target_client: dict[str, str], *,
                      tasks: int = 2, offset_lag_max: int = 100) -> MirrorDefinition:
    """kmigrate's flow: identity names, config and ACL sync off (kmigrate owns them), offset syncs and
    every other MirrorMaker topic on the target, group offsets synced every 5 s, exactly-once."""
    if tasks < 1:
        raise BadInput(f"--tasks {tasks}: give 1 or more MirrorMaker tasks")
    rf = str(min(INTERNAL_REPLICATION, max(plan.target.brokers, 1)))
    connector = {
        "topics": plan.topic_filter(),
        "topics.exclude": "__.*",
        "groups": plan.groups_filter,
        "groups.exclude": ", ".join(GROUPS_EXCLUDED),
        "replication.policy.class": IDENTITY_POLICY,
        "replication.policy.separator": ".",
        "offset-syncs.topic.location": TARGET_ALIAS,
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "5",
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": "5",
        "emit.heartbeats.enabled": "true",
        "refresh.groups.interval.seconds": "30",
        "refresh.topics.interval.seconds": "30",
        "offset.lag.max": str(offset_lag_max),
        "tasks.max": str(tasks),
        "replication.factor": rf,
        "offset-syncs.topic.replication.factor": rf,
        "checkpoints.topic.replication.factor": rf,
        "heartbeats.topic.replication.factor": rf,
    }
    worker = {"offset.storage.replication.factor": rf, "config.storage.replication.factor": rf,
              "status.storage.replication.factor": rf}
    target_worker = {"offset.flush.interval.ms": "5000", "exactly.once.source.support": "enabled"}
    # exactly-once commits a transaction per poll by default (a few hundred records): one per second
    # copied twice as fast on a 2-core machine (tests/bench/bench_mirror.py)
    framework = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"}
    return MirrorDefinition(plan.source.bootstrap, plan.target.bootstrap,
                            {k: v for k, v in sorted(source_client.items()) if k != "bootstrap.servers"},
                            {k: v for k, v in sorted(target_client.items()) if k != "bootstrap.servers"},
                            connector, {"isolation.level": "read_committed"}, target_worker, worker, framework)


def mm2_properties(plan: MirrorPlan, source_client: dict[str, str], target_client: dict[str, str], *,
                   rest_port: int, tasks: int = 2, offset_lag_max: int = 100) -> dict[str, str]:
    """The one ``mm2.properties`` of a dedicated MirrorMaker 2 that copies ``plan``'s topics from the
    source to the target (:func:`mirror_definition`), run for the target only.

    ``source_client``/``target_client``: the Java client properties of ``--*-command-config``."""
    d = mirror_definition(plan, source_client, target_client, tasks=tasks, offset_lag_max=offset_lag_max)
    flow = f"{SOURCE_ALIAS}->{TARGET_ALIAS}"
    props: dict[str, str] = {
        "clusters": f"{SOURCE_ALIAS}, {TARGET_ALIAS}",
        f"{SOURCE_ALIAS}.bootstrap.servers": d.source_bootstrap,
        f"{TARGET_ALIAS}.bootstrap.servers": d.target_bootstrap,
    }
    props.update({f"{SOURCE_ALIAS}.{k}": v for k, v in d.source_client.items()})
    props.update({f"{TARGET_ALIAS}.{k}": v for k, v in d.target_client.items()})
    props.update({
        f"{flow}.enabled": "true",
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.enabled": "false",
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.emit.heartbeats.enabled": "false",
    })
    props.update(d.connector)
    props.update(d.worker)
    props.update({f"{TARGET_ALIAS}.{k}": v for k, v in d.target_worker.items()})
    props.update({f"{SOURCE_ALIAS}.consumer.{k}": v for k, v in d.source_consumer.items()})
    props.update({f"{flow}.{k}": v for k, v in d.framework.items()})
    props.update({
        "dedicated.mode.enable.internal.rest": "true",
        # every plugin in Kafka's jars has a ServiceLoader manifest: skip the reflection scan of the
        # classpath (KIP-898), which took 20 s of a MirrorMaker start on a small machine
        # (the top-level key for MirrorMaker's own scan, the target's for its Connect worker's)
        "plugin.discovery": "service_load",
        f"{TARGET_ALIAS}.plugin.discovery": "service_load",
        "listeners": f"http://127.0.0.1:{rest_port}",
    })
    return props


def render_properties(props: dict[str, str], header: str = "") -> str:
    """Java properties text (``key = value`` lines; ``\\``, ``=``, ``:`` and leading spaces escaped)."""
    def esc(text: str, key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n")
        if key:
            out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        elif out.startswith(" "):
            out = "\\" + out
        return out
    lines = [f"# {ln}" for ln in header.splitlines()]
    lines += [f"{esc(k, True)} = {esc(v, False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def same_configuration(a: str, b: str) -> bool:
    """Two ``mm2.properties`` texts equal but for comments and the REST listener (a new port each start)."""
    def keep(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#") and not ln.startswith("listeners ")]
    return keep(a) == keep(b)


# ====================================================================== MirrorMaker's records


def parse_connect_offset(key: bytes | None, value: bytes | None) -> tuple[str, int, int | None] | None:
    """One record of MirrorMaker's Connect offsets topic as ``(topic, partition, last copied offset)``;
    the offset is ``None`` for a reset (null value). ``None`` for records of other connectors or clusters."""
    if key is None:
        return None
    try:
        doc = json.loads(key)
    except ValueError:
        return None
    if not (isinstance(doc, list) and len(doc) == 2 and doc[0] == "MirrorSourceConnector" and isinstance(doc[1], dict)):
        return None
    part = doc[1]
    if part.get("cluster") != SOURCE_ALIAS or not isinstance(part.get("topic"), str) or not isinstance(part.get("partition"), int):
        return None
    if value is None:
        return part["topic"], part["partition"], None
    try:
        offset = json.loads(value).get("offset")
    except (ValueError, AttributeError):
        return None
    return part["topic"], part["partition"], int(offset) if isinstance(offset, int) else None


def mirrored_positions(records: list[tuple[bytes | None, bytes | None]]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> last source offset MirrorMaker copied, from the Connect offsets records in
    the order read (the last record of a key wins; a null value resets it)."""
    out: dict[tuple[str, int], int] = {}
    for key, value in records:
        parsed = parse_connect_offset(key, value)
        if parsed is None:
            continue
        topic, partition, offset = parsed
        if offset is None:
            out.pop((topic, partition), None)
        else:
            out[(topic, partition)] = offset
    return out


def _string(buf: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    return buf[at + 2:at + 2 + n].decode("utf-8"), at + 2 + n


def parse_checkpoint(key: bytes, value: bytes) -> tuple[str, str, int, int, int]:
    """A record of ``source.checkpoints.internal``: ``(group, target topic, partition, upstream offset,
    translated offset)``."""
    group, at = _string(key, 0)
    topic, at = _string(key, at)
    (partition,) = struct.unpack_from(">i", key, at)
    _version, upstream, downstream = struct.unpack_from(">hqq", value, 0)
    return group, topic, partition, upstream, downstream


def latest_checkpoints(records: list[tuple[bytes | None, bytes | None]]) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(group, topic, partition) -> (upstream offset, translated offset): the last checkpoint of each."""
    out: dict[tuple[str, str, int], tuple[int, int]] = {}
    for key, value in records:
        if key is None or value is None:
            continue
        try:
            group, topic, partition, up, down = parse_checkpoint(key, value)
        except (struct.error, UnicodeDecodeError):
            continue
        out[(group, topic, partition)] = (up, down)
    return out


def task_states(records: list[tuple[bytes | None, bytes | None]]) -> dict[str, str]:
    """Connector and task name -> state (RUNNING, FAILED, ...) from MirrorMaker's Connect status records
    (key ``status-connector-<name>`` or ``status-task-<name>-<n>``, JSON value with ``state``)."""
    out: dict[str, str] = {}
    for key, value in records:
        if key is None:
            continue
        name = key.decode("utf-8", "replace")
        for prefix in ("status-connector-", "status-task-"):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        else:
            continue
        if value is None:
            out.pop(name, None)
            continue
        try:
            state = json.loads(value).get("state")
        except (ValueError, AttributeError):
            continue
        if isinstance(state, str):
            out[name] = state
    return out


# What MirrorMaker 2 (Kafka Connect's DistributedHerder) logs once its worker has joined and started
# what it was given; a right refused before it (the workers' leader claiming the config topic with its
# transactional id) is in the log by then.
STARTED_MARKER = "Finished starting connectors and tasks"
_REFUSED = re.compile(r"\b(\w+AuthorizationException)\b")


def authorization_refusals(log_text: str) -> list[str]:
    """The Java authorization exceptions MirrorMaker logged (simple names, first seen first).

    >>> authorization_refusals("Caused by: org.apache.kafka.common.errors.TransactionalIdAuthorizationException: x")
    ['TransactionalIdAuthorizationException']
    """
    return list(dict.fromkeys(m.group(1) for m in _REFUSED.finditer(log_text)))
