"""``kmigrate topics create``: place a new topic's replicas across the live brokers' domains, create
it and wait until every partition has a leader (the adapter's create-then-wait)."""

from __future__ import annotations

from typing import Mapping, Sequence

from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.core.clientconfig import ClientSettings
from migrate.core.model import ClusterSnapshot, ZkEnsemble
from migrate.core.plan.placement import Placement, assign_new_topic
from migrate.core.permissions import create_topic_needs
from migrate.errors import BadInput
from migrate.runner.permissions import require


def create_topic(settings: ClientSettings, name: str, partitions: int, replication_factor: int, *,
                 exclude_brokers: Sequence[int] = (), start_broker: int | None = None, separator: str = "/",
                 configs: Mapping[str, str] | None = None, dry_run: bool = False) -> Placement:
    """The placement of topic ``name``; created (and led) unless ``dry_run``. BadInput when the topic
    exists or an excluded broker is not alive."""
    admin = ReassignmentAdmin(settings)
    try:
        if name in admin.describe([name]):
            raise BadInput(f"topic {name} already exists: choose another name, or move it with kmigrate partitions")
        snapshot = ClusterSnapshot(zookeeper=ZkEnsemble(connect=""), brokers=tuple(admin.brokers()))
        unknown = sorted(set(exclude_brokers) - {b.id for b in snapshot.brokers})
        if unknown:
            raise BadInput(f"--exclude-brokers names broker(s) {unknown} that are not alive in the cluster")
        placement = assign_new_topic(snapshot, partitions, replication_factor, topic=name,
                                     exclude_brokers=list(exclude_brokers), start_broker=start_broker,
                                     separator=separator)
        require(admin.admin, settings, create_topic_needs(name))
        if not dry_run:
            admin.create_topic(name, placement.as_lists(), dict(configs or {}))
    finally:
        admin.close()
    return placement
