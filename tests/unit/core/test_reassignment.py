"""Pure decisions of the partition mover: targets, throttle lists, scheduling, state, stalls, bookkeeping fold."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.adapters.bookkeeping import SCHEMA, Ledger, decode, encode, make_record
from migrate.errors import BadInput
from migrate.core.model import Broker, Partition, Topic
from migrate.core.reassignment import (
    MAX_THROTTLE_CONFIG_CHARS,
    Caps,
    Decision,
    InFlight,
    PartitionMove,
    Rate,
    ReplicaProgress,
    TopicPhase,
    advance,
    broker_load,
    compile_topic_filter,
    config_chars,
    fill_throttle_lists,
    copied,
    decide,
    format_entries,
    isr_short,
    mapping_plan_id,
    observe_progress,
    parse_entries,
    parse_mapping,
    plan_targets,
    schedule,
    select_topics,
    stalled_replicas,
    throttle_entries,
)

MAPPING = {1: 4, 2: 5, 3: 6}
BROKERS = [Broker(i, f"h{i}", 9092, f"AD-{(pos - 1) % 3 + 1}/FD-{(pos - 1) // 3 + 1}")
           for pos, i in enumerate((1, 2, 3, 4, 5, 6), start=1)]


# ----------------------------------------------------------------------------- input


def test_parse_mapping_reads_pairs():
    assert parse_mapping("1:4, 2:5,3:6") == MAPPING
    assert parse_mapping("101=204") == {101: 204}


@pytest.mark.parametrize("text", ["", "1", "1:4,1:5", "1:4,4:6", "1:4,2:4", "a:b", "1:4,"])
def test_parse_mapping_refuses_bad_input(text):
    with pytest.raises(BadInput):
        parse_mapping(text)


def test_topic_filters_match_in_full():
    inc, exc = compile_topic_filter(r"orders.*", r".*\.dlq")
    assert select_topics(["orders", "orders.dlq", "payments", "xorders"], inc, exc) == ["orders"]
    with pytest.raises(BadInput):
        compile_topic_filter("((", None)


def test_mapping_plan_id_is_stable_and_readable():
    assert mapping_plan_id({3: 6, 1: 4}) == mapping_plan_id({1: 4, 3: 6}) == "mapping-1.4-3.6"


# ----------------------------------------------------------------------------- targets (planner)


def _topic(name, assignment):
    return Topic(name, partitions=tuple(Partition(p, tuple(r), tuple(r), r[0]) for p, r in enumerate(assignment)))


def test_plan_targets_replaces_old_ids_and_keeps_sets():
    topics = [_topic("a", [(1, 2, 3), (2, 3, 1), (3, 1, 2)]), _topic("b", [(1,), (2,)])]
    targets, _warnings = plan_targets(topics, BROKERS, MAPPING)
    assert sorted(targets[("a", 0)]) == [4, 5, 6]
    assert set(targets[("b", 0)]) == {4} and set(targets[("b", 1)]) == {5}


def test_plan_targets_keeps_unmapped_ids_with_a_warning():
    topics = [_topic("half", [(4, 2)])]
    targets, warnings = plan_targets(topics, BROKERS, MAPPING)
    assert set(targets[("half", 0)]) == {4, 5}
    assert any("4" in w for w in warnings)


def test_plan_targets_skips_partitions_on_target():
    targets, _ = plan_targets([_topic("done", [(4, 5)])], BROKERS, MAPPING)
    assert targets == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.permutations([1, 2, 3]).map(lambda p: tuple(p)), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=3))
def test_plan_targets_invariants(assignments, rf):
    topic = _topic("t", [a[:rf] for a in assignments])
    targets, _ = plan_targets([topic], BROKERS, MAPPING)
    for p in topic.partitions:
        target = targets.get(("t", p.partition), p.replicas)
        assert len(target) == len(p.replicas)  # replication factor kept
        assert len(set(target)) == len(target)  # distinct brokers
        assert not set(target) & set(MAPPING)  # nothing left on a retiring broker


# ----------------------------------------------------------------------------- throttles


def test_throttle_entries_leader_on_current_follower_on_added():
    moves = [PartitionMove("t", 0, (1, 2), (4, 2)), PartitionMove("t", 3, (3,), (6,))]
    leader, follower = throttle_entries(moves)
    assert leader == ("0:1", "0:2", "3:3")
    assert follower == ("0:4", "3:6")


def test_entries_round_trip():
    assert parse_entries(" 0:1, 1:2 ,") == ("0:1", "1:2")
    assert parse_entries("*") == ("*",)
    assert parse_entries(None) == ()
    assert format_entries(("0:1", "1:2")) == "0:1,1:2"
    assert config_chars(("0:1", "1:2")) == len("0:1,1:2")


# ----------------------------------------------------------------------------- scheduling


def _move(topic, p, current=(1, 2, 3), target=(4, 5, 6), size=100):
    return PartitionMove(topic, p, tuple(current), tuple(target), size)


def _fits(moves, max_chars):
    leader, follower = throttle_entries(moves)
    return max(config_chars(leader), config_chars(follower)) <= max_chars


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([(1,), (1, 2), (1, 2, 3), (2, 3)])), min_size=1, max_size=30),
       st.integers(0, 4), st.integers(5, 200))
def test_fill_throttle_lists_takes_upcoming_moves_while_both_lists_fit(items, n_listed, max_chars):
    moves = [_move("t", p, current, (4, 5, 6)[:len(current)]) for p, current in items]
    listed, upcoming = moves[:n_listed], moves[n_listed:]
    got = fill_throttle_lists(listed, upcoming, max_chars)
    assert got[:len(listed)] == listed  # what must be listed always is
    taken = got[len(listed):]
    assert taken == upcoming[:len(taken)]  # in order, stopping at the first that does not fit
    assert _fits(got, max_chars) or not taken
    if len(taken) < len(upcoming):
        assert not _fits(got + [upcoming[len(taken)]], max_chars)


def test_fill_throttle_lists_stops_at_the_size_limit_on_a_topic_with_thousands_of_partitions():
    moves = [_move("big", p) for p in range(20_000)]
    got = fill_throttle_lists(moves[:5], moves[5:])
    assert 5 < len(got) < len(moves) and _fits(got, MAX_THROTTLE_CONFIG_CHARS)
    assert not _fits(got + [moves[len(got)]], MAX_THROTTLE_CONFIG_CHARS)


def test_schedule_respects_per_broker_cap():
    pending = [_move("big", p) for p in range(20)]
    chosen = schedule(pending, [], Caps(per_broker=5))
    assert len(chosen) == 5
    assert max(broker_load(chosen).values()) <= 5


def test_schedule_respects_cluster_cap():
    pending = [_move("t", p, (1,), (4,)) for p in range(10)] + [_move("u", p, (2,), (5,)) for p in range(10)]
    chosen = schedule(pending, [], Caps(per_broker=10, cluster=3))
    assert len(chosen) == 3


def test_small_topic_does_not_wait_behind_a_large_one():
    big = [_move("big", p, size=10**9) for p in range(12)]
    in_flight = big[:4]  # the big topic already holds 4 of 5 slots
    small = [_move("small", 0, size=10)]
    chosen = schedule(big[4:] + small, in_flight, Caps(per_broker=5))
    assert [m.topic for m in chosen] == ["small"]


def test_topics_take_turns_smallest_first():
    pending = [_move("b", p, (1,), (4,), 50) for p in range(3)] + [_move("a", p, (2,), (5,), 10) for p in range(3)]
    chosen = schedule(pending, [], Caps(per_broker=10))
    assert [m.topic for m in chosen][:2] == ["a", "b"]


def test_schedule_skips_held_and_needless_moves():
    pending = [_move("t", 0), _move("t", 1, (4, 5, 6), (4, 5, 6))]
    assert schedule(pending, [], Caps(), held=frozenset({("t", 0)})) == ()


def test_throttle_lists_stay_within_limit_for_huge_topics():
    pending = [_move("huge", p, (1, 2, 3), (4, 5, 6), 1) for p in range(5000)]
    caps = Caps(per_broker=10_000, throttle_chars=2000)
    in_flight: list[PartitionMove] = []
    for _ in range(3):  # successive rounds only ever add within the limit
        chosen = schedule([m for m in pending if m not in in_flight], in_flight, caps)
        in_flight += chosen
        leader, follower = throttle_entries(in_flight)
        assert config_chars(leader) <= 2000 and config_chars(follower) <= 2000
    assert len(in_flight) > 10


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 30), st.sampled_from([(1,), (2,), (1, 2), (2, 3), (1, 2, 3)]),
                          st.integers(0, 10**6)), min_size=0, max_size=60, unique_by=lambda x: (x[0], x[1])),
       st.integers(1, 6), st.one_of(st.none(), st.integers(1, 10)))
def test_schedule_never_exceeds_caps(items, per_broker, cluster):
    pending = [PartitionMove(t, p, cur, tuple(b + 3 for b in cur), size) for t, p, cur, size in items]
    chosen = schedule(pending, [], Caps(per_broker=per_broker, cluster=cluster))
    assert all(v <= per_broker for v in broker_load(chosen).values())
    if cluster is not None:
        assert len(chosen) <= cluster
    assert len({m.key for m in chosen}) == len(chosen)
    if pending:
        assert chosen  # something always fits when nothing is in flight


# ----------------------------------------------------------------------------- state and decisions


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


# ----------------------------------------------------------------------------- progress and stalls


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


def test_copied_bytes_are_capped_at_the_source_size():
    m = _move("t", 0, (1, 2), (4, 5), size=1000)
    assert copied(m, {("t", 0, 4): 1500, ("t", 0, 5): 200}, finished=False).copied_bytes == 1200
    assert copied(m, {}, finished=True).copied_bytes == 2000


def test_rate_and_eta():
    r = Rate().add(0, 0).add(10, 1000)
    assert r.bytes_per_s == 100
    assert r.eta_s(500) == 5
    assert Rate().eta_s(10) is None


# ----------------------------------------------------------------------------- bookkeeping fold


def test_the_bookkeeping_writer_keeps_one_request_in_flight_whatever_the_client_settings():
    # With several requests in flight, librdkafka counted records of failed requests to a just-created
    # topic as "implicitly acked" by a later success: a write-ahead record acknowledged and not in the log.
    from migrate.adapters.bookkeeping import BookkeepingTopic
    from migrate.core.clientconfig import ClientSettings

    user = ClientSettings("b:9092", {"max.in.flight.requests.per.connection": "5", "acks": "1",
                                     "security.protocol": "SASL_SSL"})
    conf = BookkeepingTopic(user, "__kmigrate_migration").producer_settings()
    assert conf["max.in.flight.requests.per.connection"] == 1
    assert conf["enable.idempotence"] is True and conf["acks"] == "all"
    assert conf["security.protocol"] == "SASL_SSL" and conf["bootstrap.servers"] == "b:9092"


def test_records_round_trip_and_foreign_records_are_refused():
    rec = make_record("p1", "topic-moved", "orders", 0, topic="orders", target={"0": [4, 5]})
    key, value = encode(rec)
    assert key == b"p1/orders"
    back = decode(key, value)
    assert back is not None and back.value["schema"] == SCHEMA and back.value["topic"] == "orders"
    assert decode(b"p1/orders", b"orders") is None
    assert decode(b"p1/orders", json.dumps({"schema": "other", "kind": "plan", "plan_id": "p1"}).encode()) is None
    assert decode(b"p2/orders", value) is None  # key and plan id disagree
    assert decode(None, value) is None


def test_ledger_trusts_only_its_plan_and_tracks_throttles():
    R = make_record
    ledger = Ledger([
        R("p1", "topic-moved", "a", 0, topic="a", target={}),
        R("p0", "topic-moved", "b", 0, topic="b", target={}),
        R("p1", "topic-moved", "a", 1, topic="a", target={}),
        R("p1", "throttle-broker", "4/x", 0, broker=4, config="x", value="5", prior=None),
        R("p1", "throttle-broker", "4/x", 1, broker=4, config="x", value="5", prior="5"),  # read its own value
        R("p1", "throttle-broker", "5/x", 1, broker=5, config="x", value="5", prior="7"),
        R("p1", "throttle-cleared", "5/x", 2, scope="broker", broker=5, config="x"),
        R("p1", "throttle-topic", "a/l", 0, topic="a", config="l", entries=["0:1"]),
        R("p1", "throttle-topic", "a/l", 0, topic="a", config="l", entries=["1:1"]),
        R("p1", "submitted", "a", 0, topic="a", partitions={"0": [4, 5]}),
    ])
    assert set(ledger.moved("p1")) == {"a"}
    assert ledger.moved_counts("p1") == {"a": 2}
    assert ledger.foreign_moved("p1") == {"p0": ["b"]}
    assert ledger.broker_throttles() == {(4, "x"): {"value": "5", "prior": None}}
    assert ledger.topic_throttles() == {("a", "l"): {"0:1", "1:1"}}
    assert ledger.submitted("p1") == {("a", 0): (4, 5)}
    assert ReplicaProgress(1, 0).reported is False


# ----------------------------------------------------------------------------- lanes and cap accounting


def test_a_move_counts_on_its_source_and_new_replicas_like_cruise_control():
    m = PartitionMove("t", 0, (1, 2, 3), (4, 2, 6))
    assert m.brokers == frozenset({1, 4, 6})  # leader 1 sends, 4 and 6 receive; 2 and 3 do no copying
    assert PartitionMove("t", 0, (1, 2), (2, 1)).brokers == frozenset()  # a reorder copies nothing


def test_large_moves_leave_slots_for_small_topics():
    caps = Caps(per_broker=5, small_move_bytes=1000)
    large = [_move("big", p, (1,), (4,), size=10**6) for p in range(10)]
    small = [_move(f"s{i}", 0, (1,), (4,), size=10) for i in range(4)]
    chosen = schedule(large + small, [], caps)
    assert sum(1 for m in chosen if m.topic == "big") == caps.large_per_broker == 3
    assert sum(1 for m in chosen if m.topic != "big") == 2  # the rest of broker 1's and 4's slots
    assert max(broker_load(chosen).values()) <= 5
    # with large moves holding their share, a new small topic still gets a slot at once
    in_flight = [m for m in chosen if m.topic == "big"]
    assert [m.topic for m in schedule(large[3:] + [_move("late", 0, (1,), (4,), size=10)], in_flight, caps)][:1] == ["late"]


def test_large_moves_start_where_the_most_bytes_wait():
    caps = Caps(per_broker=1, small_move_bytes=0)
    busy = [_move("a", p, (1,), (4,), size=100) for p in range(5)]  # broker 1 -> 4 carries 500
    quiet = [_move("b", 0, (2,), (5,), size=300)]  # broker 2 -> 5 carries 300
    chosen = schedule(quiet + busy, [], caps)
    assert [m.topic for m in chosen] == ["a", "b"]  # both pairs busy at once, the busiest first
