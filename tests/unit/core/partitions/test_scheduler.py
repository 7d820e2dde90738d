"""The scheduler (core/scheduler.py): caps, lanes, smallest topics first, throttle lists within their limit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.partitions.moves import PartitionMove
from migrate.core.partitions.scheduler import Caps, broker_load, schedule
from migrate.core.partitions.throttles import MAX_THROTTLE_CONFIG_CHARS, config_chars, throttle_entries



def _move(topic, p, current=(1, 2, 3), target=(4, 5, 6), size=100):
    return PartitionMove(topic, p, tuple(current), tuple(target), size)


def _fits(moves, max_chars):
    leader, follower = throttle_entries(moves)
    return max(config_chars(leader), config_chars(follower)) <= max_chars


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


def test_broker_limits_lower_one_brokers_cap_and_never_raise_it():
    pending = [_move("t", p, current=(1,), target=(4,)) for p in range(6)] + \
              [_move("u", p, current=(2,), target=(5,)) for p in range(6)]
    caps = Caps(per_broker=3, broker_limits=((4, 1), (5, 9)))
    load = broker_load(schedule(pending, [], caps))
    assert load[4] == 1 and load[5] == 3  # 9 is above the operator's cap: 3
    assert caps.limit(4) == 1 and caps.large_limit(4) == 1 and caps.limit(7) == 3
    assert schedule(pending, [], Caps(per_broker=3)) == schedule(pending, [], Caps(per_broker=3, broker_limits=()))


def test_broker_limits_count_moves_already_in_flight():
    flying = [_move("t", 0, current=(1,), target=(4,))]
    pending = [_move("t", p, current=(1,), target=(4,)) for p in range(1, 4)]
    assert schedule(pending, flying, Caps(per_broker=5, broker_limits=((4, 1),))) == ()
    assert len(schedule(pending, flying, Caps(per_broker=5, broker_limits=((4, 2),)))) == 1
