"""The canary's run: a producer and a consumer on threads feeding the ledger, and the watch until the end.

``Canary(settings).start()`` ... ``.stop()`` -> :class:`migrate.core.canary.CanaryReport`;
:func:`watch` lets a started canary run for a while (or until Ctrl-C), showing its figures. The
clients are ``migrate.adapters.kafka.canary_clients``; the ledger and the report are ``migrate.core.canary``.
"""

from __future__ import annotations

import math
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from migrate.adapters.kafka.canary_clients import CanaryConsumer, CanaryProducer, ClientError, ensure_topic
from migrate.core.canary import CanaryLedger, CanaryReport, decode, encode
from migrate.core.clientconfig import ClientSettings
from migrate.core.report.live import live_section
from migrate.core.report.timeline import Timeline
from migrate.errors import BadInput, StepFailed
from migrate.runner import signals
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll, wait_until

DEFAULT_TOPIC = "kmigrate-canary"


class Canary:
    """Writes sequence-numbered records at ``rate_per_s`` and reads them back, until ``stop()``."""

    def __init__(self, settings: ClientSettings, topic: str = DEFAULT_TOPIC, rate_per_s: float = 100.0,
                 replication_factor: int = 3, min_insync_replicas: int = 2, group: str | None = None):
        """``group``: the consumer's group, whose offsets are committed when it pauses (:meth:`pause`), so
        that it can go on from them elsewhere (:meth:`resume`: another cluster with translated offsets);
        without it, a group of this run's own and nothing committed."""
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
        self._flush_timeout_s = 60.0
        self.partitions = 0
        self.group = group
        self.started_unix = 0.0
        self._next_seq = 0

    # ------------------------------------------------------------------ topic
    def ensure_topic(self, timeout_s: float = 60) -> int:
        """Create the canary topic (one partition led by each live broker) unless it exists; return its partition count."""
        return ensure_topic(self.settings, self.topic, self.replication_factor, self.min_insync_replicas, timeout_s)

    # ---------------------------------------------------------------- running
    def check_rights(self) -> Callable[[], None]:
        """BadInput (nothing created) when the principal may not create, write or read the canary topic;
        returns the check of READ and WRITE to make once the topic is created."""
        from migrate.adapters.kafka.client import admin_client
        from migrate.core.permissions import canary_needs
        from migrate.runner.permissions import require, require_after_create

        admin = admin_client(self.settings)
        exists = self.topic in admin.list_topics(timeout=15).topics
        require(admin, self.settings, canary_needs(self.topic, exists))
        return lambda: None if exists else require_after_create(admin, self.settings, canary_needs(self.topic, False))

    def start(self) -> "Canary":
        after_create = self.check_rights()
        self.partitions = self.ensure_topic()
        after_create()
        consumer = CanaryConsumer(self.settings, self.group or f"kmigrate-canary-{self.run_id}")
        # Start reading at the current end of each partition (explicit offsets): this run's records come after it.
        consumer.assign(self.topic, {p: self._high_watermark(consumer, p) for p in range(self.partitions)})
        self._producer = self._warm_producer()
        self.ledger = CanaryLedger(self.topic, started_s=time.monotonic())
        self.started_unix = time.time()  # the same moment on the wall clock (phases read from the bookkeeping topic)
        return self._run(consumer)

    def _run(self, consumer: CanaryConsumer) -> "Canary":
        self._stop_producing.clear()
        self._stop_consuming.clear()
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

    def _warm_producer(self, timeout_s: float = 120) -> CanaryProducer:
        """An idempotent producer that has had one record acknowledged (producer id acquired, metadata known).

        The measurement starts after this, so a cluster's first-use delays are not counted as a stall.
        """
        producer = CanaryProducer(self.settings, on_fatal=self._note_error)
        result: list[str | None] = []
        producer.send(self.topic, b"warm-up", b"kmigrate-canary-warm-up", None,
                      on_delivery=lambda err, value: result.append(err))

        def delivered() -> bool:
            producer.poll(0.1)
            return bool(result)

        poll(delivered, timeout_s=timeout_s, interval_s=0)
        if not result or result[0] is not None:
            raise StepFailed(f"the canary could not write to {self.topic} within {timeout_s:.0f} s: "
                             f"{result[0] if result else 'no acknowledgement'}")
        return producer

    def _high_watermark(self, consumer: CanaryConsumer, partition: int, timeout_s: float = 60) -> int:
        """The partition's high watermark; a new client may not know a just-created topic yet, so ask again."""
        try:
            return wait_until(lambda: (consumer.end_offset(self.topic, partition),), timeout_s=timeout_s,
                              interval_s=0.5, what=f"the end offset of {self.topic}-{partition}",
                              retry_on=(ClientError,))[0]
        except ClientError as exc:
            raise StepFailed(f"cannot read the end offset of {self.topic}-{partition}: {exc}") from None

    def _produce(self) -> None:
        assert self.ledger is not None
        producer = self._producer
        interval = 1.0 / self.rate_per_s
        seq = self._next_seq
        next_s = time.monotonic()

        def delivered(err: str | None, value: bytes | None) -> None:
            s = decode(self.run_id, value)
            if s is None:
                return
            with self._lock:  # the time read under the lock: the ledger sees acks and reads in the order of their times
                now = time.monotonic()
                if err is not None:
                    self.ledger.on_send_error(s, err, now)
                else:
                    self.ledger.on_ack(s, now)

        while not self._stop_producing.is_set():
            now = time.monotonic()
            if now < next_s:
                producer.poll(min(next_s - now, 0.05))
                continue
            partition = seq % self.partitions
            if not producer.send(self.topic, str(seq).encode(), encode(self.run_id, seq), partition, delivered):
                producer.poll(0.1)
                continue
            with self._lock:
                self.ledger.on_send(seq, partition, now)
            seq += 1
            self._next_seq = seq
            next_s += interval
            if next_s < now - 1.0:  # fell behind (a stall): do not burst to catch up
                next_s = now
            producer.poll(0)
        left = producer.flush(self._flush_timeout_s)
        if left:
            self._note_error(f"{left} records still unacknowledged {self._flush_timeout_s:.0f} s after the end")

    def _consume(self, consumer: CanaryConsumer) -> None:
        assert self.ledger is not None
        try:
            self._consumer_ready.set()
            while not self._stop_consuming.is_set():
                records, errors = consumer.consume(500, timeout_s=0.2)
                for error in errors:
                    self._note_error(f"consumer: {error}")
                seqs = []
                for value, partition in records:
                    seq = decode(self.run_id, value)
                    if seq is not None:
                        seqs.append((seq, partition))
                if seqs:
                    with self._lock:  # as for acks: the time read under the lock
                        now = time.monotonic()
                        for seq, partition in seqs:
                            self.ledger.on_consume(seq, partition, now)
        finally:
            self._consumer_ready.set()
            if self.group is not None:
                try:
                    consumer.commit()
                except ClientError as exc:
                    self._note_error(f"consumer: committing the group {self.group}'s offsets: {exc}")
            consumer.close()

    def _note_error(self, text: str) -> None:
        with self._lock:
            if self.ledger is not None:
                self.ledger.note_error(text)

    def timeline(self) -> Timeline:
        """The acknowledgements, latencies and stalls over time so far (waits going on drawn up to now)."""
        assert self.ledger is not None
        with self._lock:
            return self.ledger.timeline_at(time.monotonic())

    def live(self) -> dict:
        """The live section of its report (:func:`migrate.core.report.live.live_section`), now."""
        assert self.ledger is not None
        with self._lock:
            return live_section(self.ledger.timeline_at(time.monotonic()), self.started_unix, time.time())

    def offset(self, monotonic_s: float) -> float:
        """Seconds after the canary's start of a ``time.monotonic()`` moment."""
        assert self.ledger is not None
        return monotonic_s - self.ledger.started_s

    def report(self) -> CanaryReport:
        """The figures so far (the canary keeps running): in-flight records are "not yet consumed", never lost."""
        assert self.ledger is not None
        with self._lock:
            return self.ledger.report(time.monotonic())

    def _drained(self) -> bool:
        with self._lock:
            return self.ledger.acked <= self.ledger.consumed

    def stop(self, drain_timeout_s: float = 60) -> CanaryReport:
        """Stop producing, wait (``drain_timeout_s`` at most, in all) for the outstanding acknowledgements
        and until every acknowledged record is consumed, and return the final report."""
        self.pause(drain_timeout_s)
        with self._lock:
            return self.ledger.report(time.monotonic(), final=True)

    def pause(self, drain_timeout_s: float = 60, drain: bool = True) -> CanaryReport:
        """Stop producing (waiting for the outstanding acknowledgements), then, with ``drain``, wait until
        every acknowledged record is consumed (``drain_timeout_s`` at most in all), then stop the consumer
        (committing its group's offsets when it has a group). The figures so far; :meth:`resume` goes on."""
        assert self.ledger is not None
        deadline = time.monotonic() + drain_timeout_s
        self._flush_timeout_s = drain_timeout_s
        self._stop_producing.set()
        self._threads[1].join(drain_timeout_s + 30)
        if drain:
            poll(self._drained, timeout_s=max(0.0, deadline - time.monotonic()), interval_s=0.1)
        self._stop_consuming.set()
        self._threads[0].join(30)
        return self.report()

    def resume(self, settings: ClientSettings | None = None) -> "Canary":
        """Go on after :meth:`pause`, on ``settings``' cluster (default: the same one), with the same
        sequence numbers and ledger: the consumer reads from its group's committed offsets there (a
        partition with none: from its start), so records read again count as duplicated, and records
        acknowledged before the pause and never read count as lost at the end. The topic must exist there
        with the same partitions (a cross-cluster copy)."""
        if self.group is None:
            raise BadInput("the canary resumes from its group's offsets: give it a group")
        self.settings = settings or self.settings
        consumer = CanaryConsumer(self.settings, self.group)
        try:
            committed = wait_until(lambda: (consumer.committed(self.topic, range(self.partitions)),), timeout_s=60,
                                   interval_s=0.5, what=f"the group {self.group}'s offsets",
                                   retry_on=(ClientError,))[0]
        except ClientError as exc:
            raise StepFailed(f"cannot read the group {self.group}'s offsets on {self.settings.bootstrap_servers}: {exc}") from None
        consumer.assign(self.topic, {p: 0 if o is None else o for p, o in committed.items()})
        self._producer = self._warm_producer()
        return self._run(consumer)


class StopRequests:
    """What asks a running canary to stop: SIGTERM, SIGINT (unless the shell ignores it, as for ``&``
    in a script) and a stop file appearing. A context manager: the signal handlers are in place inside
    it (also while the canary drains: a second signal does not cut the final report short), and the
    previous ones are back after it. Calling it answers the reason to stop, or None."""

    def __init__(self, stop_file: Path | None = None):
        self.stop_file = stop_file
        self.reason: str | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, _frame: object) -> None:
        if self.reason is None:
            self.reason = signal.Signals(signum).name

    def __enter__(self) -> "StopRequests":
        # an ignored signal (a background job of a script) stays ignored: the shell's rule stands
        self._previous = signals.install(self._handle, (signal.SIGTERM, signal.SIGINT), keep_ignored=True)
        return self

    def __exit__(self, *exc: object) -> None:
        signals.restore(self._previous)

    def __call__(self) -> str | None:
        if self.reason is None and self.stop_file is not None and self.stop_file.exists():
            self.reason = f"stop file {self.stop_file}"
        return self.reason


def watch(canary: Canary, seconds: float | None, show: Callable[[CanaryReport], None] | None = None,
          interval_s: float = 0.5, clock: Clock | FakeClock = SYSTEM_CLOCK,
          stop_requested: Callable[[], str | None] = lambda: None, check_s: float = 0.25,
          live: Callable[[], None] | None = None, live_every_s: float = 1.0) -> str:
    """Let a started canary run for ``seconds`` (``None``: until asked to stop), handing its figures to
    ``show`` at the start and every ``interval_s``, looking at ``stop_requested`` every ``check_s``;
    ``live`` is called every ``live_every_s`` (the live report file).

    Returns what ended it: ``"duration"``, the reason ``stop_requested`` gave, or ``"SIGINT"`` (Ctrl-C
    without a handler). The canary keeps running (``stop`` it).
    """
    next_show = [clock.now()]
    next_live = [clock.now()]

    def tick() -> str | None:
        reason = stop_requested()
        if reason:
            return reason
        if live is not None and clock.now() >= next_live[0]:
            live()
            next_live[0] = max(next_live[0] + live_every_s, clock.now())
        if show is not None and clock.now() >= next_show[0]:
            show(canary.report())
            next_show[0] += interval_s
            if next_show[0] <= clock.now():  # fell behind (a slow look): do not show twice in a row
                next_show[0] = clock.now() + interval_s
        return None

    step = min(check_s, interval_s) if show is not None else check_s
    try:
        return poll(tick, timeout_s=math.inf if seconds is None else seconds, interval_s=step, clock=clock) \
            or "duration"
    except KeyboardInterrupt:
        return "SIGINT"
