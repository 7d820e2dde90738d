"""The snapshot file: round trip, refusal of files that are not ours, topic selection."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.verify.snapshot import (MAX_CHUNKS, Chunk, Digest, PartitionSnapshot, Snapshot, Tail, TopicConfig,
                                   chunk_grid, chunk_size, plan_ranges, select_topics, snapshot_from_json)
from migrate.files import read_snapshot

names = st.text("abcdefghijklmnopqrstuvwxyz.-_0123456789", min_size=1, max_size=20)
offsets = st.integers(0, 2**62)
sums = st.integers(-(2**100), 2**100)


@st.composite
def partitions(draw):
    start = draw(offsets)
    n = draw(st.integers(0, 10**9))
    compacted = draw(st.booleans())
    grid = {}
    if not compacted:
        base, size = start - draw(st.integers(0, 5)), chunk_size(start, start + n)
        grid = dict(chunk_base=base, chunk_size=size, chunks=tuple(
            Chunk(a, b, draw(st.integers(0, b - a)), draw(sums), draw(sums), draw(st.none() | st.integers(0, 2**50)))
            for a, b in chunk_grid(base, size, start, start + n)))
    return PartitionSnapshot(draw(names), draw(st.integers(0, 10000)), compacted, start, start + n, start,
                             start + n, Digest(draw(st.integers(0, n)), draw(sums), draw(sums), start, start + n,
                                               draw(st.integers(0, n))),
                             Tail(draw(st.integers(0, 5)), None, None), **grid)


configs = st.dictionaries(names, st.builds(TopicConfig, st.sampled_from(["delete", "compact", "compact,delete"]),
                                           st.integers(-1, 2**40), st.integers(-1, 2**40)), max_size=3)


@settings(max_examples=25, deadline=None)  # up to 256 chunks a partition: each example is large
@given(st.lists(partitions(), max_size=4, unique_by=lambda p: (p.topic, p.partition)), st.booleans(), configs)
def test_round_trip(parts, include_offsets, topic_configs):
    s = Snapshot("cluster-Id_1", "h:9092", "2025-01-01T00:00:00+00:00", include_offsets, "read_committed", tuple(parts),
                 topic_configs=topic_configs)
    back = snapshot_from_json(s.to_json())
    assert back.partition_map() == s.partition_map()
    assert all(len(p.chunks) <= MAX_CHUNKS + 1 for p in back.partitions if p.chunks is not None)
    assert (back.cluster_id, back.include_offsets, back.format_version) == ("cluster-Id_1", include_offsets, 2)
    assert back.topic_configs == topic_configs


def test_plan_ranges_keeps_the_earlier_snapshots_grid():
    fresh = plan_ranges([("t", 0), ("t", 1)], {("t", 0): (10, 10 + 1000), ("t", 1): (0, 0)}, set())
    assert [(r.chunk_base, r.chunk_size) for r in fresh] == [(0, 4), (0, 4)]  # one grid, the longest's
    earlier = Snapshot("c", "h:1", "now", True, "read_committed", (
        PartitionSnapshot("t", 0, False, 10, 1010, 10, 1010, Digest(1000), Tail(), 10, 4, tuple(
            Chunk(a, b, b - a) for a, b in chunk_grid(10, 4, 10, 1010))),
        PartitionSnapshot("t", 1, False, 0, 50, 0, 50, Digest(50), Tail())))  # format 1: one piece
    like = plan_ranges([("t", 0), ("t", 1)], {("t", 0): (500, 2000), ("t", 1): (20, 60)}, set(), earlier)
    assert [(r.read_from, r.read_to, r.end, r.chunk_base, r.chunk_size) for r in like] == [
        (500, 1010, 2000, 10, 4), (20, 50, 60, 0, 50)]


def test_chunks_off_their_grid_are_a_damaged_file():
    d = _valid()
    d["partitions"][0]["chunks"] = [[0, 2, 2, "1", "1", None]]  # the grid says 0..1, 1..2, 2..3
    with pytest.raises(BadInput, match="the chunks of t-0 do not cover offsets 0..3"):
        snapshot_from_json(json.dumps(d))


def test_a_large_partitions_snapshot_stays_small():
    n = 2_000_000 // 12
    size = chunk_size(0, n)
    parts = tuple(PartitionSnapshot("bench-topic", i, False, 0, n, 0, n, Digest(n, 2**70, -(2**70), 0, n - 1, n), Tail(),
                                    0, size, tuple(Chunk(a, b, b - a, 2**63 + a, -(2**63) - a, 1_800_000_000_000 + a)
                                                   for a, b in chunk_grid(0, size, 0, n)))
                  for i in range(12))
    text = Snapshot("c", "h:1", "now", True, "read_committed", parts).to_json()
    assert len(text.encode()) < 1_000_000, len(text)


def _valid() -> dict:
    p = PartitionSnapshot("t", 0, False, 0, 3, 0, 3, Digest(3, 1, -2, 0, 2, 3), Tail(), 0, 1,
                          (Chunk(0, 1, 1, 1, 1, 5), Chunk(1, 2, 1, 0, 0, 6), Chunk(2, 3, 1, 0, -3, 7)))
    return json.loads(Snapshot("c", "h:1", "now", True, "read_committed", (p,)).to_json())


@pytest.mark.parametrize("mutate, message", [
    (lambda d: "not json {", "is not JSON"),
    (lambda d: json.dumps({"hello": 1}), "is not a kmigrate verify snapshot"),
    (lambda d: json.dumps([1, 2]), "is not a kmigrate verify snapshot"),
    (lambda d: json.dumps({**d, "format_version": 99}), "format_version 99"),
    (lambda d: json.dumps({**d, "partitions": [{**d["partitions"][0], "digest": {}}]}), "damaged"),
    (lambda d: json.dumps({**d, "partitions": d["partitions"] * 2}), "appears twice"),
    (lambda d: json.dumps({**d, "hash": "md5"}), "damaged"),
    (lambda d: json.dumps({**d, "partitions": [{**d["partitions"][0], "chunks": [[0, 1, 1, "x", "1", None]]}]}),
     "damaged"),
    (lambda d: json.dumps({**d, "topic_configs": {"t": {"cleanup.policy": "delete"}}}), "damaged"),
])
def test_files_that_are_not_ours_are_bad_input(tmp_path, mutate, message):
    f = tmp_path / "s.json"
    f.write_text(mutate(_valid()))
    with pytest.raises(BadInput, match=message) as info:
        read_snapshot(f)
    assert "\n" not in info.value.message


def test_missing_file_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        read_snapshot(tmp_path / "nope.json")


def test_select_topics():
    have = ["orders", "payments", "__consumer_offsets", "logs.app", "logs.web"]
    assert select_topics(have) == ["logs.app", "logs.web", "orders", "payments"]
    assert select_topics(have, ("orders",)) == ["orders"]
    assert select_topics(have, (), r"logs\..*") == ["logs.app", "logs.web"]
    assert select_topics(have, ("__consumer_offsets",)) == ["__consumer_offsets"]
    with pytest.raises(BadInput, match="'nope' does not exist"):
        select_topics(have, ("orders", "nope"))
    with pytest.raises(BadInput, match="not a regular expression"):
        select_topics(have, (), "(")
    with pytest.raises(BadInput, match="matches no topic"):
        select_topics(have, (), "zzz")
