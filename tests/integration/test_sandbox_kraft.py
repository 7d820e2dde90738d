"""Issue 30: the native KRaft sandbox (``kmigrate sandbox up --kraft``) the controller moves are tested on, on real
Kafka processes with no ZooKeeper.

One module-scoped cluster started through the CLI: Kafka 3.9.2, a dynamic quorum (KIP-853) of controllers 3000,
3001, 3002 formatted with ``--initial-controllers``, spare controller 3003 (``-N``, an observer), brokers 101, 205 and
spare broker 312 (empty). Every later command reads the sandbox from its directory. Then one small static-quorum
cluster on the newest Kafka 4 (4.4.0, log4j2 jars).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.sandbox import Sandbox
from migrate.sandbox.kraft_cluster import KraftCluster, read_properties
from migrate.sandbox.testing import free_ip_prefix, running_sandbox, unique_topic

from cli_support import run, run_json

pytestmark = pytest.mark.integration

VOTERS = [3000, 3001, 3002]
SPARE_CONTROLLER = 3003
BROKERS = (101, 205)
SPARE_BROKER = 312
NEWEST_KAFKA = "4.4.0"


def _kmigrate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=600)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kraft-sandbox")
    proc = _kmigrate("sandbox", "up", "--kraft", "--controller-ids", ",".join(map(str, VOTERS)),
                     "--spare-controller-ids", str(SPARE_CONTROLLER), "--broker-ids", ",".join(map(str, BROKERS)),
                     "--spare-broker-ids", str(SPARE_BROKER), "--kafka-version", "3.9.2",
                     "--ip-prefix", free_ip_prefix(4), "--dir", str(directory), "--output", "json")
    sandbox = Sandbox(directory)
    try:
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield sandbox, json.loads(proc.stdout)
    finally:
        sandbox.down()


def _features(bootstrap: str) -> dict:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        return admin.describe_features()
    finally:
        admin.close()


def _round_trip(bootstrap: str, rf: int, records: int = 50) -> None:
    topic = unique_topic("kraft-sandbox")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, rf)])[topic].result(timeout=60)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        p.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < records and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            seen.add(m.key())
    c.close()
    assert seen == {str(i).encode() for i in range(records)}


def test_voters_with_their_directory_ids_and_the_spare_controller_an_observer(cluster):
    sandbox, info = cluster
    kraft = KraftCluster(sandbox)
    view = kraft.quorum()
    assert view is not None and view.leader_id in VOTERS
    assert list(view.voter_ids) == VOTERS
    for c in VOTERS + [SPARE_CONTROLLER]:
        meta = read_properties(Path(sandbox.node(f"controller-{c}").dir) / "metadata" / "meta.properties")
        assert view.replica(c).directory_id == meta["directory.id"] == kraft.directory_id(c)
        assert meta["node.id"] == str(c) and meta["cluster.id"] == kraft.cluster_id()
    assert view.role(SPARE_CONTROLLER) == "observer"
    assert {SPARE_CONTROLLER, *BROKERS, SPARE_BROKER} <= set(view.observer_ids)
    roles = {n["name"]: n["role"] for n in info["nodes"]}
    assert roles[f"controller-{SPARE_CONTROLLER}"] == "controller (observer)"
    assert sorted(r for n, r in roles.items() if n.startswith("controller-") and n != f"controller-{SPARE_CONTROLLER}") \
        == ["controller (leader)", "controller (voter)", "controller (voter)"]
    assert not any(n.startswith("zookeeper") for n in roles) and info["env"]["KAFKA_BOOTSTRAP_CONTROLLERS"]


def test_dynamic_quorum_kraft_version_1(cluster):
    sandbox, _ = cluster
    features = _features(sandbox.bootstrap_servers(spare=False))
    assert features["kraft.version"]["finalized"] == (1, 1), features


def test_the_spare_broker_serves_empty_then_a_topic_produced_and_consumed(cluster):
    sandbox, _ = cluster
    bootstrap = sandbox.bootstrap_servers(spare=False)
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    assert sorted(md.brokers) == sorted([*BROKERS, SPARE_BROKER])
    assert md.topics["__consumer_offsets"].partitions  # created on the first brokers before the spare started
    assert not [p for t in md.topics.values() for p in t.partitions.values() if SPARE_BROKER in p.replicas]
    _round_trip(bootstrap, rf=2)


def test_restart_controller_keeps_the_quorum(cluster, capsys):
    """The leader restarted through the CLI (the command reads the sandbox from its directory): the quorum elects another,
    the restarted one fetches again as a voter, the spare stays an observer, and the brokers still serve."""
    sandbox, _ = cluster
    leader = KraftCluster(sandbox).quorum().leader_id
    code, out, err = run(capsys, "sandbox", "restart-controller", str(leader), "--dir", str(sandbox.dir))
    assert code == 0, err
    view = KraftCluster(Sandbox(sandbox.dir)).quorum()
    assert list(view.voter_ids) == VOTERS and view.role(SPARE_CONTROLLER) == "observer" and view.leader_id is not None
    assert view.role(leader) in ("voter", "leader")
    code, out, err = run(capsys, "sandbox", "restart-controller", str(SPARE_CONTROLLER), "--dir", str(sandbox.dir))
    assert code == 0 and "observer" in err, err
    _round_trip(sandbox.bootstrap_servers(spare=False), rf=2, records=10)


def test_the_playbook_it_writes_plan_and_health(cluster, capsys, tmp_path):
    """Issue 29's commands on a cluster without ZooKeeper, with the playbook ``sandbox up --kraft`` wrote."""
    sandbox, info = cluster
    code, doc, err = run_json(capsys, "plan", "--playbook", info["playbook"], "-o", str(tmp_path / "plan.json"))
    assert code == 0, err
    assert doc["zookeeper"] is None and not [s for s in doc["runbook"] if "zookeeper" in s["command"]]
    code, out, err = run(capsys, "health", "--bootstrap-server", sandbox.bootstrap_servers(spare=False))
    assert code == 0, out + err


def test_newest_kafka_4_static_quorum(capsys, tmp_path):
    """Kafka 4.4.0 (log4j2, no ZooKeeper mode): a static quorum of one voter (kraft.version 0), a spare controller
    observing, a broker producing and consuming, sandbox status from disk; then ``controllers
    upgrade-kraft-version`` and ``controllers`` from the sandbox's playbook: kraft.version 1 and the spare the one
    voter."""
    spec = dict(zookeeper_ids=(), controller_ids=(3000,), spare_controller_ids=(3001,), broker_ids=(1,),
                static_quorum=True, kafka_version=NEWEST_KAFKA)
    with running_sandbox(spec) as sandbox:
        view = KraftCluster(sandbox).quorum()
        assert view.voter_ids == (3000,) and view.role(3001) == "observer"
        assert (Path(sandbox.node("kafka-1").dir) / "log4j2.properties").exists()
        assert "Kafka Server started" in (Path(sandbox.node("kafka-1").dir) / "server.log").read_text()
        features = _features(sandbox.bootstrap_servers())
        assert features.get("kraft.version", {}).get("finalized", (0, 0))[1] == 0, features
        _round_trip(sandbox.bootstrap_servers(), rf=1, records=20)
        code, doc, err = run_json(capsys, "sandbox", "status", "--dir", str(sandbox.dir))
        assert code == 0, err
        assert {n["name"]: n["role"] for n in doc["nodes"]} == {
            "controller-3000": "controller (leader)", "controller-3001": "controller (observer)", "kafka-1": "broker"}

        # made dynamic from its playbook (the newest release; test_controllers_static does 4.1), then moved to 3001
        playbook = tmp_path / "kraft.yaml"
        playbook.write_text(KraftCluster(sandbox).playbook())
        code, doc, err = run_json(capsys, "plan", "--playbook", str(playbook), "-o", str(tmp_path / "plan.json"))
        assert code == 0, err  # 4.4.0 can convert: a runbook step, not an error
        assert doc["runbook"][1]["command"].startswith("kmigrate controllers upgrade-kraft-version"), doc["runbook"][:3]
        code, doc, err = run_json(capsys, "controllers", "upgrade-kraft-version", "--playbook", str(playbook))
        assert code == 0, err
        assert _features(sandbox.bootstrap_servers())["kraft.version"]["finalized"][1] == 1, doc
        controllers = sandbox.spec.bootstrap_controllers(spare=None)
        code, out, err = run(capsys, "sandbox", "restart-broker", "1", "--controller-quorum-bootstrap-servers",
                             controllers, "--dir", str(sandbox.dir))
        assert code == 0, err
        stop = f"{shlex.quote(sys.executable)} -m migrate sandbox stop controller-{{id}} --dir {shlex.quote(str(sandbox.dir))}"
        code, out, err = run(capsys, "controllers", "--playbook", str(playbook), "--kafka-version", NEWEST_KAFKA,
                             "--stop-command", stop, "-O", "json")
        done = json.loads(out.strip().splitlines()[-1])
        assert code == 0 and done["event"] == "done", (out, err)
        assert KraftCluster(sandbox).quorum().voter_ids == (3001,), done
        _round_trip(sandbox.bootstrap_servers(), rf=1, records=20)
