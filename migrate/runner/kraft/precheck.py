"""``kmigrate kraft precheck``: phase 0 of ZooKeeper to KRaft, read from the live cluster. Changes nothing.

1. The cluster as ``kmigrate inspect`` reads it (:func:`migrate.runner.inspect.inspect_cluster`, no sizes): brokers
   with release, ``inter.broker.protocol.version`` and liveness, every assignment, reassignments in flight.
2. Each live broker's static settings (DescribeConfigs, the same read ``kraft controller-config`` renders from).
3. The planned controllers' configs, rendered by ``migrate.core.kraft.config`` from the playbook's ``kraft:``.
4. The SASL owners of the brokers' registration znodes (their ACLs), against kmigrate's own ZooKeeper login.
5. :func:`migrate.core.kraft.prechecks.run_prechecks` judges; the command prints each check.
"""

from __future__ import annotations

from typing import Callable

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.config import Controller, KraftInputs, controller_config
from migrate.core.kraft.prechecks import Check, PrecheckInputs, ZooKeeperLogin, run_prechecks
from migrate.core.playbook import Playbook
from migrate.core.zookeeper.auth import ZkSasl
from migrate.core.zookeeper.config import split_connect
from migrate.errors import BadInput


def kraft_precheck(playbook: Playbook, settings: ClientSettings, zookeeper_connect: str, auth: list | None,
                   timeout_s: float = 15.0, progress: Callable[[str], None] = lambda msg: None) -> tuple[Check, ...]:
    """Every pre-check of the migration ``playbook.kraft`` plans, on the cluster at ``settings`` and
    ``zookeeper_connect`` (the brokers' chroot included). BadInput when the playbook has no ``kraft:`` section
    or the cluster cannot be read; the refusals themselves are failed :class:`Check` values."""
    from migrate.adapters.kafka.quorum import broker_file_configs
    from migrate.adapters.zookeeper.client import sasl_owners
    from migrate.runner.inspect import inspect_cluster

    kraft = playbook.kraft
    if kraft is None:
        raise BadInput(f"playbook {playbook.source} has no kraft: section: add one naming the controllers "
                       "(id, host; see playbooks/kraft.yaml)")
    snapshot = inspect_cluster(settings, zookeeper_connect, auth, timeout_s, sizes=False, progress=progress)
    live = sorted(b.id for b in snapshot.brokers if b.alive)
    progress("reading the brokers' static configs")
    configs = broker_file_configs(settings, live, timeout_s) if live else {}
    controllers = tuple(Controller(c.id, c.host, c.port, kraft.metadata_log_dir) for c in kraft.controllers)
    rendered: dict[int, dict[str, str]] | None = None
    why = ""
    try:
        inputs = KraftInputs(snapshot.cluster_id or "", configs, controllers, listener_name=kraft.listener_name,
                             controller_protocol=kraft.security_protocol)
        rendered = {c.id: controller_config(inputs, c.id) for c in controllers}
    except BadInput as exc:
        why = exc.message
    progress("reading the owners of the brokers' znodes")
    hosts, chroot = split_connect(zookeeper_connect)
    owners = sasl_owners(hosts, chroot, auth, live, timeout_s)
    login = next((a.username for a in auth or [] if isinstance(a, ZkSasl)), None)
    future = tuple(sorted(set(playbook.brokers.mapping.values()) | set(playbook.brokers.new)))
    return run_prechecks(PrecheckInputs(
        snapshot=snapshot, broker_configs=configs, controller_ids=kraft.controller_ids, controller_configs=rendered,
        future_broker_ids=future, zookeeper_login=ZooKeeperLogin(owners, login),
        controller_addresses={c.id: (c.host, c.port) for c in kraft.controllers}, not_rendered=why))
