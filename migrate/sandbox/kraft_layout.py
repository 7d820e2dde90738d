"""Pure description of a native KRaft sandbox (``kmigrate sandbox up --kraft``): no ZooKeeper at all, KRaft
controllers (``process.roles=controller``) and brokers (``process.roles=broker``), Kafka 3.9.x to 4.4.x.

- **Dynamic quorum** (the default, KIP-853, ``kraft.version`` 1): every node names the first controllers in
  ``controller.quorum.bootstrap.servers``, no ``controller.quorum.voters``. The first controllers are formatted with
  ``--initial-controllers id@host:port:directory-id,...`` (the directory ids chosen here, so the voter set is known
  before any node starts); the brokers with the cluster id alone.
- **Static quorum** (``static_quorum``, ``kraft.version`` 0): ``controller.quorum.voters`` on every node, formatted
  with the cluster id alone.
- **Spare controllers**: formatted with ``--no-initial-controllers`` (``-N``) and the cluster id, with
  ``controller.quorum.bootstrap.servers`` naming the first controllers, and started: they fetch the metadata log as
  observers until someone adds them (AddRaftVoter). ``controller.quorum.auto.join.enable`` (4.2+) is left off.

Every controller advertises its controller listener (``advertised.listeners``): a dynamic quorum hands those
endpoints to the other nodes. No I/O: the uuids (cluster id, directory ids) are given.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from migrate.core.controllers.quorum import kafka_uuid
from migrate.core.kraft.config import format_command
from migrate.core.versions import uses_log4j2
from migrate.errors import BadInput
from migrate.sandbox.layout import BrokerNode, ControllerNode, SandboxSpec, server_properties

CONTROLLER_LISTENER = "CONTROLLER"
FIRST_CONTROLLER_ID = 3000  # every sandbox's controllers (this one's and the ZooKeeper-to-KRaft one's) are 3000..
STORAGE_TOOL = "kafka.tools.StorageTool"
# ZooKeeper-mode broker settings a KRaft broker does not take
_ZOOKEEPER_ONLY = ("broker.id", "reserved.broker.max.id", "controlled.shutdown.retry.backoff.ms")


def kraft_spec(controllers: tuple[int, ...], brokers: tuple[int, ...], **kwargs) -> SandboxSpec:
    """A native KRaft sandbox's spec: ``controllers`` and ``brokers`` (ids), no ZooKeeper; ``kwargs``: the other fields.

    >>> spec = kraft_spec((3000, 3001, 3002), (1, 2), spare_controller_ids=(3003,), spare_broker_ids=(3,))
    >>> [(c.name, c.address, c.spare) for c in spec.controllers][2:]
    [('controller-3002', '127.0.0.3:9093', False), ('controller-3003', '127.0.0.4:9093', True)]
    """
    return SandboxSpec(zookeeper_ids=(), controller_ids=tuple(controllers), broker_ids=tuple(brokers), **kwargs)


def usable_uuid(raw: bytes) -> bool:
    """Whether Kafka takes these bytes as a random uuid: not a reserved one (the first 8 bytes zero: ZERO, the
    metadata topic id, the directory ids UNASSIGNED/LOST/MIGRATING), not starting with ``-`` in text (a command
    line would read it as an option; ``Uuid.randomUuid`` draws again then).

    >>> usable_uuid(bytes(16)), usable_uuid(b"\\xfb" + bytes(15)), usable_uuid(b"\\x01" * 16)
    (False, False, True)
    """
    return raw[:8] != bytes(8) and not kafka_uuid(raw).startswith("-")


def quorum_voters(controllers: tuple[ControllerNode, ...]) -> str:
    """``controller.quorum.voters``: ``id@host:port,...``."""
    return ",".join(f"{c.id}@{c.address}" for c in controllers)


def initial_controllers(controllers: tuple[ControllerNode, ...], directory_ids: Mapping[int, str]) -> str:
    """``kafka-storage format --initial-controllers``: ``id@host:port:directory-id,...``.

    >>> spec = kraft_spec((3000, 3001), (1,))
    >>> initial_controllers(spec.controllers, {3000: "AAECAwQFBgcICQoLDA0ODw", 3001: "EBESExQVFhcYGRobHB0eHw"})
    '3000@127.0.0.1:9093:AAECAwQFBgcICQoLDA0ODw,3001@127.0.0.2:9093:EBESExQVFhcYGRobHB0eHw'
    """
    missing = [c.id for c in controllers if not directory_ids.get(c.id)]
    if missing:
        raise BadInput(f"no directory id for controller {missing[0]}: --initial-controllers names each one's")
    return ",".join(f"{c.id}@{c.address}:{directory_ids[c.id]}" for c in controllers)


def voters(spec: SandboxSpec) -> tuple[ControllerNode, ...]:
    """The controllers the quorum starts with (the spares are observers)."""
    return tuple(c for c in spec.controllers if not c.spare)


def quorum_settings(spec: SandboxSpec) -> dict[str, str]:
    """How every node finds the quorum: ``controller.quorum.voters`` (static) or ``controller.quorum.bootstrap.servers``
    naming the first controllers (dynamic), and the controller listener's name.

    >>> quorum_settings(kraft_spec((3000, 3001), (1,), spare_controller_ids=(3002,)))  # doctest: +NORMALIZE_WHITESPACE
    {'controller.quorum.bootstrap.servers': '127.0.0.1:9093,127.0.0.2:9093', 'controller.listener.names': 'CONTROLLER'}
    >>> quorum_settings(kraft_spec((3000,), (1,), static_quorum=True))
    {'controller.quorum.voters': '3000@127.0.0.1:9093', 'controller.listener.names': 'CONTROLLER'}
    """
    first = voters(spec)
    if spec.static_quorum:
        quorum = {"controller.quorum.voters": quorum_voters(first)}
    else:
        quorum = {"controller.quorum.bootstrap.servers": ",".join(c.address for c in first)}
    return {**quorum, "controller.listener.names": CONTROLLER_LISTENER}


def controller_properties(spec: SandboxSpec, controller: ControllerNode, metadata_dir: str) -> dict[str, str]:
    """A controller's ``server.properties``, modest thread counts.

    >>> spec = kraft_spec((3000, 3001), (1,), spare_controller_ids=(3002,))
    >>> for k, v in controller_properties(spec, spec.controllers[2], "/d/metadata").items(): print(f"{k}={v}")
    process.roles=controller
    node.id=3002
    controller.quorum.bootstrap.servers=127.0.0.1:9093,127.0.0.2:9093
    controller.listener.names=CONTROLLER
    listeners=CONTROLLER://127.0.0.3:9093
    advertised.listeners=CONTROLLER://127.0.0.3:9093
    listener.security.protocol.map=CONTROLLER:PLAINTEXT
    log.dirs=/d/metadata
    num.network.threads=2
    num.io.threads=2
    background.threads=2
    """
    if spec.static_quorum and controller.spare:
        # a static quorum's controller must be one of controller.quorum.voters (KafkaConfig): a spare is not yet
        props = {"controller.quorum.bootstrap.servers": ",".join(c.address for c in voters(spec)),
                 "controller.listener.names": CONTROLLER_LISTENER}
    else:
        props = quorum_settings(spec)
    return {
        "process.roles": "controller",
        "node.id": str(controller.id),
        **props,
        "listeners": f"{CONTROLLER_LISTENER}://{controller.address}",
        "advertised.listeners": f"{CONTROLLER_LISTENER}://{controller.address}",
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT",
        "log.dirs": metadata_dir,
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
    }


def broker_properties(spec: SandboxSpec, broker: BrokerNode, log_dir: str) -> dict[str, str]:
    """A KRaft broker's ``server.properties``: the ZooKeeper sandbox broker's settings (racks, replication factors,
    small thread counts) without its ZooKeeper ones, with ``process.roles=broker`` and the quorum.

    >>> spec = kraft_spec((3000,), (1, 2))
    >>> props = broker_properties(spec, spec.brokers[1], "/d/data")
    >>> list(props)[:7]  # doctest: +NORMALIZE_WHITESPACE
    ['process.roles', 'node.id', 'controller.quorum.bootstrap.servers', 'controller.listener.names',
     'listener.security.protocol.map', 'listeners', 'advertised.listeners']
    >>> props["node.id"], props["broker.rack"], props["listeners"], "broker.id" in props, "zookeeper.connect" in props
    ('2', 'AD-2/FD-1', 'PLAINTEXT://127.0.0.2:9092', False, False)
    """
    zk_mode = server_properties(replace(spec, kafka_settings={}), broker, log_dir, "")
    props = {"process.roles": "broker", "node.id": str(broker.id), **quorum_settings(spec),
             "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT"}
    for key, value in zk_mode.items():
        if not key.startswith("zookeeper.") and key not in _ZOOKEEPER_ONLY:
            props[key] = value
    props.update(spec.kafka_settings)
    return props


def format_args(spec: SandboxSpec, node_id: int, cluster_id: str, config_file: str,
                directory_ids: Mapping[int, str] | None = None) -> list[str]:
    """The arguments of ``kafka-storage format`` (Kafka's StorageTool) for node ``node_id``: a first controller of a
    dynamic quorum with ``--initial-controllers``, a spare controller with ``--no-initial-controllers``, a broker or
    a static quorum's controller with the cluster id alone.

    >>> spec = kraft_spec((3000,), (1,), spare_controller_ids=(3001,))
    >>> format_args(spec, 3000, "CID", "c.properties", {3000: "DIR0"})
    ['format', '--cluster-id=CID', '-c', 'c.properties', '--initial-controllers', '3000@127.0.0.1:9093:DIR0']
    >>> format_args(spec, 3001, "CID", "c.properties")
    ['format', '--cluster-id=CID', '-c', 'c.properties', '--no-initial-controllers']
    >>> format_args(spec, 1, "CID", "b.properties")
    ['format', '--cluster-id=CID', '-c', 'b.properties']
    """
    if not cluster_id:
        raise BadInput("no cluster id to format with")
    args = format_command(cluster_id, config_file)[1:]  # the StorageTool's arguments, without the script
    controller = next((c for c in spec.controllers if c.id == node_id), None)
    if controller is None:
        if node_id not in spec.broker_ids + spec.spare_broker_ids:
            raise BadInput(f"node {node_id} is not a node of this sandbox")
        return args
    if controller.spare:
        return args + ["--no-initial-controllers"]
    if spec.static_quorum:
        return args
    return args + ["--initial-controllers", initial_controllers(voters(spec), directory_ids or {})]


def kraft_version(spec: SandboxSpec) -> int:
    """The finalized ``kraft.version`` the sandbox formats: 1 for a dynamic quorum, 0 for a static one."""
    return 0 if spec.static_quorum else 1


def log4j2_properties(log_file: str) -> str:
    """A Kafka 4 server's log4j2 config (properties format, read by log4j-core alone): the same file, size and
    pattern as :func:`migrate.sandbox.layout.log4j_properties`.

    >>> "appender.file.fileName = /d/server.log" in log4j2_properties("/d/server.log")
    True
    """
    return "\n".join([
        "status = warn",
        "appender.file.type = RollingFile",
        "appender.file.name = file",
        f"appender.file.fileName = {log_file}",
        f"appender.file.filePattern = {log_file}.%i",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "appender.file.policies.type = Policies",
        "appender.file.policies.size.type = SizeBasedTriggeringPolicy",
        "appender.file.policies.size.size = 50MB",
        "appender.file.strategy.type = DefaultRolloverStrategy",
        "appender.file.strategy.max = 2",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = file",
        "logger.request.name = kafka.request.logger",
        "logger.request.level = WARN",
        "",
    ])


def logging_file(kafka_version: str) -> str:
    """The name of a server's logging config file for its release: ``log4j2.properties`` (4.0+) or ``log4j.properties``."""
    return "log4j2.properties" if uses_log4j2(kafka_version) else "log4j.properties"


def logging_options(kafka_version: str, config_file: str) -> list[str]:
    """The JVM option that points a server of ``kafka_version`` at its logging config.

    >>> logging_options("3.9.2", "/d/log4j.properties"), logging_options("4.1.1", "/d/log4j2.properties")
    (['-Dlog4j.configuration=file:/d/log4j.properties'], ['-Dlog4j2.configurationFile=/d/log4j2.properties'])
    """
    if uses_log4j2(kafka_version):
        return [f"-Dlog4j2.configurationFile={config_file}"]
    return [f"-Dlog4j.configuration=file:{config_file}"]


TARGET_KRAFT_VERSION = "4.4.0"  # sandbox up --target-cluster --target-kraft's default release


def target_kraft_spec(spec: SandboxSpec, brokers: int, ip_prefix: str | None = None,
                      kafka_version: str = TARGET_KRAFT_VERSION) -> SandboxSpec:
    """The second, separate cluster of ``sandbox up --target-cluster --target-kraft``: a native KRaft cluster (one
    controller, a dynamic quorum, brokers 1..``brokers``, no ZooKeeper) of ``kafka_version`` (3.9.x to 4.4.x), on
    its own loopback prefix (as :func:`migrate.sandbox.layout.target_spec`), the source's Kafka port: the new
    cluster of a blue/green move off ZooKeeper. The source stays a ZooKeeper-mode cluster.

    >>> src = SandboxSpec(zookeeper_ids=(1,), broker_ids=(1,), ip_prefix="127.0.64")
    >>> t = target_kraft_spec(src, 2)
    >>> t.kraft, t.kafka_version, t.ip_prefix, [c.address for c in t.controllers], [b.id for b in t.brokers]
    (True, '4.4.0', '127.0.65', ['127.0.65.1:9093'], [1, 2])
    >>> target_kraft_spec(src, 1, kafka_version="3.8.1")
    Traceback (most recent call last):
    migrate.errors.BadInput: --target-kafka-version 3.8.1: Kafka version '3.8.1' is not supported: give a release from 3.9.x to 4.4.x (three numbers, like 4.1.1)
    """
    from migrate.core.versions import check_kraft_kafka_version
    from migrate.sandbox.layout import target_spec

    check_kraft_kafka_version(kafka_version, "--target-kafka-version")
    base = target_spec(spec, brokers, ip_prefix)  # the prefix and the broker count, checked as for a ZooKeeper target
    if base.security != "plaintext":
        raise BadInput(f"--target-kraft does not go with --security {base.security}: a --target-kraft target is plaintext")
    return kraft_spec((FIRST_CONTROLLER_ID,), base.broker_ids, ip_prefix=base.ip_prefix, kafka_port=base.kafka_port,
                      kafka_version=kafka_version, kafka_heap_mb=base.kafka_heap_mb)
