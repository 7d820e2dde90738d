"""Throttle entries and lists (core/throttles.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.moves import PartitionMove
from migrate.core.throttles import (
    MAX_THROTTLE_CONFIG_CHARS, config_chars, fill_throttle_lists, format_entries, parse_entries, throttle_entries,
)



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
