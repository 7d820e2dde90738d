"""Two clusters where the target holds some source records twice (MirrorMaker 1 restarted after a
crash copies again what it sent since its last commit): duplicates, never a loss, but a difference
unless the compare allows them (an at-least-once copy); a record missing or foreign on the target is
a difference either way."""

from __future__ import annotations

from migrate.core.verify.compare import Alignment, compare_cross
from migrate.core.verify.snapshot import Digest, PartitionSnapshot, Snapshot, Tail


def part(records: int, h: tuple[int, int], p: int = 0) -> PartitionSnapshot:
    return PartitionSnapshot("t", p, False, 0, records, 0, records, Digest(records, h[0], h[1], 0, records - 1, records),
                             Tail(0, None, None))


def snap(parts, cluster: str) -> Snapshot:
    return Snapshot(cluster, "b:9092", "2026-11-23T12:00:00+00:00", False, "read_committed", tuple(parts))


def cross(source_common: Digest, target_common: Digest, source_once: Digest | None, target_once: Digest | None,
          allow_duplicates: bool = True):
    src = snap([part(source_common.records, (source_common.hash1, source_common.hash2))], "c1")
    tgt = snap([part(target_common.records, (target_common.hash1, target_common.hash2))], "c2")
    aligned = {"source": {("t", 0): Alignment(0, None, source_common, 0, source_once)},
               "target": {("t", 0): Alignment(0, None, target_common, 0, target_once)}}
    return compare_cross(src, tgt, aligned, allow_duplicates=allow_duplicates)


def test_records_copied_twice_are_duplicates_and_the_partition_passes():
    once = Digest(100, 11, 22)
    report = cross(Digest(100, 11, 22), Digest(130, 99, 98), once, once)
    p = report.partitions[0]
    assert p.ok and p.duplicates == 30 and p.differing == 0 and p.verified == 100
    assert "30 records copied more than once on the target" in p.notes[0] and "not a loss" in p.notes[0]
    doc = report.to_dict()
    assert doc["ok"] and doc["summary"]["duplicate_records"] == 30 and doc["partitions"][0]["duplicate_records"] == 30


def test_by_default_records_copied_twice_are_a_difference_counted_as_duplicates():
    once = Digest(100, 11, 22)
    report = cross(Digest(100, 11, 22), Digest(130, 99, 98), once, once, allow_duplicates=False)
    p = report.partitions[0]
    assert not p.ok and p.duplicates == 30 and p.differing == 30
    assert "30 records more than once" in p.problems[0] and "--allow-duplicates" in p.problems[0]
    doc = report.to_dict()
    assert not doc["ok"] and doc["allow_duplicates"] is False and doc["summary"]["duplicate_records"] == 30


def test_a_record_lost_beside_duplicates_is_still_a_difference():
    report = cross(Digest(100, 11, 22), Digest(130, 99, 98), Digest(100, 11, 22), Digest(99, 10, 20))
    p = report.partitions[0]
    assert not p.ok and p.duplicates == 0 and p.differing


def test_a_source_with_identical_records_of_its_own_counts_only_the_extra_copies():
    report = cross(Digest(100, 11, 22), Digest(104, 7, 7), Digest(97, 5, 5), Digest(97, 5, 5))
    assert report.partitions[0].ok and report.partitions[0].duplicates == 4


def test_fewer_records_on_the_target_are_never_duplicates():
    report = cross(Digest(100, 11, 22), Digest(90, 7, 7), Digest(90, 5, 5), Digest(90, 5, 5))
    assert not report.partitions[0].ok and report.partitions[0].duplicates == 0


def test_without_distinct_digests_an_extra_record_is_a_difference_as_before():
    report = cross(Digest(100, 11, 22), Digest(130, 99, 98), None, None)
    assert not report.partitions[0].ok
