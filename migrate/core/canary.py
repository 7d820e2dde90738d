"""The canary's bookkeeping: what was sent, acknowledged and consumed, and what that proves.

Pure: times are passed in (monotonic seconds), no client here. ``runner/canary.py`` feeds it
from a real producer and consumer.

Definitions (what the report's numbers mean):

* ``not_yet_consumed``: acknowledged by the cluster (acks=all) and not read back *yet*. While the
  canary runs, such records are in flight, never "lost".
* ``overdue``: of those, the ones acknowledged at least ``OVERDUE_AFTER_S`` ago while a later
  record of the same partition has already been read back (the consumer went past them). Likely
  lost, but still not called lost while the canary runs.
* ``lost``: only in the final report, after the drain: acknowledged and never consumed. A report
  taken while the canary runs has ``lost`` None.
* ``duplicated``: consumed records whose sequence number was already consumed.
* ``out_of_order``: records consumed on a partition after a record with a higher sequence number
  on that same partition (Kafka orders within a partition only).
* ``produce_stall_s``: the longest time in which, on one partition, records were waiting for
  their acknowledgement and none was acknowledged (nor failed). A record sent at t0 and
  acknowledged at t1, with nothing of its partition acknowledged in between, counts t1 - t0: an
  application writing to that partition waited that long. Measured per partition because Kafka
  stalls per partition (the partition whose leader moved), while the others go on.
* ``consume_stall_s``: the longest time in which, on one partition, acknowledged records were
  waiting to be read back and nothing of that partition was consumed.
* Both stalls count a stall still going on up to the time of the report, so "so far" figures only
  grow. ``*_stall_at_s`` is when that stall began (seconds after the start), ``*_stall_partition``
  where.
* latencies: send to acknowledgement, per record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

from migrate.core.report.timeline import Timeline

OVERDUE_AFTER_S = 10.0


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5)
    2.0
    """
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class Stall:
    """The longest wait without progress: how long, when it began (absolute seconds), on which partition."""

    seconds: float = 0.0
    began_s: float | None = None
    partition: int | None = None


@dataclass
class StallClock:
    """Per partition: the longest time in which records waited and nothing of that partition went through.

    ``wait(p, t)``: a record of partition ``p`` starts waiting. ``progress(p, t, done)``: something of
    ``p`` went through at ``t`` (an acknowledgement, a record read); ``done`` of the waiting records
    stopped waiting with it. The wait without progress in force begins at the later of the last
    progress and the moment records started waiting.

    >>> clock = StallClock()
    >>> clock.wait(0, 1.0); clock.progress(0, 6.7, done=1)
    >>> clock.longest(now_s=10.0)
    Stall(seconds=5.7, began_s=1.0, partition=0)
    """

    waiting: dict[int, int] = field(default_factory=dict)
    since: dict[int, float] = field(default_factory=dict)
    worst: Stall = field(default_factory=Stall)
    on_close: Callable[[float, float], None] | None = None
    """Told every wait that ends, ``(began, ended)`` (the canary's timeline draws them)."""

    def wait(self, partition: int, now_s: float) -> None:
        if not self.waiting.get(partition):
            self.since[partition] = now_s
        self.waiting[partition] = self.waiting.get(partition, 0) + 1

    def progress(self, partition: int, now_s: float, done: int = 0) -> None:
        if self.waiting.get(partition):
            self._close(partition, now_s)
            self.since[partition] = now_s
            self.waiting[partition] = max(0, self.waiting[partition] - done)

    def _close(self, partition: int, now_s: float) -> None:
        began = self.since[partition]
        if self.on_close is not None:
            self.on_close(began, now_s)
        if now_s - began > self.worst.seconds:
            self.worst = Stall(now_s - began, began, partition)

    def going_on(self) -> list[float]:
        """When each wait still going on began."""
        return [self.since[p] for p, count in sorted(self.waiting.items()) if count]

    def longest(self, now_s: float) -> Stall:
        """The longest stall so far, counting those still going on up to ``now_s``."""
        worst = self.worst
        for partition, count in sorted(self.waiting.items()):
            began = self.since[partition]
            if count and now_s - began > worst.seconds:
                worst = Stall(now_s - began, began, partition)
        return worst


@dataclass(frozen=True)
class CanaryReport:
    topic: str
    final: bool  # taken after the drain (the only report that may say "lost")
    duration_s: float
    sent: int
    acknowledged: int
    consumed: int
    not_yet_consumed: int  # acknowledged, not read back yet (in flight; 0 in the final report: see lost)
    overdue: int  # of those, acknowledged >= OVERDUE_AFTER_S ago with a later record of their partition read
    lost: int | None  # final report only: acknowledged and never consumed; None while running
    unacknowledged: int  # sent, neither acknowledged nor failed (yet)
    duplicated: int
    out_of_order: int
    failed_sends: int  # delivery reports with an error (the client saw it)
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    produce_stall_s: float
    produce_stall_at_s: float | None  # seconds after the start when that stall began
    produce_stall_partition: int | None
    consume_stall_s: float
    consume_stall_at_s: float | None
    consume_stall_partition: int | None
    errors: tuple[str, ...] = ()  # distinct client errors, first ones
    lost_sample: tuple[int, ...] = ()
    ended_by: str | None = None  # what ended the run (duration, SIGTERM, SIGINT, stop file), when known

    @property
    def ok(self) -> bool:
        """Final report, nothing lost and no send failed (the canary's exit code 0)."""
        return self.final and self.lost == 0 and self.failed_sends == 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["errors"] = list(self.errors)
        d["lost_sample"] = list(self.lost_sample)
        d["ok"] = self.ok
        return d


@dataclass
class CanaryLedger:
    """Accumulates events; ``report()`` turns them into a :class:`CanaryReport`."""

    topic: str
    started_s: float
    sent: int = 0
    failed_sends: int = 0
    acked: set[int] = field(default_factory=set)
    consumed: set[int] = field(default_factory=set)
    duplicated: int = 0
    out_of_order: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    produce_stalls: StallClock = field(default_factory=StallClock)
    consume_stalls: StallClock = field(default_factory=StallClock)
    _sent: dict[int, tuple[float, int]] = field(default_factory=dict)  # waiting for an ack: seq -> (sent at, partition)
    _unconsumed: dict[int, tuple[float, int]] = field(default_factory=dict)  # acked, not read: seq -> (acked at, partition)
    _last_seq_by_partition: dict[int, int] = field(default_factory=dict)
    tap: list[tuple[float, int, float]] | None = None
    """When a list: every ack is also appended as (acked at, partition, latency seconds), for a reader
    that takes them in windows (``kmigrate partitions --throttle auto``); ``None``: not kept."""
    timeline: Timeline | None = None
    """Acks, failed sends and produce stalls in time buckets (made at the start: :mod:`migrate.core.report.timeline`)."""

    def __post_init__(self) -> None:
        if self.timeline is None:
            self.timeline = Timeline(started_s=self.started_s)
        self.produce_stalls.on_close = self.timeline.on_stall

    def timeline_at(self, now_s: float) -> Timeline:
        """The timeline with the produce waits still going on at ``now_s`` drawn up to it."""
        for began in self.produce_stalls.going_on():
            self.timeline.on_stall(began, now_s)
        return self.timeline

    def on_send(self, seq: int, partition: int, now_s: float) -> None:
        self.sent += 1
        self._sent[seq] = (now_s, partition)
        self.produce_stalls.wait(partition, now_s)

    def on_ack(self, seq: int, now_s: float) -> None:
        sent_s, partition = self._sent.pop(seq, (now_s, None))
        self.acked.add(seq)
        self.latencies_ms.append((now_s - sent_s) * 1000.0)
        self.timeline.on_ack(now_s, (now_s - sent_s) * 1000.0)
        if partition is None:
            return
        if self.tap is not None:
            self.tap.append((now_s, partition, now_s - sent_s))
        self.produce_stalls.progress(partition, now_s, done=1)
        if seq not in self.consumed:  # the consumer may read a record before its acknowledgement arrives
            self._unconsumed[seq] = (now_s, partition)
            self.consume_stalls.wait(partition, now_s)

    def on_send_error(self, seq: int, error: str, now_s: float) -> None:
        """The client gave up on record ``seq``: its application got an answer, so its wait ends here."""
        self.failed_sends += 1
        self.timeline.on_failed(now_s)
        self.note_error(error)
        sent = self._sent.pop(seq, None)
        if sent is not None:
            self.produce_stalls.progress(sent[1], now_s, done=1)

    def waiting_since(self) -> dict[int, float]:
        """Partition -> when its oldest record still waiting for an ack was sent (a stall going on)."""
        out: dict[int, float] = {}
        for sent_s, partition in self._sent.values():
            if sent_s < out.get(partition, float("inf")):
                out[partition] = sent_s
        return out

    def take_tap(self) -> list[tuple[float, int, float]]:
        """The acks tapped since the last call (see :attr:`tap`), and an empty tap again."""
        taken, self.tap = self.tap or [], [] if self.tap is not None else None
        return taken

    def note_error(self, error: str) -> None:
        if error not in self.errors and len(self.errors) < 20:
            self.errors.append(error)

    def on_consume(self, seq: int, partition: int, now_s: float) -> None:
        if seq in self.consumed:
            self.duplicated += 1
        else:
            self.consumed.add(seq)
        waited = self._unconsumed.pop(seq, None) is not None
        self.consume_stalls.progress(partition, now_s, done=1 if waited else 0)
        last = self._last_seq_by_partition.get(partition)
        if last is not None and seq < last:
            self.out_of_order += 1
        else:
            self._last_seq_by_partition[partition] = seq

    def overdue(self, now_s: float) -> int:
        """Acknowledged at least ``OVERDUE_AFTER_S`` ago, not consumed, and a later record of the same
        partition already consumed."""
        return sum(1 for seq, (acked_s, partition) in self._unconsumed.items()
                   if now_s - acked_s >= OVERDUE_AFTER_S and self._last_seq_by_partition.get(partition, -1) > seq)

    def report(self, now_s: float, final: bool = False) -> CanaryReport:
        """The figures at ``now_s``; ``final`` (after the drain): whatever is acknowledged and not consumed is lost."""
        lat = sorted(self.latencies_ms)
        lost = sorted(self.acked - self.consumed) if final else []
        produce, consume = self.produce_stalls.longest(now_s), self.consume_stalls.longest(now_s)
        return CanaryReport(
            topic=self.topic,
            final=final,
            duration_s=round(now_s - self.started_s, 3),
            sent=self.sent,
            acknowledged=len(self.acked),
            consumed=len(self.consumed),
            not_yet_consumed=0 if final else len(self._unconsumed),
            overdue=0 if final else self.overdue(now_s),
            lost=len(lost) if final else None,
            unacknowledged=len(self._sent),
            duplicated=self.duplicated,
            out_of_order=self.out_of_order,
            failed_sends=self.failed_sends,
            latency_p50_ms=_round(percentile(lat, 0.50)),
            latency_p99_ms=_round(percentile(lat, 0.99)),
            latency_max_ms=_round(lat[-1] if lat else None),
            produce_stall_s=round(produce.seconds, 3),
            produce_stall_at_s=self._since_start(produce.began_s),
            produce_stall_partition=produce.partition,
            consume_stall_s=round(consume.seconds, 3),
            consume_stall_at_s=self._since_start(consume.began_s),
            consume_stall_partition=consume.partition,
            errors=tuple(self.errors),
            lost_sample=tuple(lost[:20]),
        )

    def _since_start(self, t: float | None) -> float | None:
        return None if t is None else round(t - self.started_s, 3)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def encode(run_id: str, seq: int) -> bytes:
    """The value of canary record ``seq`` of run ``run_id`` (runs share the topic; each counts its own)."""
    return b"kmigrate-canary:%s:%d" % (run_id.encode(), seq)


def decode(run_id: str, value: bytes | None) -> int | None:
    """The sequence number of a record of run ``run_id``, or None for any other record."""
    prefix = b"kmigrate-canary:%s:" % run_id.encode()
    if not value or not value.startswith(prefix):
        return None
    try:
        return int(value[len(prefix):])
    except ValueError:
        return None


def leader_spread_assignment(broker_ids: list[int], replication_factor: int) -> list[list[int]]:
    """One partition per broker, partition i led by the i-th broker (sorted), replicas the next ones.

    >>> leader_spread_assignment([3, 1, 2], 2)
    [[1, 2], [2, 3], [3, 1]]
    """
    ids = sorted(broker_ids)
    rf = min(replication_factor, len(ids))
    return [[ids[(i + r) % len(ids)] for r in range(rf)] for i in range(len(ids))]
