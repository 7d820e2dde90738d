"""The snapshot file: round trip, refusal of files that are not ours, topic selection."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.snapshot import (Digest, PartitionSnapshot, Snapshot, Tail, select_topics,
                                     snapshot_from_json)
from migrate.files import read_snapshot

names = st.text("abcdefghijklmnopqrstuvwxyz.-_0123456789", min_size=1, max_size=20)
offsets = st.integers(0, 2**62)
sums = st.integers(-(2**100), 2**100)


@st.composite
def partitions(draw):
    start = draw(offsets)
    n = draw(st.integers(0, 10**9))
    return PartitionSnapshot(draw(names), draw(st.integers(0, 10000)), draw(st.booleans()), start, start + n, start,
                             start + n, Digest(draw(st.integers(0, n)), draw(sums), draw(sums), start, start + n,
                                               draw(st.integers(0, n))),
                             Tail(draw(st.integers(0, 5)), None, None))


@settings(max_examples=100, deadline=None)
@given(st.lists(partitions(), max_size=6, unique_by=lambda p: (p.topic, p.partition)), st.booleans())
def test_round_trip(parts, include_offsets):
    s = Snapshot("cluster-Id_1", "h:9092", "2025-01-01T00:00:00+00:00", include_offsets, "read_committed", tuple(parts))
    back = snapshot_from_json(s.to_json())
    assert back.partition_map() == s.partition_map()
    assert (back.cluster_id, back.include_offsets, back.format_version) == ("cluster-Id_1", include_offsets, 1)


def _valid() -> dict:
    p = PartitionSnapshot("t", 0, False, 0, 3, 0, 3, Digest(3, 1, -2, 0, 2, 3), Tail())
    return json.loads(Snapshot("c", "h:1", "now", True, "read_committed", (p,)).to_json())


@pytest.mark.parametrize("mutate, message", [
    (lambda d: "not json {", "is not JSON"),
    (lambda d: json.dumps({"hello": 1}), "is not a kmigrate verify snapshot"),
    (lambda d: json.dumps([1, 2]), "is not a kmigrate verify snapshot"),
    (lambda d: json.dumps({**d, "format_version": 99}), "format_version 99"),
    (lambda d: json.dumps({**d, "partitions": [{**d["partitions"][0], "digest": {}}]}), "damaged"),
    (lambda d: json.dumps({**d, "partitions": d["partitions"] * 2}), "appears twice"),
    (lambda d: json.dumps({**d, "hash": "md5"}), "damaged"),
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
