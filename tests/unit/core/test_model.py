"""The cluster snapshot model: parsers and the cluster-file format."""

from __future__ import annotations

import json

import pytest

from migrate.errors import BadInput
from migrate.core.model import (
    FORMAT_VERSION,
    ClusterSnapshot,
    Partition,
    Topic,
    parse_rack,
    snapshot_from_json,
    snapshot_to_dict,
    snapshot_to_json,
)


@pytest.mark.parametrize(
    "rack, sep, expected",
    [
        ("AD-1/FD-1", "/", ("AD-1", "FD-1")),
        ("AD-1", "/", ("AD-1", None)),
        ("a/b/c", "/", ("a", "b/c")),
        (" AD-2 / FD-3 ", "/", ("AD-2", "FD-3")),
        ("AD-1:FD-1", ":", ("AD-1", "FD-1")),
        ("AD-1/", "/", ("AD-1", None)),
        (None, "/", (None, None)),
        ("", "/", (None, None)),
    ],
)
def test_parse_rack(rack, sep, expected):
    assert parse_rack(rack, sep) == expected


def test_topic_replication_factor():
    t = Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1), Partition(1, (1, 2, 3), (1,), 1)))
    assert t.replication_factor == 3
    assert Topic("e").replication_factor == 0


def test_round_trip_is_exact_and_deterministic(kb):
    snap = kb.snapshot({"b": [(1, 2, 3), (2, 3, 1)], "a": [(3, 1, 2)]})
    text = snapshot_to_json(snap)
    back = snapshot_from_json(text, "c.json")
    assert snapshot_to_json(back) == text
    assert back.zookeeper == snap.zookeeper
    assert back.brokers == snap.brokers
    assert [t.name for t in back.topics] == ["a", "b"]  # sorted
    assert {t.name: t for t in back.topics} == {t.name: t for t in snap.topics}
    doc = json.loads(text)
    assert doc == snapshot_to_dict(snap)
    assert doc["kind"] == "kmigrate.cluster-snapshot" and doc["format_version"] == FORMAT_VERSION
    # one partition per line
    assert '{"isr": [1, 2, 3], "leader": 1, "partition": 0, "replicas": [1, 2, 3], "size_bytes": 1000}' in text


def test_round_trip_ongoing_reassignments(kb):
    snap = kb.snapshot()
    snap = ClusterSnapshot(
        cluster_id=snap.cluster_id, controller_id=1, zookeeper=snap.zookeeper, brokers=snap.brokers,
        topics=snap.topics, ongoing_reassignments={("orders", 0): ((4,), (1,))},
    )
    back = snapshot_from_json(snapshot_to_json(snap))
    assert back.ongoing_reassignments == {("orders", 0): ((4,), (1,))}


def test_other_format_version_is_refused(kb):
    doc = json.loads(snapshot_to_json(kb.snapshot()))
    doc["format_version"] = 7
    with pytest.raises(BadInput) as exc:
        snapshot_from_json(json.dumps(doc), "old.json")
    assert exc.value.message == "cluster file old.json has format_version 7; this kmigrate reads 1: re-run kmigrate inspect"


@pytest.mark.parametrize("text, needle", [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not a kmigrate cluster file"),
    ('{"kind": "something-else", "format_version": 1}', "is not a kmigrate cluster file"),
])
def test_foreign_files_are_refused(text, needle):
    with pytest.raises(BadInput) as exc:
        snapshot_from_json(text, "x.json")
    assert needle in exc.value.message and "\n" not in exc.value.message


def test_damaged_fields_are_named(kb):
    doc = json.loads(snapshot_to_json(kb.snapshot()))
    doc["topics"][0]["partitions"][1]["replicas"] = ["one"]
    with pytest.raises(BadInput, match=r"topics\[0\]\.partitions\[1\]\.replicas: expected a list of integer ids"):
        snapshot_from_json(json.dumps(doc), "x.json")
    doc = json.loads(snapshot_to_json(kb.snapshot()))
    del doc["brokers"][0]["port"]
    with pytest.raises(BadInput, match=r"brokers\[0\]\.port is missing"):
        snapshot_from_json(json.dumps(doc), "x.json")
    doc = json.loads(snapshot_to_json(kb.snapshot()))
    del doc["topics"][0]["partitions"][0]["isr"]
    with pytest.raises(BadInput, match=r"partitions\[0\]\.isr is missing"):
        snapshot_from_json(json.dumps(doc), "x.json")
