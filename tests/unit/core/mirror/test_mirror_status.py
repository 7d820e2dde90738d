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
