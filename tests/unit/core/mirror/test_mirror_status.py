"""core/mirror/status.py: each mirrored partition's lag, and the one status whichever engine copies."""

from __future__ import annotations

from migrate.core.mirror.status import PartitionLag, partition_lags


def test_lag_is_the_source_end_minus_the_next_offset_to_copy():
    lags = partition_lags({("t", 0): (0, 100), ("t", 1): (40, 50), ("t", 2): (0, 0), ("t", 3): (30, 60)},
                          {("t", 0): 99, ("t", 1): 20, ("t", 3): 44})
    assert [p.lag for p in lags] == [0, 10, 0, 15]
    assert PartitionLag("t", 0, 0, 100, 89).lag == 10
    assert PartitionLag("t", 0, 0, 100, None).lag == 100
    # only transaction markers or aborted records after MirrorMaker's position: nothing left to copy
    settled = partition_lags({("t", 0): (0, 52), ("t", 1): (0, 52)}, {("t", 0): 49, ("t", 1): 49},
                             {("t", 0): 7_000, ("t", 1): None}, 10_000)
    assert [(p.lag, p.to_dict()["only_control_records_left"]) for p in settled] == [(2, False), (0, True)]
    # in time: now minus the timestamp of the next record to copy; 0 when caught up
    assert [p.to_dict()["time_lag_s"] for p in settled] == [3.0, 0.0]


def test_the_wait_ends_once_what_the_source_held_at_its_start_is_copied_with_producers_still_writing():
    """``mirror status --wait`` while producers write: each look finds new records (lag 0 may never be seen); the wait
    ends once every partition's position has passed the end its source had at the first look, for both engines."""
    import doctest

    from migrate.core.mirror import status as st
    from migrate.core.mirror.mm1 import GroupLag
    from migrate.core.mirror.status import MirrorStatus, copied_since

    assert doctest.testmod(st).failed == 0

    def mm1(*rows):  # (partition, committed offset, log end)
        return MirrorStatus("MirrorMaker 1", (), tuple(GroupLag("t", p, c, 0, e) for p, c, e in rows), ())

    first = mm1((0, 40, 100), (1, 5, 5))
    assert not copied_since(first, mm1((0, 99, 150), (1, 5, 5)))  # one record of the first look still to copy
    assert copied_since(first, mm1((0, 100, 150), (1, 7, 9)))  # 50 + 2 new ones behind: all written since
    assert copied_since(mm1((0, 100, 100)), mm1((0, 100, 100)))  # producers stopped: lag 0
    assert not copied_since(mm1((0, 90, 100)), mm1((0, 90, 100)))
