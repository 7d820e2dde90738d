"""Read where a ZooKeeper-to-KRaft migration stands (``core/kraft/phases``) and what its configs are made of
(``core/kraft/config``), from the cluster itself: every call re-reads the truth, nothing is remembered.

Sources: ZooKeeper (kazoo: ``/cluster/id``, ``/controller``, ``/controller_epoch``, ``/migration``,
``/brokers/ids``, ``/brokers/topics/*``) and Kafka (kafka-python DescribeQuorum through the brokers;
confluent-kafka DescribeConfigs for the brokers' static settings).
"""

from __future__ import annotations

from typing import Mapping

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.config import Controller, KraftInputs
from migrate.core.kraft.phases import (
    Observation, assigned_broker_ids, parse_int_znode, parse_json_znode, parse_quorum,
)
from migrate.core.zookeeper.config import split_connect
from migrate.errors import BadInput


def observe(zookeeper_connect: str, auth: list | None, settings: ClientSettings | None,
            known_brokers: tuple[int, ...] = (), timeout_s: float = 15.0,
            controllers: tuple[str, ...] = (), controller_settings: ClientSettings | None = None) -> Observation:
    """One reading: ZooKeeper under the chroot of ``zookeeper_connect``, and DescribeQuorum asked of the
    ``controllers`` (``host:port`` of their controller listener, connected with the security settings of
    ``controller_settings``; None: PLAINTEXT) first, else through the brokers of ``settings`` (which forward it
    once they run with the migration settings; None: not asked)."""
    from migrate.adapters.kafka.quorum import describe_quorum, describe_quorum_at_controller
    from migrate.adapters.zookeeper.client import migration_znodes

    hosts, chroot = split_connect(zookeeper_connect)
    raw = migration_znodes(hosts, chroot, auth, timeout_s)
    if not controllers and settings is not None:  # the quorum a broker of roll 1 (or a KRaft broker) runs with
        controllers = _controllers_of_brokers(settings, sorted(set(raw["ids"]) | set(known_brokers)), timeout_s)  # type: ignore[arg-type]
    answer = next((a for a in (describe_quorum_at_controller(c, min(timeout_s, 5.0), controller_settings) for c in controllers) if a), None)
    if answer is None and settings is not None:
        answer = describe_quorum(settings, timeout_s=min(timeout_s, 10.0))
    quorum = parse_quorum(answer) if answer is not None else None
    flags = _migration_flags(controllers, quorum.voters if quorum is not None else (), timeout_s, controller_settings)
    cluster = parse_json_znode(raw["/cluster/id"])  # type: ignore[arg-type]
    return Observation(
        cluster_id=(cluster or {}).get("id"),
        zk_broker_ids=tuple(raw["ids"]),  # type: ignore[arg-type]
        assigned_broker_ids=assigned_broker_ids(raw["topics"]),  # type: ignore[arg-type]
        controller=parse_json_znode(raw["/controller"]),  # type: ignore[arg-type]
        controller_epoch=parse_int_znode(raw["/controller_epoch"]),  # type: ignore[arg-type]
        migration=parse_json_znode(raw["/migration"]),  # type: ignore[arg-type]
        quorum=quorum,
        known_broker_ids=tuple(known_brokers),
        controller_migration=flags,
    )


def _controllers_of_brokers(settings: ClientSettings, broker_ids: list[int], timeout_s: float) -> tuple[str, ...]:
    """The controllers' ``host:port`` in the ``controller.quorum.voters`` the brokers run with (none before roll 1)."""
    from migrate.adapters.kafka.quorum import configured_voters

    voters = configured_voters(settings, broker_ids, min(timeout_s, 10.0))
    return tuple(v.split("@", 1)[1].strip() for v in (voters or "").split(",") if "@" in v)


def _migration_flags(controllers: tuple[str, ...], voters: tuple[int, ...], timeout_s: float,
                     controller_settings: ClientSettings | None = None) -> dict[int, bool]:
    """Controller id -> whether it runs with ``zookeeper.metadata.migration.enable`` (each address asked about each
    voter id: a controller describes its own config only)."""
    from migrate.adapters.kafka.quorum import controller_configs

    from migrate.core.kraft.config import MIGRATION_FLAG

    flags: dict[int, bool] = {}
    for address in controllers:
        for node in (v for v in voters if v not in flags):
            got = controller_configs(address, node, (MIGRATION_FLAG,), min(timeout_s, 5.0), controller_settings)
            if got is not None and got.get(MIGRATION_FLAG) is not None:
                flags[node] = str(got[MIGRATION_FLAG]).strip().lower() == "true"
                break
    return flags


def read_inputs(zookeeper_connect: str, auth: list | None, controllers: tuple[Controller, ...],
                settings: ClientSettings | None = None, broker_files: Mapping[int, Mapping[str, str]] | None = None,
                timeout_s: float = 15.0, **options) -> KraftInputs:
    """What the configs are rendered from: the cluster id read from ZooKeeper's ``/cluster/id``; each broker's
    settings from ``broker_files`` (its server.properties, every value) or else as the brokers report them
    (DescribeConfigs: sensitive values hidden); ``options``: the other fields of :class:`KraftInputs`."""
    from migrate.adapters.kafka.quorum import broker_file_configs
    from migrate.adapters.zookeeper.client import migration_znodes

    hosts, chroot = split_connect(zookeeper_connect)
    raw = migration_znodes(hosts, chroot, auth, timeout_s)
    cluster_id = (parse_json_znode(raw["/cluster/id"]) or {}).get("id")  # type: ignore[arg-type]
    if not cluster_id:
        raise BadInput(f"no cluster id in {chroot}/cluster/id on {hosts}: check the chroot of --zookeeper "
                       "(the brokers' zookeeper.connect, chroot included)")
    brokers: dict[int, Mapping[str, str]] = dict(broker_files or {})
    missing = [b for b in raw["ids"] if b not in brokers]  # type: ignore[union-attr]
    if missing and settings is not None:
        brokers.update(broker_file_configs(settings, missing, timeout_s))
    if not brokers:
        raise BadInput("no broker config could be read: give --bootstrap-server (brokers in ZooKeeper mode) or "
                       "--broker-properties FILE (a broker's server.properties)")
    return KraftInputs(cluster_id, brokers, controllers, **options)
