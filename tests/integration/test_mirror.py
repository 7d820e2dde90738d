"""``kmigrate mirror`` on two separate real clusters with a real MirrorMaker 2 process.

Two sandboxes of 1 ZooKeeper and 1 broker each. The source has an authorizer (ANONYMOUS is a super
user, so clients need no ACL) to show the ACLs MirrorMaker will not copy. The tests run in order
and share the clusters: plan, its refusals, create-topics, start, lag 0 with every record copied,
a second start, SIGKILL mid-copy and a restart, stop, a stale pid file. The fixture stops
MirrorMaker whatever happens.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ConfigResource,
                                   NewTopic, ResourcePatternType, ResourceType)

from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.adapters.processes import live_pids
from migrate.sandbox.testing import running_sandbox
from cli_support import run, run_json, sides
from cluster_waits import wait_for

pytestmark = pytest.mark.integration

SMALL = dict(zookeeper_ids=(1,), broker_ids=(1,), zookeeper_heap_mb=64, kafka_heap_mb=256)
SOURCE_SPEC = dict(SMALL, kafka_settings={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                          "super.users": "User:ANONYMOUS"})
ORDERS, TABLE, LOGS, TX = "m-orders", "m-table", "m-logs", "m-tx"
MIRRORED = "m-.*"
HEAP = "256"


@pytest.fixture(scope="module")
def clusters():
    with running_sandbox(SOURCE_SPEC) as source, running_sandbox(SMALL) as target:
        yield source.bootstrap_servers(), target.bootstrap_servers()


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory, clusters):
    directory = tmp_path_factory.mktemp("mirror-state")
    try:
        yield directory
    finally:
        MirrorMakerProcess(directory).stop(timeout_s=20)
        assert MirrorMakerProcess(directory).pid() is None


def create(bs: str, name: str, partitions: int, config: dict | None = None) -> None:
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=60)

    def led() -> bool:
        t = a.list_topics(timeout=10).topics.get(name)
        return t is not None and t.error is None and bool(t.partitions) and all(
            p.leader >= 0 for p in t.partitions.values())

    wait_for(led, what=f"a leader for every partition of {name}", timeout_s=60, interval_s=0.2)


def produce(bs: str, topic: str, partitions: int, count: int, start: int = 0, key_mod: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bs, **TRUSTED_PRODUCER, "max.in.flight.requests.per.connection": 5,
                  "linger.ms": 20})
    for i in range(start, start + count):
        key = str(i % key_mod if key_mod else i).encode()
        while True:
            try:
                p.produce(topic, key=key, value=f"{topic}-{i}".encode(), partition=i % partitions)
                break
            except BufferError:  # librdkafka's queue is full: let deliveries drain it
                p.poll(0.5)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def produce_transactions(bs: str, topic: str, partitions: int) -> None:
    """A committed transaction, then an aborted one: the log ends with aborted records and a marker."""
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"{topic}-writer"})
    p.init_transactions(60)
    for commit in (True, False):
        p.begin_transaction()
        for i in range(100):
            p.produce(topic, key=str(i).encode(), value=f"{topic}-{commit}-{i}".encode(), partition=i % partitions)
        (p.commit_transaction if commit else p.abort_transaction)(60)


def records(bs: str, topic: str, partitions: int) -> dict[int, list[tuple[bytes, bytes]]]:
    """Every committed record per partition, in order (read_committed: MirrorMaker writes in transactions)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(partitions)}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        todo = set(range(partitions))
        deadline = time.monotonic() + 120
        while todo and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=1.0):
                if m.error():
                    if m.error().code() == -191:  # partition EOF
                        todo.discard(m.partition())
                    continue
                out[m.partition()].append((m.key(), m.value()))
        assert not todo, f"{topic}: partitions {todo} not read to the end"
    finally:
        c.close()
    return out


def target_end(bs: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' end offsets."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-ends"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))
    finally:
        c.close()


def topic_configs(bs: str, topic: str) -> dict[str, str]:
    a = AdminClient({"bootstrap.servers": bs})
    entries = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    return {k: e.value for k, e in next(iter(entries.values())).result(timeout=30).items()}


def mirror_processes(state_dir: Path) -> list[int]:
    """Pids of every live MirrorMaker whose command line names this state directory."""
    return live_pids(str(state_dir), "MirrorMaker")


def wait_caught_up(capsys, state_dir: Path) -> dict:
    code, doc, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir), "--wait", "--timeout", "4m")
    assert code == 0, (err, doc.get("partitions"))
    assert doc["caught_up"] and doc["total_lag"] == 0
    return doc


@pytest.fixture(scope="module")
def source_data(clusters):
    src, _ = clusters
    create(src, ORDERS, 3)
    create(src, TABLE, 2, {"cleanup.policy": "compact", "min.insync.replicas": "1", "retention.ms": "86400000"})
    create(src, LOGS, 1, {"retention.bytes": "104857600"})
    produce(src, ORDERS, 3, 3000)
    produce(src, TABLE, 2, 600, key_mod=50)
    produce(src, LOGS, 1, 200)
    create(src, TX, 2)
    produce_transactions(src, TX, 2)
    c = Consumer({"bootstrap.servers": src, "group.id": "billing", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(ORDERS, 0, 0)])
    got = 0
    while got < 500:
        m = c.poll(10)
        assert m is not None, "no record to consume"
        got += 0 if m.error() else 1
    c.commit(asynchronous=False)
    c.close()
    admin = AdminClient({"bootstrap.servers": src})
    acl = AclBinding(ResourceType.GROUP, "billing", ResourcePatternType.LITERAL, "User:app", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    for f in admin.create_acls([acl]).values():
        f.result(timeout=30)
    return src


def test_plan_lists_topics_configs_groups_and_the_acls_mirrormaker_will_not_copy(clusters, source_data, capsys):
    code, doc, err = run_json(capsys, "mirror", "plan", *sides(clusters), "--topics", MIRRORED)
    assert code == 0, err
    by_name = {t["topic"]: t for t in doc["topics"]}
    assert sorted(by_name) == [LOGS, ORDERS, TABLE, TX]
    assert by_name[ORDERS]["source"]["partitions"] == 3 and by_name[ORDERS]["action"] == "create"
    table = by_name[TABLE]["create"]
    assert table["partitions"] == 2 and table["replication_factor"] == 1
    assert table["configs"]["cleanup.policy"] == "compact" and table["configs"]["retention.ms"] == "86400000"
    assert by_name[TABLE]["source"]["min_insync_replicas"] == "1"
    assert by_name[TABLE]["never_synced_by_mirrormaker"]["min.insync.replicas"]["source"] == "1"
    assert "billing" in doc["groups"]
    assert doc["source_authorizer"] is True
    group_acls = [a for a in doc["acls_not_copied"] if a["resource_type"] == "GROUP" and a["name"] == "billing"]
    assert group_acls and "never copies" in group_acls[0]["reason"]
    assert doc["source"]["cluster_id"] != doc["target"]["cluster_id"]
    # the target has no authorizer: planned from there, the plan says so
    create(clusters[1], "back-only", 1)
    code, doc, err = run_json(capsys, "mirror", "plan", "--source-bootstrap", clusters[1], "--target-bootstrap",
                              clusters[0], "--topics", "back-only")
    assert code == 0, err
    assert doc["acls_not_copied"] is None and doc["source_authorizer"] is False
    code, out, err = run(capsys, "mirror", "plan", "--source-bootstrap", clusters[1], "--target-bootstrap",
                         clusters[0], "--topics", "back-only")
    assert code == 0 and "no authorizer" in out


def target_topics(bs: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bs}).list_topics(timeout=30).topics)


def test_plan_refuses_the_same_cluster_fewer_partitions_bad_regex_and_an_unreachable_cluster(clusters, source_data, capsys):
    src, tgt = clusters
    create(src, "short-x", 3)
    create(tgt, "short-x", 1)
    before = target_topics(tgt)
    cases = [
        (("--source-bootstrap", src, "--target-bootstrap", src, "--topics", MIRRORED), "same cluster"),
        ((*sides(clusters), "--topics", "short-x"), "short-x has 1 partitions on the target but 3"),
        ((*sides(clusters), "--topics", "m-(orders"), "not a valid regular expression"),
        (("--source-bootstrap", src, "--target-bootstrap", "127.0.0.1:1", "--topics", MIRRORED), "cannot reach the target"),
    ]
    for args, message in cases:
        unreachable = "127.0.0.1:1" in args  # each try waits for the connection timeout: plan only
        for command in ("plan",) if unreachable else ("plan", "create-topics", "start"):
            code, out, err = run(capsys, "mirror", command, *args, "--state-dir", "/nonexistent/kmigrate") if command == "start" \
                else run(capsys, "mirror", command, *args)
            assert code == 2, (command, args, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and message in lines[0], (command, err)
    assert target_topics(tgt) == before


def test_create_topics_dry_run_then_creates_then_is_idempotent_and_reports_differences(clusters, source_data, capsys):
    src, tgt = clusters
    code, doc, err = run_json(capsys, "mirror", "create-topics", *sides(clusters), "--topics", MIRRORED, "--dry-run")
    assert code == 0, err
    assert sorted(doc["would_create"]) == [LOGS, ORDERS, TABLE, TX] and doc["created"] == []
    assert not {LOGS, ORDERS, TABLE, TX} & target_topics(tgt)
    code, doc, err = run_json(capsys, "mirror", "create-topics", *sides(clusters), "--topics", MIRRORED)
    assert code == 0, err
    assert sorted(doc["created"]) == [LOGS, ORDERS, TABLE, TX]
    md = AdminClient({"bootstrap.servers": tgt}).list_topics(timeout=30).topics
    assert {n: len(md[n].partitions) for n in (LOGS, ORDERS, TABLE)} == {LOGS: 1, ORDERS: 3, TABLE: 2}
    made = topic_configs(tgt, TABLE)
    assert made["cleanup.policy"] == "compact" and made["retention.ms"] == "86400000"
    assert made["min.insync.replicas"] == "1"
    assert topic_configs(tgt, LOGS)["retention.bytes"] == "104857600"
    code, doc, err = run_json(capsys, "mirror", "create-topics", *sides(clusters), "--topics", MIRRORED)
    assert code == 0, err
    assert doc["created"] == [] and sorted(doc["existing"]) == [LOGS, ORDERS, TABLE, TX] and doc["config_differences"] == {}
    admin = AdminClient({"bootstrap.servers": tgt})
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    def set_retention(value: str | None) -> None:
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        res = ConfigResource(ConfigResource.Type.TOPIC, LOGS, incremental_configs=[
            ConfigEntry("retention.ms", value or "", incremental_operation=op)])
        for f in admin.incremental_alter_configs([res]).values():
            f.result(timeout=30)

    set_retention("3600000")
    try:
        code, doc, err = run_json(capsys, "mirror", "create-topics", *sides(clusters), "--topics", MIRRORED)
        assert code == 1, err
        assert doc["created"] == []
        source_retention = topic_configs(src, LOGS)["retention.ms"]
        assert doc["config_differences"] == {LOGS: {"retention.ms": {"source": source_retention, "target": "3600000"}}}
    finally:
        set_retention(None)


def test_start_copies_every_record_and_a_second_start_starts_nothing(clusters, source_data, state_dir, capsys):
    src, tgt = clusters
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", MIRRORED,
                              "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0, err
    pid = doc["pid"]
    assert not doc["already_running"]
    assert sorted(doc["topics"]["created"] + doc["topics"]["existing"]) == [LOGS, ORDERS, TABLE, TX]
    assert (state_dir / "mm2.properties").stat().st_mode & 0o077 == 0  # may hold passwords
    props = (state_dir / "mm2.properties").read_text()
    assert "IdentityReplicationPolicy" in props and "sync.topic.configs.enabled = false" in props
    status = wait_caught_up(capsys, state_dir)
    assert status["process"] == {**status["process"], "running": True, "pid": pid}
    assert {(p["topic"], p["partition"]) for p in status["partitions"]} == {
        (ORDERS, 0), (ORDERS, 1), (ORDERS, 2), (TABLE, 0), (TABLE, 1), (LOGS, 0), (TX, 0), (TX, 1)}
    # the transactional topic ends with markers MirrorMaker does not copy: not lag
    tx = [p for p in status["partitions"] if p["topic"] == TX]
    assert all(p["only_control_records_left"] and p["source_end"] > p["mirrored_offset"] + 1 for p in tx), tx
    assert all(state == "RUNNING" for state in status["tasks"].values()) and status["tasks"]
    assert status["config_differences"] == {}  # kmigrate created them: same configs
    assert status["heartbeat_age_s"] is not None and status["heartbeat_age_s"] < 120
    assert sum(len(r) for r in records(src, TX, 2).values()) == 100  # the committed transaction only
    for topic, partitions in ((ORDERS, 3), (TABLE, 2), (LOGS, 1), (TX, 2)):
        assert records(tgt, topic, partitions) == records(src, topic, partitions), topic
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", MIRRORED,
                              "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0, err
    assert doc["already_running"] and doc["pid"] == pid
    assert mirror_processes(state_dir) == [pid]
    # the group's offsets: checkpointed, translated (never ahead of the source) and set on the target

    def set_on_target() -> list:
        code, status, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir))
        billing = [g for g in status["groups"] if g["group"] == "billing"]
        return billing if billing and billing[0]["target_committed"] is not None else []

    billing = wait_for(set_on_target, what="the group billing's offset checkpointed and set on the target",
                       timeout_s=120, interval_s=1)
    assert billing and billing[0]["source_committed"] == 500, status["groups"]
    assert billing[0]["translated"] is not None and billing[0]["translated"] <= 500
    assert billing[0]["target_committed"] == billing[0]["translated"]


def test_mirrormaker_killed_mid_copy_resumes_without_duplicates(clusters, source_data, state_dir, capsys):
    src, tgt = clusters
    mm = MirrorMakerProcess(state_dir)
    pid = mm.pid()
    assert pid is not None
    before = target_end(tgt, ORDERS, 3)
    # a producer keeps writing through the kill, so MirrorMaker is killed while it copies (on an idle
    # machine it copies a fixed batch within its one-second transactions, before any kill could land)
    stop_writing = threading.Event()

    def keep_writing() -> None:
        start = 3000
        while not stop_writing.is_set():
            produce(src, ORDERS, 3, 5000, start=start)
            start += 5000

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    # kill once MirrorMaker has copied some of the new records (the target's end offsets: a cheap look)
    wait_for(lambda: target_end(tgt, ORDERS, 3) >= before + 500, what="MirrorMaker copying the new records",
             timeout_s=120, interval_s=0.05)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: mirror_processes(state_dir) == [], what="the killed MirrorMaker gone", timeout_s=30, interval_s=0.2)
    assert mirror_processes(state_dir) == []
    stop_writing.set()
    writer.join(120)
    assert not writer.is_alive()
    code, status, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert status["process"]["running"] is False
    assert status["total_lag"] > 0, "MirrorMaker had copied everything before it was killed: nothing shown"
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", MIRRORED,
                              "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0, err
    assert not doc["already_running"] and doc["pid"] != pid
    wait_caught_up(capsys, state_dir)
    assert records(tgt, ORDERS, 3) == records(src, ORDERS, 3)  # every record once: exactly-once


def test_stop_leaves_no_process_and_a_stale_pid_file_is_handled(clusters, source_data, state_dir, capsys):
    pid = MirrorMakerProcess(state_dir).pid()
    assert pid is not None
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0, err
    assert f"pid {pid}" in out and "stopped" in out
    assert mirror_processes(state_dir) == [] and not (state_dir / "mm2.pid").exists()
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0 and "not running" in out
    (state_dir / "mm2.pid").write_text(f"{os.getpid()}\n")  # alive, but not MirrorMaker
    code, doc, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert code == 0, err
    assert doc["process"]["running"] is False and doc["total_lag"] == 0
    assert not (state_dir / "mm2.pid").exists()
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0 and "not running" in out


def test_start_connects_to_each_cluster_once(clusters, source_data, state_dir, capsys, monkeypatch):
    """``mirror start`` opens one admin connection to each cluster (the plan's reads, the rights checks,
    the topics and the bookkeeping share it) and one bookkeeping writer on the target."""
    from collections import Counter

    import confluent_kafka
    from migrate.adapters.kafka import client as kafka_client

    admins: Counter = Counter()
    producers: Counter = Counter()

    class CountingAdmin(kafka_client.AdminClient):
        def __init__(self, conf, **kwargs):
            admins[conf["bootstrap.servers"]] += 1
            super().__init__(conf, **kwargs)

    real_producer = confluent_kafka.Producer

    def counting_producer(conf, *args, **kwargs):
        producers[conf["bootstrap.servers"]] += 1
        return real_producer(conf, *args, **kwargs)

    monkeypatch.setattr(kafka_client, "AdminClient", CountingAdmin)
    monkeypatch.setattr(confluent_kafka, "Producer", counting_producer)
    code, doc, err = run_json(capsys, "mirror", "start", *sides(clusters), "--topics", MIRRORED,
                              "--state-dir", str(state_dir), "--heap-mb", HEAP)
    assert code == 0, err
    assert not doc["already_running"]
    src, tgt = clusters
    assert admins == Counter({src: 1, tgt: 1}), admins
    assert producers == Counter({tgt: 1}), producers
    code, out, err = run(capsys, "mirror", "stop", "--state-dir", str(state_dir))
    assert code == 0 and "stopped" in out, err
