"""Pure comparison of verify snapshots: same cluster (offsets hashed, tail) and two clusters (common prefix)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.compare import compare_cross, compare_same, prefix_requests
from migrate.core.snapshot import plan_ranges
from migrate.core.snapshot import Digest, PartitionSnapshot, Snapshot, Tail


def part(topic="t", p=0, records=10, h=(1, 2), start=0, end=None, read_to=None, tail=0, compacted=False):
    end = records + start if end is None else end
    read_to = end if read_to is None else read_to
    return PartitionSnapshot(topic, p, compacted, start, end + tail, start, read_to,
                             Digest(records, h[0], h[1], start if records else None, read_to - 1 if records else None, records),
                             Tail(tail, read_to if tail else None, read_to + tail - 1 if tail else None))


def snap(parts, cluster="c1", offsets=True, taken="t0"):
    return Snapshot(cluster, "b:9092", taken, offsets, "read_committed", tuple(parts))


def test_identical_snapshots_match():
    s = snap([part(p=0), part(p=1, h=(5, 6))])
    report = compare_same(s, s)
    assert report.ok and len(report.partitions) == 2 and not report.differing


def test_changed_content_same_count_is_named():
    before = snap([part(p=0), part(p=1)])
    after = snap([part(p=0), part(p=1, h=(1, 3))])
    report = compare_same(before, after)
    assert not report.ok
    assert [p.name for p in report.differing] == ["t-1"]
    assert "content differs" in report.differing[0].problems[0]


def test_log_start_moved_is_a_named_difference():
    before = snap([part(p=0, records=10)])
    moved = dataclasses.replace(part(p=0, records=9, start=1, end=10, h=(7, 8)))
    report = compare_same(before, snap([moved]))
    assert not report.ok
    assert any("log start moved from 0 to 1" in x for x in report.differing[0].problems)
    assert any("records: before 10, after 9" in x for x in report.differing[0].problems)


def test_tail_is_reported_not_a_difference_unless_asked():
    before = snap([part(p=0, records=10)])
    after = snap([part(p=0, records=10, tail=3)])
    report = compare_same(before, after)
    assert report.ok and report.partitions[0].tail_records == 3
    assert "3 records produced since the snapshot" in report.partitions[0].notes[0]
    strict = compare_same(before, after, fail_on_tail=True)
    assert not strict.ok and "--fail-on-tail" in strict.differing[0].problems[0]


def test_missing_partition_and_truncated_end_are_differences():
    before = snap([part(p=0, records=10), part(p=1, records=10)])
    truncated = part(p=0, records=8, end=8, h=(3, 3))
    report = compare_same(before, snap([truncated]))
    names = {p.name: p.problems for p in report.differing}
    assert set(names) == {"t-0", "t-1"}
    assert any("end offset went back from 10 to 8" in x for x in names["t-0"])
    assert "missing" in names["t-1"][0]


def test_other_cluster_or_unbounded_after_snapshot_is_bad_input():
    before = snap([part()])
    with pytest.raises(BadInput, match="different clusters"):
        compare_same(before, snap([part()], cluster="other"))
    longer = snap([part(records=12, h=(9, 9))])
    with pytest.raises(BadInput, match="--like"):
        compare_same(before, longer)
    with pytest.raises(BadInput, match="hash offsets"):
        compare_same(snap([part()], offsets=False), snap([part()], offsets=False))


def test_cross_cluster_equal_counts_compare_hashes():
    src = snap([part(p=0), part(p=1)], offsets=False)
    tgt = snap([part(p=0, start=100), part(p=1, h=(0, 0))], cluster="c2", offsets=False)
    report = compare_cross(src, tgt)
    assert [p.name for p in report.differing] == ["t-1"]
    assert report.left.label == "source" and report.right.label == "target"


def test_cross_cluster_prefix_logic():
    src = snap([part(p=0, records=12, h=(10, 20)), part(p=1, records=5), part(p=2, records=5)], offsets=False)
    tgt = snap([part(p=0, records=10, h=(1, 2)), part(p=1, records=7, h=(4, 4)), part(p=2, records=4, h=(3, 3))],
               cluster="c2", offsets=False)
    wanted = prefix_requests(src, tgt)
    assert wanted == {"source": {("t", 0): 10, ("t", 2): 4}, "target": {("t", 1): 5}}
    # the source's first 10 records equal the target's 10: the target is behind (a tail on the source)
    prefixes = {"source": {("t", 0): Digest(10, 1, 2), ("t", 2): Digest(4, 9, 9)}, "target": {("t", 1): Digest(5, 1, 2)}}
    report = compare_cross(src, tgt, prefixes)
    by = {p.name: p for p in report.partitions}
    assert by["t-0"].ok and by["t-0"].tail_records == 2 and by["t-0"].tail_side == "source"
    assert not by["t-1"].ok and "past the source's last one" in by["t-1"].problems[0]
    assert not by["t-2"].ok and "differ" in by["t-2"].problems[0]
    assert not compare_cross(src, tgt, prefixes, fail_on_tail=True).partitions[0].ok


def test_cross_cluster_partition_empty_on_one_side_is_a_difference():
    src = snap([part(p=0, records=10), part(p=1, records=0, h=(0, 0))], offsets=False)
    tgt = snap([part(p=0, records=0, h=(0, 0)), part(p=1, records=0, h=(0, 0))], cluster="c2", offsets=False)
    assert prefix_requests(src, tgt) == {"source": {}, "target": {}}
    report = compare_cross(src, tgt)
    assert [(p.name, p.problems) for p in report.differing] == [
        ("t-0", ("partition empty on the target (records source 10, target 0)",))]


def test_cross_cluster_compacted_tables_and_missing_partitions():
    src = snap([part("c", 0, records=3, compacted=True), part("c", 1, records=3, compacted=True)], offsets=False)
    tgt = snap([part("c", 0, records=3, h=(1, 9), compacted=True), part("c", 2, records=1, compacted=True)],
               cluster="c2", offsets=False)
    assert prefix_requests(src, tgt) == {"source": {}, "target": {}}
    report = compare_cross(src, tgt)
    problems = {p.name: p.problems[0] for p in report.differing}
    assert problems == {"c-0": "content differs (live keys 3 on both sides)", "c-1": "missing on the target",
                        "c-2": "exists only on the target"}


def test_report_json_names_both_sides():
    before = snap([part(p=0)])
    after = snap([part(p=0, h=(0, 0))], taken="t1")
    d = compare_same(before, after).to_dict()
    assert d["ok"] is False and d["summary"]["differing_topics"] == ["t"]
    row = d["partitions"][0]
    assert row["before"]["hash1"] == "1" and row["after"]["hash1"] == "0"
    assert d["topics"][0]["differing_partitions"] == 1


def test_plan_ranges_fresh_and_like():
    offsets = {("t", 0): (5, 20), ("t", 1): (0, 7)}
    fresh = plan_ranges([("t", 0), ("t", 1)], offsets, set())
    assert [(r.read_from, r.read_to, r.end) for r in fresh] == [(5, 20, 20), (0, 7, 7)]
    like = snap([part(p=0, start=2, records=10, end=12), part(p=1, records=9, end=9)])
    ranges = plan_ranges([("t", 0), ("t", 1)], offsets, {"t"}, like)
    # p0: log start moved above the reference start -> read from it; tail up to now
    # p1: end went back below the reference end -> read to the end now
    assert [(r.read_from, r.read_to, r.end, r.compacted) for r in ranges] == [(5, 12, 20, False), (0, 7, 7, False)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)),
                min_size=1, max_size=8), st.data())
def test_any_single_change_is_caught_and_only_there(figures, data):
    parts = [part(p=i, records=n, h=(a, b)) for i, (n, a, b) in enumerate(figures)]
    before = snap(parts)
    assert compare_same(before, before).ok
    i = data.draw(st.integers(0, len(parts) - 1))
    field = data.draw(st.sampled_from(["records", "hash1", "hash2"]))
    p = parts[i]
    d = p.digest
    changed = dataclasses.replace(d, **{field: getattr(d, field) + data.draw(st.sampled_from([-1, 1]))})
    if field == "records" and changed.records < 0:
        return
    after = snap(parts[:i] + [dataclasses.replace(p, digest=changed)] + parts[i + 1:])
    report = compare_same(before, after)
    assert [x.partition for x in report.differing] == [i]
