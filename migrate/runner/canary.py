"""The canary's clients: an idempotent acks=all producer and a consumer, on threads, feeding the ledger.

``Canary(settings).start()`` ... ``.stop()`` -> :class:`migrate.core.canary.CanaryReport`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.core.canary import CanaryLedger, CanaryReport, decode, encode, leader_spread_assignment
from migrate.adapters.kafka import TRUSTED_PRODUCER
from migrate.core.clientconfig import ClientSettings
from migrate.errors import BadInput, StepFailed

log = logging.getLogger("kmigrate.canary")
_RDKAFKA_LOG = logging.getLogger("kmigrate.librdkafka")

DEFAULT_TOPIC = "kmigrate-canary"


class Canary:
    """Writes sequence-numbered records at ``rate_per_s`` and reads them back, until ``stop()``."""

    def __init__(self, settings: ClientSettings, topic: str = DEFAULT_TOPIC, rate_per_s: float = 100.0,
                 replication_factor: int = 3, min_insync_replicas: int = 2):
        if rate_per_s <= 0 or rate_per_s > 100_000:
            raise BadInput(f"--rate {rate_per_s}: give records per second between 1 and 100000")
        self.settings = settings
        self.topic = topic
        self.rate_per_s = rate_per_s
        self.replication_factor = replication_factor
        self.min_insync_replicas = min_insync_replicas
        self.run_id = uuid.uuid4().hex[:8]
        self._lock = threading.Lock()
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ledger: CanaryLedger | None = None
        self._producing_ended_s: float | None = None
        self.partitions = 0

    # ------------------------------------------------------------------ topic
    def ensure_topic(self, timeout_s: float = 60) -> int:
        """Create the canary topic (one partition led by each live broker) unless it exists; return its partition count."""
        admin = AdminClient(self.settings.confluent(logger=_RDKAFKA_LOG))
        try:
            md = admin.list_topics(timeout=15)
        except KafkaException as exc:
            raise BadInput(f"cannot reach Kafka at {self.settings.bootstrap_servers}: {exc}") from None
        if self.topic not in md.topics or md.topics[self.topic].error is not None:
            assignment = leader_spread_assignment(sorted(md.brokers), self.replication_factor)
            rf = len(assignment[0])
            configs = {"min.insync.replicas": str(min(self.min_insync_replicas, rf))}
            fut = admin.create_topics([NewTopic(self.topic, num_partitions=len(assignment), replica_assignment=assignment, config=configs)])[self.topic]
            try:
                fut.result(timeout=timeout_s)
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise StepFailed(f"cannot create the canary topic {self.topic}: {exc}") from None
        deadline = time.monotonic() + timeout_s
        while True:
            topic = admin.list_topics(self.topic, timeout=15).topics[self.topic]
            if topic.error is None and topic.partitions and all(p.leader >= 0 for p in topic.partitions.values()):
                return len(topic.partitions)
            if time.monotonic() > deadline:
                raise StepFailed(f"the canary topic {self.topic} has no leader for every partition after {timeout_s:.0f} s")
            time.sleep(0.2)

    # ---------------------------------------------------------------- running
    def start(self) -> "Canary":
        self.partitions = self.ensure_topic()
        consumer = Consumer(self.settings.confluent(**{
            "group.id": f"kmigrate-canary-{self.run_id}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "logger": _RDKAFKA_LOG,
        }))
        # Start reading at the current end of each partition (explicit offsets): this run's records come after it.
        starts = []
        for p in range(self.partitions):
            starts.append(TopicPartition(self.topic, p, self._high_watermark(consumer, p)))
        consumer.assign(starts)
        self._producer = self._warm_producer()
        self.ledger = CanaryLedger(self.topic, started_s=time.monotonic())
        self._threads = [
            threading.Thread(target=self._consume, args=(consumer,), name="canary-consumer", daemon=True),
            threading.Thread(target=self._produce, name="canary-producer", daemon=True),
        ]
        # Give the consumer its positions before the first record is written.
        self._consumer_ready = threading.Event()
        self._threads[0].start()
        self._consumer_ready.wait(30)
        self._threads[1].start()
        return self

    def _warm_producer(self, timeout_s: float = 120) -> Producer:
        """An idempotent producer that has had one record acknowledged (producer id acquired, metadata known).

        The measurement starts after this, so a cluster's first-use delays are not counted as a stall.
        """
        producer = Producer(self.settings.confluent(**{
            **TRUSTED_PRODUCER, "linger.ms": 5, "message.timeout.ms": 300000,
            "logger": _RDKAFKA_LOG,
            "error_cb": lambda err: self._note_error(f"client: {err.str()}") if err.fatal() else None,
        }))
        result: list = []
        producer.produce(self.topic, key=b"warm-up", value=b"kmigrate-canary-warm-up",
                         on_delivery=lambda err, msg: result.append(err))
        deadline = time.monotonic() + timeout_s
        while not result and time.monotonic() < deadline:
            producer.poll(0.1)
        if not result or result[0] is not None:
            raise StepFailed(f"the canary could not write to {self.topic} within {timeout_s:.0f} s: "
                             f"{result[0] if result else 'no acknowledgement'}")
        return producer

    def _high_watermark(self, consumer: Consumer, partition: int, timeout_s: float = 60) -> int:
        """The partition's high watermark; a new client may not know a just-created topic yet, so ask again."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=10)[1]
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise StepFailed(f"cannot read the end offset of {self.topic}-{partition}: {exc}") from None
                time.sleep(0.5)

    def _produce(self) -> None:
        assert self.ledger is not None
        producer = self._producer
        sent_at: dict[int, float] = {}
        interval = 1.0 / self.rate_per_s
        seq = 0
        next_s = time.monotonic()

        def delivered(err, msg, seq_=None):
            now = time.monotonic()
            s = decode(self.run_id, msg.value())
            if s is None:
                return
            with self._lock:
                if err is not None:
                    self.ledger.on_send_error(s, err.str(), now)
                else:
                    self.ledger.on_ack(s, sent_at.pop(s, now), now)

        while not self._stop_producing.is_set():
            now = time.monotonic()
            if now < next_s:
                producer.poll(min(next_s - now, 0.05))
                continue
            sent_at[seq] = now
            try:
                producer.produce(self.topic, key=str(seq).encode(), value=encode(self.run_id, seq),
                                 partition=seq % self.partitions, on_delivery=delivered)
                with self._lock:
                    self.ledger.on_send(seq)
                seq += 1
            except BufferError:
                producer.poll(0.1)
                continue
            next_s += interval
            if next_s < now - 1.0:  # fell behind (a stall): do not burst to catch up
                next_s = now
            producer.poll(0)
        self._producing_ended_s = time.monotonic()
        left = producer.flush(300)
        if left:
            self._note_error(f"{left} records still unacknowledged 300 s after the end")

    def _consume(self, consumer: Consumer) -> None:
        assert self.ledger is not None
        try:
            self._consumer_ready.set()
            while not self._stop_consuming.is_set():
                for msg in consumer.consume(500, timeout=0.2):
                    if msg.error() is not None:
                        if not msg.error().retriable() and msg.error().code() != -191:  # -191: partition EOF
                            self._note_error(f"consumer: {msg.error().str()}")
                        continue
                    seq = decode(self.run_id, msg.value())
                    if seq is not None:
                        with self._lock:
                            self.ledger.on_consume(seq, msg.partition())
        finally:
            self._consumer_ready.set()
            consumer.close()

    def _note_error(self, text: str) -> None:
        with self._lock:
            if self.ledger is not None:
                self.ledger.note_error(text)

    def report(self) -> CanaryReport:
        """The figures so far (the canary keeps running)."""
        assert self.ledger is not None
        with self._lock:
            return self.ledger.report(time.monotonic(), self._producing_ended_s or time.monotonic())

    def stop(self, drain_timeout_s: float = 60) -> CanaryReport:
        """Stop producing, wait until every acknowledged record is consumed (or the timeout), and report."""
        assert self.ledger is not None
        self._stop_producing.set()
        self._threads[1].join(330)
        deadline = time.monotonic() + drain_timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if self.ledger.acked <= self.ledger.consumed:
                    break
            time.sleep(0.1)
        self._stop_consuming.set()
        self._threads[0].join(30)
        with self._lock:
            return self.ledger.report(time.monotonic(), self._producing_ended_s)
