"""The Kafka calls of a local cluster's keeper (``migrate.sandbox``): readiness probes and the demo's records.

Each call here asks once; ``migrate.sandbox`` waits with ``migrate.waiting``. librdkafka's
connection noise while nodes start or stop goes to a logger of its own, kept off the terminal.
ZooKeeper reads go through ``migrate.adapters.zookeeper.client``.
"""

from __future__ import annotations

import logging
from typing import Iterable

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.client import kafka_python_config
from migrate.adapters.kafka.topics import every_partition_led
from migrate.core.clientconfig import ClientSettings

_QUIET = logging.getLogger("kmigrate.sandbox.librdkafka")  # librdkafka's connection noise while nodes start
_GROUP = "kmigrate-sandbox"


class KafkaProbe:
    """An admin client on a local cluster (or one of its brokers), asked one question at a time."""

    def __init__(self, bootstrap: str, socket_timeout_ms: int | None = None, settings: dict[str, str] | None = None):
        self._bootstrap, self._settings = bootstrap, dict(settings or {})
        conf: dict[str, object] = {**(settings or {}), "bootstrap.servers": bootstrap, "logger": _QUIET}
        if socket_timeout_ms is not None:
            conf["socket.timeout.ms"] = socket_timeout_ms
        self._admin = AdminClient(conf)

    def broker_ids(self, timeout_s: float) -> set[int]:
        """Ids of the brokers in the metadata (raises when the cluster does not answer)."""
        return set(self._admin.list_topics(timeout=timeout_s).brokers)

    def offsets_topic_led(self) -> bool:
        """Ask for a group's coordinator (which has the brokers create ``__consumer_offsets``); True once every
        partition of it has a leader.

        The question goes through kafka-python, one FindCoordinator answered at once (COORDINATOR_NOT_AVAILABLE
        while the topic is being created): librdkafka's ListConsumerGroupOffsets, asked before the coordinator
        exists, aborted the whole Python process now and then (``Fatal Python error: Aborted`` inside its wait; three
        pytest workers lost on a busy host), whether its request was left running or timed out by the client."""
        self._ask_for_a_coordinator()
        md = self._admin.list_topics(timeout=10)
        return every_partition_led(md.topics.get("__consumer_offsets"))

    def _ask_for_a_coordinator(self) -> None:
        from kafka.admin import KafkaAdminClient

        try:
            client = KafkaAdminClient(**kafka_python_config(ClientSettings(self._bootstrap, self._settings),
                                                            request_timeout_ms=5000, client_id="kmigrate-sandbox"))
        except Exception:  # not reachable yet: the next look asks again
            return
        try:
            client.list_group_offsets(_GROUP)
        except Exception:  # no coordinator yet: the request still made the brokers create the topic
            pass
        finally:
            client.close()


def broker_serves(address: str, broker_id: int, settings: dict[str, str] | None = None) -> bool:
    """True when the broker at ``address`` answers metadata within 3 s and lists itself (``broker_id``)."""
    try:
        return broker_id in KafkaProbe(address, socket_timeout_ms=3000, settings=settings).broker_ids(timeout_s=3)
    except Exception:
        return False


def grant(bootstrap: str, settings: dict[str, str], acls: Iterable[tuple[str, str, str, tuple[str, ...]]],
          timeout_s: float = 60) -> None:
    """Create ALLOW ACLs ``(user, resource type, literal resource name, operations)`` for ``User:<user>`` on any host."""
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    admin = AdminClient({**settings, "bootstrap.servers": bootstrap, "logger": _QUIET})
    types = {"cluster": ResourceType.BROKER, "topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
             "transactional_id": ResourceType.TRANSACTIONAL_ID}  # librdkafka calls the cluster resource BROKER
    bindings = [AclBinding(types[kind], name, ResourcePatternType.LITERAL, f"User:{user}", "*",
                           AclOperation[op], AclPermissionType.ALLOW)
                for user, kind, name, ops in acls for op in ops]
    for future in admin.create_acls(bindings, request_timeout=timeout_s).values():
        future.result(timeout=timeout_s)


def produce_records(bootstrap: str, records: Iterable[tuple[str, bytes, bytes]], timeout_s: float = 180,
                    settings: dict[str, str] | None = None) -> int:
    """Write ``(topic, key, value)`` records (idempotent, acks=all); return how many are still unacknowledged
    ``timeout_s`` after the last one was queued."""
    producer = Producer({**(settings or {}), "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "enable.idempotence": True,
                         "logger": LIBRDKAFKA_LOG})
    for i, (topic, key, value) in enumerate(records):
        producer.produce(topic, key=key, value=value)
        if i % 2000 == 0:
            producer.poll(0)
    return producer.flush(timeout_s)


def produce_transactions(bootstrap: str, topic: str, transactional_id: str,
                         batches: Iterable[tuple[list[tuple[bytes, bytes]], bool]], timeout_s: float = 60,
                         settings: dict[str, str] | None = None) -> tuple[int, int]:
    """Write each batch of ``(key, value)`` records to ``topic`` in a transaction of its own, committed when its
    flag is True, aborted otherwise; return (records committed, records aborted). Raises on a failed transaction."""
    producer = Producer({**(settings or {}), "bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "acks": "all", "enable.idempotence": True, "logger": LIBRDKAFKA_LOG})
    producer.init_transactions(timeout_s)
    committed = aborted = 0
    for records, commit in batches:
        producer.begin_transaction()
        for key, value in records:
            producer.produce(topic, key=key, value=value)
        producer.flush(timeout_s)  # every record of an aborted batch is written before its abort marker
        if commit:
            producer.commit_transaction(timeout_s)
            committed += len(records)
        else:
            producer.abort_transaction(timeout_s)
            aborted += len(records)
    return committed, aborted


def commit_group_offsets(bootstrap: str, group: str, offsets: dict[tuple[str, int], int], timeout_s: float = 60,
                         settings: dict[str, str] | None = None) -> None:
    """Commit ``offsets`` ((topic, partition) -> offset) for consumer group ``group`` (no member joins it)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**(settings or {}), "bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "logger": LIBRDKAFKA_LOG, "socket.timeout.ms": int(timeout_s * 1000)})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())], asynchronous=False)
    finally:
        consumer.close()
