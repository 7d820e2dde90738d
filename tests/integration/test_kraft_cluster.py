"""After the ZooKeeper-to-KRaft migration, kmigrate works on the KRaft cluster with ZooKeeper stopped: ``inspect``
and ``plan`` from a playbook with no ``zookeeper:`` section, ``partitions`` moving a broker off, ``status`` and
``health`` (real Kafka 3.9.2 processes).

One sandbox (1 ZooKeeper server, brokers 11, 12, 13 and a spare 24, one KRaft controller 3000) is migrated by the
sandbox's own restarts (roll 1, roll 2, finalize; ``test_kraft`` checks each phase), then ZooKeeper is stopped.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from migrate.sandbox.kraft import KraftSandbox
from migrate.sandbox.testing import running_sandbox

from cli_support import run, run_json

pytestmark = pytest.mark.integration

OLD, SPARE = (11, 12, 13), 24
TOPIC, RECORDS = "kraft-cluster-orders", 600


@pytest.fixture(scope="module")
def kraft_cluster():
    with running_sandbox(dict(zookeeper_ids=(1,), broker_ids=OLD, spare_broker_ids=(SPARE,))) as sandbox:
        bs = sandbox.bootstrap_servers()
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, 3, replica_assignment=[[11, 12, 13], [12, 13, 11], [13, 11, 12]],
                                      config={"min.insync.replicas": "2"})])[TOPIC].result(timeout=60)
        p = Producer({"bootstrap.servers": bs, "acks": "all"})
        for i in range(RECORDS):
            p.produce(TOPIC, key=str(i).encode(), value=b"x" * 200, partition=i % 3)
        assert p.flush(60) == 0
        kraft = KraftSandbox(sandbox)
        kraft.add_controllers((3000,))
        for phase in ("migration", "kraft"):
            for b in (*OLD, SPARE):
                kraft.restart_broker(b, phase, health_timeout_s=120)
        kraft.restart_controller(3000, finalize=True)
        sandbox.stop("zookeeper-1")
        yield sandbox


@pytest.fixture(scope="module")
def playbook(kraft_cluster, tmp_path_factory):
    path = tmp_path_factory.mktemp("kraft-cluster") / "kraft-cluster.yaml"
    path.write_text(f"kafka:\n  bootstrap_servers: \"{kraft_cluster.bootstrap_servers()}\"\n"
                    f"brokers:\n  mapping:\n    13: {SPARE}\n  keep: [11, 12]\nmigration:\n  throttle: 20MB/s\n")
    return path


def test_inspect_reads_a_kraft_cluster_without_zookeeper(kraft_cluster, capsys):
    code, doc, err = run_json(capsys, "inspect", "--bootstrap-server", kraft_cluster.bootstrap_servers(), "--no-sizes")
    assert code == 0, err
    assert doc["zookeeper"]["servers"] == [] and not doc["zookeeper"]["connect"]
    assert doc["cluster_id"] and doc["controller_id"] is None
    assert {b["id"]: b["alive"] for b in doc["brokers"]} == {11: True, 12: True, 13: True, SPARE: True}


def test_plan_from_a_playbook_without_zookeeper(kraft_cluster, playbook, tmp_path, capsys):
    out = tmp_path / "plan.json"
    code, doc, err = run_json(capsys, "plan", "--playbook", str(playbook), "-o", str(out))
    assert code == 0, err
    assert doc["zookeeper"] is None
    steps = {s["command"]: s for s in doc["runbook"]}
    assert "start the new broker(s) 24" in steps
    assert "process.roles=broker" in steps["start the new broker(s) 24"]["description"]
    assert "kafka-cluster.sh unregister" in steps["decommission brokers 13"]["description"]
    assert not [s for s in doc["runbook"] if "kmigrate zookeeper" in s["command"] or "zookeeper.connect" in s["command"]]
    moved = {(m["topic"], m["partition"]) for m in doc["moves"]}
    assert {(TOPIC, p) for p in range(3)} <= moved


def test_partitions_move_a_broker_off_then_status_and_health(kraft_cluster, playbook, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    code, _, err = run_json(capsys, "plan", "--playbook", str(playbook), "-o", str(plan))
    assert code == 0, err
    code, out, err = run(capsys, "partitions", "--playbook", str(playbook), "--plan", str(plan))
    assert code == 0, err + out
    bs = kraft_cluster.bootstrap_servers()
    admin = AdminClient({"bootstrap.servers": bs})
    md = admin.list_topics(timeout=30)
    for p in md.topics[TOPIC].partitions.values():
        assert 13 not in p.replicas and SPARE in p.replicas and sorted(p.isrs) == sorted(p.replicas), p
    for b in (11, 12, 13, SPARE):  # kmigrate's throttles removed
        entries = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))])
        conf = next(iter(entries.values())).result(timeout=30)
        rate = conf.get("leader.replication.throttled.rate")  # absent once deleted
        assert rate is None or rate.value in (None, ""), (b, rate)
    code, doc, err = run_json(capsys, "status", "--playbook", str(playbook), "--plan", str(plan))
    assert code == 0, err
    assert doc["state"] == "done", doc
    code, out, err = run(capsys, "health", "--bootstrap-server", bs, "--broker-list", f"11,12,{SPARE}")
    assert code == 0 and "0 offline" in out, err + out
    c = Consumer({"bootstrap.servers": bs, "group.id": "kraft-cluster-reader", "enable.auto.commit": False})
    ends = [c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(3)]
    c.close()
    assert sum(ends) == RECORDS


def test_a_zookeeper_command_refuses_a_playbook_without_zookeeper(playbook, capsys):
    code, out, err = run(capsys, "zookeeper", "--playbook", str(playbook))
    assert code == 2 and "no zookeeper: section" in err and len(err.strip().splitlines()) == 1, err
