"""``wait_for_gate``: the polling of ``kmigrate kraft status --wait-for``, on a fake clock and canned readings."""

from __future__ import annotations

from migrate.core.kraft.gates import Gate
from migrate.core.kraft.phases import Observation, QuorumView
from migrate.runner.kraft.gates import wait_for_gate
from migrate.waiting import FakeClock

BROKERS = (1, 2)
KRAFT = {"brokerid": 3000, "kraftControllerEpoch": 1}


def reading(offset: int, observers=BROKERS) -> tuple[Observation, tuple[str, ...]]:
    q = QuorumView(3000, 1, offset + 5, (3000,), tuple(observers), {3000: 0})
    return Observation("c", BROKERS, BROKERS, KRAFT, 1, {"kraft_metadata_offset": offset}, q), ()


def test_waits_until_dual_write_advances_then_returns_the_passed_watch():
    readings = iter([reading(-1, observers=(1,)), reading(100), reading(100), reading(130), reading(160)])
    seen = []
    clock = FakeClock()
    watch = wait_for_gate(lambda: next(readings), Gate.DUAL_WRITE, timeout_s=60, interval_s=2, check_count=2,
                          on_check=seen.append, clock=clock)
    assert watch.passed and watch.checks == 4 and clock.now() == 6.0
    assert seen[0].watch is watch and [p.number for p in seen] == [1, 2, 3, 4]


def test_a_timeout_leaves_the_watch_saying_what_it_waits_for():
    clock = FakeClock()
    watch = wait_for_gate(lambda: reading(-1, observers=(1,)), Gate.DUAL_WRITE, timeout_s=10, interval_s=2,
                          clock=clock)
    assert not watch.passed and clock.now() == 10.0 and watch.checks == 6
    assert watch.summary().startswith("phase waiting-for-brokers: waiting for /migration's metadata offset is -1")
    assert "broker 2 not registered with KRaft: in ZooKeeper mode without the migration settings" in watch.summary()
