"""runner/health on a fake clock: consecutive healthy checks, a timeout naming what is still wrong."""

import pytest

from migrate.core.health import ClusterReading
from migrate.core.model import Partition, Topic
from migrate.errors import StepFailed
from migrate.runner.health import require_healthy, wait_healthy
from migrate.waiting import FakeClock

GOOD = ClusterReading(1, frozenset({1, 2}), (Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1),)),))
SHORT = ClusterReading(1, frozenset({1}), (Topic("t", partitions=(Partition(0, (1, 2), (1,), 1),)),))


def reader(*readings):
    seq = list(readings)
    return lambda: seq.pop(0) if len(seq) > 1 else seq[0]


def test_it_waits_for_check_count_healthy_checks_in_a_row():
    clock, seen = FakeClock(), []
    # healthy once, then a broker drops out, then healthy for good: the count starts again
    got = wait_healthy(reader(SHORT, GOOD, SHORT, GOOD), timeout_s=60, interval_s=2, check_count=3,
                       clock=clock, on_check=lambda c: seen.append(c.consecutive))
    assert got.healthy and got.checks == 6
    assert seen == [0, 1, 0, 1, 2, 3]
    assert clock.now() == 10.0


def test_a_timeout_names_the_partitions_and_brokers_still_wrong():
    clock = FakeClock()
    got = wait_healthy(reader(SHORT), timeout_s=10, interval_s=2, check_count=3, clock=clock)
    assert not got.healthy and got.last.missing_brokers == (2,)
    assert got.failure() == ("cluster not healthy after 10 s: 1 under-replicated partition(s): t-0; "
                             "broker(s) 2 not registered (expected 1, 2; registered 1)")
    with pytest.raises(StepFailed, match="t-0"):
        require_healthy(reader(SHORT), timeout_s=5, interval_s=1, clock=FakeClock())


def test_an_unanswered_read_counts_as_not_healthy_and_the_wait_goes_on():
    got = wait_healthy(reader(ClusterReading.unreachable("down"), GOOD), timeout_s=30, interval_s=1, check_count=2,
                       clock=FakeClock())
    assert got.healthy and got.checks == 3
    assert got.to_dict()["consecutive_healthy"] == 2
