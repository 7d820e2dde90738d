"""kmigrate's catch-up gate for a new controller (migrate.core.controllers.gate) and the quorum model it reads."""

from __future__ import annotations

import doctest

from migrate.core.controllers import gate as cg
from migrate.core.controllers import quorum as cq
from migrate.core.controllers.gate import CatchUpWatch, judge_observer
from migrate.core.controllers.quorum import Quorum, Replica, quorum_from_answer

NOW = 2_000_000


def test_doctests():
    assert doctest.testmod(cg).failed == 0 and doctest.testmod(cq).failed == 0


def q(observer: Replica | None, leader_end=1000, voters=(1, 2)) -> Quorum:
    vs = tuple(Replica(i, f"d{i}", leader_end, None if i == 1 else NOW - 10, NOW if i == 1 else NOW - 10) for i in voters)
    return Quorum(1, 3, leader_end, vs, (observer,) if observer else ())


def obs(end=1000, fetch=NOW - 200, caught=NOW - 300, directory="d7") -> Replica:
    return Replica(7, directory, end, fetch, caught)


def test_a_caught_up_observer_passes():
    assert judge_observer(q(obs()), 7, "d7") is None


def test_each_failure_is_named():
    assert "not an observer" in judge_observer(q(None), 7)
    assert "already a voter" in judge_observer(q(None, voters=(1, 7)), 7)
    assert "not d9" in judge_observer(q(obs()), 7, "d9")
    assert "no directory id" in judge_observer(q(obs(directory=None)), 7)
    assert "11 records behind" in judge_observer(q(obs(end=989)), 7)
    assert judge_observer(q(obs(end=990)), 7) is None
    assert "last fetched 6.0 s ago" in judge_observer(q(obs(fetch=NOW - 6000)), 7)
    assert "last caught up 9.0 s ago" in judge_observer(q(obs(caught=NOW - 9000)), 7)
    assert "has not caught up yet" in judge_observer(q(obs(caught=None)), 7)
    assert "no leader" in judge_observer(Quorum(None, 3, 0, (), (obs(),)), 7)


def test_ages_are_taken_on_the_leaders_clock_not_the_callers():
    # the caller's clock is an hour ahead: the leader's own timestamp decides
    assert judge_observer(q(obs()), 7, now_ms=NOW + 3_600_000) is None


def good(i: int) -> Quorum:
    """Poll i of a controller that keeps fetching: its last fetch moves on (the leader's clock is fixed here)."""
    return q(obs(fetch=NOW - 1000 + 100 * i))


def test_the_watch_needs_polls_in_a_row_and_starts_over_on_a_bad_one():
    bad = q(obs(end=500, fetch=NOW - 850))  # between polls 1 and 2
    w = CatchUpWatch(7, needed=3)
    assert [w.observe(x) for x in (good(0), good(1), bad, good(2), good(3))] == [False] * 5
    assert "2 of 3 polls" in w.problem
    assert w.observe(good(4)) and w.passed and w.directory_id == "d7"


def test_a_fetch_that_does_not_move_between_polls_fails_the_watch():
    # a controller paused a moment ago: its last fetch is within the age bound on every poll, but never moves on
    w = CatchUpWatch(7, needed=3)
    assert [w.observe(good(0)) for _ in range(5)] == [False] * 5
    assert "has not fetched since the last poll" in w.problem
    assert [w.observe(good(i)) for i in (1, 2, 3)] == [False, False, True]


def test_the_watch_keeps_the_first_directory_id_it_saw():
    w = CatchUpWatch(7, needed=2)
    w.observe(q(obs()))
    assert not w.observe(q(obs(directory="dX")))  # formatted again mid-wait
    assert "formatted again" in w.problem
    assert "did not catch up within 30 s" in w.failure(30)


def test_quorum_from_a_v0_answer_has_no_times_and_no_directory_ids():
    answer = {"topics": [{"partitions": [{"leader_id": -1, "leader_epoch": 0, "high_watermark": -1,
                                          "current_voters": [{"replica_id": 1, "log_end_offset": -1}],
                                          "observers": []}]}]}
    quorum = quorum_from_answer(answer)
    assert quorum.leader_id is None and quorum.voters == (Replica(1),) and quorum.nodes == {}
