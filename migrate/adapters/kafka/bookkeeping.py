"""The bookkeeping topic's I/O: create it, read every record, append records (``acks=all``).

The records, their keys and their folding are pure and live in :mod:`migrate.core.ledger`
(the record kinds are listed there); this module only talks to Kafka.
"""

from __future__ import annotations

import logging
import time
from typing import Iterable

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait, every_partition_led
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import Ledger, Record, decode, encode, newer_kind
from migrate.errors import BadInput, StepFailed

log = logging.getLogger("kmigrate.bookkeeping")


class BookkeepingTopic:
    """Read and append the bookkeeping records of one cluster."""

    def __init__(self, settings: ClientSettings, topic: str, timeout_s: float = 30.0):
        self.settings = settings
        self.topic = topic
        self.timeout_s = timeout_s
        self._producer = None
        self._unacked = 0  # records sent and not yet checked by a flush
        self._errors: list[str] = []
        self._tail = None  # the consumer of :meth:`tail`
        self._first_ends: dict[int, int] | None = None  # each partition's end at the first read

    # ------------------------------------------------------------------ create
    def exists(self, admin) -> bool:
        # all topics, never one by name: a metadata request naming a topic can auto-create it
        from confluent_kafka import KafkaError

        md = admin.list_topics(timeout=self.timeout_s)
        t = md.topics.get(self.topic)
        # a topic listed with an error (its leader moving) exists: :meth:`read` waits for it
        return t is not None and (t.error is None or t.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART)

    def ensure(self, admin, new_brokers: Iterable[int]) -> bool:
        """Create the topic if missing, replicas assigned by hand on new brokers only (up to 3).

        Returns True when it was created. Waits until its partition has a leader."""
        if self.exists(admin):
            return False
        brokers = sorted(set(new_brokers))[:3]
        if not brokers:
            raise BadInput("no new broker to hold the bookkeeping topic: give the mapping's new brokers")
        configs = {
            "cleanup.policy": "delete",
            "retention.ms": "-1",
            "retention.bytes": "-1",
            "min.insync.replicas": str(min(2, len(brokers))),
            "unclean.leader.election.enable": "false",
        }
        create_topics_and_wait(
            admin, [NewTopicSpec(self.topic, [brokers], configs)], timeout_s=self.timeout_s, exist_ok=True,
            on_create_error=lambda name, exc: StepFailed(
                f"cannot create the bookkeeping topic {name} on brokers {brokers}: {exc}"),
            on_timeout=lambda name: StepFailed(
                f"the bookkeeping topic {name} was created but has no leader after {self.timeout_s:.0f} s"))
        return True

    # -------------------------------------------------------------------- read
    def read(self) -> Ledger:
        """Every record from the beginning to the current end. A record kmigrate did not write
        is a :class:`BadInput` naming where it is (nothing is changed)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

        consumer = Consumer(self.settings.confluent(**{
            "group.id": "kmigrate-bookkeeping-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            "logger": LIBRDKAFKA_LOG,
        }))
        try:
            bounds = self._bounds(consumer)
            if bounds is None:
                return Ledger([])
            if self._first_ends is None:
                self._first_ends = {p: hi for p, (_lo, hi) in bounds.items()}
            ends = {p: hi for p, (lo, hi) in bounds.items() if hi > lo}
            starts = {p: lo for p, (lo, hi) in bounds.items() if hi > lo}
            if not ends:
                return Ledger([])
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends])
            by_partition: dict[int, list[Record]] = {p: [] for p in ends}
            positions = dict(starts)
            deadline = time.monotonic() + max(self.timeout_s, 60.0)
            while any(positions[p] < ends[p] for p in ends):
                if time.monotonic() > deadline:
                    raise StepFailed(f"reading the bookkeeping topic {self.topic} timed out: check the new brokers")
                # consume() returns when it has num_messages or at the timeout: ask for what is left
                left = sum(ends[q] - positions[q] for q in ends if positions[q] < ends[q])
                for msg in consumer.consume(num_messages=max(1, min(1000, left)), timeout=1.0):
                    if msg.error():
                        if msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                            continue  # the client looks for its group's coordinator; assigned, it needs none
                        raise StepFailed(f"reading the bookkeeping topic {self.topic}: {msg.error()}")
                    p, off = msg.partition(), msg.offset()
                    positions[p] = off + 1
                    if off >= ends[p]:
                        continue
                    rec = decode(msg.key(), msg.value(), p, off)
                    if rec is None and newer_kind(msg.value()) is not None:
                        raise BadInput(
                            f"the bookkeeping topic {self.topic} holds a {newer_kind(msg.value())!r} record, written "
                            f"by a newer kmigrate (partition {p}, offset {off}): run this migration with that version")
                    if rec is None:
                        raise BadInput(
                            f"the bookkeeping topic {self.topic} holds a record kmigrate did not write "
                            f"(partition {p}, offset {off}): choose another topic with --bookkeeping-topic"
                        )
                    by_partition[p].append(rec)
                for tp in consumer.position([TopicPartition(self.topic, q) for q in ends]):
                    if tp.offset >= 0:
                        positions[tp.partition] = max(positions[tp.partition], tp.offset)
        except KafkaException as exc:
            raise StepFailed(f"reading the bookkeeping topic {self.topic}: {exc}") from None
        finally:
            consumer.close()
        records = [r for p in sorted(by_partition) for r in by_partition[p]]
        return Ledger(records)

    def _bounds(self, consumer) -> dict[int, tuple[int, int]] | None:
        """Each partition's (low, high) watermarks; ``None`` when the topic does not exist.

        A topic the metadata shows with an error or a partition without a leader (a leader
        moving, a broker's metadata a moment behind) is asked again until the timeout, never
        read as empty: an empty ledger would make a run forget what it recorded."""
        from confluent_kafka import KafkaException, TopicPartition

        from migrate.waiting import poll

        absent = object()
        why: list[str | None] = [None]

        def look():
            t = consumer.list_topics(timeout=self.timeout_s).topics.get(self.topic)
            if t is None:
                return absent
            reason = str(t.error) if t.error is not None else None
            if reason is None and not t.partitions:
                reason = "no partitions in the metadata"
            if reason is None and not every_partition_led(t):
                reason = f"partition {[p for p, pm in t.partitions.items() if pm.leader < 0][0]} has no leader"
            if reason is None:
                try:
                    out = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=self.timeout_s)
                           for p in t.partitions}
                except KafkaException as exc:  # a leader not ready yet (NOT_LEADER_FOR_PARTITION), a timeout
                    out, reason = {}, str(exc)
                bad = [p for p, (lo, hi) in out.items() if lo < 0 or hi < 0]
                if reason is None and not bad:
                    return out
                reason = reason or f"partition {bad[0]} has no offsets yet"
            why[0] = reason
            return None

        got = poll(look, timeout_s=max(self.timeout_s, 30.0), interval_s=0.5)
        if got is None:
            raise StepFailed(f"cannot read the bookkeeping topic {self.topic}: {why[0]}; check its brokers, then run again")
        return None if got is absent else got

    def tail(self) -> list[Record]:
        """The records written since the first :meth:`read` (from the beginning when the topic did
        not exist then) that have arrived since the last call, without waiting: a consumer kept
        open fetches them in the background. Records kmigrate did not write are skipped here
        (:meth:`read` refuses them)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        if self._tail is None:
            self._tail = Consumer(self.settings.confluent(**{
                "group.id": "kmigrate-bookkeeping-tail",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "auto.offset.reset": "earliest",
                "logger": LIBRDKAFKA_LOG,
            }))
            starts = self._first_ends or {}
            self._tail.assign([TopicPartition(self.topic, p, starts.get(p, OFFSET_BEGINNING)) for p in sorted(starts) or [0]])
        out: list[Record] = []
        for msg in self._tail.consume(num_messages=500, timeout=0):
            if msg.error():
                continue
            rec = decode(msg.key(), msg.value(), msg.partition(), msg.offset())
            if rec is not None:
                out.append(rec)
        return out

    # ------------------------------------------------------------------- write
    def append(self, records: Iterable[Record], wait: bool = True) -> None:
        """Write records with ``acks=all`` and wait until every record sent so far is acknowledged
        (StepFailed otherwise).

        ``wait=False`` sends them and leaves the check to the next append that waits, or to
        :meth:`flush`: for records of what is already done (a topic moved, a throttle removed),
        whose loss in a crash only makes a later run find the same thing done again. Records that
        must land before an action (write-ahead) always wait."""
        records = list(records)
        if not records and not (wait and self._unacked):
            return
        self._ensure_producer()
        for r in records:
            key, value = encode(r)
            self._producer.produce(self.topic, value=value, key=key, partition=0, on_delivery=self._delivered)
        self._unacked += len(records)
        if wait:
            self.flush()
        else:
            self._producer.poll(0)

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            self._errors.append(str(err))

    def start_writer(self) -> None:
        """Start the writer ahead of the first write: it connects and fetches its producer id in
        the background (the topic need not exist yet)."""
        self._ensure_producer().poll(0)

    def producer_settings(self) -> dict:
        """The writer's librdkafka settings: acknowledged means written (see ``TRUSTED_PRODUCER``)."""
        return self.settings.confluent(**{
            **TRUSTED_PRODUCER,
            "linger.ms": 0,
            # a new broker may die: acks=all then waits until the ISR drops it (replica.lag.time.max.ms)
            "message.timeout.ms": int(max(self.timeout_s, 120.0) * 1000),
            "logger": LIBRDKAFKA_LOG,
        })

    def _ensure_producer(self):
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer(self.producer_settings())
        return self._producer

    def warm(self) -> None:
        """Give the writer the topic's leader now (waiting for it up to 10 s), so the first write
        does not wait: a producer that writes to a topic it has no metadata for (a topic just
        created) waits for its next metadata refresh, about a second."""
        from migrate.waiting import poll

        producer = self._ensure_producer()

        def led() -> bool:
            try:
                t = producer.list_topics(self.topic, timeout=min(self.timeout_s, 5.0)).topics.get(self.topic)
            except Exception:  # the first write will find out, with its own error
                return True
            return every_partition_led(t)

        poll(led, timeout_s=min(self.timeout_s, 10.0), interval_s=0.05)

    def flush(self) -> None:
        """Wait until every record sent is acknowledged (StepFailed if one was not)."""
        if self._producer is None:
            return
        left = self._producer.flush(max(self.timeout_s, 120.0) + 5)
        errors, self._errors = self._errors, []
        self._unacked = left
        if left or errors:
            raise StepFailed(
                f"writing to the bookkeeping topic {self.topic} failed ({errors[0] if errors else f'{left} not acknowledged'}): "
                "the step may or may not be recorded; run again with --resume"
            )

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()
            self._tail = None
        if self._producer is not None:
            try:
                self._producer.flush(5)
            except Exception as exc:  # a writer refused its producer id (no WRITE right) fails here: the run's error says why
                log.warning("closing the bookkeeping writer: %s", exc)
            self._producer = None
