"""Pure comparison of verify snapshots: same cluster (offsets hashed, tail) and two clusters (common prefix)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.verify.compare import Alignment, alignment_requests, compare_cross, compare_same
from migrate.core.verify.snapshot import plan_ranges
from migrate.core.verify.snapshot import Digest, PartitionSnapshot, Snapshot, Tail


def part(topic="t", p=0, records=10, h=(1, 2), start=0, end=None, read_to=None, tail=0, compacted=False):
    end = records + start if end is None else end
    read_to = end if read_to is None else read_to
    return PartitionSnapshot(topic, p, compacted, start, end + tail, start, read_to,
                             Digest(records, h[0], h[1], start if records else None, read_to - 1 if records else None, records),
                             Tail(tail, read_to if tail else None, read_to + tail - 1 if tail else None))


def snap(parts, cluster="c1", offsets=True, taken="2026-11-23T12:00:00+00:00"):
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
    assert any("log start moved from 0 to 1: offsets 0..0 (1 records) are gone" in x
               for x in report.differing[0].problems)


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


def test_cross_cluster_target_behind_and_target_past_the_source():
    src = snap([part(p=0, records=12, h=(10, 20)), part(p=1, records=5), part(p=2, records=5)], offsets=False)
    tgt = snap([part(p=0, records=10, h=(1, 2)), part(p=1, records=7, h=(4, 4)), part(p=2, records=4, h=(3, 3))],
               cluster="c2", offsets=False)
    wanted = alignment_requests(src, tgt)
    assert set(wanted["source"]) == set(wanted["target"]) == {("t", 0), ("t", 1), ("t", 2)}
    common = Digest(10, 1, 2)
    aligned = {"source": {("t", 0): Alignment(0, None, common, 2), ("t", 1): Alignment(0, None, Digest(5, 1, 2), 0),
                          ("t", 2): Alignment(0, None, Digest(4, 9, 9), 1)},
               "target": {("t", 0): Alignment(0, None, common, 0), ("t", 1): Alignment(0, None, Digest(5, 1, 2), 2),
                          ("t", 2): Alignment(0, None, Digest(4, 3, 3), 0)}}
    report = compare_cross(src, tgt, aligned)
    by = {p.name: p for p in report.partitions}
    assert by["t-0"].ok and by["t-0"].tail_records == 2 and by["t-0"].tail_side == "source"
    assert by["t-0"].verified == 10
    assert not by["t-1"].ok and "past the source's last one" in by["t-1"].problems[0]
    assert not by["t-2"].ok and "the records both hold differ" in by["t-2"].problems[0]
    assert not compare_cross(src, tgt, aligned, fail_on_tail=True).partitions[0].ok


def test_cross_cluster_partition_empty_on_one_side_is_a_difference():
    src = snap([part(p=0, records=10), part(p=1, records=0, h=(0, 0))], offsets=False)
    tgt = snap([part(p=0, records=0, h=(0, 0)), part(p=1, records=0, h=(0, 0))], cluster="c2", offsets=False)
    assert alignment_requests(src, tgt) == {"source": {}, "target": {}}
    report = compare_cross(src, tgt)
    assert [(p.name, p.problems) for p in report.differing] == [
        ("t-0", ("partition empty on the target (records source 10, target 0)",))]


def test_cross_cluster_compacted_tables_and_missing_partitions():
    src = snap([part("c", 0, records=3, compacted=True), part("c", 1, records=3, compacted=True)], offsets=False)
    tgt = snap([part("c", 0, records=3, h=(1, 9), compacted=True), part("c", 2, records=1, compacted=True)],
               cluster="c2", offsets=False)
    assert alignment_requests(src, tgt) == {"source": {}, "target": {}}
    report = compare_cross(src, tgt)
    problems = {p.name: p.problems[0] for p in report.differing}
    assert problems == {"c-0": "content differs (live keys 3 on both sides)", "c-1": "missing on the target",
                        "c-2": "exists only on the target"}


def test_report_json_names_both_sides():
    before = snap([part(p=0)])
    after = snap([part(p=0, h=(0, 0))], taken="2026-11-23T12:00:01+00:00")
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


# ------------------------------------------------------------------ chunks and retention (format 2)
from migrate.core.verify.compare import expiry_reason, judge_chunks  # noqa: E402
from migrate.core.verify.snapshot import Chunk, TopicConfig, chunk_grid  # noqa: E402

NOW = 1_800_000_000_000  # compare time, ms
HOUR = 3_600_000
OLD, YOUNG = NOW - 48 * HOUR, NOW - 60_000  # newest record of a chunk: two days ago, a minute ago
DELETE_1D = TopicConfig("delete", 24 * HOUR, -1)


def chunked(records: int = 100, size: int = 10, read_from: int = 0, base: int = 0, stamps=None, changed=(),
            topic="t", p=0, tail=0):
    """A plain partition of ``records`` records at offsets 0.. on a grid of ``size``, read from ``read_from``;
    chunk i's hashes are (i+1, 2i+1) (+1000 for a chunk in ``changed``), its newest record ``stamps(i)``."""
    stamps = stamps or (lambda i: OLD)
    chunks = []
    for start, end in chunk_grid(base, size, read_from, records):
        i = (start - base) // size
        bump = 1000 if i in changed else 0
        whole = end - start == size or start == base + i * size and end == records
        h = (i + 1 + bump, 2 * i + 1) if whole and start == base + i * size else (-(i + 1) - start, start)
        chunks.append(Chunk(start, end, end - start, h[0], h[1], stamps(i)))
    n = sum(c.records for c in chunks)
    return PartitionSnapshot(topic, p, False, read_from, records + tail, read_from, records,
                             Digest(n, sum(c.hash1 for c in chunks), sum(c.hash2 for c in chunks),
                                    read_from if n else None, records - 1 if n else None, n),
                             Tail(tail, records if tail else None, records + tail - 1 if tail else None),
                             base, size, tuple(chunks))


def snap2(parts, configs=None, offsets=True, cluster="c1"):
    return dataclasses.replace(snap(parts, cluster=cluster, offsets=offsets), topic_configs=configs or {})


def same(before, after, config=DELETE_1D, **kw):
    return compare_same(snap2([before]), snap2([after], {"t": config} if config else {}), now_ms=NOW, **kw)


def test_unmoved_chunks_compare_exactly_and_count_as_verified():
    report = same(chunked(), chunked(tail=5))
    r = report.partitions[0]
    assert report.ok and (r.verified, r.expired, r.unverifiable, r.differing) == (100, 0, 0, 0)


def test_a_changed_chunk_is_named_by_its_offsets():
    report = same(chunked(), chunked(changed={3}))
    r = report.partitions[0]
    assert not report.ok and r.problems == ("offsets 30..39: content differs (10 records)",)
    assert (r.verified, r.differing) == (90, 10)


def test_chunks_below_the_new_log_start_older_than_retention_are_expired_as_configured():
    report = same(chunked(), chunked(read_from=30))
    r = report.partitions[0]
    assert report.ok, r.problems
    assert (r.verified, r.expired, r.unverifiable, r.differing) == (70, 30, 0, 0)
    assert r.notes[0].startswith("30 records below the new log start 30 expired as configured (retention.ms 86400000")
    assert report.to_dict()["summary"]["expired_records"] == 30


def test_records_not_old_enough_below_the_log_start_are_a_difference_naming_the_offsets():
    # delete-records to 30 while only the first chunk is older than retention
    report = same(chunked(stamps=lambda i: OLD if i == 0 else YOUNG), chunked(read_from=30))
    r = report.partitions[0]
    assert not report.ok
    assert r.problems[0].startswith("log start moved from 0 to 30: offsets 10..29 (20 records) are gone and not "
                                    "expired as configured (not old enough for the topic's retention")
    assert (r.verified, r.expired, r.differing) == (70, 10, 20)


@pytest.mark.parametrize("config, why", [
    (TopicConfig("compact", 1, -1), "the topic does not delete by retention"),
    (TopicConfig("delete", -1, -1), "the topic has no retention"),
    (None, "the topic's retention is not known"),
])
def test_no_retention_that_explains_it_is_a_difference(config, why):
    r = same(chunked(), chunked(read_from=20), config=config).partitions[0]
    assert not r.ok and "offsets 0..19 (20 records)" in r.problems[0] and why in r.problems[0]


def test_size_based_retention_explains_it_when_the_partition_is_at_retention_bytes():
    config = TopicConfig("compact,delete", -1, 5000)
    young = chunked(stamps=lambda i: YOUNG)
    held = same(young, chunked(read_from=20), config=config, partition_bytes={("t", 0): 5200}).partitions[0]
    assert held.ok and held.expired == 20 and "retention.bytes 5000: the partition holds 5200 bytes" in held.notes[0]
    small = same(young, chunked(read_from=20), config=config, partition_bytes={("t", 0): 4000}).partitions[0]
    assert not small.ok and small.differing == 20


def test_a_chunk_straddling_the_new_log_start():
    after = chunked(read_from=25)  # chunk 20..29 straddles: 5 records gone, 5 present
    old = same(chunked(), after).partitions[0]
    assert old.ok and (old.verified, old.expired, old.unverifiable) == (70, 25, 5)
    assert any("offsets 20..29 straddle the new log start 25: 5 records below it expired" in n for n in old.notes)
    # the chunk holds records newer than the retention: the gone ones cannot be judged, nothing is a difference
    young = same(chunked(stamps=lambda i: OLD if i < 2 else YOUNG), after).partitions[0]
    assert young.ok and (young.verified, young.expired, young.unverifiable) == (70, 20, 10)
    # a topic that does not delete: a difference naming exactly the offsets gone
    kept = same(chunked(), after, config=TopicConfig("compact", 1, -1)).partitions[0]
    assert not kept.ok and "offsets 0..24 (25 records) are gone" in kept.problems[0]


def test_a_change_above_the_new_log_start_is_still_found_after_expiry():
    r = same(chunked(), chunked(read_from=30, changed={8})).partitions[0]
    assert not r.ok and r.problems == ("offsets 80..89: content differs (10 records)",) and r.expired == 30


def test_a_format_1_snapshot_compares_as_one_piece():
    one_piece = part(records=100, h=(1, 1))
    assert same(one_piece, chunked(size=100)).ok  # an after snapshot on the grid of a format 1 partition
    unchanged = same(one_piece, part(records=100, h=(1, 1)))
    assert unchanged.ok and unchanged.partitions[0].verified == 100
    # the log start moved into the one piece: it straddles it, so its records are reported unverifiable
    moved = part(records=70, start=30, end=100, h=(5, 5))
    straddled = same(one_piece, moved).partitions[0]
    assert straddled.ok and (straddled.verified, straddled.unverifiable) == (0, 100)
    # wholly gone: a format 1 piece has no timestamp to judge retention by
    gone = same(one_piece, part(records=0, start=100, end=100, h=(0, 0))).partitions[0]
    assert not gone.ok and "format 1, without the timestamps" in gone.problems[0]


def test_expiry_reason_says_which_rule():
    assert expiry_reason(DELETE_1D, OLD, NOW).startswith("retention.ms 86400000: newest record ")
    assert expiry_reason(DELETE_1D, YOUNG, NOW) is None
    assert expiry_reason(DELETE_1D, None, NOW) is None
    assert expiry_reason(TopicConfig("delete", -1, 10), YOUNG, NOW, 10) == "retention.bytes 10: the partition holds 10 bytes"
    assert expiry_reason(TopicConfig("delete", -1, 10), YOUNG, NOW, None) is None


def test_judge_chunks_counts_add_up_to_the_records_before():
    before = chunked(records=97, size=7, stamps=lambda i: OLD if i < 5 else YOUNG)
    for read_from in range(0, 98, 3):
        j = judge_chunks(before, chunked(records=97, size=7, read_from=read_from), DELETE_1D, NOW)
        assert j.verified + j.expired + j.unverifiable + j.differing == 97, read_from


# --------------------------------------------------------------- two clusters after retention
def cross(src_parts, tgt_parts, aligned=None, src_config=DELETE_1D, tgt_config=DELETE_1D):
    src = snap2(src_parts, {"t": src_config}, offsets=False)
    tgt = snap2(tgt_parts, {"t": tgt_config}, offsets=False, cluster="c2")
    return compare_cross(src, tgt, aligned, now_ms=NOW)


def test_cross_cluster_records_expired_on_the_source_only():
    src, tgt = part(records=70, h=(7, 7)), part(records=100, h=(9, 9))
    common = Digest(70, 7, 7)
    aligned = {"source": {("t", 0): Alignment(0, None, common, 0)},
               "target": {("t", 0): Alignment(30, OLD, common, 0)}}
    r = cross([src], [tgt], aligned).partitions[0]
    assert r.ok and (r.verified, r.expired, r.expired_side) == (70, 30, "source")
    assert "30 older records on the target only: expired as configured on the source (retention.ms" in r.notes[0]
    # not old enough for the source's retention: a difference
    young = {"source": aligned["source"], "target": {("t", 0): Alignment(30, YOUNG, common, 0)}}
    bad = cross([src], [tgt], young).partitions[0]
    assert not bad.ok and "the target holds 30 older records the source lacks" in bad.problems[0]
    # one record changed among those both hold
    changed = {"source": {("t", 0): Alignment(0, None, Digest(70, 8, 7), 0)}, "target": aligned["target"]}
    assert not cross([src], [tgt], changed).partitions[0].ok


def test_cross_cluster_a_side_emptied_by_retention():
    src = part(records=0, h=(0, 0))
    tgt = chunked(records=50)
    r = cross([src], [tgt]).partitions[0]
    assert r.ok and (r.expired, r.expired_side) == (50, "source")
    young = cross([src], [chunked(records=50, stamps=lambda i: YOUNG)]).partitions[0]
    assert not young.ok and "partition empty on the source" in young.problems[0]


def test_a_chunked_snapshot_against_a_format_1_one_compares_whole():
    before = chunked()  # format 2, 10 chunks
    one_piece = part(records=100, h=(before.digest.hash1, before.digest.hash2))
    assert same(before, one_piece).ok and same(before, one_piece).partitions[0].verified == 100
    changed = part(records=100, h=(before.digest.hash1 + 1, before.digest.hash2))
    assert not same(before, changed).ok
    # the log start moved into the one piece: the newest of all chunks decides (old here): expired/unverifiable
    moved = same(before, part(records=70, start=30, end=100, h=(5, 5))).partitions[0]
    assert moved.ok and (moved.expired, moved.unverifiable) == (30, 70)
