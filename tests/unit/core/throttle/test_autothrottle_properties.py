"""The adaptive throttle's promises under any sequence of windows, rails and brokers (hypothesis): the rate in
force stays within its bounds, never rises while a client or the cluster is hurting, rises at most once per
interval, and every decision comes back from its JSON."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.throttle.controller import Controller
from migrate.core.throttle.decisions import Decision
from migrate.core.throttle.law import MB, Settings
from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow

SETTINGS = Settings(min_rate=2 * MB, max_rate=200 * MB, max_moves=6)
BASE, BUDGET = Baseline(0.020), Budget(0.050)
BROKERS = (1, 2, 3)

p99s = st.one_of(st.none(), st.floats(0.001, 0.5))
healths = st.builds(
    Health,
    under_min_isr=st.sampled_from([(), (), (), ("t-3",), ("t-3", "u-0")]),
    lagging=st.sampled_from([(), (), ("u-0",)]),
    free_disk_ratio=st.dictionaries(st.sampled_from(BROKERS), st.floats(0.0, 1.0), max_size=2),
    inflow_bytes_per_s=st.dictionaries(st.sampled_from(BROKERS), st.integers(0, 50 * MB), max_size=2),
    copied_bytes_per_s=st.dictionaries(st.sampled_from(BROKERS), st.integers(0, 300 * MB), max_size=2),
)
steps = st.lists(st.tuples(st.floats(0.5, 15.0), p99s, st.dictionaries(st.sampled_from(BROKERS), st.floats(0, 3), max_size=2),
                           healths, st.sets(st.sampled_from(BROKERS), min_size=1)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_promises_hold_whatever_happens(sequence):
    c = Controller(SETTINGS, BASE, BUDGET, now_s=0.0)
    t = 0.0
    raised_at: dict[int, float] = {}
    for dt, p99, stalls, health, brokers in sequence:
        t += dt
        window = None if p99 is None else LatencyWindow(t, p99, 50, stall_by_broker=stalls)
        for d in c.step(t, window, health, brokers):
            assert Decision.from_dict(json.loads(json.dumps(d.to_dict()))) == d
            assert d.broker in brokers and c.rates()[d.broker] == d.new_rate and c.moves()[d.broker] == d.moves
            if d.new_rate > d.old_rate and not d.reason.startswith("inflow"):
                hurting = (window is None or health.under_min_isr or health.lagging
                           or window.worst_for(d.broker)[0] > c.limit_s
                           or health.free_disk_ratio.get(d.broker, 1.0) < SETTINGS.disk_floor_ratio)
                assert not hurting, d
                assert t - raised_at.get(d.broker, -1e9) >= SETTINGS.interval_s, d
                raised_at[d.broker] = t
        for b, rate in c.rates().items():
            assert SETTINGS.min_rate <= rate <= SETTINGS.max_rate
            assert SETTINGS.min_moves <= c.moves()[b] <= SETTINGS.max_moves
