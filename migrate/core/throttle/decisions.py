"""A decision of the adaptive throttle: one broker's rate and moves in flight, and why (a JSON value).

Every change the controller makes is one :class:`Decision`: shown (JSON event, progress bar) and
recorded in the bookkeeping topic, so that a resumed run continues from the last rate recorded per
broker (:meth:`migrate.core.throttle.controller.Controller.resume` reads them back with
:meth:`Decision.from_dict`, which ignores the fields a bookkeeping record adds).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

SLOW_START = "slow-start"
AVOIDANCE = "avoidance"
MODES = (SLOW_START, AVOIDANCE)


@dataclass(frozen=True)
class Decision:
    """``broker``'s rate in force went from ``old_rate`` to ``new_rate`` bytes/s (both written to
    ``leader/follower.replication.throttled.rate``; equal when only the moves changed) and it may
    have ``moves`` partitions moving at once, at ``at_s`` (the controller's clock), because ``reason``.

    ``mode`` (:data:`SLOW_START` or :data:`AVOIDANCE`) and ``ssthresh`` (the rate slow start stops
    at, ``None`` before the first breach) are the law's state, so a resumed run takes it up;
    ``p99_s``, ``limit_s`` (baseline + budget) and ``baseline_s`` are the figures behind it.

    >>> d = Decision(3, 1.0, 10_000_000, 20_000_000, 2, "slow-start: x2", SLOW_START)
    >>> Decision.from_dict({**d.to_dict(), "kind": "throttle-auto", "time": "..."}) == d
    True
    """

    broker: int
    at_s: float
    old_rate: int
    new_rate: int
    moves: int
    reason: str
    mode: str = AVOIDANCE
    ssthresh: int | None = None
    p99_s: float | None = None
    limit_s: float | None = None
    baseline_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (ints, floats, strings, nulls)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> "Decision":
        """Back from :meth:`to_dict` (fields it does not know, such as a record's ``kind``, are ignored)."""
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in value.items() if k in known}
        d["broker"], d["old_rate"], d["new_rate"], d["moves"] = (
            int(d["broker"]), int(d["old_rate"]), int(d["new_rate"]), int(d["moves"]))
        d["at_s"] = float(d["at_s"])
        if d.get("ssthresh") is not None:
            d["ssthresh"] = int(d["ssthresh"])
        return cls(**d)

    @property
    def rate_changed(self) -> bool:
        """A new rate to write to the broker's config."""
        return self.new_rate != self.old_rate
