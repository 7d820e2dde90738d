"""The move's first check (runner): a new controller missing from DescribeQuorum is looked for again for a few seconds
before the request is refused (a leader elected a moment ago lists an observer once it has fetched from it); a
controller still missing then is refused, nothing changed. Readings are given, the clock is fake."""

from __future__ import annotations

import pytest

from migrate.core.controllers.plan import NewController
from migrate.core.controllers.quorum import Quorum, Reading, Replica
from migrate.errors import BadInput
from migrate.runner.controllers.move import OBSERVER_GRACE_S, ControllerMove, ControllerMoveRequest


def _reading(observers: tuple[int, ...]) -> Reading:
    voters = tuple(Replica(i, f"d{i}", 100, 1000, 1000) for i in (1, 2, 3))
    return Reading(Quorum(1, 7, 100, voters, tuple(Replica(i, f"d{i}", 100, 1000, 1000) for i in observers)), 1, (4, 1))


class _Move(ControllerMove):
    def __init__(self, later: list[Reading]):
        self.now = 0.0
        super().__init__(ControllerMoveRequest(controllers=("c1:9093",), adds=(NewController(7, "c7", 9093),),
                                               removes=(1,)),
                         clock=lambda: self.now, sleep=self._sleep)
        self.later = later
        self.reads = 0

    def _sleep(self, s: float) -> None:
        self.now += s

    def read(self, timeout_s=None):
        self.reads += 1
        return None, (self.later.pop(0) if self.later else _reading(()))


def test_an_observer_seen_on_a_later_read_is_not_refused():
    move = _Move([_reading(()), _reading((7,))])
    reading, change = move._checked(_reading(()))
    assert reading.quorum.observer(7) is not None and change.add_ids == (7,) and move.reads == 2


def test_a_controller_still_missing_after_the_grace_is_refused():
    move = _Move([])
    with pytest.raises(BadInput, match="controller 7 is neither an observer nor a voter"):
        move._checked(_reading(()))
    assert OBSERVER_GRACE_S <= move.now <= OBSERVER_GRACE_S + move.req.interval_s
    assert move.reads == int(OBSERVER_GRACE_S / move.req.interval_s)


def _at(now_ms: int, fetched: dict[int, int], leader: int = 1) -> Quorum:
    """Leader ``leader`` whose clock reads ``now_ms``; the other voters last fetched at ``fetched[id]``."""
    return Quorum(leader, 7, 100, (Replica(leader, f"d{leader}", 100, None, now_ms),) + tuple(
        Replica(i, f"d{i}", 100, f, f) for i, f in fetched.items()), ())


def test_a_removal_waits_until_the_voters_were_seen_fetching_over_a_second():
    """A voter paused a moment ago still shows a recent fetch: the runner tells it by its last fetch standing still
    between two readings a second apart, and holds a removal until it has such a pair."""
    move = ControllerMove(ControllerMoveRequest(controllers=("c1:9093",), adds=(7,), removes=(1,)))
    assert move._staleness(_at(10_000, {2: 9_950, 3: 9_900})) == frozenset() and move._stale is None
    assert move._staleness(_at(10_400, {2: 10_350, 3: 9_900})) == frozenset() and move._stale is None  # too close
    assert move._staleness(_at(11_000, {2: 10_950, 3: 9_900})) == {3}  # 3 did not fetch for 1.1 s: paused
    assert move._staleness(_at(12_100, {2: 12_050, 3: 12_000})) == frozenset() and move._stale == frozenset()
    assert move._staleness(_at(500, {1: 450, 3: 400}, leader=2)) == frozenset() and move._stale is None  # new leader
    assert move._staleness(Quorum(2, 8, 100, (Replica(2, "d2", 100, None, None),), ())) == frozenset()  # no clock
    assert move._stale == frozenset()  # nothing to tell by: nothing held back


def test_a_read_asks_the_last_leader_first_and_probes_the_removed_controllers_all_at_once(monkeypatch):
    """A stopped controller on a host that drops packets costs a probe its whole timeout: the removed controllers
    are probed at the same time (each probe waits at a barrier the others must reach: one after the other, it
    breaks), and the quorum is asked of the last leader first, not of a stopped controller listed first."""
    import threading

    from migrate.adapters.kafka import voters as kv
    from migrate.runner.controllers import move as move_module

    asked: list[list[str]] = []
    voters = tuple(Replica(i, f"d{i}", 100, 1000, 1000) for i in (1, 2, 3))
    quorum = Quorum(2, 7, 100, voters, ())

    def read_controllers(addresses, settings=None, timeout_s=5.0):
        asked.append(list(addresses))
        return kv.ControllerView("c2:9093", quorum, 1)

    barrier = threading.Barrier(3, timeout=5)

    def answers(address, settings):
        barrier.wait()  # BrokenBarrierError unless all three probes are in flight together
        return address != "c1:9093"

    monkeypatch.setattr(kv, "read_controllers", read_controllers)
    monkeypatch.setattr(move_module, "_answers", answers)
    move = ControllerMove(ControllerMoveRequest(controllers=("c1:9093", "c2:9093", "c3:9093"), adds=(7, 8, 9),
                                                removes=(1, 2, 3)))
    move.addresses = {1: "c1:9093", 2: "c2:9093", 3: "c3:9093", 7: "c7:9093", 8: "c8:9093", 9: "c9:9093"}
    move.cluster_id = "x"
    monkeypatch.setattr(move, "_broker_ids", lambda: [])
    _view, reading = move.read()
    assert reading.stopped_ids == frozenset({1})
    move.read()
    assert asked[0][0] == "c1:9093" and asked[1][0] == "c2:9093"
