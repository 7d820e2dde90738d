"""One look at the cluster for ``kmigrate health`` (issue 16)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from migrate.core.model import Partition, Topic


def read_cluster_health(admin: AdminClient, timeout_s: float = 10.0):
    """One look at the cluster for ``kmigrate health``: the controller and registered brokers from
    describe_cluster, every topic's replicas, ISR and leader from the metadata
    (a :class:`migrate.core.health.ClusterReading`). A cluster that does not answer (a broker
    restarting under the request) is a reading with ``error`` set, never an exception."""
    from migrate.core.health import ClusterReading

    try:
        desc = admin.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s)
        md = admin.list_topics(timeout=timeout_s)
    except Exception as exc:  # KafkaException: timeout, transport, all brokers down
        return ClusterReading.unreachable(str(exc) or type(exc).__name__)
    controller = desc.controller.id if desc.controller is not None and desc.controller.id >= 0 else None
    topics = tuple(
        Topic(name=name, internal=name.startswith("__"), partitions=tuple(
            Partition(p.id, tuple(p.replicas), tuple(p.isrs), p.leader if p.leader >= 0 else None)
            for p in sorted(t.partitions.values(), key=lambda x: x.id)))
        for name, t in sorted(md.topics.items()) if t.partitions
    )
    return ClusterReading(controller_id=controller, brokers=frozenset(n.id for n in desc.nodes), topics=topics)
