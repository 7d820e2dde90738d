"""The adaptive throttle's signal types (core/throttle/signals.py): the budget, the baseline, latency windows."""

from __future__ import annotations

import doctest
import json

import pytest

from migrate.core.throttle import controller, decisions, law, signals
from migrate.core.throttle.decisions import AVOIDANCE, Decision
from migrate.core.throttle.law import MB, Settings
from migrate.core.throttle.signals import Baseline, Budget, LatencyWindow, named, parse_budget
from migrate.errors import BadInput


def test_doctests():
    for module in (signals, law, decisions, controller):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.parametrize("text, seconds", [("50ms", 0.05), ("0.2s", 0.2), (" 200 ms ", 0.2), ("1s", 1.0),
                                           ("2.5ms", 0.0025), (".5s", 0.5), ("60s", 60.0)])
def test_budgets_parse(text, seconds):
    assert parse_budget(text) == Budget(seconds)


@pytest.mark.parametrize("text, says", [
    ("50", "has no unit: write e.g. 50ms or 0.2s"),
    ("0.2", "has no unit"),
    ("fast", "is not a latency: write e.g. 50ms or 0.2s"),
    ("", "is not a latency"),
    ("-5ms", "is not a latency"),
    ("5m", "is not a latency"),
    ("50us", "is not a latency"),
    ("50 ms 2", "is not a latency"),
    ("0ms", "must be more than zero"),
    ("0.0s", "must be more than zero"),
    ("61s", "is above 60s"),
    ("90000ms", "is above 60s"),
])
def test_bad_budgets_are_one_line_bad_input(text, says):
    with pytest.raises(BadInput) as exc:
        parse_budget(text)
    assert exc.value.message.startswith(f"--latency-budget {text.strip()!r}")
    assert says in exc.value.message
    assert "\n" not in exc.value.message
    assert exc.value.exit_code == 2


def test_budget_values_are_checked_too():
    with pytest.raises(BadInput, match="^--latency-budget 0 ms: give more than 0"):
        Budget(0.0)


def test_baseline_is_the_p99_at_rest():
    assert Baseline.from_latencies([0.010] * 990 + [0.500] * 10, at_s=20.0) == Baseline(0.010, 1000, 20.0)
    assert Baseline.from_latencies([0.010] * 980 + [0.500] * 20).p99_s == 0.5
    with pytest.raises(BadInput, match="no acknowledgement at rest"):
        Baseline.from_latencies([])


def test_windows_have_a_signal_only_with_acks():
    assert not LatencyWindow.silent(5.0).has_signal
    assert not LatencyWindow(5.0, None, 10).has_signal
    assert not LatencyWindow.from_acks(5.0, []).has_signal
    w = LatencyWindow.from_acks(5.0, [(1, 0.010)] * 197 + [(2, 0.040)] * 3, stall_by_broker={3: 1.5})
    assert w.has_signal and w.samples == 200
    assert w.p99_s == 0.040  # 3 of 200 are more than the top 1 %
    assert dict(w.p99_by_broker) == {1: 0.010, 2: 0.040}
    # what counts for each broker: the cluster's p99, or its own partitions' p99 or stall when higher
    assert w.worst_for(1) == (0.040, "p99")
    assert w.worst_for(3) == (1.5, "stall on broker 3's partitions")
    w2 = LatencyWindow(5.0, 0.020, 100, p99_by_broker={2: 0.090})
    assert w2.worst_for(2) == (0.090, "p99 on broker 2's partitions")
    assert w2.worst_for(1) == (0.020, "p99")


def test_partition_lists_are_short():
    assert named(["t-3"]) == "t-3"
    assert named(["u-0", "t-3", "t-3"]) == "t-3, u-0"
    assert named([f"a-{i}" for i in range(7)]) == "a-0, a-1, a-2 and 4 more"


def test_decisions_are_json_and_come_back():
    d = Decision(4, 12.5, 10 * MB, 20 * MB, 3, "slow-start, within budget (p99 25 ms of 70 ms): x2", AVOIDANCE,
                 40 * MB, 0.025, 0.07, 0.02)
    text = json.dumps(d.to_dict(), sort_keys=True)
    back = json.loads(text)
    assert back["broker"] == 4 and back["new_rate"] == 20 * MB and back["reason"].startswith("slow-start")
    assert Decision.from_dict(back) == d
    # as a bookkeeping record value: the record's own fields are ignored, numbers as strings are read
    record = {**back, "schema": "kmigrate.bookkeeping/1", "kind": "throttle-auto", "plan_id": "p", "time": "t",
              "broker": "4", "new_rate": str(20 * MB)}
    assert Decision.from_dict(record) == d
    assert d.rate_changed and not Decision(4, 0, 5, 5, 2, "x").rate_changed


@pytest.mark.parametrize("kwargs, says", [
    ({"min_rate": 500_000}, "the minimum rate 500 KB/s is below 1 MB/s"),
    ({"max_rate": 5 * MB, "start_rate": 5 * MB, "min_rate": 6 * MB}, "the maximum rate 5 MB/s is below the minimum"),
    ({"start_rate": 2000 * MB}, "the starting rate 2 GB/s is not between"),
    ({"decrease": 1.0}, "the decrease shrink"),
    ({"growth": 1.0}, "slow start must grow"),
    ({"change_threshold": 1.5}, "the change threshold"),
    ({"signal_timeout_s": 0}, "the signal timeout > 0"),
    ({"min_moves": 0}, "moves in flight"),
    ({"start_moves": 9, "max_moves": 5}, "moves in flight: need 1 <= minimum (1) <= start (9) <= maximum (5)"),
])
def test_bad_settings_are_bad_input(kwargs, says):
    with pytest.raises(BadInput) as exc:
        Settings(**kwargs)
    assert exc.value.message.startswith("--throttle auto: ") and says in exc.value.message
    assert "\n" not in exc.value.message


def test_the_floor_follows_the_inflow():
    st = Settings(min_rate=2 * MB, max_rate=100 * MB)
    assert st.floor() == 2 * MB
    assert st.floor(1 * MB) == 2 * MB
    assert st.floor(10 * MB) == 15 * MB
    assert st.floor(90 * MB) == 100 * MB  # never above the maximum
