"""The canary's live report section (core/report/live.py) and the window an auto throttle reads from it
(core/throttle/readings.window_from_live): written and read back, a window's p99 from the merged histograms,
stale and damaged reports, a stall that counts for every broker."""

from __future__ import annotations

import json

import pytest

from migrate.core.report.live import LiveSignal, live_section
from migrate.core.report.timeline import Timeline
from migrate.core.throttle.readings import window_from_live
from migrate.core.throttle.signals import LatencyWindow


def timeline(latencies_by_second: list[list[float]]) -> Timeline:
    t = Timeline(0.0)
    for second, values in enumerate(latencies_by_second):
        for i, ms in enumerate(values):
            t.on_ack(second + (i + 0.5) / (len(values) + 1), ms)
    return t


def test_written_and_read_back_a_window_has_the_figures_of_the_same_stretch_of_the_timeline():
    seconds = [[10.0] * 49 + [300.0]] * 3 + [[12.0] * 50] * 7  # three seconds with a slow ack each, then quiet
    t = timeline(seconds)
    doc = json.loads(json.dumps({"final": False, "live": live_section(t, 1000.0, 1010.0)}))
    live = LiveSignal.parse(doc)
    for start, end in ((0, 5), (3, 10), (0, 10)):
        assert live.figures(1000.0 + start, 1000.0 + end) == t.figures(start, end)
    assert live.figures(1000.0, 1003.0).p99_ms > 250  # 3 of 150 acks slow: the p99 is slow
    assert live.figures(1005.0, 1010.0).p99_ms < 13  # the merged histograms, not the buckets' own p99s


def test_only_the_recent_buckets_are_kept_and_keep_their_place_on_the_wall_clock():
    t = timeline([[float(s + 1)] for s in range(20)])  # second s: one ack of s + 1 ms
    live = LiveSignal.parse({"live": live_section(t, 500.0, 520.0, recent=5)})
    assert live.first_index == 15 and len(live.buckets) == 5
    assert live.figures(500.0 + 17, 500.0 + 18).max_ms == 18.0
    assert live.figures(500.0, 515.0).acks == 0  # dropped from the section
    assert live.covered_s(520.0) == pytest.approx(5.0)


@pytest.mark.parametrize("doc, expected", [
    ({"sent": 3}, "no live section"),
    ({"live": {"version": 9}}, "version 9"),
    ({"live": {"version": 1, "started_unix": 1, "written_unix": 2, "width_s": 1, "first_index": 0,
               "buckets": [[1, 0, "x", None, 0]]}}, "damaged"),
    ({"live": {"version": 1, "started_unix": 1}}, "damaged"),
])
def test_what_is_not_a_live_section_says_why(doc, expected):
    with pytest.raises(ValueError) as err:
        LiveSignal.parse(doc)
    assert expected in str(err.value)


def test_a_window_from_the_report_is_silent_when_the_report_is_stale_missing_or_has_no_ack():
    t = timeline([[20.0] * 50] * 10)
    live = LiveSignal.parse({"live": live_section(t, 1000.0, 1010.0)})
    w = window_from_live(3.0, live, 1010.0, 5.0)
    assert w.has_signal and w.samples == 250 and w.p99_s == pytest.approx(0.02, rel=0.03) and w.at_s == 3.0
    assert not window_from_live(3.0, live, 1016.0, 5.0).has_signal  # not rewritten for 6 s: the canary is gone
    assert not window_from_live(3.0, None, 1010.0, 5.0).has_signal
    quiet = LiveSignal.parse({"live": live_section(timeline([[20.0]] + [[]] * 9), 1000.0, 1010.0)})
    assert not window_from_live(3.0, quiet, 1010.0, 5.0).has_signal


def test_a_stall_in_the_report_counts_for_every_broker():
    t = timeline([[10.0] * 50] * 10)
    t.on_stall(7.0, 8.5)  # a partition waited 1.5 s: the report does not say which broker led it
    w = window_from_live(0.0, LiveSignal.parse({"live": live_section(t, 0.0, 10.0)}), 10.0, 5.0)
    assert w.stall_s == pytest.approx(1.5)
    for broker in (1, 4, 7):
        assert w.worst_for(broker) == (pytest.approx(1.5), "stall on a canary partition")
    assert LatencyWindow(0.0, 0.01, 10).worst_for(1) == (0.01, "p99")
