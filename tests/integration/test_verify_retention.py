"""``kmigrate verify compare`` after time-based retention deleted the oldest segments during a full
``kmigrate partitions`` migration: real sandbox, real local Spark, little data.

One sandbox (1 ZooKeeper, brokers 1-3, spare brokers 4-6) whose brokers check retention every second
(``log.retention.check.interval.ms`` is a static broker setting: it cannot be altered at run time, so
the sandbox starts with it). Each partition gets 100 records stamped two days ago, then 60 stamped
now: the first new record rolls the segment (``segment.ms`` 60 s is long past the old records'
time), so offsets 0..99 are a closed segment of their own. The topic keeps everything
(``retention.ms`` -1) until the snapshot is taken; then ``retention.ms`` becomes one hour, the brokers
delete the old segment (log start 100) while the migration moves every replica to brokers 4-6.
At most 256 records a partition: one record a chunk, so every record still present is compared.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.adapters.spark.session import SparkSettings, spark_session
from migrate.sandbox.testing import unique_topic
from cli_support import run
from cluster_waits import wait_for
from partitions_support import (MAPPING, admin, create_topic, drain, kmigrate_background, old_assignment,
                                replicas_on, wait_for_event)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6),
               kafka_settings={"log.retention.check.interval.ms": "1000"})
SHARE_SANDBOX = "verify"  # with test_verify: its topics are its own, moved by names (--topics)
MASTER = "local[2]"
PARTITIONS, OLD_RECORDS, NEW_RECORDS = 3, 100, 60
HOUR_MS = 3_600_000
# what a request meets while the migration moves a partition's leader (not all are flagged retriable)
LEADER_MOVING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH,
                 KafkaError.LEADER_NOT_AVAILABLE)
ANSWER_LATE = (KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT)


@pytest.fixture(scope="module")
def spark(cluster):
    # small reads (at most 160,000 records, test_verify's heap test): the driver compiles with C1 only (quick_jit)
    with spark_session(SparkSettings(master=MASTER), records=200_000) as session:
        yield session


def write_aged(cluster, topic: str) -> None:
    """Per partition: OLD_RECORDS records stamped two days ago, then NEW_RECORDS stamped now."""
    now = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), **TRUSTED_PRODUCER})
    for batch, (count, stamp) in enumerate(((OLD_RECORDS, now - 48 * HOUR_MS), (NEW_RECORDS, now))):
        for i in range(count * PARTITIONS):
            p.produce(topic, key=f"{batch}-{i}".encode(), value=f"value-{batch}-{i}".encode() * 4,
                      partition=i % PARTITIONS, timestamp=stamp + i)
        assert p.flush(60) == 0


def set_retention(cluster, topic: str, retention_ms: int) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", str(retention_ms), incremental_operation=AlterConfigOpType.SET)])
    a = admin(cluster)  # kept alive until its futures complete
    for f in a.incremental_alter_configs([resource]).values():
        f.result(timeout=60)


def log_starts(cluster, topic: str) -> dict[int, int] | None:
    """Each partition's log start, or None while a leader moves (the migration runs meanwhile)."""
    from confluent_kafka.admin import OffsetSpec

    a = admin(cluster)
    futures = a.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest() for p in range(PARTITIONS)},
                             request_timeout=30)
    try:
        return {tp.partition: f.result(timeout=30).offset for tp, f in futures.items()}
    except KafkaException as e:
        if e.args[0].retriable() or e.args[0].code() in LEADER_MOVING:
            return None
        raise


def wait_for_expiry(cluster, topic: str, timeout_s: float = 180) -> None:
    wait_for(lambda: log_starts(cluster, topic) == {p: OLD_RECORDS for p in range(PARTITIONS)},
             what=f"retention to delete the old segments of {topic} (log start {OLD_RECORDS} on every partition)",
             timeout_s=timeout_s, interval_s=1)


def delete_records(cluster, tp: TopicPartition, timeout_s: float = 240) -> None:
    """delete_records, tried again while the partition's leader moves (the migration runs meanwhile)."""

    def deleted() -> bool:
        # the broker answers DeleteRecords only once every in-sync replica has the new log start: a replica
        # being added fetches throttled, so the answer can take longer than the usual 10 s socket timeout
        a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers(), "socket.timeout.ms": 65000})
        try:
            for f in a.delete_records([tp], request_timeout=60).values():
                f.result(timeout=90)
            return True
        except KafkaException as e:
            # REQUEST_TIMED_OUT (the broker's) or _TIMED_OUT (the client's): the leader moved its log start
            # but a replica had not fetched it in time; asked again, it answers once that one has
            if not (e.args[0].retriable() or e.args[0].code() in LEADER_MOVING + ANSWER_LATE):
                raise
            return False

    wait_for(deleted, what=f"delete_records on {tp.topic}-{tp.partition} (its leader moving)", timeout_s=timeout_s,
             interval_s=1)


def aged_topic(cluster, prefix: str) -> str:
    topic = unique_topic(prefix)
    create_topic(cluster, topic, old_assignment(PARTITIONS, 2), {"retention.ms": "-1", "segment.ms": "60000"})
    write_aged(cluster, topic)
    return topic


def compare(capsys, path: Path) -> tuple[int, dict]:
    code, out, err = run(capsys, "verify", "compare", str(path), "--master", MASTER, "--output", "json")
    assert out.strip(), err
    return code, json.loads(out)


def test_retention_during_a_migration_is_expired_as_configured_not_a_difference(cluster, spark, capsys, tmp_path):
    expiring, deleted = aged_topic(cluster, "expiring"), aged_topic(cluster, "deleted")
    snapshots = {}
    for topic in (expiring, deleted):
        snapshots[topic] = tmp_path / f"{topic}.json"
        code, _, err = run(capsys, "verify", "snapshot", "--bootstrap-server", cluster.bootstrap_servers(), "-o",
                           str(snapshots[topic]), "--topic", topic, "--master", MASTER, "--output", "json")
        assert code == 0, err
        before = json.loads(snapshots[topic].read_text())
        assert before["format_version"] == 2 and before["topic_configs"][topic]["retention.ms"] == -1
        assert all(p["chunk_size"] == 1 and len(p["chunks"]) == OLD_RECORDS + NEW_RECORDS
                   for p in before["partitions"])
    # the migration starts; while it runs, retention becomes one hour and the two-day-old segments go
    proc = kmigrate_background("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                               "--topics", f"({expiring}|{deleted})", "-O", "json")
    wait_for_event(proc, lambda event: True, timeout_s=300)
    for topic in (expiring, deleted):
        set_retention(cluster, topic, HOUR_MS)
    for topic in (expiring, deleted):
        wait_for_expiry(cluster, topic)
    # delete-records on one partition to offset 130: records 100..129 are a minute old, not expired
    delete_records(cluster, TopicPartition(deleted, 1, OLD_RECORDS + 30))
    assert drain(proc, timeout_s=900) == 0, proc.stderr_text[-2000:]
    assert not replicas_on(cluster, (1, 2, 3), [expiring, deleted]), "every replica moved to brokers 4-6"

    code, report = compare(capsys, snapshots[expiring])
    assert code == 0, [p["problems"] for p in report["partitions"]]
    summary = report["summary"]
    assert summary["expired_records"] == PARTITIONS * OLD_RECORDS
    assert summary["verified_records"] == PARTITIONS * NEW_RECORDS  # every record still present compared
    assert summary["unverifiable_records"] == summary["differing_records"] == 0
    assert report["topics"][0]["expired_records"] == PARTITIONS * OLD_RECORDS
    for p in report["partitions"]:
        assert p["expired_records"] == OLD_RECORDS and p["after"]["read_from"] == OLD_RECORDS
        assert "expired as configured (retention.ms 3600000: newest record" in p["notes"][0]

    code, report = compare(capsys, snapshots[deleted])
    assert code == 1
    assert [(p["partition"], p["ok"]) for p in report["partitions"]] == [(0, True), (1, False), (2, True)]
    bad = report["partitions"][1]
    assert bad["problems"][0].startswith("log start moved from 0 to 130: offsets 100..129 (30 records) are gone "
                                         "and not expired as configured (not old enough"), bad["problems"]
    assert (bad["expired_records"], bad["differing_records"], bad["verified_records"]) == (100, 30, 30)
    assert report["summary"]["expired_records"] == PARTITIONS * OLD_RECORDS

    # the text report never cuts a topic name, however narrow the terminal
    from migrate.commands import common

    width = common.console.width
    try:
        common.console.width = 50
        code, out, _ = run(capsys, "verify", "compare", str(snapshots[deleted]), "--master", MASTER)
    finally:
        common.console.width = width
    assert code == 1 and f"{deleted}-1" in out.replace("\n", "") and "…" not in out


def test_size_based_retention_is_named_as_such(cluster, spark, capsys, tmp_path):
    # the broker's retention check interval cannot be altered at run time: the sandbox starts with it
    broker = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.retention.check.interval.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    a = admin(cluster)
    with pytest.raises(Exception, match="(?i)dynamic"):
        a.incremental_alter_configs([broker])[broker].result(timeout=60)

    topic = unique_topic("by-size")  # records of now, in segments of 2 KB: only retention.bytes deletes them
    create_topic(cluster, topic, old_assignment(PARTITIONS, 2), {"retention.ms": "-1", "segment.bytes": "2048"})
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), **TRUSTED_PRODUCER, "linger.ms": 0})
    for i in range(PARTITIONS * 150):
        p.produce(topic, key=b"%d" % i, value=b"v" * 60, partition=i % PARTITIONS)
        if i % 10 == 0:
            p.flush(30)  # small batches: many segments
    assert p.flush(60) == 0
    before = tmp_path / "by-size.json"
    code, _, err = run(capsys, "verify", "snapshot", "--bootstrap-server", cluster.bootstrap_servers(), "-o",
                       str(before), "--topic", topic, "--master", MASTER, "--output", "json")
    assert code == 0, err
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.bytes", "6000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([resource])[resource].result(timeout=60)
    wait_for(lambda: (starts := log_starts(cluster, topic)) is not None and min(starts.values()) > 0,
             what=f"retention.bytes to delete a segment of {topic}",
             timeout_s=180, interval_s=1)
    code, report = compare(capsys, before)
    assert code == 0, [x["problems"] for x in report["partitions"]]
    assert report["summary"]["expired_records"] > 0 and report["summary"]["differing_records"] == 0
    for x in report["partitions"]:
        if x["expired_records"]:
            assert "expired as configured (retention.bytes 6000: the partition holds" in x["notes"][0], x["notes"]
        assert x["verified_records"] + x["expired_records"] == 150


def test_a_snapshot_of_the_previous_format_compares_with_the_cluster_now(cluster, spark, capsys, tmp_path):
    # format 1 (the release before chunks) is format 2 without chunks and topic configs, same record hashes
    # (test_verify's golden digests): each partition compares as one piece, read on the grid it gives
    topic = unique_topic("format-1")
    create_topic(cluster, topic, old_assignment(PARTITIONS, 2), {"retention.ms": "-1"})
    write_aged(cluster, topic)
    current = tmp_path / "current.json"
    code, _, err = run(capsys, "verify", "snapshot", "--bootstrap-server", cluster.bootstrap_servers(), "-o",
                       str(current), "--topic", topic, "--master", MASTER, "--output", "json")
    assert code == 0, err
    data = json.loads(current.read_text())
    data["format_version"] = 1
    del data["topic_configs"]
    for p in data["partitions"]:
        for k in ("chunk_base", "chunk_size", "chunks"):
            del p[k]
    previous = tmp_path / "previous.json"
    previous.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), **TRUSTED_PRODUCER})
    p.produce(topic, key=b"late", value=b"late", partition=2)  # a tail: produced since the snapshot
    assert p.flush(30) == 0
    after = tmp_path / "after.json"
    code, out, err = run(capsys, "verify", "compare", str(previous), "--master", MASTER, "--output", "json",
                         "-o", str(after))
    assert code == 0, out + err
    report = json.loads(out)
    assert report["summary"]["verified_records"] == PARTITIONS * (OLD_RECORDS + NEW_RECORDS)
    assert report["summary"]["tail_records"] == 1
    saved = json.loads(after.read_text())  # the snapshot taken now: format 2, on the one-piece grid
    assert saved["format_version"] == 2
    assert all(len(x["chunks"]) == 1 and x["chunk_size"] == OLD_RECORDS + NEW_RECORDS for x in saved["partitions"])
