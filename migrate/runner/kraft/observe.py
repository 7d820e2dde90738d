"""Read where a ZooKeeper-to-KRaft migration stands (``core/kraft/phases``) and what its configs are made of
(``core/kraft/config``), from the cluster itself: every call re-reads the truth, nothing is remembered.

Sources (``kraft status`` reads without ZooKeeper once it is retired: ``observe(zookeeper_optional=True)``):
ZooKeeper (kazoo: ``/cluster/id``, ``/controller``, ``/controller_epoch``, ``/migration``,
``/brokers/ids``, ``/brokers/topics/*``) and Kafka (kafka-python DescribeQuorum through the brokers;
confluent-kafka DescribeConfigs for the brokers' static settings).
"""

from __future__ import annotations

from typing import Mapping

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.config import Controller, KraftInputs
from migrate.core.kraft.phases import (
    ZOOKEEPER_NOT_GIVEN, ZOOKEEPER_UNREACHABLE, Observation, assigned_broker_ids, broker_mode, parse_int_znode,
    parse_json_znode, parse_quorum,
)
from migrate.core.zookeeper.config import split_connect
from migrate.errors import BadInput


def observe(zookeeper_connect: str | None, auth: list | None, settings: ClientSettings | None,
            known_brokers: tuple[int, ...] = (), timeout_s: float = 15.0,
            controllers: tuple[str, ...] = (), controller_settings: ClientSettings | None = None,
            zookeeper_optional: bool = False) -> Observation:
    """One reading: ZooKeeper under the chroot of ``zookeeper_connect``, and DescribeQuorum asked of the
    ``controllers`` (``host:port`` of their controller listener, connected with the security settings of
    ``controller_settings``; None: PLAINTEXT) first, else through the brokers of ``settings`` (which forward it
    once they run with the migration settings; None: not asked).

    ``zookeeper_optional`` (``kraft status`` once ZooKeeper is retired): a ZooKeeper that does not answer, or none
    given (``zookeeper_connect`` None), is no error; the reading says why it was not read, and each broker's mode is
    read from the broker instead (DescribeConfigs: ``process.roles`` and the migration flag). Else an unreachable
    ZooKeeper is BadInput, as before."""
    from migrate.adapters.kafka.quorum import describe_quorum, describe_quorum_at_controller
    from migrate.adapters.zookeeper.client import Unreachable, migration_znodes

    raw: dict = {"ids": [], "topics": {}, "/cluster/id": None, "/controller": None, "/controller_epoch": None,
                 "/migration": None}
    unread = None if zookeeper_connect else ZOOKEEPER_NOT_GIVEN
    if zookeeper_connect is None and not zookeeper_optional:
        raise BadInput("no ZooKeeper given: use --zookeeper host:port/chroot (the brokers' zookeeper.connect)")
    if zookeeper_connect:
        hosts, chroot = split_connect(zookeeper_connect)
        try:
            raw = migration_znodes(hosts, chroot, auth, timeout_s, probe_s=3.0 if zookeeper_optional else None)
        except Unreachable:
            if not zookeeper_optional:
                raise
            unread = ZOOKEEPER_UNREACHABLE
    answer, brokers_asked = None, False
    if not controllers and settings is not None:  # the quorum a broker of roll 1 (or a KRaft broker) runs with
        ids = set(raw["ids"]) | set(known_brokers)
        if not ids:  # KRaft brokers left /brokers/ids (or ZooKeeper is not read): those the quorum sees (a KRaft
            answer = describe_quorum(settings, timeout_s=min(timeout_s, 10.0))  # broker forwards DescribeQuorum)
            brokers_asked = True
            ids = set(parse_quorum(answer).observers) if answer is not None else set()
        if not ids:  # brokers of roll 1 do not forward it: the brokers the bootstrap servers list
            ids = set(_listed_brokers(settings, min(timeout_s, 5.0))[1])
        controllers = _controllers_of_brokers(settings, sorted(ids), timeout_s)
    if answer is None:
        answer = next((a for a in (describe_quorum_at_controller(c, min(timeout_s, 5.0), controller_settings)
                                   for c in controllers) if a), None)
    if answer is None and settings is not None and not brokers_asked:
        answer = describe_quorum(settings, timeout_s=min(timeout_s, 10.0))
    quorum = parse_quorum(answer) if answer is not None else None
    flags = _migration_flags(controllers, quorum.voters if quorum is not None else (), timeout_s, controller_settings)
    modes: dict[int, str] = {}
    if unread is not None and settings is not None:
        seen = set(quorum.observers) - set(quorum.voters) if quorum is not None else set()
        cluster_id, listed = _listed_brokers(settings, min(timeout_s, 5.0))  # the cluster id: no /cluster/id to read
        modes = _broker_modes(settings, tuple(sorted(seen | (set() if seen else set(listed)) | set(known_brokers))),
                              timeout_s)
    else:
        cluster_id = (parse_json_znode(raw["/cluster/id"]) or {}).get("id")
    return Observation(
        cluster_id=cluster_id,
        zk_broker_ids=tuple(raw["ids"]),
        assigned_broker_ids=assigned_broker_ids(raw["topics"]),
        controller=parse_json_znode(raw["/controller"]),
        controller_epoch=parse_int_znode(raw["/controller_epoch"]),
        migration=parse_json_znode(raw["/migration"]),
        quorum=quorum,
        known_broker_ids=tuple(known_brokers),
        controller_migration=flags,
        zookeeper_unread=unread,
        zookeeper_connect=zookeeper_connect,
        broker_modes_read=modes,
    )


def _listed_brokers(settings: ClientSettings, timeout_s: float) -> tuple[str | None, tuple[int, ...]]:
    from migrate.adapters.kraft.brokers import listed_brokers

    return listed_brokers(settings, timeout_s)


def _broker_modes(settings: ClientSettings, broker_ids: tuple[int, ...], timeout_s: float) -> dict[int, str]:
    """Broker id -> ``kraft``, ``migration`` or ``zookeeper`` as the broker runs (DescribeConfigs through the
    brokers); one that does not answer is left out."""
    from migrate.adapters.kraft.brokers import broker_configs
    from migrate.core.kraft.config import MIGRATION_FLAG

    got = broker_configs(settings, broker_ids, ("process.roles", MIGRATION_FLAG), min(timeout_s, 5.0))
    return {b: broker_mode(c.get("process.roles"), c.get(MIGRATION_FLAG)) for b, c in got.items()}


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
