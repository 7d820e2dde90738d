"""Kafka reads for kmigrate's own offset translation and MirrorMaker 1's status (confluent-kafka):
a partition's record at an offset, the target's offset for a timestamp, a bounded window of records
with their content digests, newest timestamps, and setting a group's offsets (a group's members:
:meth:`migrate.adapters.kafka.mirror.MirrorCluster.group_members`).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.core.mirror.translation import Record, record_digest
from migrate.errors import StepFailed


def _consumer(side: MirrorCluster) -> Consumer:
    return Consumer(side.settings.confluent(**{
        "group.id": "kmigrate-translation-reader", "enable.auto.commit": False, "isolation.level": "read_committed",
        "enable.partition.eof": True, "auto.offset.reset": "earliest", "logger": LIBRDKAFKA_LOG}))


def read_records(side: MirrorCluster, topic: str, partition: int, start: int, end: int, limit: int) -> list[Record]:
    """At most ``limit`` committed records of one partition from ``start`` (up to ``end``), with digests."""
    if start >= end or limit <= 0:
        return []
    consumer = _consumer(side)
    out: list[Record] = []
    deadline = time.monotonic() + 4 * side.timeout_s
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        while len(out) < limit:
            if time.monotonic() > deadline:
                raise StepFailed(f"reading {topic}[{partition}] of the {side.role} cluster from offset {start} stalled")
            msgs = consumer.consume(min(1000, limit - len(out)), timeout=1.0)
            done = False
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done = True
                        break
                    raise StepFailed(f"cannot read {topic}[{partition}] of the {side.role} cluster: {err}")
                out.append(Record(m.offset(), m.timestamp()[1],
                                  record_digest(m.key(), m.value(), m.headers(), m.timestamp()[1])))
                if m.offset() + 1 >= end or len(out) >= limit:
                    done = True
                    break
            if done:
                break
    finally:
        consumer.close()
    return out


def offset_for_time(side: MirrorCluster, topic: str, partition: int, timestamp_ms: int) -> int | None:
    """The earliest offset whose timestamp is at or after ``timestamp_ms`` (None: no such record)."""
    consumer = _consumer(side)
    try:
        got = consumer.offsets_for_times([TopicPartition(topic, partition, timestamp_ms)], timeout=side.timeout_s)
    except Exception as exc:
        raise StepFailed(f"cannot look up a timestamp in {topic}[{partition}] of the {side.role} cluster: {exc}") from None
    finally:
        consumer.close()
    offset = got[0].offset
    return None if offset < 0 else offset


def newest_timestamps(side: MirrorCluster, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the newest record timestamp (KIP-734, brokers 3.0+); absent when empty or unknown."""
    from confluent_kafka.admin import OffsetSpec

    if not tps:
        return {}
    out: dict[tuple[str, int], int] = {}
    try:
        futures = side.admin.list_offsets({TopicPartition(t, p): OffsetSpec.max_timestamp() for t, p in tps},
                                          request_timeout=side.timeout_s)
        for tp, fut in futures.items():
            info = fut.result(timeout=side.timeout_s)
            if info.offset >= 0 and info.timestamp >= 0:
                out[(tp.topic, tp.partition)] = info.timestamp
    except Exception:
        return {}  # a broker before 3.0: no time lag shown
    return out


def timestamp_types(side: MirrorCluster, topics: list[str]) -> dict[str, str]:
    """topic -> its message.timestamp.type (CreateTime or LogAppendTime)."""
    return {t: values.get("message.timestamp.type", "CreateTime") for t, (values, _) in side.topic_configs(topics).items()}


def set_group_offsets(side: MirrorCluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` (refused by the broker while the group has members)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])
    try:
        result = side.admin.alter_consumer_group_offsets([request], request_timeout=side.timeout_s)[group].result(
            timeout=side.timeout_s)
    except Exception as exc:
        raise StepFailed(f"the {side.role} cluster refused the offsets of group {group}: {exc} (is the group active "
                         "there? stop its consumers first)") from None
    bad = [tp for tp in result.topic_partitions if tp.error is not None]
    if bad:
        raise StepFailed(f"the {side.role} cluster refused the offsets of group {group} for "
                         + ", ".join(f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in bad))
