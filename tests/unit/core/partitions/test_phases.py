"""A topic's phases, partition decisions, stalls and rate (core/phases.py)."""

from __future__ import annotations

import pytest

from migrate.core.partitions.moves import InFlight
from migrate.core.partitions.phases import (
    Decision, Rate, ReplicaProgress, TopicPhase, advance, decide, isr_short, observe_progress, stalled_replicas,
)



def test_topic_phase_transitions():
    assert advance(TopicPhase.pending, TopicPhase.moving) == TopicPhase.moving
    assert advance(TopicPhase.pending, TopicPhase.moved) == TopicPhase.moved  # already on target
    assert advance(TopicPhase.moving, TopicPhase.stalled) == TopicPhase.stalled
    assert advance(TopicPhase.stalled, TopicPhase.moving) == TopicPhase.moving
    for bad in [(TopicPhase.recorded, TopicPhase.moving), (TopicPhase.pending, TopicPhase.cancelled),
                (TopicPhase.cancelled, TopicPhase.recorded), (TopicPhase.moving, TopicPhase.recorded)]:
        with pytest.raises(ValueError):
            advance(*bad)


def test_decide_adopts_in_flight_and_records_what_is_done():
    assert decide((4, 5), (4, 5), None) == Decision.done
    flight = InFlight((4, 5, 1, 2), (4, 5), (1, 2))
    assert flight.target == (4, 5) and flight.original == (1, 2)
    assert decide(flight.replicas, (4, 5), flight) == Decision.adopt
    assert decide(flight.replicas, (5, 4), flight) == Decision.wait
    assert decide((1, 2), (4, 5), None, isr=(1, 2), min_isr=2) == Decision.submit
    assert decide((1, 2), (4, 5), None, isr=(1,), min_isr=2) == Decision.hold


def test_isr_short():
    assert not isr_short((1, 2, 3), (1, 2, 3), 2)
    assert isr_short((1, 2, 3), (1, 2), 2)  # no margin left
    assert not isr_short((1, 2, 3), (1, 2), 1)
    assert isr_short((1,), (), 1)
    assert not isr_short((1,), (1,), 2)  # RF 1 with min.insync 2 is as good as it gets


def test_stall_after_timeout_without_growth():
    key = ("t", 0, 4)
    p = observe_progress({}, {key: 100}, [key], now_s=0)
    p = observe_progress(p, {key: 200}, [key], now_s=10)
    assert stalled_replicas(p, now_s=20, timeout_s=30) == []
    p = observe_progress(p, {key: 200}, [key], now_s=35)
    p = observe_progress(p, {}, [key], now_s=41)  # broker did not answer: no progress either
    assert stalled_replicas(p, now_s=41, timeout_s=30) == [key]
    p = observe_progress(p, {key: 300}, [key], now_s=42)
    assert stalled_replicas(p, now_s=42, timeout_s=30) == []


def test_rate_and_eta():
    r = Rate().add(0, 0).add(10, 1000)
    assert r.bytes_per_s == 100
    assert r.eta_s(500) == 5
    assert Rate().eta_s(10) is None


def test_migration_state():
    from migrate.core.partitions.phases import migration_state

    assert migration_state(None, 0, 0, 0, 0) == "not started"
    assert migration_state("p", 0, 0, 0, 0) == "done"
    for left in [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]:
        assert migration_state("p", *left) == "in progress"
