"""Kafka reads for kmigrate's own offset translation and MirrorMaker 1's status (confluent-kafka):
partitions' records from an offset (a bounded window, with their content digests), the target's
offsets for timestamps, newest timestamps, setting a group's offsets (a group's members:
:meth:`migrate.adapters.kafka.mirror.MirrorCluster.group_members`), and records hashed as verify hashes them
(``migrate.core.verify.records``: the mirror's proofs and the cut-over's tail verify, without Spark).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.core.mirror.translation import Record, record_digest
from migrate.core.verify.records import Hashed, record_hashes
from migrate.errors import StepFailed


def _consumer(side: MirrorCluster, group: str = "kmigrate-translation-reader") -> Consumer:
    return Consumer(side.settings.confluent(**{
        "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed",
        "enable.partition.eof": True, "auto.offset.reset": "earliest", "logger": LIBRDKAFKA_LOG}))


def _read(side: MirrorCluster, consumer: Consumer, ranges: dict[tuple[str, int], tuple[int, int]],
          todo: set[tuple[str, int]], take, batch: int = 1000) -> None:
    """Read each partition of ``todo`` from its ``ranges`` start with one consumer (closed at the end), handing each
    committed record before the range's end to ``take(tp, message)``, which returns True when that partition is done;
    a partition also ends at its end offset or the log's end. StepFailed when nothing comes for 4 timeouts."""
    deadline = time.monotonic() + 4 * side.timeout_s
    try:
        consumer.assign([TopicPartition(t, p, ranges[(t, p)][0]) for t, p in sorted(todo)])
        while todo:
            if time.monotonic() > deadline:
                raise StepFailed(f"reading {', '.join(f'{t}[{p}]' for t, p in sorted(todo))} of the {side.role} "
                                 "cluster stalled")
            done: list[tuple[str, int]] = []
            for m in consumer.consume(batch, timeout=0.1):  # returns at the batch or the timeout: short, not to wait
                tp = (m.topic(), m.partition())
                if tp not in todo:
                    continue
                err = m.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise StepFailed(f"cannot read {tp[0]}[{tp[1]}] of the {side.role} cluster: {err}")
                if err is None:
                    deadline = time.monotonic() + 4 * side.timeout_s  # records come: not stalled
                if err is not None or m.offset() >= ranges[tp][1] or take(tp, m):
                    todo.discard(tp)
                    done.append(tp)
            if done and todo:
                consumer.pause([TopicPartition(t, p) for t, p in done])
    finally:
        consumer.close()


def read_records(side: MirrorCluster, ranges: dict[tuple[str, int], tuple[int, int]], limit: int,
                 until: dict[tuple[str, int], str] | None = None) -> dict[tuple[str, int], list[Record]]:
    """(topic, partition) -> at most ``limit`` committed records from ``start`` (before ``end``) with their
    digests, in order; a partition stops after the first record whose digest is ``until[(topic, partition)]``.
    One consumer for every partition."""
    until = until or {}
    out: dict[tuple[str, int], list[Record]] = {tp: [] for tp in ranges}
    todo = {tp for tp, (start, end) in ranges.items() if start < end} if limit > 0 else set()
    if not todo:
        return out

    def take(tp: tuple[str, int], m) -> bool:
        rec = Record(m.offset(), m.timestamp()[1], record_digest(m.key(), m.value(), m.headers(), m.timestamp()[1]))
        out[tp].append(rec)
        return m.offset() + 1 >= ranges[tp][1] or len(out[tp]) >= limit or until.get(tp) == rec.digest

    _read(side, _consumer(side), ranges, todo, take)
    return out


def offsets_for_times(side: MirrorCluster, stamps: dict[tuple[str, int], int]) -> dict[tuple[str, int], int | None]:
    """(topic, partition) -> the earliest offset whose timestamp is at or after the one given (None: no such
    record), in one request."""
    if not stamps:
        return {}
    consumer = _consumer(side)
    try:
        got = consumer.offsets_for_times([TopicPartition(t, p, ts) for (t, p), ts in sorted(stamps.items())],
                                         timeout=side.timeout_s)
    except Exception as exc:
        raise StepFailed(f"cannot look up timestamps in {', '.join(sorted({t for t, _ in stamps}))} of the "
                         f"{side.role} cluster: {exc}") from None
    finally:
        consumer.close()
    bad = [tp for tp in got if tp.error is not None]
    if bad:
        raise StepFailed(f"cannot look up timestamps in the {side.role} cluster: "
                         + ", ".join(f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in bad))
    return {(tp.topic, tp.partition): None if tp.offset < 0 else tp.offset for tp in got}


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


_NO_LIMIT = 1 << 62


def hashed_records(side: MirrorCluster, ranges: dict[tuple[str, int], tuple[int, int]],
                   limits: dict[tuple[str, int], int] | None = None,
                   keys: bool = False) -> dict[tuple[str, int], list[Hashed]]:
    """(topic, partition) -> its committed records from ``start`` to before ``end``, at most ``limits[tp]`` of
    them, in order, hashed (``keys``: with their keys and tombstone flags, for compacted tables). One consumer."""
    limits = limits or {}
    out: dict[tuple[str, int], list[Hashed]] = {tp: [] for tp in ranges}
    todo = {tp for tp, (lo, hi) in ranges.items() if hi > lo and limits.get(tp, 1) > 0}
    if not todo:
        return out

    def take(tp: tuple[str, int], m) -> bool:
        key, value = m.key(), m.value()
        h1, h2 = record_hashes(key, value, m.headers(), m.timestamp()[1])
        recs = out[tp]
        recs.append(Hashed(m.offset(), h1, h2, key if keys else None, keys and value is None))
        return m.offset() + 1 >= ranges[tp][1] or len(recs) >= limits.get(tp, _NO_LIMIT)

    _read(side, _consumer(side, "kmigrate-verify-reader"), ranges, todo, take, batch=5000)
    return out
