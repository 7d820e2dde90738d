"""Kafka adapter: admin calls through confluent-kafka, and kafka-python for the KIP-455 calls and log dirs.

Every call has a timeout; an unreachable cluster is a ``BadInput`` with the address, not a hang.
"""

from __future__ import annotations

import logging

from confluent_kafka.admin import AdminClient, ConfigResource

from migrate.clientconfig import ClientSettings
from migrate.errors import BadInput

log = logging.getLogger("kmigrate.kafka")
_LIBRDKAFKA_LOG = logging.getLogger("kmigrate.librdkafka")


def admin_client(settings: ClientSettings, timeout_s: float = 10.0) -> AdminClient:
    """A confluent-kafka AdminClient that has answered a metadata request (BadInput when unreachable)."""
    admin = AdminClient(settings.confluent(logger=_LIBRDKAFKA_LOG))
    try:
        admin.list_topics(timeout=timeout_s)
    except Exception as exc:  # KafkaException on timeout or auth failure
        raise BadInput(
            f"cannot reach Kafka at {settings.bootstrap_servers} within {timeout_s:.0f} s ({exc}): "
            "check --bootstrap-server and --command-config"
        ) from None
    return admin


def broker_static_configs(admin: AdminClient, broker_ids: list[int], names: tuple[str, ...],
                          timeout_s: float = 15.0) -> dict[int, dict[str, str | None]]:
    """The named configs of each broker as the broker reports them (``zookeeper.connect`` is static).

    >>> broker_static_configs(admin, [1, 2], ("zookeeper.connect", "broker.rack"))  # doctest: +SKIP
    {1: {"zookeeper.connect": "zk1:2181/kafka", "broker.rack": "AD-1/FD-1"}, ...}
    """
    resources = [ConfigResource(ConfigResource.Type.BROKER, str(b)) for b in broker_ids]
    futures = admin.describe_configs(resources, request_timeout=timeout_s)
    out: dict[int, dict[str, str | None]] = {}
    for resource, future in futures.items():
        entries = future.result(timeout=timeout_s)
        out[int(resource.name)] = {n: (entries[n].value if n in entries else None) for n in names}
    return out


def live_broker_ids(admin: AdminClient, timeout_s: float = 10.0) -> list[int]:
    """Ids of the brokers in the cluster's metadata (the brokers that are up)."""
    return sorted(admin.list_topics(timeout=timeout_s).brokers)
