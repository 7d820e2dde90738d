"""Throttle entries and lists (core/throttles.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.partitions.moves import PartitionMove
from migrate.core.partitions.throttles import (
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


# ----------------------------------------------------------------------------- which change, which removal


def test_finished_entries_stay_while_the_topic_still_moves_and_go_with_it():
    from migrate.core.partitions.throttles import list_change

    assert list_change({"0:4"}, {"0:4", "1:4"}, max_chars=100) == (set(), set())
    assert list_change({"2:4"}, {"0:4"}, max_chars=100) == ({"2:4"}, set())
    assert list_change({"2:4"}, {"0:4"}, max_chars=len("0:4")) == ({"2:4"}, {"0:4"})  # the list would grow too long
    assert list_change(set(), {"0:4"}, max_chars=100) == (set(), {"0:4"})


def test_kmigrate_never_appends_what_is_there_or_under_a_wildcard():
    from migrate.core.partitions.throttles import entries_to_append

    assert entries_to_append({"0:4", "1:4"}, {"0:4"}) == {"1:4"}
    assert entries_to_append({"0:4"}, {"*"}) == set()


def test_list_operation_picks_the_one_incremental_change():
    from migrate.core.partitions.throttles import list_operation

    assert list_operation({"1:4"}, {"1:4"}, {"0:4"}, {"0:4", "9:9"}, {"0:4"}) == ("set", "1:4,9:9")
    # an empty list is SET (Kafka 2.4-2.6 fail an APPEND to a list with no value), a list with entries appended to
    assert list_operation({"0:4", "1:4"}, {"1:4", "0:4"}, set(), set(), set()) == ("set", "0:4,1:4")
    assert list_operation({"0:4", "1:4"}, {"1:4"}, set(), {"0:4", "9:9"}, {"0:4"}) == ("append", "1:4")
    # the last entries are deleted, never subtracted (a SUBTRACT leaves an empty string on Kafka 2.4)
    assert list_operation({"5:5"}, set(), {"0:4"}, {"0:4"}, {"0:4"}) == ("delete", None)
    assert list_operation(set(), set(), {"0:4"}, {"0:4"}, {"0:4"}) == ("delete", None)
    assert list_operation(set(), set(), {"0:4"}, set(), {"0:4"}) is None  # already gone
    assert list_operation(set(), set(), {"0:4"}, {"0:4", "9:9"}, {"0:4"}) == ("subtract", "0:4")  # 9:9 is someone else's
    assert list_operation({"1:4"}, set(), {"0:4"}, {"0:4", "1:4"}, {"0:4", "1:4"}) == ("subtract", "0:4")
    assert list_operation({"1:4"}, set(), set(), {"1:4"}, {"1:4"}) is None


def test_broker_rate_removal_restores_only_what_kmigrate_left():
    from migrate.core.partitions.throttles import broker_rate_removal

    assert broker_rate_removal("100", "100", None) == ("removed", True)
    assert broker_rate_removal("100", "100", "7") == ("restored", True)
    assert broker_rate_removal(None, "100", None) == ("removed", True)  # a broker that has not applied it yet
    assert broker_rate_removal("5", "100", None) == ("left (changed by someone else)", False)
    assert broker_rate_removal("7", "100", "7") == ("absent", False)  # back to its prior value already
    assert broker_rate_removal(None, "100", "7") == ("absent", False)


def test_list_removal_deletes_a_list_that_is_all_kmigrates_and_subtracts_otherwise():
    from migrate.core.partitions.throttles import list_removal

    assert list_removal({"0:1", "1:1"}, {"0:1", "1:1", "2:1"}) == ("delete", None)
    assert list_removal({"0:1", "5:5"}, {"0:1"}) == ("subtract", "0:1")
    assert list_removal({"5:5"}, {"0:1"}) is None
