"""Read a live cluster into a :class:`migrate.core.model.ClusterSnapshot` (what ``kmigrate inspect`` saves).

Reads, each with a timeout: the committed ZooKeeper config and its version, each server's version
and mode (``srvr``), whether reconfig is enabled (a guarded reconfig that cannot apply), brokers
with rack, static ``zookeeper.connect``, release (ApiVersions) and ``inter.broker.protocol.version``, the controller, topics with replicas / ISR / leaders,
the topic configs that matter, partition sizes (``DescribeLogDirs``) and reassignments in flight.
"""

from __future__ import annotations

import json
import logging
from typing import Callable

from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.adapters.kafka.client import broker_static_configs
from migrate.adapters.zookeeper.client import ZooKeeper, server_state
from migrate.core.clientconfig import ClientSettings
from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble
from migrate.core.zookeeper.config import Dialing, parse_config, split_connect
from migrate.core.zookeeper.auth import ZkTls
from migrate.errors import BadInput

log = logging.getLogger("kmigrate.inspect")

TOPIC_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable", "cleanup.policy", "retention.ms")
IBP = "inter.broker.protocol.version"
ROLES = "process.roles"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def inspect_zookeeper(connect: str, auth: list[tuple[str, str]] | None = None, timeout_s: float = 15.0,
                      probe_reconfig: bool = True) -> tuple[ZkEnsemble, ZooKeeper]:
    """The ensemble as a :class:`ZkEnsemble`, and the open session (the caller closes it)."""
    hosts, _chroot = split_connect(connect)
    zk = ZooKeeper.connect(hosts, auth, timeout_s)
    raw = zk.read("/zookeeper/config") or b""
    config = parse_config(raw.decode("utf-8", "replace"))
    servers, version = config.servers, config.version
    versions: dict[int, str] = {}
    modes: dict[int, str] = {}
    tls = next((a for a in auth or [] if isinstance(a, ZkTls)), None)
    dial = Dialing.of(hosts, tls is not None)  # over TLS, each server at the secureClientPort
    for server in servers:
        address = dial.address(server)
        if address is None:  # no client port in the config: nothing to ask
            modes[server.id] = "unreachable"
            continue
        state = server_state(address, timeout_s=min(timeout_s, 3.0), tls=tls)
        modes[server.id] = state.mode or "unreachable"
        if state.version:
            versions[server.id] = state.version
    enabled = None
    if probe_reconfig and servers:
        enabled = zk.probe_reconfig() is None
    ensemble = ZkEnsemble(connect=connect, config_version=version, servers=servers, reconfig_enabled=enabled,
                          server_versions=versions, server_modes=modes)
    return ensemble, zk


def _refuse_zookeeper_mode(statics: dict[int, dict[str, str]]) -> None:
    """BadInput when a broker runs in ZooKeeper mode (no ``process.roles``, or a ``zookeeper.connect``) but no
    ZooKeeper was given: kmigrate would plan without the ensemble the cluster depends on."""
    zk_mode = sorted(b for b, c in statics.items() if not c.get(ROLES) or c.get("zookeeper.connect"))
    if zk_mode:
        connect = next((statics[b].get("zookeeper.connect") for b in zk_mode if statics[b].get("zookeeper.connect")), None)
        raise BadInput(f"broker(s) {', '.join(map(str, zk_mode))} run in ZooKeeper mode"
                       + (f" (zookeeper.connect={connect})" if connect else "")
                       + ": give --zookeeper host:port[/chroot] or a playbook with a zookeeper: section")


def inspect_cluster(settings: ClientSettings, zookeeper_connect: str | None, auth: list[tuple[str, str]] | None = None,
                    timeout_s: float = 15.0, sizes: bool = True,
                    progress: Callable[[str], None] = lambda msg: None) -> ClusterSnapshot:
    """Everything the planner and the audit need, read from the live cluster. ``zookeeper_connect`` None: a KRaft
    cluster (no ZooKeeper: an empty ensemble, the cluster id from DescribeCluster, no controller id since KRaft
    brokers name a random broker as controller); BadInput when its brokers run in ZooKeeper mode after all."""
    if zookeeper_connect is None:
        ensemble, registered, cluster_id, controller, registrations = ZkEnsemble(connect=""), None, None, None, {}
    else:
        progress("reading ZooKeeper")
        ensemble, zk = inspect_zookeeper(zookeeper_connect, auth, timeout_s)
        try:
            _hosts, chroot = split_connect(zookeeper_connect)
            registered = {int(i) for i in (zk.children(f"{chroot}/brokers/ids") or []) if i.isdigit()}
            cluster_id_raw = zk.read(f"{chroot}/cluster/id")
            controller_raw = zk.read(f"{chroot}/controller")
            registrations = {b: zk.read(f"{chroot}/brokers/ids/{b}") for b in registered}
        finally:
            zk.close()
        cluster_id = json.loads(cluster_id_raw)["id"] if cluster_id_raw else None
        controller = json.loads(controller_raw)["brokerid"] if controller_raw else None

    progress("reading Kafka metadata")
    admin = ReassignmentAdmin(settings, timeout_s=timeout_s)
    try:
        topics, live = admin.describe_and_brokers()
        statics = broker_static_configs(admin.admin, sorted(live), ("zookeeper.connect", "broker.rack", IBP, ROLES), timeout_s)
        if registered is None:  # KRaft: every live broker registered with the controllers
            _refuse_zookeeper_mode(statics)
            registered, cluster_id = set(live), admin.cluster_id()
        releases = admin.broker_releases(live)
        brokers = []
        hosting = {r for t in topics.values() for p in t.partitions for r in p.replicas}
        for b in sorted(set(live) | registered | hosting):
            reg = json.loads(registrations[b]) if registrations.get(b) else {}
            host, _, port = live.get(b, "").rpartition(":")
            static = statics.get(b, {})
            brokers.append(Broker(
                id=b, host=host or reg.get("host") or "", port=int(port) if port else int(reg.get("port") or 0),
                rack=static.get("broker.rack") or reg.get("rack"), version=releases.get(b),
                zookeeper_connect=static.get("zookeeper.connect"), alive=b in live and b in registered,
                protocol_version=static.get(IBP),
            ))
        progress(f"reading configs of {len(topics)} topics")
        configs = admin.topic_configs(sorted(topics), TOPIC_CONFIGS)
        replica_sizes: dict[tuple[str, int, int], int] = {}
        if sizes and topics:
            progress("reading partition sizes (DescribeLogDirs)")
            replica_sizes = admin.replica_sizes(sorted(live), {t: [p.partition for p in topic.partitions]
                                                               for t, topic in topics.items()})
        ongoing = {k: (v.adding, v.removing) for k, v in admin.list_reassignments().items()}
    finally:
        admin.close()
    size_by_partition: dict[tuple[str, int], int] = {}
    for (t, p, _b), size in replica_sizes.items():
        size_by_partition[(t, p)] = max(size_by_partition.get((t, p), 0), size)
    out_topics = tuple(
        Topic(
            name=name,
            internal=name in INTERNAL_TOPICS,
            configs=configs.get(name, {}),
            partitions=tuple(
                Partition(p.partition, p.replicas, p.isr, p.leader,
                          size_by_partition.get((name, p.partition)) if sizes else None)
                for p in topic.partitions
            ),
        )
        for name, topic in sorted(topics.items())
    )
    return ClusterSnapshot(cluster_id=cluster_id, controller_id=controller, zookeeper=ensemble,
                           brokers=tuple(brokers), topics=out_topics, ongoing_reassignments=ongoing)


def read_kraft_version(settings: ClientSettings) -> int | None:
    """The finalized ``kraft.version`` the brokers of ``settings`` report (0: a static controller quorum), None when
    it cannot be read (a ZooKeeper-mode broker reports none either: ask only a KRaft cluster)."""
    from migrate.adapters.kafka.voters import broker_finalized_features

    features = broker_finalized_features(settings)
    return None if features is None else int(features.get("kraft.version", 0))
