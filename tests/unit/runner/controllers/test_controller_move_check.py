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
