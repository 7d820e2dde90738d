"""Issue 31: the canary's timeline (buckets of acks, latency percentiles, stalls) in bounded memory."""

from __future__ import annotations

import doctest
import random

import migrate.core.report.timeline as timeline_module
from migrate.core.canary import CanaryLedger, percentile
from migrate.core.report.timeline import Figures, Timeline


def test_doctests():
    assert doctest.testmod(timeline_module).failed == 0


def test_the_percentiles_of_a_bucket_are_within_two_percent_of_the_exact_ones_and_never_above_the_max():
    rng = random.Random(3)
    values = [rng.lognormvariate(3, 1.2) for _ in range(5000)]
    t = Timeline(started_s=0.0)
    for i, v in enumerate(values):
        t.on_ack(i / 5000, v)
    f = t.figures()
    exact = sorted(values)
    for got, q in ((f.p50_ms, 0.5), (f.p99_ms, 0.99)):
        want = percentile(exact, q)
        assert want <= got <= want * 1.02 + 0.01, (q, got, want)
    assert f.max_ms == round(exact[-1], 2) and f.acks == 5000


def test_buckets_are_per_second_with_empty_seconds_counted_as_no_ack():
    t = Timeline(started_s=100.0)
    t.on_ack(100.2, 10.0)
    t.on_ack(103.7, 20.0)
    assert [r[1] for r in t.rows()] == [1, 0, 0, 1]
    assert t.rows()[1][3] is None  # no latency where nothing was acknowledged


def test_a_stall_ramps_up_over_the_buckets_it_spans_and_counts_whole_in_its_last():
    t = Timeline(started_s=0.0)
    t.on_ack(4.5, 1.0)
    t.on_stall(1.5, 3.9)  # a wait from 1.5 s to 3.9 s
    assert [r[6] for r in t.rows()] == [0.0, 0.5, 1.5, 2.4, 0.0]
    assert t.figures(0, 2).stall_s == 0.5  # the phase up to 2 s saw the wait half a second old
    assert t.figures().stall_s == 2.4


def test_memory_stays_bounded_however_long_the_run_the_width_doubling():
    t = Timeline(started_s=0.0, max_buckets=100)
    for s in range(1000):
        t.on_ack(s + 0.5, 5.0 if s != 700 else 900.0)
    assert len(t.buckets) <= 100 and t.width_s == 16.0
    f = t.figures()
    assert f.acks == 1000 and f.max_ms == 900.0
    assert t.figures(688, 704).max_ms == 900.0  # the slow ack still in its (wider) bucket


def test_the_ledger_feeds_its_timeline_acks_failures_and_produce_stalls_going_on():
    ledger = CanaryLedger("t", started_s=0.0)
    for seq in range(10):
        ledger.on_send(seq, seq % 2, seq * 0.1)
        ledger.on_ack(seq, seq * 0.1 + 0.02)
    ledger.on_send(10, 0, 1.5)
    ledger.on_send_error(10, "boom", 1.6)
    ledger.on_send(11, 1, 2.0)  # never acknowledged: a wait still going on at 5.0
    tl = ledger.timeline_at(5.0)
    assert [r[1] for r in tl.rows()][:2] == [10, 0] and tl.rows()[1][2] == 1
    assert tl.figures().stall_s == 3.0 and tl.figures(0, 1).p99_ms == 20.0


def test_figures_of_nothing():
    assert Figures.of([]) == Figures(0, 0, None, None, None, 0.0)
