"""What the adaptive throttle reads: client-visible latency, the baseline at rest, the budget, the rails.

All values, no I/O. Times are seconds on the caller's clock (the runner's monotonic clock); latencies
are seconds too and shown in milliseconds.

* :class:`LatencyWindow`: the canary's acks=all produce latency over one short window (its p99, the p99
  and the longest stall of the partitions each broker leads), or "no signal" when the canary was silent.
* :class:`Baseline`: the p99 measured at rest, before the first move.
* :class:`Budget` (``--latency-budget 50ms``, :func:`parse_budget`): how much the p99 may rise above
  the baseline: a window is within budget while its p99 <= baseline + budget.
* :class:`Health`: the rails, read from the cluster (partitions not being moved under min ISR or
  with followers behind, free disk per target broker) and two rates that bound the law (the inflow
  into the partitions a broker is copying, the rate its copy achieves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from migrate.core.canary import percentile
from migrate.errors import BadInput

MAX_BUDGET_S = 60.0
"""A budget above this protects no client: refused."""

_BUDGET = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s)\s*$")


def ms(seconds: float | None) -> str:
    """``0.0504`` -> ``"50 ms"``; ``2.4`` -> ``"2400 ms"`` (for reasons and messages)."""
    return "no p99" if seconds is None else f"{seconds * 1000:.0f} ms"


@dataclass(frozen=True)
class Budget:
    """How far the client-visible p99 may rise above the baseline, in seconds (> 0)."""

    seconds: float

    def __post_init__(self) -> None:
        if not 0 < self.seconds <= MAX_BUDGET_S:
            raise BadInput(f"--latency-budget {ms(self.seconds)}: give more than 0 and at most {MAX_BUDGET_S:.0f}s")


def parse_budget(text: str) -> Budget:
    """``--latency-budget``: ``"50ms"`` or ``"0.2s"`` -> :class:`Budget`. A number needs its unit.

    >>> parse_budget("50ms"), parse_budget("0.2s")
    (Budget(seconds=0.05), Budget(seconds=0.2))

    Raises :class:`BadInput` (one line) on anything else: no unit, another unit, zero, above a minute.
    """
    shown = str(text).strip()
    m = _BUDGET.match(shown)
    if not m:
        if re.fullmatch(r"[0-9]+(\.[0-9]*)?", shown):
            raise BadInput(f"--latency-budget {shown!r} has no unit: write e.g. 50ms or 0.2s")
        raise BadInput(f"--latency-budget {shown!r} is not a latency: write e.g. 50ms or 0.2s")
    value = float(m.group(1)) * (0.001 if m.group(2) == "ms" else 1.0)
    if value <= 0:
        raise BadInput(f"--latency-budget {shown!r} must be more than zero: write e.g. 50ms")
    if value > MAX_BUDGET_S:
        raise BadInput(f"--latency-budget {shown!r} is above {MAX_BUDGET_S:.0f}s: no client waits that long; "
                       "write e.g. 50ms or 0.2s")
    return Budget(round(value, 9))


@dataclass(frozen=True)
class Baseline:
    """The acks=all produce p99 at rest, measured before the first move (``samples`` acks, ending at ``at_s``)."""

    p99_s: float
    samples: int = 0
    at_s: float = 0.0

    @classmethod
    def from_latencies(cls, latencies_s: Iterable[float], at_s: float = 0.0) -> "Baseline":
        """The baseline of the acks' latencies measured at rest (BadInput when there are none).

        >>> Baseline.from_latencies([0.01] * 99 + [0.03]).p99_s
        0.01
        """
        values = sorted(latencies_s)
        if not values:
            raise BadInput("--throttle auto: the canary had no acknowledgement at rest, so no baseline p99: "
                           "check that it can write to the cluster")
        return cls(percentile(values, 0.99), len(values), at_s)


@dataclass(frozen=True)
class LatencyWindow:
    """The canary's acks over one window ending at ``at_s``.

    ``p99_s``: the p99 of every ack of the window (``None``, or ``samples == 0``: no signal: the canary
    was silent). ``p99_by_broker``: the p99 of the acks of the partitions each broker leads (only
    brokers that lead a canary partition). ``stall_by_broker``: the longest wait without any ack on
    a partition each broker leads, a wait still going on included (see ``migrate.core.canary``).
    ``stall_s``: the longest such wait on any partition, for a canary whose partitions' leaders are not
    known (the operator's, read from its report): it counts for every broker.
    """

    at_s: float
    p99_s: float | None
    samples: int = 0
    p99_by_broker: Mapping[int, float] = field(default_factory=dict)
    stall_by_broker: Mapping[int, float] = field(default_factory=dict)
    stall_s: float = 0.0  # the longest stall on any canary partition, when the leaders are not known (an operator's canary)

    @classmethod
    def silent(cls, at_s: float) -> "LatencyWindow":
        """No ack in the window: no signal."""
        return cls(at_s, None, 0)

    @classmethod
    def from_acks(cls, at_s: float, acks: Iterable[tuple[int, float]],
                  stall_by_broker: Mapping[int, float] | None = None) -> "LatencyWindow":
        """From the window's acks as (leader broker, latency seconds) pairs.

        >>> w = LatencyWindow.from_acks(5.0, [(1, 0.01), (1, 0.02), (2, 0.3)])
        >>> w.p99_s, dict(w.p99_by_broker), w.samples
        (0.3, {1: 0.02, 2: 0.3}, 3)
        """
        by: dict[int, list[float]] = {}
        every: list[float] = []
        for broker, latency in acks:
            by.setdefault(int(broker), []).append(latency)
            every.append(latency)
        every.sort()
        return cls(at_s, percentile(every, 0.99), len(every),
                   {b: percentile(sorted(v), 0.99) for b, v in sorted(by.items())}, dict(stall_by_broker or {}))

    @property
    def has_signal(self) -> bool:
        return self.samples > 0 and self.p99_s is not None

    def worst_for(self, broker: int) -> tuple[float, str]:
        """The latency that counts for ``broker`` and what it is: the highest of the window's p99, the
        p99 of the partitions the broker leads and their longest stall (a broker is held to the
        whole cluster's p99 too: an acks=all write waits on its followers, which may be elsewhere)."""
        worst, what = self.p99_s or 0.0, "p99"
        own = self.p99_by_broker.get(broker)
        if own is not None and own > worst:
            worst, what = own, f"p99 on broker {broker}'s partitions"
        stall = self.stall_by_broker.get(broker)
        if stall is not None and stall > worst:
            worst, what = stall, f"stall on broker {broker}'s partitions"
        if self.stall_s > worst:  # a canary that cannot say which broker led the partition: every broker
            worst, what = self.stall_s, "stall on a canary partition"
        return worst, what


@dataclass(frozen=True)
class Health:
    """The rails and bounds read from the cluster for one step (every field optional).

    * ``under_min_isr``: partitions *not being moved* under their min ISR (``"t-3"``): every broker
      stops raising and halves at once.
    * ``lagging``: partitions not being moved whose followers fall behind (ISR shrinks, lag growing):
      every broker stops raising.
    * ``free_disk_ratio``: broker -> usable / total bytes of its log dirs, for the target brokers:
      below :attr:`~migrate.core.throttle.law.Settings.disk_floor_ratio` the broker holds its rate
      and one move at a time; below half of it the rate halves.
    * ``inflow_bytes_per_s``: broker -> bytes/s produced into the partitions it is copying: the rate
      never goes below :attr:`~migrate.core.throttle.law.Settings.inflow_factor` times it (a copy
      slower than the inflow never catches up).
    * ``copied_bytes_per_s``: broker -> the rate its copies achieved: when it is far below the rate
      in force the throttle is not what limits the copy, so a move is added instead of rate.
    """

    under_min_isr: tuple[str, ...] = ()
    lagging: tuple[str, ...] = ()
    free_disk_ratio: Mapping[int, float] = field(default_factory=dict)
    inflow_bytes_per_s: Mapping[int, int] = field(default_factory=dict)
    copied_bytes_per_s: Mapping[int, int] = field(default_factory=dict)


def named(partitions: Iterable[str], most: int = 3) -> str:
    """``("t-3", "u-0")`` -> ``"t-3, u-0"``; more than ``most`` -> ``"a-0, a-1, a-2 and 4 more"``."""
    items = sorted(set(partitions))
    shown = ", ".join(items[:most])
    return shown if len(items) <= most else f"{shown} and {len(items) - most} more"
