"""The canary's bookkeeping: what was sent, acknowledged and consumed, and what that proves.

Pure: times are passed in (monotonic seconds), no client here. ``runner/canary.py`` feeds it
from a real producer and consumer.

Definitions (what the report's numbers mean):

* ``lost``: sequence numbers acknowledged by the cluster (acks=all) and never consumed.
* ``duplicated``: consumed records whose sequence number was already consumed.
* ``out_of_order``: records consumed on a partition after a record with a higher sequence number
  on that same partition (Kafka orders within a partition only).
* ``longest_stall_s``: the longest time, while producing, with no acknowledgement at all
  (from the later of the previous acknowledgement and the start, to the next one or the end).
* latencies: send to acknowledgement, per record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
class CanaryReport:
    topic: str
    duration_s: float
    sent: int
    acknowledged: int
    consumed: int
    lost: int
    duplicated: int
    out_of_order: int
    failed_sends: int  # delivery reports with an error (the client saw it)
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    longest_stall_s: float
    longest_stall_at_s: float | None  # seconds after the start when that stall began
    errors: tuple[str, ...] = ()  # distinct client errors, first ones
    lost_sample: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.failed_sends == 0

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
    last_ack_s: float | None = None
    longest_stall_s: float = 0.0
    longest_stall_at_s: float | None = None
    _last_seq_by_partition: dict[int, int] = field(default_factory=dict)

    def on_send(self, seq: int) -> None:
        self.sent += 1

    def on_ack(self, seq: int, sent_s: float, now_s: float) -> None:
        self._gap(now_s)
        self.acked.add(seq)
        self.latencies_ms.append((now_s - sent_s) * 1000.0)

    def on_send_error(self, seq: int, error: str, now_s: float) -> None:
        self.failed_sends += 1
        self.note_error(error)

    def note_error(self, error: str) -> None:
        if error not in self.errors and len(self.errors) < 20:
            self.errors.append(error)

    def on_consume(self, seq: int, partition: int) -> None:
        if seq in self.consumed:
            self.duplicated += 1
        else:
            self.consumed.add(seq)
        last = self._last_seq_by_partition.get(partition)
        if last is not None and seq < last:
            self.out_of_order += 1
        else:
            self._last_seq_by_partition[partition] = seq

    def _gap(self, now_s: float) -> None:
        since = self.last_ack_s if self.last_ack_s is not None else self.started_s
        gap = now_s - since
        if gap > self.longest_stall_s:
            self.longest_stall_s = gap
            self.longest_stall_at_s = since - self.started_s
        self.last_ack_s = now_s

    def report(self, ended_s: float, producing_ended_s: float | None = None) -> CanaryReport:
        """The report; the time from the last acknowledgement to ``producing_ended_s`` counts as a stall."""
        end = producing_ended_s if producing_ended_s is not None else ended_s
        since = self.last_ack_s if self.last_ack_s is not None else self.started_s
        stall, stall_at = self.longest_stall_s, self.longest_stall_at_s
        if end - since > stall:
            stall, stall_at = end - since, since - self.started_s
        lat = sorted(self.latencies_ms)
        lost = sorted(self.acked - self.consumed)
        return CanaryReport(
            topic=self.topic,
            duration_s=round(ended_s - self.started_s, 3),
            sent=self.sent,
            acknowledged=len(self.acked),
            consumed=len(self.consumed),
            lost=len(lost),
            duplicated=self.duplicated,
            out_of_order=self.out_of_order,
            failed_sends=self.failed_sends,
            latency_p50_ms=_round(percentile(lat, 0.50)),
            latency_p99_ms=_round(percentile(lat, 0.99)),
            latency_max_ms=_round(lat[-1] if lat else None),
            longest_stall_s=round(stall, 3),
            longest_stall_at_s=None if stall_at is None else round(stall_at, 3),
            errors=tuple(self.errors),
            lost_sample=tuple(lost[:20]),
        )


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
