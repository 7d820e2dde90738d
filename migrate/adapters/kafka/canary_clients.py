"""The canary's Kafka clients (confluent-kafka): its topic, an idempotent acks=all producer and a consumer.

Each call here is one client call (no threads, no clock): ``migrate.runner.canary`` paces the
producer, runs both on threads, retries and feeds the ledger. A client failure the runner may ask
again about is a :class:`ClientError` carrying the client's message.
"""

from __future__ import annotations

from typing import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait, wait_for_leaders
from migrate.core.canary import leader_spread_assignment
from migrate.core.clientconfig import ClientSettings
from migrate.errors import BadInput, StepFailed

_PARTITION_EOF = -191


class ClientError(Exception):
    """A client call failed (the text is the client's); asking again may work."""


def ensure_topic(settings: ClientSettings, topic: str, replication_factor: int, min_insync_replicas: int,
                 timeout_s: float = 60) -> int:
    """Create the canary topic (one partition led by each live broker) unless it exists; wait until every
    partition has a leader and return the partition count."""
    admin = AdminClient(settings.confluent(logger=LIBRDKAFKA_LOG))
    try:
        md = admin.list_topics(timeout=15)
    except KafkaException as exc:
        raise BadInput(f"cannot reach Kafka at {settings.bootstrap_servers}: {exc}") from None

    def late(name: str) -> StepFailed:
        return StepFailed(f"the canary topic {name} has no leader for every partition after {timeout_s:.0f} s")

    if topic in md.topics and md.topics[topic].error is None:
        return wait_for_leaders(admin, {topic: None}, timeout_s=timeout_s, on_timeout=late)[topic]
    assignment = leader_spread_assignment(sorted(md.brokers), replication_factor)
    configs = {"min.insync.replicas": str(min(min_insync_replicas, len(assignment[0])))}
    return create_topics_and_wait(
        admin, [NewTopicSpec(topic, assignment, configs)], timeout_s=timeout_s, exist_ok=True,
        on_create_error=lambda name, exc: StepFailed(f"cannot create the canary topic {name}: {exc}"),
        on_timeout=late)[topic]


def delete_topic(settings: ClientSettings, topic: str, timeout_s: float = 30) -> None:
    """Delete a canary topic (absent already: nothing to do)."""
    admin = AdminClient(settings.confluent(logger=LIBRDKAFKA_LOG))
    try:
        admin.delete_topics([topic], operation_timeout=timeout_s)[topic].result(timeout_s)
    except KafkaException as exc:
        if exc.args and getattr(exc.args[0], "code", lambda: None)() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return
        raise ClientError(str(exc)) from None


class CanaryConsumer:
    """A consumer of the canary topic with explicit positions; its group's offsets are committed only by
    :meth:`commit` (a canary that moves to another cluster, whose group offsets are translated there)."""

    def __init__(self, settings: ClientSettings, group_id: str):
        self._consumer = Consumer(settings.confluent(**{
            "group.id": group_id, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "logger": LIBRDKAFKA_LOG,
        }))
        self._positions: dict[tuple[str, int], int] = {}

    def end_offset(self, topic: str, partition: int) -> int:
        """The partition's high watermark; ClientError when the client cannot tell yet (a just-created topic)."""
        try:
            return self._consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
        except KafkaException as exc:
            raise ClientError(str(exc)) from None

    def assign(self, topic: str, positions: dict[int, int]) -> None:
        """Read each partition from the given offset."""
        self._consumer.assign([TopicPartition(topic, p, offset) for p, offset in sorted(positions.items())])
        self._positions = {(topic, p): offset for p, offset in positions.items()}

    def committed(self, topic: str, partitions: range) -> dict[int, int | None]:
        """The group's committed offset of each partition (None: none committed); ClientError when not answered."""
        try:
            got = self._consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=15)
        except KafkaException as exc:
            raise ClientError(str(exc)) from None
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in got}

    def commit(self) -> None:
        """Commit the positions of the assigned partitions (the next record each would read), synchronously."""
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self._positions.items())]
        if not offsets:
            return
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            raise ClientError(str(exc)) from None

    def consume(self, max_records: int = 500, timeout_s: float = 0.2) -> tuple[list[tuple[bytes | None, int]], list[str]]:
        """``([(value, partition), ...], [error, ...])``: the records read, and the errors that are not
        retriable (a partition's end is no error)."""
        records: list[tuple[bytes | None, int]] = []
        errors: list[str] = []
        for msg in self._consumer.consume(max_records, timeout=timeout_s):
            err = msg.error()
            if err is not None:
                # no offsets are committed: the group's coordinator, which the client looks for, is not needed
                if not err.retriable() and err.code() not in (_PARTITION_EOF, KafkaError.GROUP_AUTHORIZATION_FAILED):
                    errors.append(err.str())
                continue
            records.append((msg.value(), msg.partition()))
            self._positions[(msg.topic(), msg.partition())] = msg.offset() + 1
        return records, errors

    def close(self) -> None:
        self._consumer.close()


# on_delivery(error text or None, the record's value)
Delivered = Callable[[str | None, bytes | None], None]


class CanaryProducer:
    """An idempotent acks=all producer whose acknowledgements are trusted (``TRUSTED_PRODUCER``)."""

    def __init__(self, settings: ClientSettings, on_fatal: Callable[[str], None]):
        self._producer = Producer(settings.confluent(**{
            **TRUSTED_PRODUCER, "linger.ms": 5, "message.timeout.ms": 300000,
            "logger": LIBRDKAFKA_LOG,
            "error_cb": lambda err: on_fatal(f"client: {err.str()}") if err.fatal() else None,
        }))

    def send(self, topic: str, key: bytes, value: bytes, partition: int | None, on_delivery: Delivered) -> bool:
        """Queue one record; False when the client's queue is full (poll, then send again)."""
        def delivered(err, msg) -> None:
            on_delivery(None if err is None else err.str(), msg.value())

        extra = {} if partition is None else {"partition": partition}
        try:
            self._producer.produce(topic, key=key, value=value, on_delivery=delivered, **extra)
        except BufferError:
            return False
        return True

    def poll(self, timeout_s: float) -> None:
        """Serve delivery reports for up to ``timeout_s``."""
        self._producer.poll(timeout_s)

    def flush(self, timeout_s: float) -> int:
        """Wait for every queued record's report; return how many are still unacknowledged."""
        return self._producer.flush(timeout_s)
