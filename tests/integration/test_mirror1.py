"""``kmigrate mirror --engine mirrormaker1`` on two real clusters with real MirrorMaker 1 processes.

Two sandboxes of 1 ZooKeeper and 1 broker each. Eleven tiny topics (keyed records, partitioned by
Java's murmur2 like a Java producer, so MirrorMaker 1 puts them in the same partitions), one of them
with many records on one timestamp and timestamps going backwards; two consumer groups part-way.
The tests run in order and share the clusters: plan and its refusals, two instances with a live
producer reaching lag 0, offsets translated and set on the target (the groups read every record they
had not read, and the re-reads reported are the ones they see), SIGKILL mid-copy and a restart
(status says records may have been copied twice, none is lost), stop. The fixture stops MirrorMaker.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.mirrormaker.mm1 import MirrorMaker1Process, instance_indexes
from migrate.adapters.processes import live_pids
from migrate.sandbox.testing import running_sandbox
from cli_support import run, run_json, sides
from cluster_waits import wait_for

pytestmark = pytest.mark.integration

SMALL = dict(zookeeper_ids=(1,), broker_ids=(1,), zookeeper_heap_mb=64, kafka_heap_mb=256)
TOPICS = [f"mm1-t{i}" for i in range(9)]
ORDERS, STAMPS, LOOSE = "mm1-orders", "mm1-stamps", "mm1-loose"
ALL = TOPICS + [ORDERS, STAMPS, LOOSE]
KEPT = [t for t in ALL if t != LOOSE]  # keyed records: MirrorMaker 1 keeps their partitions
PARTITIONS = {**{t: 1 for t in TOPICS}, ORDERS: 3, STAMPS: 2, LOOSE: 3}
MASTER = "local[1]"
HEAP = "128"
NOW = int(time.time() * 1000)


@pytest.fixture(scope="module")
def clusters():
    with running_sandbox(SMALL) as source, running_sandbox(SMALL) as target:
        yield source.bootstrap_servers(), target.bootstrap_servers()


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory, clusters):
    directory = tmp_path_factory.mktemp("mirror1-state")
    try:
        yield directory
    finally:
        for i in instance_indexes(directory):
            MirrorMaker1Process(directory, i).stop(timeout_s=20)
        assert all(MirrorMaker1Process(directory, i).pid() is None for i in instance_indexes(directory))


def producer(bs: str) -> Producer:
    # Java's partitioner for keyed records (murmur2), as MirrorMaker 1's producer on the target
    return Producer({"bootstrap.servers": bs, "partitioner": "murmur2_random", "linger.ms": 20,
                     "enable.idempotence": True})


def produce(bs: str, topic: str, count: int, start: int = 0, timestamps=None) -> None:
    p = producer(bs)
    for i in range(start, start + count):
        kw = {} if timestamps is None else {"timestamp": timestamps(i)}
        while True:
            try:
                p.produce(topic, key=f"k{i}".encode(), value=f"{topic}-{i}".encode(), headers=[("n", str(i).encode())], **kw)
                break
            except BufferError:
                p.poll(0.5)
    assert p.flush(120) == 0


def records(bs: str, topic: str, partitions: int, group: str | None = None) -> dict[int, list[bytes]]:
    """Values per partition from the start (or, with ``group``, from its committed offsets, committing)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group or "test-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        if group is None:
            c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        else:
            c.assign(c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30))
        todo = set(range(partitions))
        deadline = time.monotonic() + 120
        while todo and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=1.0):
                if m.error():
                    if m.error().code() == -191:
                        todo.discard(m.partition())
                    continue
                out[m.partition()].append(m.value())
        assert not todo, f"{topic}: partitions {todo} not read to the end"
    finally:
        c.close()
    return out


def consume_part(bs: str, group: str, topic: str, partitions: int, count_per_partition: int) -> set[bytes]:
    """The group reads ``count_per_partition`` records of each partition from the start and commits."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    seen: set[bytes] = set()
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got = Counter()
        deadline = time.monotonic() + 60
        while any(got[p] < count_per_partition for p in range(partitions)) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error() or got[m.partition()] >= count_per_partition:
                continue
            got[m.partition()] += 1
            seen.add(m.value())
            if got[m.partition()] == count_per_partition:
                c.commit(offsets=[TopicPartition(topic, m.partition(), m.offset() + 1)], asynchronous=False)
    finally:
        c.close()
    return seen


def create(bs: str, name: str, partitions: int) -> None:
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=60)

    def led() -> bool:
        t = a.list_topics(name, timeout=10).topics.get(name)
        return t is not None and t.error is None and bool(t.partitions) and all(
            p.leader >= 0 for p in t.partitions.values())

    wait_for(led, what=f"a leader for every partition of {name}", timeout_s=60, interval_s=0.2)


def end_offsets(bs: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' end offsets (a cheap look at how far a copy got)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "ends"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))
    finally:
        c.close()


def stamp(i: int) -> int:
    """Many records share a timestamp (blocks of 25), and every fifth block goes back in time."""
    block = i // 25
    return NOW - 600_000 + (block * 1000 if block % 5 else -block * 7000)


@pytest.fixture(scope="module")
def source_data(clusters):
    src, _ = clusters
    for t in ALL:
        create(src, t, PARTITIONS[t])
    for t in TOPICS:
        produce(src, t, 40)
    produce(src, ORDERS, 600)
    produce(src, STAMPS, 400, timestamps=stamp)
    p = producer(src)
    for i in range(300):  # unkeyed, all in partition 0; 2 kB each: MirrorMaker 1's producer, sticky per batch
        p.produce(LOOSE, value=f"{LOOSE}-{i}".encode().ljust(2000, b"."), partition=0)  # (16 kB), spreads them
    assert p.flush(60) == 0
    consume_part(src, "loose", LOOSE, 1, 50)
    read = {"billing": consume_part(src, "billing", ORDERS, 3, 70), "audit": consume_part(src, "audit", STAMPS, 2, 90)}
    return read


def mirror_pids(state_dir: Path) -> list[int]:
    return live_pids(str(state_dir), "kafka.tools.MirrorMaker")


def test_plan_says_mirrormaker1_is_deprecated_and_a_topic_filter_matching_nothing_starts_nothing(
        clusters, source_data, state_dir, capsys):
    code, out, err = run(capsys, "mirror", "plan", *sides(clusters), "--topics", "mm1-.*", "--engine", "mirrormaker1")
    assert code == 0, err
    assert "deprecated since Kafka 3.0" in err and "removed in Kafka 4.0" in err and "MirrorMaker 2 engine" in err
    assert ORDERS in out
    code, out, err = run(capsys, "mirror", "start", *sides(clusters), "--topics", "nothing-.*", "--engine",
                         "mirrormaker1", "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 2, (out, err)
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning:")]
    assert len(lines) == 1 and "matches --topics" in lines[0], err
    assert mirror_pids(state_dir) == [] and not list(state_dir.glob("mm1-*"))
    code, out, err = run(capsys, "mirror", "start", *sides(clusters), "--engine", "mirrormaker3")
    assert code == 2 and "--engine mirrormaker3" in err


def test_two_instances_with_a_live_producer_reach_lag_0_and_copy_every_record(clusters, source_data, state_dir, capsys):
    src, tgt = clusters
    stop = threading.Event()

    def live() -> None:
        i = 600
        while not stop.is_set():
            produce(src, ORDERS, 20, start=i)
            i += 20
            time.sleep(0.1)

    writer = threading.Thread(target=live)
    writer.start()
    try:
        code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", "mm1-.*", "--engine",
                                  "mirrormaker1", "--instances", "2", "--state-dir", str(state_dir), "--heap-mb", HEAP)
        assert code == 0, err
        assert doc["engine"] == "mirrormaker1" and len(doc["pids"]) == 2 and doc["started"] == [0, 1]
        assert sorted(doc["topics"]["created"]) == sorted(ALL)
        # the producer goes on until MirrorMaker has copied records it wrote while MirrorMaker ran
        written = end_offsets(src, ORDERS, 3)
        wait_for(lambda: end_offsets(tgt, ORDERS, 3) > written, what=f"MirrorMaker 1 copying the live records of "
                 f"{ORDERS} (past offset sum {written} on the target)", timeout_s=180, interval_s=0.2)
    finally:
        stop.set()
        writer.join()
    consumer = (state_dir / "mm1-consumer-0.properties").read_text()
    producer_props = (state_dir / "mm1-producer.properties").read_text()
    assert "exclude.internal.topics = true" in consumer and "auto.offset.reset = earliest" in consumer
    assert "group.id = kmigrate-mirrormaker1" in consumer
    assert "acks = all" in producer_props and "enable.idempotence = true" in producer_props
    assert "max.in.flight.requests.per.connection = 1" in producer_props
    assert (state_dir / "mm1-producer.properties").stat().st_mode & 0o077 == 0
    assert mirror_pids(state_dir) == sorted(doc["pids"])
    code, status, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir), "--wait", "--timeout", "3m")
    assert code == 0, (err, status.get("partitions"))
    assert status["engine"] == "mirrormaker1" and status["caught_up"] and status["total_lag"] == 0
    assert {(p["topic"], p["partition"]) for p in status["partitions"]} == {
        (t, p) for t in ALL for p in range(PARTITIONS[t])}
    assert all(p["current_offset"] == p["log_end_offset"] for p in status["partitions"] if p["log_end_offset"])
    assert all(i["running"] for i in status["instances"]) and len(status["instances"]) == 2
    assert status["duplicates_possible"] is False
    code, out, err = run(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert code == 0 and "kmigrate-mirrormaker1 on the source: lag 0 records" in " ".join(out.split()), out
    for t in KEPT:
        assert records(tgt, t, PARTITIONS[t]) == records(src, t, PARTITIONS[t]), t
    loose = records(tgt, LOOSE, 3)
    assert sorted(v for vs in loose.values() for v in vs) == sorted(records(src, LOOSE, 3)[0]) and len(loose[0]) < 300
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", "mm1-.*", "--engine",
                              "mirrormaker1", "--instances", "2", "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0 and doc["already_running"] and mirror_pids(state_dir) == sorted(doc["pids"])


def check_translated(clusters, doc: dict, group: str, topic: str, already: set[bytes]) -> None:
    """The group, restarted on the target from the offsets set there, reads every record it had not
    read on the source, and reads again as many as ``translate`` said."""
    src, tgt = clusters
    n = PARTITIONS[topic]
    unread = {v for vals in records(src, topic, n).values() for v in vals} - already
    got = records(tgt, topic, n, group=group)
    values = [v for vals in got.values() for v in vals]
    assert unread <= set(values), f"{group}: {len(unread - set(values))} records skipped"
    reported = sum(p["rereads"] for p in doc["partitions"] if p["group"] == group)
    assert len(values) - len(unread) == reported, (group, len(values) - len(unread), reported)


def test_offsets_translated_and_set_on_the_target_skip_nothing_and_rereads_match(clusters, source_data, state_dir, capsys):
    src, tgt = clusters
    code, dry, err = run_json(capsys, "mirror", "translate", "--state-dir", str(state_dir), "--group", "billing",
                              "--group", "audit", "--dry-run")
    assert code == 0, err
    assert not dry["applied"] and {p["group"] for p in dry["partitions"]} == {"billing", "audit"}
    admin = AdminClient({"bootstrap.servers": tgt})
    assert not [g for g in admin.list_consumer_groups().result(timeout=30).valid if g.group_id in ("billing", "audit")]
    code, doc, err = run_json(capsys, "mirror", "translate", "--state-dir", str(state_dir), "--group", "billing",
                              "--group", "audit")
    assert code == 0, err
    assert doc["applied"]
    for p in doc["partitions"]:
        assert p["target_offset"] <= p["source_committed"] or p["how"] == "at the end", p
    # unkeyed records spread over the target's partitions: no per-partition translation, nothing set
    code, out, err = run(capsys, "mirror", "translate", "--state-dir", str(state_dir), "--group", "loose")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not in the same partitions" in err, (out, err)
    assert "loose" not in {g.group_id for g in admin.list_consumer_groups().result(timeout=30).valid}
    for group, topic in (("billing", ORDERS), ("audit", STAMPS)):
        check_translated(clusters, doc, group, topic, source_data[group])
    stamps = [p for p in doc["partitions"] if p["topic"] == STAMPS]
    assert stamps and all(p["confirmed"] for p in stamps), stamps


def test_sigkill_mid_copy_is_reported_as_possible_duplicates_and_loses_nothing(clusters, source_data, state_dir, capsys):
    src, tgt = clusters
    pids = mirror_pids(state_dir)
    assert len(pids) == 2
    before = sum(len(v) for v in records(tgt, ORDERS, 3).values())
    produce(src, ORDERS, 12_000, start=100_000)
    c = Consumer({"bootstrap.servers": tgt, "group.id": "ends"})
    try:
        wait_for(lambda: sum(c.get_watermark_offsets(TopicPartition(ORDERS, p), timeout=30)[1] for p in range(3))
                 >= before + 1500, what="MirrorMaker 1 copying 1500 of the new records", timeout_s=120, interval_s=0.05)
    finally:
        c.close()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: mirror_pids(state_dir) == [], what="the killed MirrorMaker 1 instances gone", timeout_s=30,
             interval_s=0.2)
    assert mirror_pids(state_dir) == []
    code, status, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert code == 0, err
    assert status["duplicates_possible"] and not status["process"]["running"]
    assert "copied twice" in status["notes"][0]
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", "mm1-.*", "--engine",
                              "mirrormaker1", "--instances", "2", "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0, err
    assert doc["started"] == [0, 1]
    code, status, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir), "--wait", "--timeout", "3m")
    assert code == 0, err
    assert status["caught_up"] and status["duplicates_possible"]
    code, out, err = run(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert "copied twice" in err
    on_source, on_target = records(src, ORDERS, 3), records(tgt, ORDERS, 3)
    for p in range(3):
        assert set(on_source[p]) == set(on_target[p]), f"partition {p}: records lost"
        assert len(on_target[p]) >= len(on_source[p])
    copied_twice = {p: len(on_target[p]) - len(on_source[p]) for p in range(3)}
    # a group part-way through the records copied around the kill, switched by mirror cutover: its offsets
    # translated by kmigrate onto a target holding duplicates, the cross-cluster verify gate passing
    late = consume_part(src, "late", ORDERS, 3, before // 3 + 500)
    code, doc, err = run_json(capsys, "mirror", "cutover", "--state-dir", str(state_dir), "--group", "late",
                              "--topics", ORDERS, "--quiet-period", "2s", "--master", MASTER)
    assert code == 0, err
    assert [g["gate"] for g in doc["gates"]][:3] == ["producers-stopped", "replicated", "groups-stopped"], doc["gates"]
    assert all(g["passed"] for g in doc["gates"]) and doc["gates"][-1]["gate"] == "verified", doc["gates"]
    assert all(t["how"].startswith("kmigrate") or t["how"] == "end" for t in doc["offsets"]), doc["offsets"]
    check_translated(clusters, {"partitions": [{"group": t["group"], "rereads": t["duplicates"]} for t in doc["offsets"]]},
                     "late", ORDERS, late)
    # killed while copying 12000 records, with a commit every 5 s: what it sent since its last commit is copied again
    assert sum(copied_twice.values()) > 0, "nothing copied twice: the kill came right after a commit"
    # a plain cross-cluster verify is strict: what was copied twice is a difference, each such partition named with
    # its count; the rest verified (--allow-duplicates, which accepts them, is test_verify_clusters')
    code, report, err = run_json(capsys, "verify", *sides(clusters), "--master", MASTER, "--include", "mm1-(t.|orders|stamps)")
    assert code == 1 and report["allow_duplicates"] is False, (err, report.get("summary"))
    assert {p["topic"] for p in report["partitions"]} == set(KEPT), report["summary"]
    bad = [p for p in report["partitions"] if not p["ok"]]
    assert {(p["topic"], p["partition"]) for p in bad} == {(ORDERS, q) for q, n in copied_twice.items() if n}, bad
    assert all("more than once" in p["problems"][0] and "--allow-duplicates" in p["problems"][0] for p in bad)
    assert {p["partition"]: p["duplicate_records"] for p in report["partitions"] if p["topic"] == ORDERS} == copied_twice
    assert report["summary"]["duplicate_records"] == report["summary"]["differing_records"] == sum(copied_twice.values())
    assert report["summary"]["verified_records"] == sum(len(v) for t in KEPT for v in records(src, t, PARTITIONS[t]).values())


def test_stop_stops_every_instance_cleanly(clusters, source_data, state_dir, capsys):
    pids = mirror_pids(state_dir)
    assert len(pids) == 2
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0, err
    assert out.count("stopped cleanly after SIGTERM") == 2, out
    assert mirror_pids(state_dir) == [] and not list(state_dir.glob("mm1-*.running"))
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0 and "not running" in out
