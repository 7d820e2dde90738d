"""Pure description of a sandbox: which node runs where, with which config files.

Node addresses: the i-th ZooKeeper server and the i-th broker (1-based, in the order given,
spares after the originals) listen on ``<ip_prefix>.i``, so configs read like a multi-host
cluster with one ZooKeeper server and one broker per host. A native KRaft sandbox (``controller_ids``
given, no ZooKeeper) puts its i-th KRaft controller on ``<ip_prefix>.i`` too, port :data:`CONTROLLER_PORT`
(its configs: ``migrate.sandbox.kraft_layout``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from migrate.adapters.jars import KAFKA_VERSION, ZOOKEEPER_VERSION
from migrate.core.plan.document import ROLL_FETCH_SETTINGS
from migrate.core.versions import check_kafka_version, check_kraft_kafka_version, check_zookeeper_version
from migrate.errors import BadInput

CONTROLLER_PORT = 9093  # the controller listener of a KRaft controller (migrate.sandbox.kraft), on its own address
AVAILABILITY_DOMAINS = 3
FAULT_DOMAINS = 3


def rack_for(position: int) -> str:
    """The ``broker.rack`` of the broker at 1-based ``position``, as in the migration procedure.

    Positions 1..6 give AD-1/FD-1, AD-2/FD-1, AD-3/FD-1, AD-1/FD-2, AD-2/FD-2, AD-3/FD-2.
    """
    ad = (position - 1) % AVAILABILITY_DOMAINS + 1
    fd = ((position - 1) // AVAILABILITY_DOMAINS) % FAULT_DOMAINS + 1
    return f"AD-{ad}/FD-{fd}"


@dataclass(frozen=True)
class ZkNode:
    id: int
    host: str
    client_port: int
    quorum_port: int
    election_port: int
    joiner: bool  # started as a joiner (observer in its initial config), not a voter

    @property
    def name(self) -> str:
        return f"zookeeper-{self.id}"

    def server_line(self, role: str) -> str:
        """ZooKeeper's dynamic config line, e.g. ``server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181``."""
        return (
            f"server.{self.id}={self.host}:{self.quorum_port}:{self.election_port}:{role};"
            f"{self.host}:{self.client_port}"
        )


@dataclass(frozen=True)
class BrokerNode:
    id: int
    host: str
    port: int
    rack: str
    spare: bool  # a new broker for the migration: started with no partitions

    @property
    def name(self) -> str:
        return f"kafka-{self.id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ControllerNode:
    """A KRaft controller of a native KRaft sandbox; ``spare``: a new controller for a migration, formatted with
    ``--no-initial-controllers`` and started as an observer of the quorum."""

    id: int
    host: str
    port: int
    spare: bool

    @property
    def name(self) -> str:
        return f"controller-{self.id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class SandboxSpec:
    """What ``kmigrate sandbox up`` starts."""

    zookeeper_ids: tuple[int, ...] = (1, 2, 3)
    spare_zookeeper_ids: tuple[int, ...] = ()
    broker_ids: tuple[int, ...] = (1, 2, 3)
    spare_broker_ids: tuple[int, ...] = ()
    ip_prefix: str = "127.0.0"
    zookeeper_client_port: int = 2181
    zookeeper_quorum_port: int = 2888
    zookeeper_election_port: int = 3888
    kafka_port: int = 9092
    chroot: str = ""  # e.g. "/kafka": brokers use <connect>/kafka
    zookeeper_heap_mb: int = 96
    kafka_heap_mb: int = 320
    kafka_settings: dict[str, str] = field(default_factory=dict)  # extra server.properties
    security: str = "plaintext"  # plaintext | sasl_plaintext | sasl_ssl | mtls (migrate.sandbox.security)
    kafka_version: str = KAFKA_VERSION  # every broker's release (Maven Central), 2.4.x .. 3.9.x
    zookeeper_version: str = ZOOKEEPER_VERSION  # every ZooKeeper server's release, 3.5.x .. 3.8.x
    # brokers on another release than kafka_version ("broker id" -> release): a cluster in the middle of a rolling upgrade
    broker_kafka_versions: dict[str, str] = field(default_factory=dict)
    zookeeper_tls: bool = False  # also a TLS secureClientPort (client port + 1) on every ZooKeeper server
    # A native KRaft sandbox (``sandbox up --kraft``): these controllers, no ZooKeeper at all (zookeeper_ids empty)
    controller_ids: tuple[int, ...] = ()
    spare_controller_ids: tuple[int, ...] = ()  # formatted with --no-initial-controllers, started as observers
    static_quorum: bool = False  # controller.quorum.voters (kraft.version 0), not a dynamic quorum (KIP-853)
    controller_heap_mb: int = 256

    @property
    def kraft(self) -> bool:
        """True for a native KRaft sandbox: KRaft controllers and brokers, no ZooKeeper."""
        return bool(self.controller_ids)

    def __post_init__(self) -> None:
        if self.kraft or self.spare_controller_ids:
            self._check_kraft()
            return
        zk = self.zookeeper_ids + self.spare_zookeeper_ids
        brokers = self.broker_ids + self.spare_broker_ids
        if not self.zookeeper_ids:
            raise BadInput("a sandbox needs at least one ZooKeeper server: use --zookeepers 1 or more")
        if self.spare_broker_ids and not self.broker_ids:
            raise BadInput("spare brokers need at least one broker: use --brokers 1 or more")
        for what, ids in (("ZooKeeper", zk), ("broker", brokers)):
            if len(set(ids)) != len(ids):
                raise BadInput(f"{what} ids repeat in {list(ids)}: give each node its own id")
            bad = [i for i in ids if i < 0 or (what == "ZooKeeper" and not 1 <= i <= 255)]
            if bad:
                raise BadInput(f"{what} id {bad[0]} is out of range: ZooKeeper ids are 1..255, broker ids >= 0")
        if self.spare_zookeeper_ids and min(self.spare_zookeeper_ids) <= max(self.zookeeper_ids):
            raise BadInput(
                f"spare ZooKeeper ids {list(self.spare_zookeeper_ids)} must all be greater than every voter id "
                f"{list(self.zookeeper_ids)}: ZooKeeper joiners need increasing ids"
            )
        if max(len(zk), len(brokers)) > 254:
            raise BadInput("a sandbox has at most 254 nodes of each kind (one loopback address each)")
        self._check_prefix()
        if self.security not in ("plaintext", "sasl_plaintext", "sasl_ssl", "mtls"):
            raise BadInput(f"--security {self.security!r}: choose one of plaintext, sasl_plaintext, sasl_ssl, mtls")
        if self.zookeeper_tls and self.security not in ("sasl_ssl", "mtls"):
            raise BadInput("--zookeeper-tls needs --security sasl_ssl or mtls (the sandbox CA signs ZooKeeper's certificate)")
        check_kafka_version(self.kafka_version)
        check_zookeeper_version(self.zookeeper_version)
        for b, v in self.broker_kafka_versions.items():
            if not str(b).isdigit() or int(b) not in brokers:
                raise BadInput(f"--broker-kafka-version {b}={v}: {b} is not a broker id of this sandbox ({list(brokers)})")
            check_kafka_version(v, f"--broker-kafka-version {b}=")
        if self.chroot and (not self.chroot.startswith("/") or self.chroot.endswith("/")):
            raise BadInput(f"--chroot {self.chroot!r} must start with / and not end with /, like /kafka")

    def _check_kraft(self) -> None:
        """The checks of a native KRaft sandbox: controllers and brokers share one id space (``node.id``)."""
        if not self.controller_ids:
            raise BadInput("spare controllers need at least one controller: use --controllers 1 or more")
        if self.zookeeper_ids or self.spare_zookeeper_ids or self.chroot or self.zookeeper_tls:
            raise BadInput("a KRaft sandbox (--kraft) has no ZooKeeper: leave out --zookeepers, --chroot and --zookeeper-tls")
        from migrate.sandbox.security import check_kraft_security

        check_kraft_security(self.security)
        if self.spare_broker_ids and not self.broker_ids:
            raise BadInput("spare brokers need at least one broker: use --brokers 1 or more")
        controllers = self.controller_ids + self.spare_controller_ids
        brokers = self.broker_ids + self.spare_broker_ids
        nodes = controllers + brokers
        if len(set(nodes)) != len(nodes):
            raise BadInput(f"node ids repeat in controllers {list(controllers)} and brokers {list(brokers)}: in KRaft "
                           "controllers and brokers share one node.id space, give each node its own id")
        bad = [i for i in nodes if i < 0]
        if bad:
            raise BadInput(f"node id {bad[0]} is out of range: node ids are >= 0")
        if max(len(controllers), len(brokers)) > 254:
            raise BadInput("a sandbox has at most 254 nodes of each kind (one loopback address each)")
        self._check_prefix()
        check_kraft_kafka_version(self.kafka_version)
        for b, v in self.broker_kafka_versions.items():
            if not str(b).isdigit() or int(b) not in brokers:
                raise BadInput(f"--broker-kafka-version {b}={v}: {b} is not a broker id of this sandbox ({list(brokers)})")
            check_kraft_kafka_version(v, f"--broker-kafka-version {b}=")

    def _check_prefix(self) -> None:
        parts = self.ip_prefix.split(".")
        if len(parts) != 3 or parts[0] != "127" or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
            raise BadInput(f"--ip-prefix {self.ip_prefix!r} must be three octets of the loopback range, like 127.0.0")

    @property
    def controllers(self) -> tuple[ControllerNode, ...]:
        """The KRaft controllers of a native KRaft sandbox, spares after the others, the i-th on ``<ip_prefix>.i``."""
        ids = self.controller_ids + self.spare_controller_ids
        return tuple(ControllerNode(id=i, host=self.host(pos), port=CONTROLLER_PORT, spare=i in self.spare_controller_ids)
                     for pos, i in enumerate(ids, start=1))

    def bootstrap_controllers(self, spare: bool | None = None) -> str:
        """``host:port`` of the controllers (all, or only the spares / only the others)."""
        return ",".join(c.address for c in self.controllers if spare is None or c.spare == spare)

    def kafka_version_of(self, broker_id: int) -> str:
        """The Kafka release broker ``broker_id`` runs."""
        return self.broker_kafka_versions.get(str(broker_id), self.kafka_version)

    def host(self, position: int) -> str:
        return f"{self.ip_prefix}.{position}"

    @property
    def zookeepers(self) -> tuple[ZkNode, ...]:
        ids = self.zookeeper_ids + self.spare_zookeeper_ids
        return tuple(
            ZkNode(
                id=i,
                host=self.host(pos),
                client_port=self.zookeeper_client_port,
                quorum_port=self.zookeeper_quorum_port,
                election_port=self.zookeeper_election_port,
                joiner=i in self.spare_zookeeper_ids,
            )
            for pos, i in enumerate(ids, start=1)
        )

    @property
    def brokers(self) -> tuple[BrokerNode, ...]:
        ids = self.broker_ids + self.spare_broker_ids
        return tuple(
            BrokerNode(
                id=i, host=self.host(pos), port=self.kafka_port, rack=rack_for(pos), spare=i in self.spare_broker_ids
            )
            for pos, i in enumerate(ids, start=1)
        )

    def voters(self) -> tuple[ZkNode, ...]:
        return tuple(z for z in self.zookeepers if not z.joiner)

    def zookeeper_connect(self, nodes: tuple[ZkNode, ...] | None = None) -> str:
        """The connect string brokers use: the voters' client addresses plus the chroot."""
        nodes = self.voters() if nodes is None else nodes
        return ",".join(f"{z.host}:{z.client_port}" for z in nodes) + self.chroot

    def bootstrap_servers(self, spare: bool | None = None) -> str:
        return ",".join(b.address for b in self.brokers if spare is None or b.spare == spare)


def zoo_cfg(data_dir: str, dynamic_file: str, secured: list[str] | None = None) -> str:
    """The static zoo.cfg of a sandbox server: reconfig on, no standalone, 4lw words, no admin server.

    ``secured``: the lines of a secured sandbox (``SandboxSecurity.zoo_cfg_lines``), which replace
    ``skipACL=yes``: ACLs are enforced and reconfig needs the super user."""
    lines = [
            "tickTime=1000",
            "initLimit=10",
            "syncLimit=5",
            f"dataDir={data_dir}",
            "reconfigEnabled=true",
            "standaloneEnabled=false",
            f"dynamicConfigFile={dynamic_file}",
            "4lw.commands.whitelist=srvr,mntr,conf,stat,ruok,cons,wchs",
            "admin.enableServer=false",
            *(secured if secured is not None else ["skipACL=yes"]),
            "maxClientCnxns=0",
            "",
    ]
    return "\n".join(lines)


def server_properties(spec: SandboxSpec, broker: BrokerNode, log_dir: str, zookeeper_connect: str) -> dict[str, str]:
    """server.properties of a sandbox broker (ZooKeeper mode), modest thread counts and buffers."""
    n = len(spec.broker_ids)
    rf = str(min(3, n))
    props = {
        "broker.id": str(broker.id),
        "listeners": f"PLAINTEXT://{broker.address}",
        "advertised.listeners": f"PLAINTEXT://{broker.address}",
        "log.dirs": log_dir,
        "zookeeper.connect": zookeeper_connect,
        # Kafka's default before 2.5 (18 s since): a SIGKILLed broker's registration and leadership go
        # 12 s sooner, and it may start again sooner (sandbox start waits for that registration to go)
        "zookeeper.session.timeout.ms": "6000",
        "zookeeper.connection.timeout.ms": "30000",
        "broker.rack": broker.rack,
        "num.partitions": "1",
        "default.replication.factor": rf,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, n)),
        "transaction.state.log.num.partitions": "10",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "background.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        "log.cleaner.backoff.ms": "2000",
        "log.segment.bytes": str(64 * 1024 * 1024),
        "controlled.shutdown.enable": "true",
        # brokers stopped all at once (sandbox down) fail to reach the controller that stops too: retry after 1 s, not 5
        "controlled.shutdown.retry.backoff.ms": "1000",
    }
    top = max(spec.broker_ids + spec.spare_broker_ids)
    if top > 1000:  # Kafka's default reserved.broker.max.id: a broker with a higher id exits at start
        props["reserved.broker.max.id"] = str(top)
    if broker.spare:  # a new broker starts as the runbook says: with the fetch settings of the first roll
        props.update(ROLL_FETCH_SETTINGS)
    props.update(spec.kafka_settings)
    return props


def with_settings(props: dict[str, str], settings: dict[str, str | None] | None) -> dict[str, str]:
    """``props`` with ``settings`` applied: a value set, None removing the key (a restart with changed settings).

    >>> with_settings({"controller.quorum.voters": "1@c1:9093", "a": "1"},
    ...               {"controller.quorum.voters": None, "controller.quorum.bootstrap.servers": "c1:9093"})
    {'a': '1', 'controller.quorum.bootstrap.servers': 'c1:9093'}
    """
    out = {k: v for k, v in props.items() if not (settings and k in settings and settings[k] is None)}
    out.update({k: v for k, v in (settings or {}).items() if v is not None})
    return out


def log4j_properties(log_file: str) -> str:
    return "\n".join(
        [
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.RollingFileAppender",
            f"log4j.appender.file.File={log_file}",
            "log4j.appender.file.MaxFileSize=50MB",
            "log4j.appender.file.MaxBackupIndex=2",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.kafka.request.logger=WARN",
            "log4j.logger.org.apache.zookeeper.audit=WARN",
            "",
        ]
    )


def target_spec(spec: SandboxSpec, brokers: int, ip_prefix: str | None = None) -> SandboxSpec:
    """The second, separate cluster of ``sandbox up --target-cluster``: one ZooKeeper server of its own,
    brokers 1..``brokers``, no chroot or spares, the source's ports, security and other settings, on its
    own loopback prefix (default: the source's with the third octet plus one, 127.0.0 -> 127.0.1)."""
    if ip_prefix is None:
        first, second, third = spec.ip_prefix.split(".")
        if int(third) >= 255:
            raise BadInput(f"--ip-prefix {spec.ip_prefix} has no next prefix for the target cluster: give --target-ip-prefix")
        ip_prefix = f"{first}.{second}.{int(third) + 1}"
    if ip_prefix == spec.ip_prefix:
        raise BadInput(f"--target-ip-prefix {ip_prefix} is the source cluster's: give the target its own, like 127.0.1")
    if brokers < 1:
        raise BadInput(f"--target-brokers {brokers}: the target cluster needs 1 or more brokers")
    return replace(spec, zookeeper_ids=(1,), spare_zookeeper_ids=(), broker_ids=tuple(range(1, brokers + 1)),
                   spare_broker_ids=(), ip_prefix=ip_prefix, chroot="")
