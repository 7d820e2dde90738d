"""``kmigrate verify`` on one real cluster, with real local Spark: snapshot before, compare after.

One sandbox (1 ZooKeeper, brokers 1-3, spare brokers 4-6) and one SparkSession (local[2]) for the
whole module; the CLI runs in-process and reuses that session. Topics are moved to the new brokers
with Kafka's own ``kafka-reassign-partitions`` (the stock tool), not kmigrate's ``partitions``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from migrate.adapters.spark.session import SparkSettings, spark_session
from migrate.files import client_settings
from migrate.sandbox.testing import unique_topic
from cluster_waits import settled, wait_for
from cli_support import run
from migrate.adapters.kafka.offsets import KafkaSide

pytestmark = pytest.mark.integration

# shared with test_verify_retention (its retention checked every second: nothing here is old enough to go)
SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6),
               kafka_settings={"log.retention.check.interval.ms": "1000"})
SHARE_SANDBOX = "verify"
MASTER = "local[2]"


@pytest.fixture(scope="module")
def spark(cluster):
    # small reads (at most 160,000 records, test_verify's heap test): the driver compiles with C1 only (quick_jit)
    with spark_session(SparkSettings(master=MASTER), records=200_000) as session:
        yield session


@pytest.fixture(scope="module")
def bs(cluster):
    return cluster.bootstrap_servers()


def admin(bs: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bs})


def create(bs: str, name: str, partitions: int, config: dict | None = None, rf: int = 3) -> None:
    a = admin(bs)
    a.create_topics([NewTopic(name, partitions, rf, config=config or {})])[name].result(timeout=60)

    def led() -> bool:
        t = a.list_topics(name, timeout=10).topics.get(name)
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values())

    wait_for(led, what=f"a leader for every partition of {name}", timeout_s=60, interval_s=0.2)


def produce(bs: str, topic: str, count: int, partitions: int, size: int = 200, key_mod: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5})
    for i in range(count):
        key = str(i % key_mod if key_mod else i).encode()
        headers = [("n", str(i).encode())] if i % 3 == 0 else None
        p.produce(topic, key=key, value=(f"{i}:" + "x" * size).encode(), partition=i % partitions, headers=headers)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def snapshot(capsys, bs: str, path: Path, *extra: str) -> dict:
    code, out, err = run(capsys, "verify", "snapshot", "--bootstrap-server", bs, "-o", str(path), "--master", MASTER,
                         "--output", "json", *extra)
    assert code == 0, err
    return json.loads(path.read_text())


def compare(capsys, path: Path, *extra: str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, "verify", "compare", str(path), "--master", MASTER, "--output", "json", *extra)
    return code, (json.loads(out) if out.strip() else {}), err


def parts_of(snap: dict, topic: str) -> dict[int, dict]:
    return {p["partition"]: p for p in snap["partitions"] if p["topic"] == topic}


def delete_records(bs: str, topic: str, partition: int, before_offset: int) -> None:
    a = admin(bs)  # keep the client alive until its futures complete
    futures = a.delete_records([TopicPartition(topic, partition, before_offset)], request_timeout=60)
    for f in futures.values():
        f.result(timeout=90)


def reassign_all_to(cluster, brokers: tuple[int, ...], timeout_s: float = 300) -> list[str]:
    """Move every partition of every topic (internal ones too) with the stock kafka-reassign-partitions tool."""
    bs = cluster.bootstrap_servers()
    md = admin(bs).list_topics(timeout=10)
    plan = {"version": 1, "partitions": []}
    for name, t in sorted(md.topics.items()):
        for p in sorted(t.partitions):
            rf = len(t.partitions[p].replicas)
            replicas = [brokers[(p + i) % len(brokers)] for i in range(rf)]
            plan["partitions"].append({"topic": name, "partition": p, "replicas": replicas})
    f = Path(cluster.dir) / f"reassign-{time.time_ns()}.json"
    f.write_text(json.dumps(plan))
    tool = lambda *a: subprocess.run(cluster.dist.tool_command("kafka-reassign-partitions", list(a)),  # noqa: E731
                                     capture_output=True, text=True, timeout=120)
    r = tool("--bootstrap-server", bs, "--reassignment-json-file", str(f), "--execute")
    assert r.returncode == 0, r.stdout + r.stderr

    def complete() -> bool:
        r = tool("--bootstrap-server", bs, "--reassignment-json-file", str(f), "--verify")
        return r.returncode == 0 and "is still in progress" not in r.stdout

    wait_for(complete, what=f"the reassignment of every partition to {brokers} to complete (kafka-reassign-partitions "
             "--verify)", timeout_s=timeout_s, interval_s=2)
    return sorted(md.topics)


class Background:
    """Produce to a topic until stopped (a live workload)."""

    def __init__(self, bs: str, topic: str, partitions: int):
        self.bs, self.topic, self.partitions = bs, topic, partitions
        self.stop_flag = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        p = Producer({"bootstrap.servers": self.bs, "acks": "all", "linger.ms": 2})
        while not self.stop_flag.is_set():
            p.produce(self.topic, key=b"live-%d" % self.sent, value=b"v" * 50, partition=self.sent % self.partitions)
            self.sent += 1
            p.poll(0)
            time.sleep(0.005)
        p.flush(30)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join(60)


def produce_transactions(bs: str, topic: str) -> int:
    """Committed, aborted, committed batches to partition 0; returns the committed record count."""
    p = Producer({"bootstrap.servers": bs, "transactional.id": unique_topic("tx"), "acks": "all"})
    p.init_transactions(60)
    committed = 0
    for n, commit in ((5, True), (3, False), (2, True)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, key=b"tx-%d" % i, value=b"commit" if commit else b"abort", partition=0)
        assert p.flush(60) == 0  # the batch reaches the log before the commit or abort
        if commit:
            p.commit_transaction(60)
            committed += n
        else:
            p.abort_transaction(60)
    # markers are written after the commit answers: wait until the last stable offset reaches the end
    side = KafkaSide(client_settings(bs))
    wait_for(lambda: side.offsets([(topic, 0)], "read_committed") == side.offsets([(topic, 0)], "read_uncommitted"),
             what=f"the transaction markers of {topic}-0 (its last stable offset at its end)", timeout_s=30, interval_s=0.2)
    return committed


def test_verify_passes_after_every_partition_moved_to_new_brokers(cluster, spark, bs, capsys, tmp_path):
    plain, compacted, tx = unique_topic("plain"), unique_topic("compacted"), unique_topic("tx")
    create(bs, plain, 6)
    create(bs, compacted, 3, {"cleanup.policy": "compact"})
    create(bs, tx, 1)
    produce(bs, plain, 6000, 6)
    produce(bs, compacted, 900, 3, key_mod=60)
    committed = produce_transactions(bs, tx)
    before = snapshot(capsys, bs, tmp_path / "before.json", "--topic", f"{plain},{compacted}", "--topic", tx)
    assert before["format"] == "kmigrate-verify-snapshot" and before["cluster_id"]
    assert sum(p["digest"]["records"] for p in parts_of(before, plain).values()) == 6000
    # compacted: 60 live keys, 900 records read
    assert sum(p["digest"]["records"] for p in parts_of(before, compacted).values()) == 60
    assert sum(p["digest"]["raw_records"] for p in parts_of(before, compacted).values()) == 900
    # transactions: markers and the aborted batch take offsets but are not records
    txp = parts_of(before, tx)[0]
    assert txp["digest"]["records"] == committed == 7
    assert txp["read_to"] - txp["read_from"] == 5 + 3 + 2 + 3  # the aborted batch and three markers take offsets

    with Background(bs, plain, 6) as live:  # producers keep writing during the move
        topics = reassign_all_to(cluster, (4, 5, 6))
    assert plain in topics and "__consumer_offsets" in topics
    # read again while the brokers learn the last moves' metadata
    replicas = settled(lambda: {b for t in admin(bs).list_topics(timeout=10).topics.values()
                                for p in t.partitions.values() for b in p.replicas}, {4, 5, 6})
    assert replicas == {4, 5, 6}, replicas  # nothing left on the old brokers
    assert live.sent > 0

    code, report, err = compare(capsys, tmp_path / "before.json")
    assert code == 0, (report, err)
    assert report["ok"] and report["mode"] == "same-cluster"
    assert report["summary"]["partitions"] == 10 and report["summary"]["differing_partitions"] == 0
    assert report["summary"]["tail_records"] > 0  # records produced during the move: reported, not compared
    # the text report says the same to a person
    code, out, _ = run(capsys, "verify", "compare", str(tmp_path / "before.json"), "--master", MASTER)
    assert code == 0 and "every partition matches" in out and plain in out


def test_deleted_record_extra_record_and_empty_partition_are_caught(cluster, spark, bs, capsys, tmp_path):
    topic = unique_topic("diff")
    create(bs, topic, 4)
    produce(bs, topic, 400, 4)
    f = tmp_path / "before.json"
    snapshot(capsys, bs, f, "--topic", topic)
    assert compare(capsys, f)[0] == 0

    # an extra record on partition 2: a tail (produced since the snapshot); a difference with --fail-on-tail
    p = Producer({"bootstrap.servers": bs})
    p.produce(topic, key=b"extra", value=b"extra", partition=2)
    p.flush(30)
    code, report, _ = compare(capsys, f)
    assert code == 0 and [(x["partition"], x["tail_records"]) for x in report["partitions"] if x["tail_records"]] == [(2, 1)]
    code, report, _ = compare(capsys, f, "--fail-on-tail")
    assert code == 1 and [x["partition"] for x in report["partitions"] if not x["ok"]] == [2]

    # one record deleted below the log start of partition 1
    delete_records(bs, topic, 1, 1)
    code, report, err = compare(capsys, f)
    assert code == 1, err
    bad = [x for x in report["partitions"] if not x["ok"]]
    assert [x["partition"] for x in bad] == [1]
    assert bad[0]["before"]["records"] == 100 and bad[0]["after"]["records"] == 99
    assert any("log start moved from 0 to 1" in m for m in bad[0]["problems"])

    # partition 3 emptied: every record deleted
    delete_records(bs, topic, 3, 100)
    code, report, _ = compare(capsys, f)
    assert code == 1
    bad = {x["partition"]: x for x in report["partitions"] if not x["ok"]}
    assert sorted(bad) == [1, 3] and bad[3]["after"]["records"] == 0
    code, out, _ = run(capsys, "verify", "compare", str(f), "--master", MASTER)
    assert code == 1 and f"{topic}-1" in out and f"{topic}-3" in out and "DIFFERENT" in out


def test_records_produced_while_verifying_are_no_difference(cluster, spark, bs, capsys, tmp_path):
    topic = unique_topic("live")
    create(bs, topic, 3)
    produce(bs, topic, 900, 3)
    f = tmp_path / "before.json"
    with Background(bs, topic, 3) as live:
        wait_for(lambda: live.sent >= 30, what="the live producer under way", timeout_s=30, interval_s=0.1)
        before = snapshot(capsys, bs, f, "--topic", topic)
        sent_at_snapshot = live.sent
        code, report, err = compare(capsys, f)
        ends = {p: x["end_offset"] for p, x in parts_of(before, topic).items()}
        wait_for(lambda: all(_high_watermark(bs, topic, p) > ends[p] for p in ends),
                 what="live records past the snapshot's end on every partition", timeout_s=30)
    assert code == 0, (report, err)
    assert live.sent > sent_at_snapshot  # records were really produced during the compare
    hw = {p: _high_watermark(bs, topic, p) for p in ends}
    assert all(hw[p] > ends[p] for p in ends)  # the snapshot's ends were captured, not the live end
    assert report["summary"]["tail_records"] > 0


def _high_watermark(bs: str, topic: str, partition: int) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": "hw-probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def test_compaction_between_snapshot_and_compare_is_no_difference(cluster, spark, bs, capsys, tmp_path):
    topic = unique_topic("cleaned")
    # the cleaner may not touch records until min.compaction.lag.ms is lowered after the snapshot
    create(bs, topic, 1, {"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
                          "min.compaction.lag.ms": "86400000"})
    produce(bs, topic, 500, 1, size=20, key_mod=10)
    time.sleep(1.5)  # segment.ms=1000 is the thing under test: the next record rolls a segment older than it
    produce(bs, topic, 1, 1, size=20, key_mod=1000)  # key "0" again: rolls the segment, so the first one can be cleaned
    f = tmp_path / "before.json"
    before = snapshot(capsys, bs, f, "--topic", topic)
    assert before["partitions"][0]["digest"]["raw_records"] == 501
    a = admin(bs)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={
        "cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0"})
    for fut in a.alter_configs([res]).values():
        fut.result(timeout=30)
    wait_for(lambda: _count(bs, topic) < 501, what=f"the log cleaner to clean {topic}", timeout_s=120, interval_s=1)
    assert _count(bs, topic) < 501, "the log cleaner did not run"
    code, report, err = compare(capsys, f)
    assert code == 0, (report, err)
    row = report["partitions"][0]
    assert row["after"]["records_read"] < 501  # the cleaner removed records between the two reads
    assert row["after"]["records"] == row["before"]["records"] == 10  # the table: 10 keys


def _count(bs: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": unique_topic("count"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, lo)])
        n, last = 0, lo - 1
        deadline = time.monotonic() + 30
        while last < hi - 1 and time.monotonic() < deadline:
            for m in c.consume(500, timeout=1):
                if m.error() is None:
                    n += 1
                    last = m.offset()
        return n
    finally:
        c.close()


def test_compare_against_a_later_snapshot_file(cluster, spark, bs, capsys, tmp_path):
    topic = unique_topic("files")
    create(bs, topic, 2)
    produce(bs, topic, 200, 2)
    first, second = tmp_path / "before.json", tmp_path / "after.json"
    snapshot(capsys, bs, first, "--topic", topic)
    produce(bs, topic, 10, 2)  # the tail
    after = snapshot(capsys, bs, second, "--like", str(first))
    assert after["like"] is not None and sum(p["tail"]["records"] for p in after["partitions"]) == 10
    code, out, err = run(capsys, "verify", "compare", str(first), "--against", str(second), "--output", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["tail_records"] == 10
    # a snapshot taken freely (past the first one's ends) is not comparable: bad input, not a false difference
    free = tmp_path / "free.json"
    snapshot(capsys, bs, free, "--topic", topic)
    code, _, err = run(capsys, "verify", "compare", str(first), "--against", str(free))
    assert code == 2 and "--like" in err


def test_a_read_leaves_no_records_on_the_driver_heap(cluster, spark, bs, capsys, tmp_path):
    """Spark's Kafka source pools each partition's last poll for 5 minutes by default: with many partitions
    that ran a driver out of memory (measured without the fix: 317 MB kept after reading 153 MB in 80
    partitions). verify frees them once read. Idle consumers (under 1 MB each, at most 64) are closed a
    few per second, so the heap is watched for up to 30 s."""
    small, wide = unique_topic("narrow"), unique_topic("wide")
    partitions, per_partition, size = 80, 2000, 1000  # about 2 MB per partition: one or two polls each
    create(bs, small, 1, rf=1)
    produce(bs, small, 100, 1)
    create(bs, wide, partitions, rf=1)
    produce(bs, wide, partitions * per_partition, partitions, size=size)
    jvm = spark.sparkContext._jvm

    def heap_used_mb() -> float:
        jvm.java.lang.System.gc()
        rt = jvm.java.lang.Runtime.getRuntime()
        return (rt.totalMemory() - rt.freeMemory()) / 2**20

    snapshot(capsys, bs, tmp_path / "narrow.json", "--topic", small)  # what any first read leaves behind
    time.sleep(3)
    before = heap_used_mb()
    snap = snapshot(capsys, bs, tmp_path / "wide.json", "--topic", wide)
    assert sum(p["digest"]["records"] for p in snap["partitions"]) == partitions * per_partition
    read_mb = partitions * per_partition * size / 2**20
    deadline = time.monotonic() + 30
    while (retained := heap_used_mb() - before) >= read_mb / 4 and time.monotonic() < deadline:
        time.sleep(1)
    assert retained < read_mb / 4, f"{retained:.0f} MB of the {read_mb:.0f} MB read are still on the driver's heap after 30 s"


# The digests of the records below, as taken by kmigrate 0.1.0 (session 6's job): a snapshot file must
# compare with one taken by a later kmigrate, so a change to how records are hashed must come with a new
# snapshot FORMAT_VERSION (which says "take the snapshot again"), and with new values here.
GOLDEN_DIGESTS = {
    # (compacted, offsets hashed): (records, hash1, hash2)
    (False, True): (6, 6619051563609315026, 23946689066031077991),
    (False, False): (6, 8224059544419761665, 6960093035038101780),
    (True, True): (3, -2476113658489295704, 13783695248167348524),
    (True, False): (3, 5212093179160040129, 8713982483581325719),
}


def test_record_digests_are_those_earlier_versions_wrote(cluster, spark, bs):
    from migrate.adapters.spark.job import digest_ranges
    from migrate.core.verify.snapshot import FORMAT_VERSION, ReadRange

    topic = unique_topic("golden")
    create(bs, topic, 1, {"retention.ms": "-1"}, rf=1)  # the 2023 timestamps below are past any time retention
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True})
    records = [(None, None, None), (b"", b"", []), (b"k", b"v", [("h", None)]), (b"k", b"v2", [("h", b"")]),
               (None, b"x" * 300, [("a", b"1"), ("b", b"2")]), (b"k2", None, [("b", b"2"), ("a", b"1")])]
    for i, (key, value, headers) in enumerate(records):  # one at a time: offsets 0-5 in this order
        p.produce(topic, key=key, value=value, headers=headers, partition=0, timestamp=1_700_000_000_000 + i)
        assert p.flush(30) == 0
    got = {}
    for compacted, offsets in GOLDEN_DIGESTS:
        digest = digest_ranges(spark, {"kafka.bootstrap.servers": bs},
                               [ReadRange(topic, 0, 0, 6, 6, compacted)], offsets)[(topic, 0)].digest
        got[(compacted, offsets)] = (digest.records, digest.hash1, digest.hash2)
    # format 2 added chunks and kept every record's hash: a format 1 snapshot still compares
    assert FORMAT_VERSION == 2, "a new snapshot format: update GOLDEN_DIGESTS to its digests"
    assert got == GOLDEN_DIGESTS


def test_bad_input_is_one_line_and_exit_2(cluster, spark, bs, capsys, tmp_path):
    topic = unique_topic("bad")
    create(bs, topic, 1)
    produce(bs, topic, 10, 1)
    good = tmp_path / "good.json"
    snapshot(capsys, bs, good, "--topic", topic)

    other = tmp_path / "other-cluster.json"
    data = json.loads(good.read_text())
    data["cluster_id"] = "SomeOtherClusterId0000"
    other.write_text(json.dumps(data))
    code, out, err = compare(capsys, other)
    assert code == 2 and "cluster" in err and "SomeOtherClusterId0000" in err and len(err.strip().splitlines()) == 1

    notours = tmp_path / "notours.json"
    notours.write_text(json.dumps({"topics": ["a"]}))
    code, _, err = compare(capsys, notours)
    assert code == 2 and "not a kmigrate verify snapshot" in err

    code, _, err = run(capsys, "verify", "snapshot", "--bootstrap-server", bs, "-o", str(tmp_path / "x.json"),
                       "--master", MASTER, "--topic", "no-such-topic-here")
    assert code == 2 and "'no-such-topic-here' does not exist" in err and not (tmp_path / "x.json").exists()

    # nothing listens there: a timeout, not a hang
    prefix = bs.split(":")[0].rsplit(".", 1)[0]
    t0 = time.monotonic()
    code, _, err = run(capsys, "verify", "snapshot", "--bootstrap-server", f"{prefix}.250:9092", "-o",
                       str(tmp_path / "y.json"), "--master", MASTER, "--timeout-ms", "3000")
    elapsed = time.monotonic() - t0
    assert code == 2 and "cannot reach Kafka" in err and len(err.strip().splitlines()) == 1
    assert elapsed < 30, elapsed
    code, _, err = run(capsys, "verify", "--source-bootstrap", f"{prefix}.250:9092", "--target-bootstrap", bs,
                       "--master", MASTER, "--timeout-ms", "3000")
    assert code == 2 and "cannot reach Kafka" in err


def test_cli_help_lists_the_three_forms():
    r = subprocess.run([sys.executable, "-m", "migrate", "verify", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "snapshot" in r.stdout and "compare" in r.stdout and "--source-bootstrap" in r.stdout
