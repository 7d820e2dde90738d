"""Issue 2: sandbox lifecycle, generality (chroot, non-sequential ids) and bad input, with small sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from migrate.errors import BadInput
from migrate.sandbox import Sandbox, SandboxSpec
from migrate.sandbox.testing import free_ip_prefix

pytestmark = pytest.mark.integration


def _kmigrate(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=600)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """1 ZooKeeper server, brokers 101 and 205 under the chroot /kafka, started through the CLI."""
    directory = tmp_path_factory.mktemp("sandbox")
    prefix = free_ip_prefix(2)
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--broker-ids", "101,205", "--chroot", "/kafka",
                     "--ip-prefix", prefix, "--dir", str(directory), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    sandbox = Sandbox(directory)
    yield sandbox, info
    sandbox.down()


def test_chroot_and_non_sequential_ids(small):
    sandbox, info = small
    assert {n["name"] for n in info["nodes"]} == {"zookeeper-1", "kafka-101", "kafka-205"}
    zk = KazooClient(hosts=sandbox.zookeeper_connect(), timeout=10)
    zk.start(timeout=30)
    try:
        assert sorted(zk.get_children("/kafka/brokers/ids")) == ["101", "205"]
        assert not zk.exists("/brokers/ids")
    finally:
        zk.stop()
        zk.close()
    assert sandbox.broker_properties(205)["zookeeper.connect"].endswith("/kafka")
    assert info["env"]["ZOOKEEPER_CONNECT"].endswith("/kafka")


def test_env_prints_shell_exports(small):
    sandbox, _ = small
    proc = _kmigrate("sandbox", "env", "--dir", str(sandbox.dir))
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.removeprefix("export ").split("=", 1) for line in proc.stdout.splitlines())
    prefix = sandbox.spec.ip_prefix
    assert lines["KAFKA_BOOTSTRAP_SERVERS"] == f"{prefix}.1:9092,{prefix}.2:9092"
    assert lines["ZOOKEEPER_CONNECT"] == f"{prefix}.1:2181/kafka"


def test_second_up_is_refused_and_changes_nothing(small):
    sandbox, _ = small
    pids = {n: s.pid for n, s in sandbox.nodes.items()}
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--dir", str(sandbox.dir))
    assert proc.returncode == 2
    assert "already running" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    again = Sandbox(sandbox.dir)
    assert {n: s.pid for n, s in again.nodes.items()} == pids
    assert all(again.is_alive(n) for n in pids)


def test_ports_in_use_are_refused_with_nothing_left_running(small, tmp_path):
    sandbox, _ = small
    # Same addresses as the running sandbox: its ports are taken.
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--ip-prefix", sandbox.spec.ip_prefix,
                     "--dir", str(tmp_path / "other"))
    assert proc.returncode == 2
    assert "is in use" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "other" / "state.json").exists()


def test_unknown_node_is_refused(small):
    sandbox, _ = small
    proc = _kmigrate("sandbox", "kill", "kafka-7", "--dir", str(sandbox.dir))
    assert proc.returncode == 2
    assert "unknown node 'kafka-7'" in proc.stderr
    assert all(sandbox.is_alive(n) for n in sandbox.nodes)


def test_bad_ids_are_refused():
    with pytest.raises(BadInput, match="must all be greater"):
        SandboxSpec(zookeeper_ids=(2, 3, 4), spare_zookeeper_ids=(1,))
    with pytest.raises(BadInput, match="repeat"):
        SandboxSpec(broker_ids=(1, 1))
    proc = _kmigrate("sandbox", "up", "--broker-ids", "1,x")
    assert proc.returncode == 2 and "--broker-ids" in proc.stderr


def test_missing_java_and_maven_are_named(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    env["KMIGRATE_CACHE"] = str(tmp_path / "cache")
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--ip-prefix", free_ip_prefix(1),
                     "--dir", str(tmp_path / "sb"), env=env)
    assert proc.returncode == 2
    assert "java not found" in proc.stderr and "install" in proc.stderr
    java_dir = tempfile.mkdtemp(dir=tmp_path)
    os.symlink(subprocess.run(["bash", "-c", "readlink -f $(command -v java)"], capture_output=True,
                              text=True).stdout.strip(), os.path.join(java_dir, "java"))
    env["PATH"] += os.pathsep + java_dir
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--ip-prefix", free_ip_prefix(1),
                     "--dir", str(tmp_path / "sb"), env=env)
    assert proc.returncode == 2
    assert "mvn not found" in proc.stderr


def test_a_broker_id_above_1000_starts_and_serves(tmp_path):
    """Kafka refuses a broker.id above reserved.broker.max.id (1000 by default): the sandbox raises it."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    sandbox = Sandbox(tmp_path / "sb")
    try:
        sandbox.up(SandboxSpec(zookeeper_ids=(1,), broker_ids=(1001,), ip_prefix=free_ip_prefix(1)))
        assert sandbox.is_alive("kafka-1001")
        assert sandbox.broker_properties(1001)["reserved.broker.max.id"] == "1001"
        bootstrap = sandbox.bootstrap_servers()
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        delivered = []
        producer.produce("above-1000", value=b"served", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        assert producer.flush(60) == 0 and delivered == [(None, 0)]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "above-1000", "enable.auto.commit": False})
        consumer.assign([TopicPartition("above-1000", 0, 0)])
        msg = consumer.poll(30)
        consumer.close()
        assert msg is not None and msg.error() is None and msg.value() == b"served"
    finally:
        sandbox.down()
    # Ids of 1000 and below leave Kafka's default alone.
    from migrate.sandbox.layout import server_properties

    spec = SandboxSpec(broker_ids=(1, 1000))
    assert "reserved.broker.max.id" not in server_properties(spec, spec.brokers[1], "/data", "zk:2181")


def test_up_right_after_down_on_the_same_addresses(tmp_path):
    """The ports of a sandbox just stopped hold connections in TIME_WAIT: the servers bind over them, and
    the free-port probe (SO_REUSEADDR, as the servers bind) no longer refuses them."""
    prefix = free_ip_prefix(2)
    args = ("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--ip-prefix", prefix, "--output", "json")
    for run in ("first", "second"):
        directory = tmp_path / run
        proc = _kmigrate(*args, "--dir", str(directory))
        assert proc.returncode == 0, f"{run} up: {proc.stderr}"
        assert all(n["running"] for n in json.loads(proc.stdout)["nodes"])
        down = _kmigrate("sandbox", "down", "--dir", str(directory), "--output", "json")
        assert down.returncode == 0, down.stderr
        assert json.loads(down.stdout)["still_running"] == []


def test_down_leaves_no_process_behind(tmp_path):
    """Last in the module on purpose: its own sandbox, stopped through the CLI, checked pid by pid."""
    directory = tmp_path / "sb"
    proc = _kmigrate("sandbox", "up", "--zookeepers", "1", "--brokers", "1", "--spare-brokers", "1",
                     "--ip-prefix", free_ip_prefix(2), "--dir", str(directory), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    pids = [n["pid"] for n in json.loads(proc.stdout)["nodes"]]
    assert len(pids) == 3 and all(pids)
    proc = _kmigrate("sandbox", "down", "--dir", str(directory), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(proc.stdout)["stopped_pids"]) == sorted(pids)

    def alive(pid: int) -> bool:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in ("Z", "X")

    assert [p for p in pids if alive(p)] == []
