"""The adaptive throttle's controller: every broker under the law, one step per latency window.

Pure: the caller reads the clock and passes ``now_s`` (monotonic seconds) to every call; nothing
here sleeps, reads or writes. What the caller does with a step's :class:`Decision` values (write
the rates, cap the moves, record and show the decisions) is the runner's.

>>> from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow
>>> c = Controller(Settings(), Baseline(0.020), Budget(0.050), now_s=0.0)
>>> [(d.broker, d.new_rate, d.moves) for d in c.step(0.0, None, Health(), brokers=[4])]
[(4, 10000000, 2)]
>>> [(d.new_rate, d.reason) for d in c.step(10.0, LatencyWindow(10.0, 0.025, 50), Health(), [4])]
[(20000000, 'slow-start, within budget (p99 25 ms of 70 ms): x2')]
>>> [(d.new_rate, d.reason) for d in c.step(20.0, LatencyWindow(20.0, 0.090, 50), Health(), [4])]
[(10000000, 'p99 90 ms over budget 70 ms: x0.5')]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from migrate.core.throttle.decisions import AVOIDANCE, SLOW_START, Decision
from migrate.core.throttle.law import BrokerState, Seen, Settings, advance, in_force
from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow
from migrate.core.units import format_rate


class Controller:
    """The rate and moves in flight of every broker taking part, steered on client-visible latency.

    Start one with the :class:`Settings`, the :class:`Baseline` measured at rest and the
    :class:`Budget` (``Controller(settings, baseline, budget, now_s)``), or :meth:`resume` one from
    the decisions a previous run recorded. Then call :meth:`step` once per latency window."""

    def __init__(self, settings: Settings, baseline: Baseline, budget: Budget, now_s: float):
        self.settings = settings
        self.baseline = baseline
        self.budget = budget
        self.states: dict[int, BrokerState] = {}
        self.why: dict[int, str] = {}  # broker -> the reason of its last step, changed or not (for status)
        self._last_signal_s = now_s  # the start counts as a signal: the fail-safe waits a timeout first
        self._under_min_isr: frozenset[str] = frozenset()
        self._resumed: dict[int, str] = {}  # broker -> the reason of its first decision after resume

    @property
    def limit_s(self) -> float:
        """The highest p99 within budget: baseline + budget."""
        return self.baseline.p99_s + self.budget.seconds

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(cls, settings: Settings, baseline: Baseline, budget: Budget, now_s: float,
               recorded: Iterable[Decision | Mapping[str, Any]]) -> "Controller":
        """A controller that continues from the last decision recorded per broker (in order; dicts
        as :meth:`Decision.to_dict` or a bookkeeping record's value): its rate and moves (within
        today's settings), in avoidance, or in slow start when the last decision left it below its
        ``ssthresh`` (after a fail-safe). Brokers without a record start as new ones. The first
        :meth:`step` gives each resumed broker a decision with its rate, to write and record."""
        c = cls(settings, baseline, budget, now_s)
        last: dict[int, Decision] = {}
        for r in recorded:
            d = r if isinstance(r, Decision) else Decision.from_dict(r)
            last[d.broker] = d
        for b, d in sorted(last.items()):
            rate = min(settings.max_rate, max(settings.min_rate, d.new_rate))
            moves = min(settings.max_moves, max(settings.min_moves, d.moves))
            below = d.ssthresh is not None and rate < d.ssthresh
            c.states[b] = BrokerState(rate=rate, applied=rate, moves=moves, mode=SLOW_START if below else AVOIDANCE,
                                      ssthresh=min(settings.max_rate, d.ssthresh) if below else rate, changed_s=now_s)
            c._resumed[b] = f"resumed at {format_rate(rate)}, the last rate recorded"
        return c

    # -------------------------------------------------------------------- step
    def step(self, now_s: float, window: LatencyWindow | None, health: Health,
             brokers: Iterable[int]) -> list[Decision]:
        """One step for ``brokers`` (those taking part in a move now; others keep their state, no
        decision): the latest ``window`` (``None`` or silent: no signal) and the ``health`` read now.
        Returns the decisions, one per broker whose rate in force or moves changed, by broker."""
        fresh = window if window is not None and window.has_signal and \
            now_s - window.at_s <= self.settings.signal_timeout_s else None
        if fresh is not None:
            self._last_signal_s = max(self._last_signal_s, fresh.at_s)
        isr = frozenset(health.under_min_isr)
        seen = Seen(now_s, fresh, max(0.0, now_s - self._last_signal_s), self.limit_s, health,
                    new_under_min_isr=bool(isr - self._under_min_isr))
        self._under_min_isr = isr
        out = []
        for b in sorted(set(brokers)):
            decision = self._step_broker(b, seen)
            if decision is not None:
                out.append(decision)
        return out

    def _step_broker(self, broker: int, seen: Seen) -> Decision | None:
        if broker not in self.states:
            state, why = self._join(broker, seen.now_s)
            self.states[broker] = state
            return self._decision(broker, seen, state, why)
        old = self.states[broker]
        if broker in self._resumed:
            why = self._resumed.pop(broker)
            return self._decision(broker, seen, old, why)
        new, why, urgent = advance(old, broker, seen, self.settings)
        floor = self.settings.floor(seen.health.inflow_bytes_per_s.get(broker))
        applied = in_force(old, new.rate, floor, self.settings, urgent)
        if applied != new.rate:
            why += f" (law at {format_rate(new.rate)}: within the {self.settings.change_threshold:.0%} change threshold)"
        new = replace(new, applied=applied)
        self.states[broker] = new
        return self._decision(broker, seen, new, why, old)

    def _join(self, broker: int, now_s: float) -> tuple[BrokerState, str]:
        """A broker's first state: slow start from ``start_rate`` while no broker has left it;
        else the lowest rate in force, in avoidance (what the cluster has shown it can take)."""
        st = self.settings
        others = list(self.states.values())
        if not others or all(s.mode == SLOW_START and s.ssthresh is None for s in others):
            return (BrokerState(st.start_rate, st.start_rate, st.start_moves, SLOW_START, changed_s=now_s),
                    f"start: slow-start from {format_rate(st.start_rate)}")
        low = min(s.applied for s in others)
        moves = min(s.moves for s in others)
        return (BrokerState(low, low, moves, AVOIDANCE, ssthresh=low, changed_s=now_s),
                f"joins at {format_rate(low)}, the lowest rate in force")

    def _decision(self, broker: int, seen: Seen, new: BrokerState, why: str,
                  old: BrokerState | None = None) -> Decision | None:
        """The decision that takes ``broker`` from ``old`` to ``new`` (``None``: nothing in force changed);
        without ``old`` (a broker joins or is resumed) always one, its old rate the new one."""
        self.why[broker] = why
        if old is not None and old.applied == new.applied and old.moves == new.moves:
            return None
        p99 = None if seen.window is None else seen.window.worst_for(broker)[0]
        return Decision(broker, seen.now_s, new.applied if old is None else old.applied, new.applied, new.moves,
                        why, new.mode, new.ssthresh, p99, self.limit_s, self.baseline.p99_s)

    # ------------------------------------------------------------------ read
    def rates(self) -> dict[int, int]:
        """Broker -> the rate in force (bytes/s), every broker the controller knows."""
        return {b: s.applied for b, s in sorted(self.states.items())}

    def moves(self) -> dict[int, int]:
        """Broker -> the partitions it may have moving at once."""
        return {b: s.moves for b, s in sorted(self.states.items())}

    def silent_for(self, now_s: float) -> float:
        """Seconds since the last fresh latency window (or the start)."""
        return max(0.0, now_s - self._last_signal_s)
