"""The canary's live signal: what ``kmigrate canary --report FILE`` writes into FILE every second while it runs,
so that another command (``kmigrate partitions --throttle auto --canary-report FILE``) can steer on what an
operator's own canary feels (pure).

The section (``"live"`` in the report document) holds the last :data:`RECENT_BUCKETS` buckets of the canary's
timeline with their latency histograms (a window's p99 is read from the merged histograms, not from the
buckets' own p99s, which do not combine), on the wall clock: bucket ``i`` covers
``[started_unix + (first_index + i) * width_s, ... + width_s)``. ``written_unix`` says how fresh it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from migrate.core.report.timeline import Bucket, Figures, Timeline

LIVE_VERSION = 1
RECENT_BUCKETS = 300
"""Buckets kept in the live section (5 minutes of 1 s buckets): enough for a baseline and any window."""


def live_section(timeline: Timeline, started_unix: float, written_unix: float,
                 recent: int = RECENT_BUCKETS) -> dict[str, Any]:
    """The live section of a running canary's report (see the module).

    >>> t = Timeline(0.0); t.on_ack(0.5, 10.0); t.on_ack(1.5, 20.0)
    >>> doc = live_section(t, 1000.0, 1002.0)
    >>> doc["first_index"], [b[0] for b in doc["buckets"]]
    (0, [1, 1])
    """
    first = max(0, len(timeline.buckets) - recent)
    return {"version": LIVE_VERSION, "started_unix": started_unix, "written_unix": written_unix,
            "width_s": timeline.width_s, "first_index": first,
            "buckets": [[b.acks, b.failed, {str(k): n for k, n in sorted(b.hist.items())}, b.max_ms,
                         round(b.stall_s, 3)] for b in timeline.buckets[first:]]}


@dataclass(frozen=True)
class LiveSignal:
    """A live section read back (:meth:`parse`)."""

    started_unix: float
    written_unix: float
    width_s: float
    first_index: int
    buckets: tuple[Bucket, ...]

    @classmethod
    def parse(cls, doc: Any) -> "LiveSignal":
        """The live section of a report document (ValueError saying what is wrong when it has none, or a damaged one).

        >>> LiveSignal.parse({"live": {"version": 1, "started_unix": 10, "written_unix": 12, "width_s": 1,
        ...                             "first_index": 0, "buckets": [[2, 0, {"100": 2}, 10.5, 0.0]]}}).buckets[0].acks
        2
        """
        live = doc.get("live") if isinstance(doc, dict) else None
        if not isinstance(live, dict):
            raise ValueError("it has no live section: is it the --report of a running `kmigrate canary` "
                             "of this version?")
        if live.get("version") != LIVE_VERSION:
            raise ValueError(f"its live section is version {live.get('version')!r}, this kmigrate reads "
                             f"{LIVE_VERSION}: run the canary and this command from the same kmigrate")
        try:
            buckets = tuple(Bucket(int(a), int(f), {int(k): int(n) for k, n in h.items()},
                                   None if m is None else float(m), float(s)) for a, f, h, m, s in live["buckets"])
            return cls(float(live["started_unix"]), float(live["written_unix"]), float(live["width_s"]),
                       int(live["first_index"]), buckets)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"its live section is damaged ({exc.__class__.__name__}: {exc})") from None

    def age_s(self, now_unix: float) -> float:
        """Seconds since the canary last wrote it."""
        return max(0.0, now_unix - self.written_unix)

    def span(self, start_unix: float, end_unix: float) -> list[Bucket]:
        """The buckets whose middle lies in ``[start_unix, end_unix)`` (wall clock)."""
        out = []
        for i, b in enumerate(self.buckets):
            middle = self.started_unix + (self.first_index + i + 0.5) * self.width_s
            if start_unix <= middle < end_unix:
                out.append(b)
        return out

    def figures(self, start_unix: float, end_unix: float) -> Figures:
        """Acks, p50/p99/max (ms, from the merged histograms) and the longest stall in ``[start_unix, end_unix)``.

        >>> s = LiveSignal(100.0, 110.0, 1.0, 0, (Bucket(1, 0, {100: 1}, 0.7), Bucket(1, 0, {300: 1}, 39.0, 0.2)))
        >>> f = s.figures(101.0, 102.0); f.acks, f.p99_ms, f.stall_s
        (1, 38.02, 0.2)
        """
        return Figures.of(self.span(start_unix, end_unix))

    def covered_s(self, end_unix: float) -> float:
        """How many seconds before ``end_unix`` the section covers (from its first bucket's start)."""
        return max(0.0, end_unix - (self.started_unix + self.first_index * self.width_s))
