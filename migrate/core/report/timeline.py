"""The canary's timeline: acknowledgements in time buckets, kept compactly (pure).

Each bucket holds its acknowledgements and failed sends, a log histogram of their latencies (bins 2 % wide, so a
percentile read from it is within 2 % of the exact one and never above the bucket's exact max), the exact max,
and the longest produce stall in progress during it (a wait of ``s`` seconds that began at ``b`` counts, in the
bucket ending at ``e``, ``min(end, e) - b``: a stall shows as a ramp up to its whole length). Memory grows with
time, not with records, and is bounded: past ``max_buckets`` buckets, neighbours merge and the width doubles.

Times are the caller's clock (the canary's monotonic seconds); ``started_s`` is the canary's start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

MIN_MS = 0.1  # latencies below count as this (the first bin)
BASE = 1.02  # each bin 2 % wider than the one before


def bin_of(ms: float) -> int:
    """The histogram bin of a latency in ms.

    >>> bin_of(0.05), bin_of(0.1), bin_of(10.0) > bin_of(9.0)
    (0, 0, True)
    """
    return max(0, math.ceil(math.log(max(ms, MIN_MS) / MIN_MS, BASE) - 1e-9))


def bin_value(k: int) -> float:
    """The upper edge of bin ``k`` in ms (what a percentile read from the histogram says)."""
    return MIN_MS * BASE ** k


def hist_percentile(hist: dict[int, int], q: float, max_ms: float | None = None) -> float | None:
    """Nearest-rank percentile (ms) of a histogram ``bin -> count``, at most ``max_ms``; None when empty.

    >>> hist_percentile({bin_of(10.0): 99, bin_of(500.0): 1}, 0.99) < 10.3
    True
    """
    total = sum(hist.values())
    if not total:
        return None
    rank = max(1, min(total, math.ceil(q * total - 1e-9)))
    seen = 0
    for k in sorted(hist):
        seen += hist[k]
        if seen >= rank:
            v = bin_value(k)
            return min(v, max_ms) if max_ms is not None else v
    return None  # not reached


@dataclass
class Bucket:
    acks: int = 0
    failed: int = 0
    hist: dict[int, int] = field(default_factory=dict)
    max_ms: float | None = None
    stall_s: float = 0.0  # the longest produce stall in progress during this bucket (see the module)

    def add(self, ms: float) -> None:
        self.acks += 1
        k = bin_of(ms)
        self.hist[k] = self.hist.get(k, 0) + 1
        if self.max_ms is None or ms > self.max_ms:
            self.max_ms = ms

    def merge(self, other: "Bucket") -> "Bucket":
        hist = dict(self.hist)
        for k, n in other.hist.items():
            hist[k] = hist.get(k, 0) + n
        maxes = [m for m in (self.max_ms, other.max_ms) if m is not None]
        return Bucket(self.acks + other.acks, self.failed + other.failed, hist, max(maxes) if maxes else None,
                      max(self.stall_s, other.stall_s))


@dataclass(frozen=True)
class Figures:
    """The figures of a stretch of time: acknowledgements, failed sends, latency p50/p99/max (ms), longest stall (s)."""

    acks: int
    failed: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    stall_s: float

    @classmethod
    def of(cls, buckets: Iterable[Bucket]) -> "Figures":
        total = Bucket()
        for b in buckets:  # in place: a whole run's buckets are added without copying the histogram each time
            total.acks, total.failed = total.acks + b.acks, total.failed + b.failed
            for k, n in b.hist.items():
                total.hist[k] = total.hist.get(k, 0) + n
            if b.max_ms is not None and (total.max_ms is None or b.max_ms > total.max_ms):
                total.max_ms = b.max_ms
            total.stall_s = max(total.stall_s, b.stall_s)
        r = lambda v: None if v is None else round(v, 2)  # noqa: E731
        return cls(total.acks, total.failed, r(hist_percentile(total.hist, 0.50, total.max_ms)),
                   r(hist_percentile(total.hist, 0.99, total.max_ms)), r(total.max_ms), round(total.stall_s, 3))


@dataclass
class Timeline:
    """Buckets of ``width_s`` from ``started_s`` (bucket ``i``: ``[i * width_s, (i + 1) * width_s)`` after it)."""

    started_s: float
    width_s: float = 1.0
    max_buckets: int = 7200
    buckets: list[Bucket] = field(default_factory=list)

    def _index(self, now_s: float) -> int:
        return max(0, int((now_s - self.started_s) // self.width_s))

    def _at(self, now_s: float) -> Bucket:
        i = self._index(now_s)
        while i >= self.max_buckets:
            self._halve()
            i = self._index(now_s)
        if i >= len(self.buckets):
            self.buckets.extend(Bucket() for _ in range(i + 1 - len(self.buckets)))
        return self.buckets[i]

    def _halve(self) -> None:
        """Neighbouring buckets merged, the width doubled: the memory stays bounded however long the run."""
        b = self.buckets
        self.buckets = [b[i].merge(b[i + 1]) if i + 1 < len(b) else b[i] for i in range(0, len(b), 2)]
        self.width_s *= 2

    def on_ack(self, now_s: float, latency_ms: float) -> None:
        self._at(now_s).add(latency_ms)

    def on_failed(self, now_s: float) -> None:
        self._at(now_s).failed += 1

    def on_stall(self, began_s: float, end_s: float) -> None:
        """A produce wait from ``began_s`` to ``end_s`` (ended, or still going on at ``end_s``)."""
        self._at(end_s)  # grows (or halves) first: the indexes below are final
        for i in range(self._index(began_s), self._index(end_s) + 1):
            upto = min(end_s, self.started_s + (i + 1) * self.width_s)
            b = self.buckets[i]
            b.stall_s = max(b.stall_s, upto - began_s)

    def span(self, start_s: float, end_s: float) -> list[Bucket]:
        """The buckets of ``[start_s, end_s)`` (offsets after the start): those whose middle is inside, or,
        for a stretch shorter than a bucket, those it overlaps."""
        w = self.width_s
        inside = [b for i, b in enumerate(self.buckets) if start_s <= (i + 0.5) * w < end_s]
        if inside:
            return inside
        return [b for i, b in enumerate(self.buckets) if i * w < end_s and (i + 1) * w > start_s]

    def figures(self, start_s: float = 0.0, end_s: float = math.inf) -> Figures:
        return Figures.of(self.span(start_s, end_s))

    @property
    def duration_s(self) -> float:
        return len(self.buckets) * self.width_s

    def rows(self) -> list[list]:
        """One row per bucket: offset of its start (s), acks, failed, p50, p99, max (ms), stall (s)."""
        out = []
        for i, b in enumerate(self.buckets):
            f = Figures.of([b])
            out.append([round(i * self.width_s, 3), f.acks, f.failed, f.p50_ms, f.p99_ms, f.max_ms, f.stall_s])
        return out

    def to_dict(self) -> dict:
        return {"width_s": self.width_s, "columns": ["at_s", "acks", "failed", "p50_ms", "p99_ms", "max_ms", "stall_s"],
                "rows": self.rows()}
