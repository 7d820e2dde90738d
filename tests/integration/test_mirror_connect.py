"""A two-cluster sandbox (``sandbox up --target-cluster``) and ``mirror start --connect-config`` run on a
real Kafka Connect worker.

One ``kmigrate sandbox up`` starts both clusters (1 ZooKeeper and 1 broker each, own loopback prefixes,
the target in ``<dir>/target``); ``env`` and ``status`` name both, ``down`` stops both. The connector
JSONs kmigrate prints lint clean and, POSTed to a Connect distributed worker whose own converters are
JsonConverter (which would re-encode the records), copy every record byte for byte, keep MirrorMaker's
topics on the target (nothing written into the source) and translate a consumer group's offsets.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.jars import ensure_distribution
from migrate.adapters.mirrormaker.mm2 import LOG4J
from migrate.sandbox import Sandbox
from migrate.sandbox.testing import free_ip_prefix, stop_process
from migrate.waiting import poll
from cli_support import run

pytestmark = pytest.mark.integration

ORDERS, TABLE, GROUP = "c-orders", "c-table", "c-billing"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"


def _kmigrate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Both clusters, started by one kmigrate sandbox up --target-cluster; always stopped."""
    directory = tmp_path_factory.mktemp("pair")
    prefix = free_ip_prefix(1)
    target_prefix = free_ip_prefix(1)
    while target_prefix == prefix:
        target_prefix = free_ip_prefix(1)
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--ip-prefix", prefix, "--target-cluster",
                     "--target-ip-prefix", target_prefix, "--dir", str(directory), "--output", "json")
    try:
        assert proc.returncode == 0, proc.stderr
        yield Sandbox(directory), json.loads(proc.stdout)
    finally:
        Sandbox(directory).down()


def test_env_and_status_cover_both_clusters(pair):
    sandbox, info = pair
    target = sandbox.target
    assert target is not None and target.dir == sandbox.dir / "target"
    assert target.spec.ip_prefix != sandbox.spec.ip_prefix and target.zookeeper_connect() != sandbox.zookeeper_connect()
    proc = _kmigrate("sandbox", "env", "--dir", str(sandbox.dir))
    assert proc.returncode == 0, proc.stderr
    env = dict(line.removeprefix("export ").split("=", 1) for line in proc.stdout.splitlines() if line.startswith("export"))
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == f"{sandbox.spec.ip_prefix}.1:9092"
    assert env["KAFKA_TARGET_BOOTSTRAP_SERVERS"] == f"{target.spec.ip_prefix}.1:9092"
    assert env["TARGET_ZOOKEEPER_CONNECT"] == f"{target.spec.ip_prefix}.1:2181"
    rows = {r["name"]: r for r in info["nodes"]}
    assert set(rows) == {"zookeeper-1", "kafka-1", "target/zookeeper-1", "target/kafka-1"}
    assert rows["target/kafka-1"]["running"] and rows["target/kafka-1"]["role"] == "controller"
    # two clusters: each broker registered in its own ZooKeeper only
    assert AdminClient({"bootstrap.servers": env["KAFKA_TARGET_BOOTSTRAP_SERVERS"]}).list_topics(timeout=30).cluster_id != \
        AdminClient({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"]}).list_topics(timeout=30).cluster_id
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--dir", str(sandbox.dir))
    assert proc.returncode == 2 and "already running" in proc.stderr


def _fill_source(bootstrap: str) -> dict[str, list]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(ORDERS, 3, 1, config={"retention.ms": "86400000"}),
                                  NewTopic(TABLE, 1, 1, config={"cleanup.policy": "compact"})]).values():
        f.result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(600):
        producer.produce(ORDERS, key=f"k{i}".encode(), value=bytes([i % 256]) * 20 + b'{"not": "json',
                         partition=i % 3, headers=[("trace", f"t{i}".encode()), ("bin", b"\x00\xff")])
    for i in range(50):
        producer.produce(TABLE, key=f"row{i % 10}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(ORDERS, p, 200) for p in range(3)], asynchronous=False)
    consumer.close()
    return _records(bootstrap, {ORDERS: 3, TABLE: 1})


def _records(bootstrap: str, topics: dict[str, int]) -> dict[str, list]:
    """Every committed record of each partition: (partition, key, value, headers)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "c-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    out: dict[str, list] = {}
    try:
        for topic, partitions in topics.items():
            rows = []
            for p in range(partitions):
                tp = TopicPartition(topic, p, 0)
                _, high = consumer.get_watermark_offsets(tp, timeout=10)
                consumer.assign([tp])
                deadline = time.monotonic() + 30
                while consumer.position([tp])[0].offset < high and time.monotonic() < deadline:
                    for m in consumer.consume(500, timeout=1):
                        if not m.error():
                            rows.append((p, m.key(), m.value(), m.headers()))
            out[topic] = rows
    finally:
        consumer.close()
    return out


def _start_connect(home: Path, target: str) -> tuple[subprocess.Popen, str]:
    # Its REST listener on the target cluster's own loopback address (no other test's, whatever the worker),
    # at Connect's usual port: no free-port probe that a concurrent test could race.
    host, port = target.split(",")[0].rsplit(":", 1)[0], 8083
    worker = {
        "bootstrap.servers": target, "group.id": "c-connect",
        # a Connect worker's usual converters: the connectors must override them with ByteArrayConverter
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "offset.storage.topic": "c-connect-offsets", "config.storage.topic": "c-connect-configs",
        "status.storage.topic": "c-connect-status", "offset.storage.partitions": "3", "status.storage.partitions": "1",
        "offset.storage.replication.factor": "1", "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1", "exactly.once.source.support": "enabled",
        "offset.flush.interval.ms": "5000", "plugin.discovery": "service_load", "listeners": f"http://{host}:{port}",
    }
    (home / "worker.properties").write_text("".join(f"{k}={v}\n" for k, v in worker.items()))
    (home / "log4j.properties").write_text(LOG4J)
    command = ensure_distribution().java_command(CONNECT_MAIN, [str(home / "worker.properties")], [
        "-Xmx384m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"])
    with open(home / "connect.log", "ab") as log:
        proc = subprocess.Popen(command, cwd=home, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    return proc, f"http://{host}:{port}"


def _rest(url: str, body: dict | None = None) -> dict | list:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def _until(what: str, check, timeout_s: float, log: Path):
    def probe():
        try:
            return check()
        except (OSError, urllib.error.URLError, ValueError):
            return None

    result = poll(probe, timeout_s=timeout_s, interval_s=1)
    if result:
        return result
    tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
    raise AssertionError(f"{what} not reached in {timeout_s:.0f} s; Connect log tail:\n" + "\n".join(tail))


def test_connect_config_copies_every_record_byte_for_byte_on_a_real_connect_worker(pair, capsys, tmp_path):
    sandbox, _ = pair
    source, target = sandbox.bootstrap_servers(), sandbox.target.bootstrap_servers()
    before = _fill_source(source)
    out = tmp_path / "connectors.json"
    code, stdout, err = run(capsys, "mirror", "start", "--source-bootstrap", source, "--target-bootstrap", target,
                            "--topics", "c-.*", "--connect-config", "-o", str(out))
    assert code == 0, err
    assert "created 2 topic(s) on the target" in err and "exactly.once.source.support=enabled" in err
    connectors = json.loads(out.read_text())
    assert [c["config"]["connector.class"].rsplit(".", 1)[1] for c in connectors] == [
        "MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"]
    assert run(capsys, "mirror", "lint", str(out))[0] == 0
    tgt_admin = AdminClient({"bootstrap.servers": target})
    assert len(tgt_admin.list_topics(timeout=30).topics[ORDERS].partitions) == 3  # created before any copy

    proc, url = _start_connect(tmp_path, target)
    log = tmp_path / "connect.log"
    try:
        _until("Connect's REST API", lambda: _rest(url + "/") is not None, 120, log)
        for c in connectors:
            _rest(url + "/connectors", c)
        _until("every record on the target", lambda: _records(target, {ORDERS: 3, TABLE: 1}) == before, 120, log)
        states = _rest(url + f"/connectors/{connectors[0]['name']}/status")
        assert states["connector"]["state"] == "RUNNING" and all(t["state"] == "RUNNING" for t in states["tasks"])

        ends = {p: _end(target, ORDERS, p) for p in range(3)}

        def translated():  # the group, committed at the source's end, is set at the target's end (not active there)
            f = tgt_admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result()
            offsets = {tp.partition: tp.offset for tp in f.topic_partitions if tp.topic == ORDERS}
            # exactly-once: the target's partitions end with a transaction marker after the last record
            return offsets if set(offsets) == {0, 1, 2} and all(ends[p] - 1 <= o <= ends[p] for p, o in offsets.items()) else None
        _until("the group's offsets translated to the target's end", translated, 90, log)
    finally:
        stop_process(proc, 30)
    target_topics = set(tgt_admin.list_topics(timeout=30).topics)
    assert {"mm2-offset-syncs.source.internal", "source.checkpoints.internal", "heartbeats"} <= target_topics
    source_topics = set(AdminClient({"bootstrap.servers": source}).list_topics(timeout=30).topics)
    assert source_topics == {ORDERS, TABLE, "__consumer_offsets"}  # nothing written into the source


def _end(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "c-reader"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def test_down_stops_both_clusters(pair):
    sandbox, _ = pair
    target = sandbox.target
    proc = _kmigrate("sandbox", "down", "--dir", str(sandbox.dir), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["stopped_pids"]) == 4
    assert Sandbox(sandbox.dir).running() == [] and Sandbox(target.dir).running() == []
