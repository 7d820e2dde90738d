"""Issue 2: the sandbox starts real ZooKeeper and Kafka processes that behave like a real cluster."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from migrate.adapters.zookeeper import fourletter
from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from cluster_waits import wait_for

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6))


def _admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})


def _create_topic(cluster, name: str, partitions: int = 3, rf: int = 3, configs=None) -> None:
    admin = _admin(cluster)
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=configs or {})], operation_timeout=30
    )
    futures[name].result(timeout=60)

    def led() -> bool:
        md = admin.list_topics(name, timeout=10).topics[name]
        return md.error is None and len(md.partitions) == partitions and all(p.leader >= 0 for p in md.partitions.values())

    wait_for(led, what=f"a leader for every partition of topic {name}", timeout_s=60, interval_s=0.2)


def _produce(cluster, topic: str, count: int, start: int = 0) -> int:
    """Produce ``count`` records with acks=all and idempotence; return how many were acknowledged."""
    acked = []
    errors = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers(), **TRUSTED_PRODUCER, "linger.ms": 5})

    def on_delivery(err, msg):
        (errors if err else acked).append(err or msg.offset())

    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=f"value-{i}".encode(), on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(120)
    assert remaining == 0, f"{remaining} records still in flight after 120 s"
    assert not errors, f"delivery errors: {errors[:3]}"
    return len(acked)


def _consume_all(cluster, topic: str, expected: int, timeout_s: float = 120) -> set[str]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    seen: set[str] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while len(seen) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is None:
                    seen.add(msg.key().decode())
    finally:
        consumer.close()
    return seen


def _isr_full(cluster, topic: str) -> bool:
    md = _admin(cluster).list_topics(topic, timeout=10).topics[topic]
    return all(len(p.isrs) == len(p.replicas) for p in md.partitions.values())


def test_brokers_have_racks_and_spares_hold_no_partitions(cluster):
    """First in the module: before any test creates topics (which may land on the spares)."""
    md = _admin(cluster).list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3, 4, 5, 6]
    used = {r for t in md.topics.values() for p in t.partitions.values() for r in p.replicas}
    assert used and used <= {1, 2, 3}
    assert "__consumer_offsets" in md.topics
    racks = {b: cluster.broker_properties(b)["broker.rack"] for b in range(1, 7)}
    assert racks == {1: "AD-1/FD-1", 2: "AD-2/FD-1", 3: "AD-3/FD-1", 4: "AD-1/FD-2", 5: "AD-2/FD-2", 6: "AD-3/FD-2"}
    for b in range(1, 7):
        assert cluster.broker_properties(b)["listeners"] == f"PLAINTEXT://{cluster.spec.ip_prefix}.{b}:9092"


def test_10000_records_with_acks_all_come_back(cluster, topic_name):
    _create_topic(cluster, topic_name, partitions=3, rf=3, configs={"min.insync.replicas": "2"})
    assert _produce(cluster, topic_name, 10_000) == 10_000
    seen = _consume_all(cluster, topic_name, 10_000)
    assert seen == {str(i) for i in range(10_000)}


def test_producing_survives_a_killed_broker_and_isr_recovers(cluster, topic_name):
    _create_topic(cluster, topic_name, partitions=3, rf=3, configs={"min.insync.replicas": "2"})
    assert _produce(cluster, topic_name, 1_000) == 1_000
    pid = cluster.nodes["kafka-2"].pid
    cluster.kill("kafka-2")
    assert not cluster.is_alive("kafka-2")
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z"
    # With 2 of 3 replicas left and min.insync.replicas=2, acks=all writes still succeed.
    assert _produce(cluster, topic_name, 1_000, start=1_000) == 1_000
    cluster.start("kafka-2")
    wait_for(lambda: _isr_full(cluster, topic_name), what=f"every partition of {topic_name} back to its full ISR",
             timeout_s=120, interval_s=1)
    assert _consume_all(cluster, topic_name, 2_000) == {str(i) for i in range(2_000)}


def test_joiners_follow_without_voting(cluster):
    for name in ("zookeeper-4", "zookeeper-5"):
        node = cluster.nodes[name]
        assert fourletter.srvr(node.host, cluster.spec.zookeeper_client_port).mode == "follower"
    committed = cluster.committed_zookeeper_config()
    servers = sorted(line.split("=")[0] for line in committed.splitlines() if line.startswith("server."))
    assert servers == ["server.1", "server.2", "server.3"]
    assert all(":participant;" in line for line in committed.splitlines() if line.startswith("server."))
    modes = sorted(fourletter.srvr(cluster.nodes[f"zookeeper-{i}"].host, 2181).mode for i in (1, 2, 3))
    assert modes == ["follower", "follower", "leader"]


def test_status_names_leader_and_controller(cluster):
    rows = {r["name"]: r for r in cluster.status()}
    assert sum(r["role"] == "leader" for r in rows.values()) == 1
    assert sum(r["role"] == "controller" for r in rows.values()) == 1
    assert all(r["running"] for r in rows.values())
    # the joiners follow without a vote (srvr says "follower"): status says so
    assert rows["zookeeper-4"]["role"] == rows["zookeeper-5"]["role"] == "non-voting follower (joiner)"


def test_pause_and_resume_a_zookeeper_server(cluster):
    follower = next(n for n in ("zookeeper-1", "zookeeper-2", "zookeeper-3")
                    if fourletter.srvr(cluster.nodes[n].host, 2181).mode == "follower")
    cluster.pause(follower)
    with pytest.raises((OSError, ValueError)):
        fourletter.srvr(cluster.nodes[follower].host, 2181, timeout_s=1)
    zk = KazooClient(hosts=cluster.zookeeper_connect(), timeout=10)
    zk.start(timeout=30)
    try:  # two of three voters still form a quorum: writes commit
        zk.create("/sandbox-pause-probe", b"x", ephemeral=True)
    finally:
        zk.stop()
        zk.close()
    cluster.resume(follower)
    cluster.wait_zookeeper([follower], timeout_s=60)


def test_rolling_restart_with_new_zookeeper_connect(cluster, topic_name):
    _create_topic(cluster, topic_name, partitions=1, rf=3)
    spec = cluster.spec
    new_connect = ",".join(f"{z.host}:{z.client_port}" for z in spec.zookeepers)
    cluster.restart_broker(3, zookeeper_connect=new_connect)
    assert cluster.broker_properties(3)["zookeeper.connect"] == new_connect
    admin = _admin(cluster)
    from migrate.adapters.kafka.client import broker_static_configs

    assert broker_static_configs(admin, [3], ("zookeeper.connect",))[3]["zookeeper.connect"] == new_connect
    # restart_broker returns only once the cluster is healthy (kmigrate health's gate): full ISR at once.
    assert _isr_full(cluster, topic_name)
    from migrate.files import client_settings
    from migrate.runner.health import check_health, cluster_reader

    assert check_health(cluster_reader(client_settings(cluster.bootstrap_servers()))).healthy


def test_a_test_sandbox_removes_its_directory_unless_its_body_failed(monkeypatch):
    from pathlib import Path

    from migrate.sandbox.testing import running_sandbox

    monkeypatch.delenv("KMIGRATE_KEEP_SANDBOX", raising=False)
    spec = dict(zookeeper_ids=(1,), broker_ids=(1,))
    with running_sandbox(spec) as sb:
        kept = Path(sb.dir)
        assert (kept / "kafka-1" / "server.properties").exists()
    assert not kept.exists()

    with pytest.raises(RuntimeError, match="body failed"):
        with running_sandbox(spec) as sb:
            failed = Path(sb.dir)
            raise RuntimeError("body failed")
    try:
        assert (failed / "kafka-1" / "server.log").exists()  # the logs stay to show why
    finally:
        import shutil

        shutil.rmtree(failed, ignore_errors=True)


def test_a_leaderless_bookkeeping_topic_is_an_error_not_an_empty_ledger(cluster, topic_name):
    """The bookkeeping topic listed with no leader (its broker down) still exists, and reading it
    waits, then fails with a clear error: an empty ledger would make a run forget what it recorded."""
    from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
    from migrate.core.ledger import make_record
    from migrate.files import client_settings
    from migrate.errors import StepFailed

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    admin.create_topics([NewTopic(topic_name, num_partitions=1, replica_assignment=[[3]])])[topic_name].result(60)
    book = BookkeepingTopic(client_settings(cluster.bootstrap_servers()), topic_name, timeout_s=5)
    book.warm()
    book.append([make_record("plan-x", "plan", "plan", time.time(), mapping={"3": 6}, throttle_bytes_per_s=1_000_000)])
    book.close()
    assert [r.kind for r in book.read().records] == ["plan"]
    cluster.stop("kafka-3")
    try:
        assert book.exists(admin)
        started = time.monotonic()
        with pytest.raises(StepFailed, match="cannot read the bookkeeping topic"):
            book.read()
        assert time.monotonic() - started >= 5  # it asked again before giving up
    finally:
        cluster.start("kafka-3")
    assert [r.kind for r in book.read().records] == ["plan"]
