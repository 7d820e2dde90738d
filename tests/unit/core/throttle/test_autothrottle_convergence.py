"""The adaptive throttle against a tiny simulated cluster (pure, deterministic): AIMD converges below the
budget and follows the traffic.

The model: the acks=all p99 of a window is 20 ms at rest and rises linearly once the replication rate
in force takes more than 40 % of what the brokers can carry (``capacity``), 1 ms per 1 % above that;
with a 50 ms budget the highest rate within budget (the knee) is 90 % of the capacity. Each window
measures the rate in force during it; the controller steps at its end, every 5 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from migrate.core.throttle.controller import Controller
from migrate.core.throttle.law import MB, Settings
from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow

WINDOW_S = 5.0
BASE_S = 0.020
BUDGET = Budget(0.050)
LIMIT_S = BASE_S + BUDGET.seconds


def p99_at(rate: float, capacity: float) -> float:
    return BASE_S + 0.100 * max(0.0, rate / capacity - 0.4)


def knee(capacity: float) -> float:
    return 0.9 * capacity


def above_knee(capacity: float) -> float:
    """The most the rate in force may overshoot the knee: one write (10 % of it, plus a step)."""
    return knee(capacity) * 1.1 + 5 * MB


@dataclass(frozen=True)
class Window:
    t: float
    rate: int  # in force during the window
    p99_s: float
    capacity: float

    @property
    def over(self) -> bool:
        return self.p99_s > LIMIT_S


def simulate(capacity: Callable[[float], float], windows: int, settings: Settings = Settings()) -> list[Window]:
    c = Controller(settings, Baseline(BASE_S), BUDGET, now_s=0.0)
    c.step(0.0, None, Health(), [1])
    out = []
    for i in range(1, windows + 1):
        t = i * WINDOW_S
        in_force = c.rates()[1]
        cap = capacity(t - WINDOW_S / 2)
        p99 = p99_at(in_force, cap)
        out.append(Window(t, in_force, p99, cap))
        c.step(t, LatencyWindow(t, p99, 100), Health(), [1])
    return out


def after_first_breach(trace: list[Window]) -> list[Window]:
    first = next(i for i, w in enumerate(trace) if w.over)
    return trace[first + 1:]


def longest_over(trace: list[Window]) -> int:
    """The most windows over budget in a row."""
    run = longest = 0
    for w in trace:
        run = run + 1 if w.over else 0
        longest = max(longest, run)
    return longest


def test_aimd_converges_below_the_budget_and_close_to_the_knee():
    cap = 100 * MB
    trace = simulate(lambda t: cap, windows=240)  # 20 minutes
    assert [w.rate // MB for w in trace[:8]] == [10, 10, 20, 20, 40, 40, 80, 80]  # slow start
    assert trace[8].rate == 160 * MB and trace[8].over  # the first breach ends it
    steady = after_first_breach(trace)
    # between half the knee and one write above it (a write moves the rate by more than 10 %: two steps here)
    assert all(0.45 * knee(cap) <= w.rate <= above_knee(cap) for w in steady), [w.rate // MB for w in steady]
    over = sum(w.over for w in steady)
    assert over / len(steady) <= 0.06, over  # one window over budget per sawtooth, about 20 windows each
    assert longest_over(steady) == 1  # never two windows in a row
    mean = sum(w.rate for w in steady) / len(steady)
    assert mean >= 0.7 * knee(cap), mean / MB  # about 3/4 of the best fixed rate, without being told it


def test_the_rate_follows_busy_and_quiet_stretches():
    def capacity(t: float) -> float:  # quiet 100 MB/s, busy 50 MB/s (the producers take the rest), 5 min each
        return 100 * MB if int(t // 300) % 2 == 0 else 50 * MB

    trace = simulate(capacity, windows=480)  # 40 minutes: four quiet and four busy stretches
    # a busy stretch begins at the top of a sawtooth: halved at once, and 10 s later again
    assert longest_over(after_first_breach(trace)) <= 3
    for start in range(300, 2400, 600):  # each busy stretch, after its first 30 s
        busy = [w for w in trace if start + 30 <= w.t < start + 300]
        assert all(w.rate <= above_knee(50 * MB) for w in busy), [w.rate // MB for w in busy]
        assert longest_over(busy) == 1  # then one window over budget per sawtooth
    for start in range(600, 2400, 600):  # each quiet stretch takes the room back by additive increase
        quiet = [w for w in trace if start <= w.t < start + 300]
        assert max(w.rate for w in quiet) >= 0.8 * knee(100 * MB), [w.rate // MB for w in quiet]


def test_the_simulation_is_deterministic():
    assert simulate(lambda t: 80 * MB, 100) == simulate(lambda t: 80 * MB, 100)
