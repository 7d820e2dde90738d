"""The adaptive throttle's law and controller (core/throttle/law.py, controller.py): slow start, AIMD, the
moves in flight, the change threshold, the fail-safe, each rail, resuming at the recorded rate.

The clock is a number: every step is given its ``now``. Baseline 20 ms + budget 50 ms: the limit is 70 ms.
"""

from __future__ import annotations

import json

import pytest

from migrate.core.throttle.controller import Controller
from migrate.core.throttle.decisions import AVOIDANCE, SLOW_START, Decision
from migrate.core.throttle.law import MB, Settings
from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow
from migrate.core.units import format_rate

BASE, BUDGET = Baseline(0.020), Budget(0.050)
OK, OVER = 0.030, 0.100


def window(t: float, p99: float = OK, **kw) -> LatencyWindow:
    return LatencyWindow(t, p99, 100, **kw)


def started(brokers=(1,), **settings) -> Controller:
    c = Controller(Settings(**settings), BASE, BUDGET, now_s=0.0)
    first = c.step(0.0, None, Health(), brokers)
    assert [(d.broker, d.old_rate, d.new_rate, d.moves, d.mode) for d in first] == [
        (b, c.settings.start_rate, c.settings.start_rate, c.settings.start_moves, SLOW_START) for b in brokers]
    assert all(d.reason == f"start: slow-start from {format_rate(c.settings.start_rate)}" for d in first)
    return c


def step(c: Controller, t: float, p99: float = OK, health: Health = Health(), brokers=(1,), **kw) -> list[Decision]:
    return c.step(t, window(t, p99, **kw), health, brokers)


def rate(c: Controller, broker: int = 1) -> int:
    return c.rates()[broker]


# ---------------------------------------------------------------------------------------------- the law
def test_slow_start_doubles_every_interval_until_the_maximum():
    c = started(max_rate=100 * MB)
    trace = []
    for t in range(5, 61, 5):  # a window every 5 s; the law acts every 10 s (interval_s)
        for d in step(c, t):
            trace.append((t, d.old_rate // MB, d.new_rate // MB, d.mode))
    assert trace[:4] == [(10, 10, 20, SLOW_START), (20, 20, 40, SLOW_START), (30, 40, 80, SLOW_START),
                         (40, 80, 100, AVOIDANCE)]
    assert rate(c) == 100 * MB and "at the maximum 100 MB/s" in c.why[1]


def test_first_breach_ends_slow_start_then_additive_increase():
    c = started()
    for t in (10, 20, 30):
        step(c, t)
    assert rate(c) == 80 * MB
    [d] = step(c, 40, p99=OVER)
    assert (d.old_rate, d.new_rate, d.mode, d.ssthresh) == (80 * MB, 40 * MB, AVOIDANCE, 40 * MB)
    assert d.reason == "p99 100 ms over budget 70 ms: x0.5"
    assert (d.p99_s, d.limit_s, d.baseline_s) == (OVER, pytest.approx(0.070), 0.020)
    [d] = step(c, 50)
    assert (d.new_rate, d.reason) == (45 * MB, "within budget (p99 30 ms of 70 ms): +5 MB/s")
    [d] = step(c, 60)
    assert d.new_rate == 50 * MB  # additive, not doubling


def test_budget_is_relative_to_the_baseline():
    c = Controller(Settings(), Baseline(0.300), BUDGET, now_s=0.0)  # a slow cluster at rest: limit 350 ms
    c.step(0.0, None, Health(), [1])
    [d] = c.step(10.0, window(10.0, 0.340), Health(), [1])
    assert d.new_rate == 20 * MB
    [d] = c.step(20.0, window(20.0, 0.360), Health(), [1])
    assert d.new_rate == 10 * MB and d.reason == "p99 360 ms over budget 350 ms: x0.5"


def test_raises_wait_an_interval_lowering_waits_only_after_lowering():
    c = started()
    assert step(c, 5) == [] and "within budget" in c.why[1]  # 5 s after the start: too soon to raise
    [d] = step(c, 10)
    assert d.new_rate == 20 * MB
    [d] = step(c, 15, p99=OVER)  # 5 s after a raise: lowered at once (that window saw the raise)
    assert d.new_rate == 10 * MB
    assert step(c, 20, p99=OVER) == []  # 5 s after lowering: that window began before it
    assert c.why[1] == "p99 100 ms over budget 70 ms: hold (lowered recently)"
    [d] = step(c, 25, p99=OVER)
    assert d.new_rate == 5 * MB
    assert step(c, 30) == []
    [d] = step(c, 35)  # it left the budget at 10 MB/s: a tenth of that a step
    assert d.new_rate == 6 * MB and d.reason == "within budget (p99 30 ms of 70 ms): +1 MB/s"


def test_moves_follow_the_rate():
    c = started(max_moves=4)
    moves = []
    for t in range(10, 101, 10):  # 10 increases within budget
        step(c, t)
        moves.append(c.moves()[1])
    assert moves == [2, 2, 3, 3, 3, 4, 4, 4, 4, 4]  # one more every 3 increases, up to the maximum
    [d] = step(c, 110, p99=OVER)
    assert d.moves == 2  # halved with the rate
    [d] = step(c, 120, p99=OVER)
    assert d.moves == 1
    step(c, 130, p99=OVER)
    assert c.moves()[1] == 1  # never below the minimum


def test_the_rate_never_goes_below_the_minimum():
    c = started(min_rate=4 * MB)
    for t in (10, 20, 30, 40):
        step(c, t, p99=OVER)
    assert rate(c) == 4 * MB
    assert c.why[1] == "p99 100 ms over budget 70 ms: at the minimum"


def test_change_threshold_keeps_small_steps_out_of_the_config():
    c = started(start_rate=100 * MB, change_threshold=0.10, start_moves=1, max_moves=1)  # the rate alone
    step(c, 10, p99=OVER)  # 100 -> 50, avoidance: +5 MB/s a step from now on
    assert step(c, 20) == []  # 50 -> 55 is not more than 10 %: the law moves, the config does not
    assert rate(c) == 50 * MB and c.states[1].rate == 55 * MB
    assert c.why[1] == "within budget (p99 30 ms of 70 ms): +5 MB/s (law at 55 MB/s: within the 10% change threshold)"
    [d] = step(c, 30)
    assert (d.old_rate, d.new_rate) == (50 * MB, 60 * MB)  # the law's rate, once far enough
    assert step(c, 40) == []
    [d] = step(c, 50)
    assert (d.old_rate, d.new_rate) == (60 * MB, 70 * MB)


def test_change_threshold_never_hides_a_bound():
    c = started(start_rate=95 * MB, max_rate=100 * MB, change_threshold=0.5)
    [d] = step(c, 10)
    assert d.new_rate == 100 * MB  # 5 %, but the maximum


# ---------------------------------------------------------------------------------------------- fail-safe
def test_signal_lost_falls_back_to_the_minimum_then_slow_starts_to_half_the_rate():
    c = started(signal_timeout_s=10)
    for t in (10, 20, 30):
        step(c, t)
    assert rate(c) == 80 * MB and c.moves()[1] == 3
    assert c.step(35, LatencyWindow.silent(35), Health(), [1]) == []  # 5 s without signal: hold
    assert c.why[1] == "no latency signal for 5 s: hold"
    assert c.step(40, None, Health(), [1]) == []  # exactly the timeout: still hold
    [d] = c.step(42, None, Health(), [1])  # acts at once, whatever the interval
    assert (d.old_rate, d.new_rate, d.moves, d.mode, d.ssthresh) == (80 * MB, 1 * MB, 1, SLOW_START, 40 * MB)
    assert d.reason.startswith("signal lost (no latency signal for 12 s, timeout 10 s): fail-safe to the minimum")
    assert d.p99_s is None
    assert c.step(60, None, Health(), [1]) == []  # no decision while it stays lost
    assert c.silent_for(60) == 30
    trace = [d.new_rate // MB for t in range(70, 150, 10) for d in step(c, t)]
    assert trace[:6] == [2, 4, 8, 16, 32, 40]  # slow start, up to half the rate it had
    assert c.states[1].mode == AVOIDANCE


def test_a_stale_window_is_no_signal():
    c = started(signal_timeout_s=10)
    old = window(4.0)
    c.step(10, old, Health(), [1])
    [d] = c.step(16, old, Health(), [1])  # the same window, 12 s old: lost
    assert d.new_rate == 1 * MB and d.reason.startswith("signal lost")


def test_before_the_first_window_the_start_counts_as_signal():
    c = started(signal_timeout_s=10)
    assert c.step(9, None, Health(), [1]) == []
    [d] = c.step(11, None, Health(), [1])
    assert d.reason.startswith("signal lost")


# ---------------------------------------------------------------------------------------------- the rails
def test_under_min_isr_halves_at_once_and_stops_raising():
    c = started(brokers=(1, 2))
    step(c, 10, brokers=(1, 2))  # both 20 MB/s
    hurt = Health(under_min_isr=("t-3",))
    ds = step(c, 12, health=hurt, brokers=(1, 2))  # 2 s after a change: at once anyway
    assert [(d.broker, d.new_rate, d.moves) for d in ds] == [(1, 10 * MB, 1), (2, 10 * MB, 1)]
    assert ds[0].reason == "under-min-ISR on t-3: x0.5"
    assert step(c, 17, health=hurt, brokers=(1, 2)) == []  # still there: no raise, no second halving yet
    assert c.why[1] == "under-min-ISR on t-3: hold"
    ds = step(c, 18, health=Health(under_min_isr=("t-3", "u-0")), brokers=(1, 2))  # a new one: at once
    assert [d.new_rate for d in ds] == [5 * MB, 5 * MB] and ds[0].reason == "under-min-ISR on t-3, u-0: x0.5"
    [d, _] = step(c, 28, health=Health(under_min_isr=("t-3", "u-0")), brokers=(1, 2))  # lasts an interval
    assert d.new_rate == 2_500_000
    [d, _] = step(c, 38, brokers=(1, 2))  # gone: raising again
    assert d.new_rate == 3_500_000 and d.mode == AVOIDANCE  # lowered from 5 MB/s: +1 MB/s (the minimum step)


def test_low_disk_on_a_target_holds_that_broker_only():
    c = started(brokers=(1, 2))
    step(c, 10, brokers=(1, 2))
    low = Health(free_disk_ratio={2: 0.08, 1: 0.5})
    ds = step(c, 20, health=low, brokers=(1, 2))
    assert [(d.broker, d.new_rate, d.moves) for d in ds] == [(1, 40 * MB, 2), (2, 20 * MB, 1)]
    assert ds[1].reason == "free disk 8% on broker 2, below 10%: hold, one move at a time"
    ds = step(c, 30, health=Health(free_disk_ratio={2: 0.04}), brokers=(1, 2))  # below half the floor: lower
    assert [(d.broker, d.new_rate) for d in ds] == [(1, 80 * MB), (2, 10 * MB)]
    assert ds[1].reason == "free disk 4% on broker 2, below 10%: x0.5"


def test_followers_behind_stop_raising():
    c = started()
    step(c, 10)
    behind = Health(lagging=("u-0", "u-1"))
    assert step(c, 20, health=behind) == [] and step(c, 30, health=behind) == []
    assert rate(c) == 20 * MB and c.why[1] == "followers behind on u-0, u-1: hold"
    [d] = step(c, 40, p99=OVER, health=behind)  # a breach still lowers it
    assert d.new_rate == 10 * MB


def test_the_rate_stays_above_the_inflow():
    c = started(brokers=(1,), start_rate=20 * MB)
    inflow = Health(inflow_bytes_per_s={1: 10 * MB})  # floor 15 MB/s
    [d] = step(c, 10, p99=OVER, health=inflow)
    assert d.new_rate == 15 * MB
    more = Health(inflow_bytes_per_s={1: 20 * MB})  # the inflow grew: up to the floor at once
    [d] = step(c, 12, p99=OVER, health=more)
    assert (d.new_rate, d.reason) == (30 * MB, "inflow 20 MB/s: raised to the floor 30 MB/s")


def test_a_throttle_that_does_not_bind_adds_a_move_not_rate():
    c = started()
    step(c, 10)  # 20 MB/s
    slow_copy = Health(copied_bytes_per_s={1: 3 * MB})
    [d] = step(c, 20, health=slow_copy)
    assert (d.old_rate, d.new_rate, d.moves) == (20 * MB, 20 * MB, 3)
    assert d.reason == "copying 3 MB/s of 20 MB/s: the throttle does not bind: +1 move"
    [d] = step(c, 30, health=Health(copied_bytes_per_s={1: 18 * MB}))  # binding again: rate
    assert d.new_rate == 40 * MB


def test_a_stall_on_one_brokers_partitions_lowers_that_broker():
    c = started(brokers=(1, 2, 3))
    step(c, 10, brokers=(1, 2, 3))
    ds = step(c, 20, brokers=(1, 2, 3), stall_by_broker={2: 1.2}, p99_by_broker={3: 0.069})
    assert [(d.broker, d.new_rate) for d in ds] == [(1, 40 * MB), (2, 10 * MB), (3, 40 * MB)]
    assert ds[1].reason == "stall on broker 2's partitions 1200 ms over budget 70 ms: x0.5"


def test_a_broker_joining_after_a_breach_starts_at_the_lowest_rate():
    c = started(brokers=(1,))
    step(c, 10)
    step(c, 20, p99=OVER)  # 10 MB/s, avoidance
    [d] = step(c, 25, brokers=(1, 5))
    assert (d.broker, d.new_rate, d.mode, d.reason) == (5, 10 * MB, AVOIDANCE, "joins at 10 MB/s, the lowest rate in force")
    c2 = started(brokers=(1,))
    step(c2, 10)
    [d] = step(c2, 15, brokers=(1, 5))  # nobody breached yet: slow start from the start
    assert (d.new_rate, d.mode) == (10 * MB, SLOW_START)


def test_brokers_not_taking_part_keep_their_state_silently():
    c = started(brokers=(1, 2))
    step(c, 10, brokers=(1, 2))
    assert [d.broker for d in step(c, 20, brokers=(1,))] == [1]
    assert c.rates() == {1: 40 * MB, 2: 20 * MB}


# ---------------------------------------------------------------------------------------------- resume
def recorded_run() -> list[dict]:
    """The decisions of a run, as they come back from the bookkeeping topic (JSON)."""
    c = started(brokers=(1, 2))
    out = []
    for t, p99 in ((10, OK), (20, OK), (30, OK), (40, OVER), (50, OK)):
        out += [json.loads(json.dumps(d.to_dict())) for d in step(c, t, p99=p99, brokers=(1, 2))]
    out += [json.loads(json.dumps(d.to_dict())) for d in step(c, 60, brokers=(1,), stall_by_broker={1: 3.0})]
    assert c.rates() == {1: 22_500_000, 2: 45 * MB}
    return out


def test_resume_continues_at_the_last_recorded_rate():
    records = recorded_run()
    c = Controller.resume(Settings(), BASE, BUDGET, now_s=1000.0, recorded=records)
    assert c.rates() == {1: 22_500_000, 2: 45 * MB}
    ds = c.step(1000.0, None, Health(), [1, 2, 3])  # first step: the resumed rates, to write and record
    assert [(d.broker, d.old_rate, d.new_rate, d.mode) for d in ds] == [
        (1, 22_500_000, 22_500_000, AVOIDANCE), (2, 45 * MB, 45 * MB, AVOIDANCE), (3, 22_500_000, 22_500_000, AVOIDANCE)]
    assert ds[0].reason == "resumed at 22.5 MB/s, the last rate recorded"
    assert ds[2].reason == "joins at 22.5 MB/s, the lowest rate in force"
    assert c.step(1005.0, window(1005.0), Health(), [1, 2]) == []  # an interval after the resume first
    ds = c.step(1010.0, window(1010.0), Health(), [1, 2])
    # additive, not slow start from 10 MB/s: broker 1 left the budget at 45 MB/s (+4.5), broker 2 at 90 or more (+5)
    assert [d.new_rate for d in ds] == [27 * MB, 50 * MB]


def test_resume_after_a_fail_safe_slow_starts_to_where_it_was():
    c = started()
    for t in (10, 20, 30):
        step(c, t)
    [lost] = c.step(45, None, Health(), [1])
    r = Controller.resume(Settings(), BASE, BUDGET, now_s=0.0, recorded=[lost.to_dict()])
    r.step(0.0, None, Health(), [1])
    trace = [d.new_rate // MB for t in range(10, 80, 10) for d in r.step(t, window(t), Health(), [1])]
    assert trace[:7] == [2, 4, 8, 16, 32, 40, 45]


def test_resume_keeps_within_todays_settings():
    records = [Decision(1, 5.0, 10 * MB, 400 * MB, 9, "x").to_dict(), Decision(2, 5.0, 10 * MB, 2 * MB, 1, "y")]
    c = Controller.resume(Settings(max_rate=100 * MB, min_rate=3 * MB, max_moves=4), BASE, BUDGET, 0.0, records)
    assert c.rates() == {1: 100 * MB, 2: 3 * MB} and c.moves() == {1: 4, 2: 1}


def test_resume_without_records_is_a_start():
    c = Controller.resume(Settings(), BASE, BUDGET, now_s=0.0, recorded=[])
    [d] = c.step(0.0, None, Health(), [1])
    assert d.reason == "start: slow-start from 10 MB/s"


def test_under_min_isr_acts_without_a_latency_signal_but_the_fail_safe_comes_first():
    c = started(signal_timeout_s=10)
    step(c, 10)  # 20 MB/s
    [d] = c.step(14, None, Health(under_min_isr=("t-3",)), [1])  # the canary is silent: the rail still acts
    assert (d.new_rate, d.reason) == (10 * MB, "under-min-ISR on t-3: x0.5")
    [d] = c.step(22, None, Health(under_min_isr=("t-3",)), [1])  # 12 s without a window: the fail-safe
    assert d.new_rate == 1 * MB and d.reason.startswith("signal lost")
    assert c.step(40, None, Health(under_min_isr=("t-3", "u-1")), [1]) == []  # held at the minimum


def test_the_additive_step_is_a_tenth_of_where_the_budget_was_left_between_1_and_5_mb_s():
    c = started(start_rate=8 * MB)
    [d] = step(c, 10, p99=OVER)  # left at 8 MB/s: 4 MB/s, then +1 MB/s a step (a tenth of 8, at least 1)
    assert d.new_rate == 4 * MB
    assert [step(c, t)[0].new_rate for t in (20, 30, 40)] == [5 * MB, 6 * MB, 7 * MB]
    [d] = step(c, 45, p99=OVER)  # left at 7 MB/s: 3.5, +1 a step
    assert d.new_rate == 3_500_000 and step(c, 55)[0].new_rate == 4_500_000
    big = started(start_rate=200 * MB, max_rate=400 * MB)
    step(big, 10, p99=OVER)  # left at 200 MB/s: 100, the full +5 MB/s a step
    step(big, 20)
    assert big.states[1].rate == 105 * MB  # the law's rate (within the change threshold: not written yet)
