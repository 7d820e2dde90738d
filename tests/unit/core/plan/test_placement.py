"""Round-robin placement across availability and fault domains."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.model import parse_rack
from migrate.core.plan.placement import (
    Domains,
    DomainRules,
    alternates,
    assign_new_topic,
    domain_order,
    place_replicas,
    rack_alternated,
    round_robin,
)


def test_procedure_example_exactly():
    assert round_robin([1, 2, 3, 4, 5, 6], 3, 3, start_broker=3) == [(3, 4, 5), (4, 5, 6), (5, 6, 1)]


def test_round_robin_defaults_to_first_broker_and_sorts_ids():
    assert round_robin([6, 5, 4, 3, 2, 1], 2, 2) == [(1, 2), (2, 3)]
    assert round_robin([205, 101, 7], 4, 2, start_broker=205) == [(205, 7), (7, 101), (101, 205), (205, 7)]


def test_round_robin_errors():
    with pytest.raises(BadInput, match="replication factor 4 needs at least 4 brokers, only 3"):
        round_robin([1, 2, 3], 1, 4)
    with pytest.raises(BadInput, match="start broker 9 is not one of the brokers"):
        round_robin([1, 2, 3], 1, 1, start_broker=9)
    with pytest.raises(BadInput, match="partition count 0"):
        round_robin([1, 2, 3], 0, 1)


def test_rack_aware_equals_round_robin_when_ids_alternate(kb):
    placement = place_replicas(kb.PROCEDURE_RACKS, 3, 3, start_broker=3)
    assert placement.assignments == ((3, 4, 5), (4, 5, 6), (5, 6, 1))
    assert placement.warnings == ()
    assert placement.replica_assignment == "3:4:5,4:5:6,5:6:1"
    assert placement.as_lists()[0] == [3, 4, 5]


def test_rack_alternated_interleaves_ads():
    d = Domains.from_racks({1: "A/1", 2: "A/2", 3: "A/3", 4: "B/1", 5: "B/2", 6: "C/1"})
    assert rack_alternated([1, 2, 3, 4, 5, 6], d) == [1, 4, 6, 2, 5, 3]
    assert not alternates([1, 2, 3, 4, 5, 6], d)
    assert domain_order([1, 2, 3, 4, 5, 6], d) == [1, 4, 6, 2, 5, 3]


def test_grouped_ids_are_reordered_so_partitions_span_ads():
    racks = {1: "AD-1/FD-1", 2: "AD-1/FD-2", 3: "AD-2/FD-1", 4: "AD-2/FD-2", 5: "AD-3/FD-1", 6: "AD-3/FD-2"}
    placement = place_replicas(racks, 6, 3)
    for a in placement.assignments:
        assert len({parse_rack(racks[b])[0] for b in a}) == 3
    assert placement.warnings == ()


def test_fewer_ads_than_rf_warns_and_uses_distinct_fault_domains():
    racks = {1: "AD-1/FD-1", 2: "AD-1/FD-2", 3: "AD-2/FD-1", 4: "AD-2/FD-2"}
    placement = place_replicas(racks, 8, 3)
    assert any("only 2 availability domains" in w and "distinct fault domains" in w for w in placement.warnings)
    for a in placement.assignments:
        assert len({parse_rack(racks[b])[0] for b in a}) == 2
        assert len({racks[b] for b in a}) == 3


def test_unknown_racks_warn():
    placement = place_replicas({1: "A/1", 2: "B/1", 3: None}, 3, 2)
    assert any("brokers 3 have no rack" in w for w in placement.warnings)


def test_assign_new_topic_excludes_brokers(kb):
    snap = kb.snapshot()
    placement = assign_new_topic(snap, 6, 3, exclude_brokers=[1, 2, 3], start_broker=4)
    assert placement.assignments == ((4, 5, 6), (5, 6, 4), (6, 4, 5), (4, 5, 6), (5, 6, 4), (6, 4, 5))
    named = assign_new_topic(snap, 3, 3, topic="events", exclude_brokers=[1, 2, 3])
    assert named == assign_new_topic(snap, 3, 3, topic="events", exclude_brokers=[3, 2, 1])  # deterministic
    assert all(set(a) <= {4, 5, 6} for a in named.assignments)
    with pytest.raises(BadInput, match="replication factor 3 needs 3 live brokers but only 2 remain after excluding 1, 2, 3, 4"):
        assign_new_topic(snap, 1, 3, exclude_brokers=[1, 2, 3, 4])
    with pytest.raises(BadInput, match="start broker 1 is not a live, non-excluded broker"):
        assign_new_topic(snap, 1, 3, exclude_brokers=[1], start_broker=1)
    warned = assign_new_topic(snap, 1, 1, exclude_brokers=[99])
    assert any("99" in w for w in warned.warnings)


racks_st = st.dictionaries(
    st.integers(min_value=0, max_value=300),
    st.tuples(st.sampled_from(["AD-1", "AD-2", "AD-3", "AD-4"]), st.sampled_from(["FD-1", "FD-2", "FD-3"])).map("/".join),
    min_size=1,
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(racks=racks_st, partitions=st.integers(1, 20), rf=st.integers(1, 4), data=st.data())
def test_placement_invariants(racks, partitions, rf, data):
    if rf > len(racks):
        with pytest.raises(BadInput):
            place_replicas(racks, partitions, rf)
        return
    start = data.draw(st.sampled_from(sorted(racks)))
    placement = place_replicas(racks, partitions, rf, start_broker=start)
    d = Domains.from_racks(racks)
    rules = DomainRules(d, racks)
    n_ads = d.count_ads(racks)
    assert len(placement.assignments) == partitions
    for a in placement.assignments:
        assert len(a) == rf and len(set(a)) == rf
        assert rules.satisfied(a)
        if n_ads >= rf:
            assert len({d.ad[b] for b in a}) == rf
    assert (n_ads < rf) == any("availability domains" in w for w in placement.warnings)
    assert placement == place_replicas(dict(reversed(list(racks.items()))), partitions, rf, start_broker=start)
