"""What each sandbox node runs: the files in its directory (``zoo.cfg``, ``server.properties``,
``log4j.properties``) and its command line; the ports a sandbox needs free; and what a secured sandbox
writes into ZooKeeper before any broker starts."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import javaproperties

from migrate.adapters.jars import KAFKA_MAIN, ZOOKEEPER_MAIN, Distribution
from migrate.errors import BadInput
from migrate.files import write_private
from migrate.sandbox.layout import BrokerNode, SandboxSpec, ZkNode, log4j_properties, server_properties, zoo_cfg
from migrate.sandbox.probes import zookeeper
from migrate.sandbox.security import SandboxSecurity


def port_free(host: str, port: int) -> bool:
    """True when a server could listen on ``host:port`` now.

    The probe binds as the servers do, with ``SO_REUSEADDR``: connections of a stopped server still in
    TIME_WAIT do not keep its port (Java's servers bind over them); a socket listening there does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(spec: SandboxSpec) -> None:
    """BadInput naming the first address of ``spec`` something already listens on."""
    wanted = [(z.host, p) for z in spec.zookeepers for p in (z.client_port, z.quorum_port, z.election_port)]
    wanted += [(b.host, b.port) for b in spec.brokers]
    wanted += [(c.host, c.port) for c in spec.controllers]
    for host, port in wanted:
        if not port_free(host, port):
            raise BadInput(
                f"{host}:{port} is in use: stop what listens there, or pick other ports "
                "(--kafka-port, --zookeeper-port) or addresses (--ip-prefix)"
            )


def write_zookeeper_files(home: Path, z: ZkNode, dynamic: str, spec: SandboxSpec, sec: SandboxSecurity | None) -> None:
    """A ZooKeeper server's ``data/myid``, ``zoo.cfg`` (with the dynamic config ``dynamic``) and log4j file."""
    (home / "data").mkdir(parents=True, exist_ok=True)
    (home / "data" / "myid").write_text(f"{z.id}\n")
    (home / "zoo.cfg.dynamic").write_text(dynamic)
    cfg = zoo_cfg(str(home / "data"), str(home / "zoo.cfg.dynamic"), sec.zoo_cfg_lines() if sec else None)
    if spec.zookeeper_tls and sec is not None:
        cfg += "\n".join(sec.zookeeper_tls_lines(z.id, z.host, z.client_port + 1)) + "\n"
    if sec is not None:
        write_private(home / "zoo.cfg", cfg)  # the super user's digest
    else:
        (home / "zoo.cfg").write_text(cfg)
    (home / "log4j.properties").write_text(log4j_properties(str(home / "zookeeper.log")))


def zookeeper_command(home: Path, spec: SandboxSpec, dist: Distribution, sec: SandboxSecurity | None) -> list[str]:
    """The command line of the ZooKeeper server in ``home`` (with its class-data-sharing archive: ``adapters/class_data``)."""
    opts = [
        f"-Xmx{spec.zookeeper_heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-XX:+ExitOnOutOfMemoryError", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}",
        f"-Dzookeeper.log.dir={home}", "-Dzookeeper.jmx.log4j.disable=true",
        *(sec.zookeeper_jvm_options() if sec else []),
    ]
    return dist.java_command(ZOOKEEPER_MAIN, [str(home / "zoo.cfg")], opts, class_data=True)


def write_broker_files(home: Path, b: BrokerNode, zookeeper_connect: str, spec: SandboxSpec,
                       sec: SandboxSecurity | None) -> None:
    """A broker's ``server.properties`` (connected to ``zookeeper_connect``) and log4j file."""
    (home / "data").mkdir(parents=True, exist_ok=True)
    props = server_properties(spec, b, str(home / "data"), zookeeper_connect)
    if sec is not None:
        props.update(sec.broker_properties(b.id, b.address))
        props.update(spec.kafka_settings)
    write_private(home / "server.properties", javaproperties.dumps(props, timestamp=False, sort_keys=True))
    (home / "log4j.properties").write_text(log4j_properties(str(home / "server.log")))


def broker_command(home: Path, spec: SandboxSpec, dist: Distribution, sec: SandboxSecurity | None) -> list[str]:
    """The command line of the broker in ``home``: the client compiler only (a sandbox broker lives minutes and
    moves megabytes: C2's compilations cost more CPU than they save) and the class-data-sharing archive."""
    return kafka_server_command(home, spec.kafka_heap_mb, dist, sec.broker_jvm_options() if sec else [])


def kafka_server_command(home: Path, heap_mb: int, dist: Distribution, extra: list[str] | None = None) -> list[str]:
    """The command line of the Kafka server (broker or KRaft controller) in ``home`` with a heap of ``heap_mb``:
    its ``server.properties``, and its logging config for its release (``log4j.properties``, or from Kafka 4.0
    ``log4j2.properties``: ``kraft_layout.logging_file``)."""
    from migrate.sandbox.kraft_layout import logging_file, logging_options

    opts = [
        f"-Xmx{heap_mb}m", f"-Xms{heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
        *logging_options(dist.kafka_version, str(home / logging_file(dist.kafka_version))), f"-Dkafka.logs.dir={home}",
        *(extra or []),
    ]
    return dist.java_command(KAFKA_MAIN, [str(home / "server.properties")], opts, class_data=True)


def seed_zookeeper(spec: SandboxSpec, sec: SandboxSecurity) -> None:
    """Write the SCRAM credentials of the Kafka users (``<chroot>/config/users/<user>``, as Kafka's
    ConfigCommand does) before any broker starts, with the ACLs brokers with ``zookeeper.set.acl``
    give them: only the brokers' ZooKeeper user may touch them."""
    from migrate.sandbox.security import MECHANISM, USERS, ZK_BROKER_USER, scram_credential, uses_sasl

    owner = [("sasl", ZK_BROKER_USER, "cdrwa")]
    readable = owner + [("world", "anyone", "r")]
    hosts = ",".join(f"{z.host}:{z.client_port}" for z in spec.voters())
    with zookeeper(hosts, timeout_s=30, auth=sec.zookeeper_auth()) as zk:
        if spec.chroot:
            zk.write(spec.chroot, b"", acl=readable)
        zk.write(f"{spec.chroot}/config", b"", acl=readable)
        if not uses_sasl(spec.security):
            return
        zk.write(f"{spec.chroot}/config/users", b"", acl=owner)
        for user in USERS:
            credential = scram_credential(sec.password(user), os.urandom(32))
            data = json.dumps({"version": 1, "config": {MECHANISM: credential}}).encode()
            zk.write(f"{spec.chroot}/config/users/{user}", data, acl=owner)


def grant_acls(spec: SandboxSpec, admin_settings: dict[str, str]) -> None:
    """Grant the Kafka users of a secured sandbox their ACLs (``security.KMIGRATE_ACLS``) on its first brokers."""
    from migrate.adapters.kafka.local_cluster import grant
    from migrate.sandbox.security import KMIGRATE_ACLS

    grant(spec.bootstrap_servers(spare=False), admin_settings, KMIGRATE_ACLS)
