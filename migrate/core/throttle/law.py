"""The law of the adaptive throttle, for one broker and one step: slow start, AIMD, the rails, the fail-safe.

:func:`advance` takes a broker's :class:`BrokerState` and what was seen (the latency window against
baseline + budget, the rails) and returns its next state and why. First rule that applies wins:

1. **Fail-safe**: no fresh latency window for longer than ``signal_timeout_s`` -> the minimum rate and
   moves at once, slow start again afterwards up to half the rate it had (as TCP after a timeout).
   Without a signal but within the timeout: hold.
2. **Under-min-ISR** on a partition not being moved -> x ``decrease`` at once (newly seen), then again
   each ``interval_s`` while it lasts; never raised meanwhile (with or without a latency signal).
3. **Over budget** (the p99, the broker's own p99 or a stall on its partitions above baseline +
   budget) -> x ``decrease`` (multiplicative decrease), moves halved, avoidance from then on. At once,
   even right after an increase (the window already saw it), but not within ``interval_s`` of the
   last decrease (a window that began before it would count the same harm twice).
4. **Free disk** of the broker below ``disk_floor_ratio`` -> hold, one move at a time; below half of
   it, x ``decrease`` too.
5. **Followers behind** on partitions not being moved -> hold.
6. **Throttle not binding** (the copy achieved less than ``not_binding_ratio`` of the rate) -> hold
   the rate, one more move.
7. **Within budget** -> slow start (x ``growth`` until the first breach, ``ssthresh`` or the
   maximum), then additive increase (+ ``increase_fraction`` of the rate at which the budget was last left,
   between the minimum throttle and ``increase_bytes_per_s``: :func:`additive_step`); one more move every
   ``increases_per_move`` such steps.

The rate never leaves [floor, ``max_rate``], the floor being ``min_rate`` or ``inflow_factor`` times
the inflow into the partitions the broker copies, whichever is higher. The law raises a broker at
most once per ``interval_s`` after any change and lowers it at most once per ``interval_s`` after a
decrease (urgent changes aside), and the rate *in force* (written to the broker) follows the law's
rate only when it moved by more than ``change_threshold``, reached a bound, or the change is urgent
(:func:`in_force`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from migrate.core.partitions.scheduler import DEFAULT_MAX_MOVES_PER_BROKER
from migrate.core.throttle.decisions import AVOIDANCE, SLOW_START
from migrate.core.throttle.signals import Health, LatencyWindow, ms, named
from migrate.core.units import MIN_THROTTLE_BYTES_PER_S, format_rate
from migrate.errors import BadInput

MB = 1_000_000


@dataclass(frozen=True)
class Settings:
    """The law's constants (rates in bytes/s, times in seconds). Defaults follow the checked notes:
    a window of about 5 s, so the law acts at most every 2 windows and calls the signal lost after 2."""

    start_rate: int = 10 * MB
    min_rate: int = MIN_THROTTLE_BYTES_PER_S
    max_rate: int = 1000 * MB
    growth: float = 2.0
    increase_bytes_per_s: int = 5 * MB
    increase_fraction: float = 0.10
    decrease: float = 0.5
    change_threshold: float = 0.10
    interval_s: float = 10.0
    signal_timeout_s: float = 10.0
    start_moves: int = 2
    min_moves: int = 1
    max_moves: int = DEFAULT_MAX_MOVES_PER_BROKER
    increases_per_move: int = 3
    disk_floor_ratio: float = 0.10
    inflow_factor: float = 1.5
    not_binding_ratio: float = 0.5

    def __post_init__(self) -> None:
        def fail(what: str) -> None:
            raise BadInput(f"--throttle auto: {what}")

        if self.min_rate < MIN_THROTTLE_BYTES_PER_S:
            fail(f"the minimum rate {format_rate(self.min_rate)} is below {format_rate(MIN_THROTTLE_BYTES_PER_S)}")
        if self.max_rate < self.min_rate:
            fail(f"the maximum rate {format_rate(self.max_rate)} is below the minimum {format_rate(self.min_rate)}")
        if not self.min_rate <= self.start_rate <= self.max_rate:
            fail(f"the starting rate {format_rate(self.start_rate)} is not between the minimum "
                 f"{format_rate(self.min_rate)} and the maximum {format_rate(self.max_rate)}")
        if (self.growth <= 1 or not 0 < self.decrease < 1 or self.increase_bytes_per_s <= 0
                or not 0 < self.increase_fraction <= 1):
            fail("slow start must grow (growth > 1), the decrease shrink (between 0 and 1), the increase be > 0 "
                 "(its fraction in (0, 1])")
        if not 0 <= self.change_threshold < 1 or self.interval_s < 0 or self.signal_timeout_s <= 0:
            fail("the change threshold must be in [0, 1), the interval >= 0 and the signal timeout > 0")
        if not 1 <= self.min_moves <= self.start_moves <= self.max_moves or self.increases_per_move < 1:
            fail(f"moves in flight: need 1 <= minimum ({self.min_moves}) <= start ({self.start_moves}) "
                 f"<= maximum ({self.max_moves})")

    def floor(self, inflow_bytes_per_s: int | None = None) -> int:
        """The lowest rate for a broker whose moving partitions take ``inflow_bytes_per_s`` of new data."""
        wanted = max(self.min_rate, math.ceil((inflow_bytes_per_s or 0) * self.inflow_factor))
        return min(self.max_rate, wanted)


@dataclass(frozen=True)
class BrokerState:
    """One broker under the law: the law's ``rate``, the rate ``applied`` (in force, written), the
    ``moves`` it may have in flight, the ``mode`` and ``ssthresh``, when the law last changed it
    (``changed_s``) and last lowered it (``lowered_s``), how many increases since the last decrease or added move, and whether the fail-safe holds it."""

    rate: int
    applied: int
    moves: int
    mode: str = SLOW_START
    ssthresh: int | None = None
    changed_s: float = -math.inf
    lowered_s: float = -math.inf
    increases: int = 0
    failsafe: bool = False


@dataclass(frozen=True)
class Seen:
    """What one step saw, for every broker: the fresh window (``None``: no signal), for how long no
    fresh window came, baseline + budget, the rails, and whether an under-min-ISR partition is new."""

    now_s: float
    window: LatencyWindow | None
    silent_for_s: float
    limit_s: float
    health: Health
    new_under_min_isr: bool = False


def in_force(old: BrokerState, new_rate: int, floor: int, settings: Settings, urgent: bool) -> int:
    """The rate to have in force: the law's ``new_rate`` when it differs from the rate applied by
    more than ``change_threshold``, reached a bound, or is urgent; else the rate applied stays."""
    if new_rate == old.applied or urgent or new_rate <= floor or new_rate >= settings.max_rate:
        return new_rate
    if abs(new_rate - old.applied) > settings.change_threshold * old.applied:
        return new_rate
    return old.applied


def advance(s: BrokerState, broker: int, seen: Seen, settings: Settings) -> tuple[BrokerState, str, bool]:
    """(next state, reason, urgent) for ``broker``. The state's ``applied`` is left to the caller
    (:func:`in_force`); ``urgent`` changes are written at once, whatever the threshold."""
    floor = settings.floor(seen.health.inflow_bytes_per_s.get(broker))
    if s.rate < floor:  # the inflow grew: the copy would never catch up below this
        inflow = seen.health.inflow_bytes_per_s.get(broker, 0)
        return (replace(s, rate=floor, changed_s=seen.now_s),
                f"inflow {format_rate(inflow)}: raised to the floor {format_rate(floor)}", True)
    if seen.window is None and seen.silent_for_s > settings.signal_timeout_s:
        return _silent(s, seen, settings, floor)
    acting = seen.now_s - s.changed_s >= settings.interval_s
    lowering = seen.now_s - s.lowered_s >= settings.interval_s
    health = seen.health
    if health.under_min_isr:  # read from the cluster: acts with or without a latency signal
        why = f"under-min-ISR on {named(health.under_min_isr)}"
        if seen.new_under_min_isr or lowering:
            return _decrease(s, seen, settings, floor, why, moves=settings.min_moves) + (seen.new_under_min_isr,)
        return s, f"{why}: hold", False
    if seen.window is None:
        return _silent(s, seen, settings, floor)
    if s.failsafe:
        s = replace(s, failsafe=False)
    worst, what = seen.window.worst_for(broker)
    if worst > seen.limit_s:
        why = f"{what} {ms(worst)} over budget {ms(seen.limit_s)}"
        return (_decrease(s, seen, settings, floor, why) if lowering else (s, f"{why}: hold (lowered recently)")) + (False,)
    disk = health.free_disk_ratio.get(broker)
    if disk is not None and disk < settings.disk_floor_ratio:
        why = f"free disk {disk:.0%} on broker {broker}, below {settings.disk_floor_ratio:.0%}"
        if disk < settings.disk_floor_ratio / 2 and lowering:
            return _decrease(s, seen, settings, floor, why, moves=settings.min_moves) + (False,)
        return replace(s, moves=settings.min_moves, increases=0), f"{why}: hold, one move at a time", False
    if health.lagging:
        return replace(s, increases=0), f"followers behind on {named(health.lagging)}: hold", False
    if not acting:
        return s, f"within budget ({what} {ms(worst)} of {ms(seen.limit_s)})", False
    copied = health.copied_bytes_per_s.get(broker)
    if copied is not None and copied < s.applied * settings.not_binding_ratio:
        why = f"copying {format_rate(copied)} of {format_rate(s.applied)}: the throttle does not bind"
        if s.moves < settings.max_moves:
            return replace(s, moves=s.moves + 1, increases=0, changed_s=seen.now_s), f"{why}: +1 move", False
        return s, f"{why}: hold", False
    return _increase(s, seen, settings, f"within budget ({what} {ms(worst)} of {ms(seen.limit_s)})") + (False,)


def _silent(s: BrokerState, seen: Seen, settings: Settings, floor: int) -> tuple[BrokerState, str, bool]:
    """No fresh latency window: hold within the timeout, then the fail-safe (once)."""
    silent = f"no latency signal for {seen.silent_for_s:.0f} s"
    if seen.silent_for_s <= settings.signal_timeout_s:
        return s, f"{silent}: hold", False
    if s.failsafe:
        return s, f"{silent}: fail-safe at the minimum", False
    state = replace(s, rate=floor, moves=settings.min_moves, mode=SLOW_START, ssthresh=max(floor, s.rate // 2),
                    changed_s=seen.now_s, lowered_s=seen.now_s, increases=0, failsafe=True)
    return state, f"signal lost ({silent}, timeout {settings.signal_timeout_s:.0f} s): fail-safe to the minimum", True


def _decrease(s: BrokerState, seen: Seen, settings: Settings, floor: int, why: str,
              moves: int | None = None) -> tuple[BrokerState, str]:
    """Multiplicative decrease: x ``decrease`` (not below the floor), fewer moves, avoidance."""
    rate = max(floor, int(s.rate * settings.decrease))
    fewer = max(settings.min_moves, s.moves // 2 if moves is None else moves)
    state = replace(s, rate=rate, moves=fewer, mode=AVOIDANCE, ssthresh=rate, changed_s=seen.now_s,
                    lowered_s=seen.now_s, increases=0)
    if rate == s.rate and fewer == s.moves:
        return state, f"{why}: at the minimum"
    return state, f"{why}: x{settings.decrease:g}"


def _increase(s: BrokerState, seen: Seen, settings: Settings, why: str) -> tuple[BrokerState, str]:
    """Slow start (x ``growth`` up to ``ssthresh`` or the maximum) or additive increase; a move
    more every ``increases_per_move`` steps within budget."""
    increases, moves = s.increases + 1, s.moves
    if increases >= settings.increases_per_move and moves < settings.max_moves:
        increases, moves = 0, moves + 1
    more = ", +1 move" if moves > s.moves else ""
    if s.rate >= settings.max_rate:
        state = replace(s, rate=settings.max_rate, moves=moves, mode=AVOIDANCE, increases=increases,
                        changed_s=seen.now_s)
        return state, f"{why}: at the maximum {format_rate(settings.max_rate)}{more}"
    if s.mode == SLOW_START:
        cap = s.ssthresh if s.ssthresh is not None and s.ssthresh > s.rate else settings.max_rate
        rate = min(settings.max_rate, cap, int(s.rate * settings.growth))
        mode = AVOIDANCE if rate >= cap else SLOW_START
        state = replace(s, rate=rate, moves=moves, mode=mode, changed_s=seen.now_s, increases=increases)
        return state, f"slow-start, {why}: x{settings.growth:g}{more}"
    rate = min(settings.max_rate, s.rate + additive_step(s, settings))
    state = replace(s, rate=rate, moves=moves, changed_s=seen.now_s, increases=increases)
    return state, f"{why}: +{format_rate(rate - s.rate)}{more}"


def additive_step(s: BrokerState, settings: Settings) -> int:
    """The additive increase of a broker in avoidance: ``increase_fraction`` of the rate at which it last left the
    budget (``ssthresh / decrease``), between the minimum throttle and ``increase_bytes_per_s``. A broker that
    leaves the budget at 9 MB/s climbs back by 1 MB/s a step, not by 5 (which took it from 4.5 past 9 in one step,
    over the budget every other window); one that left it at 50 MB/s or more, by the full step.

    >>> st = Settings()
    >>> additive_step(BrokerState(4_500_000, 4_500_000, 1, AVOIDANCE, ssthresh=4_500_000), st)
    1000000
    >>> additive_step(BrokerState(50 * MB, 50 * MB, 1, AVOIDANCE, ssthresh=50 * MB), st)
    5000000
    >>> additive_step(BrokerState(12 * MB, 12 * MB, 1, AVOIDANCE, ssthresh=12 * MB), st)
    2400000
    >>> additive_step(BrokerState(10 * MB, 10 * MB, 1, AVOIDANCE), st)  # no breach yet: the full step
    5000000
    """
    if s.ssthresh is None:
        return settings.increase_bytes_per_s
    left_at = s.ssthresh / settings.decrease
    return int(min(settings.increase_bytes_per_s, max(MIN_THROTTLE_BYTES_PER_S, left_at * settings.increase_fraction)))
