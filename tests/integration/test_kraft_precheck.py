"""``kmigrate kraft precheck`` on a real ZooKeeper-mode cluster (Kafka 3.9, one ZooKeeper server, brokers 1, 2 and 5
under the chroot /kafka): a clean pass, then three refusals produced for real, each exit 2 with one line naming the
problem and its fix, and nothing changed (the brokers registered, the assignments, no /migration, no reassignment):

- a controller id that is a broker id (the playbook's kraft.controllers);
- a broker restarted with ``inter.broker.protocol.version=3.8-IV0`` (the migration needs 3.9);
- a broker stopped while partitions name it (the classic cause of a migration stuck in WAIT_FOR_BROKERS).
"""

from __future__ import annotations

import json
from pathlib import Path

import javaproperties
import pytest

from migrate.adapters.kafka.client import admin_client
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.adapters.zookeeper.client import ZooKeeper
from migrate.files import client_settings
from cli_support import run, run_json

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 5), chroot="/kafka")
TOPIC = "kraft-precheck"
ASSIGNMENT = [[1, 2, 5], [2, 5, 1], [5, 1, 2]]


def playbook(cluster, tmp_path: Path, controller_ids=(3001, 3002, 3003)) -> Path:
    spare = f"{cluster.spec.ip_prefix}.9"  # no controller runs: the pre-check only plans them
    controllers = ", ".join(f"{{id: {c}, host: {spare}, port: {9093 + i}}}" for i, c in enumerate(controller_ids))
    path = tmp_path / f"kraft-{'-'.join(map(str, controller_ids))}.yaml"
    path.write_text(f"""
kafka: {{bootstrap_servers: "{cluster.bootstrap_servers()}"}}
zookeeper: {{connect: "{cluster.zookeeper_connect(chroot=True)}"}}
kraft:
  controllers: [{controllers}]
  metadata_log_dir: /tmp/kraft-precheck-never-written
""")
    return path


def zk_state(cluster) -> dict:
    """What the pre-check must leave as it was, read from ZooKeeper."""
    with ZooKeeper.connect(cluster.zookeeper_connect()) as zk:
        return {"ids": sorted(zk.children("/kafka/brokers/ids") or []),
                "assignment": json.loads(zk.read(f"/kafka/brokers/topics/{TOPIC}"))["partitions"],
                "migration": zk.read("/kafka/migration"),
                "reassignment": zk.read("/kafka/admin/reassign_partitions"),
                "controller": json.loads(zk.read("/kafka/controller") or b"{}").get("brokerid")}


@pytest.fixture(scope="module")
def topic(cluster):
    admin = admin_client(client_settings(cluster.bootstrap_servers()))
    create_topics_and_wait(admin, [NewTopicSpec(TOPIC, ASSIGNMENT, {"min.insync.replicas": "2"})], timeout_s=120)
    return TOPIC


def refused(capsys, cluster, book: Path, check: str, *needles: str) -> str:
    before = zk_state(cluster)
    code, doc, err = run_json(capsys, "kraft", "precheck", "--playbook", str(book))
    assert code == 2, (code, doc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert doc["ok"] is False and doc["refusal"]["check"] == check, doc
    assert lines[0] == f"kmigrate: error: {doc['refusal']['message']}"
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert zk_state(cluster) == before
    return lines[0]


def test_a_clean_cluster_passes_every_check(cluster, topic, tmp_path, capsys):
    book = playbook(cluster, tmp_path)
    before = zk_state(cluster)
    code, out, err = run(capsys, "kraft", "precheck", "--playbook", str(book))
    assert code == 0, (out, err)
    print(out)
    assert out.count("pass ") == 7 and "FAIL" not in out, out
    assert "every broker (1, 2, 5) runs Kafka 3.9 with inter.broker.protocol.version 3.9" in out
    assert "controller ids 3001, 3002, 3003 are distinct from every broker id (1, 2, 5)" in out
    code, doc, err = run_json(capsys, "kraft", "precheck", "--playbook", str(book))
    assert code == 0 and doc["ok"] is True and doc["refusal"] is None, (doc, err)
    assert [c["check"] for c in doc["checks"]] == ["versions", "broker_ids", "assigned_brokers", "controller_ids",
                                                   "reassignments", "zookeeper_security", "dedicated_controllers"]
    assert all(c["ok"] for c in doc["checks"])
    assert zk_state(cluster) == before and before["migration"] is None


def test_a_controller_id_that_is_a_broker_id_is_refused(cluster, topic, tmp_path, capsys):
    line = refused(capsys, cluster, playbook(cluster, tmp_path, (3001, 5)), "controller_ids",
                   "controller id 5 is also a broker id (brokers 1, 2, 5)", "give kraft.controllers node.ids no broker uses")
    print(line)


def test_a_broker_below_protocol_3_9_is_refused(cluster, topic, tmp_path, capsys):
    home = Path(cluster.node("kafka-5").dir)
    props = cluster.broker_properties(5)
    props["inter.broker.protocol.version"] = "3.8-IV0"
    with open(home / "server.properties", "w") as f:
        javaproperties.dump(props, f, timestamp=False, sort_keys=True)
    cluster.restart("kafka-5", health_timeout_s=120)
    line = refused(capsys, cluster, playbook(cluster, tmp_path), "versions",
                   "inter.broker.protocol.version is below 3.9 on broker 5 (3.8-IV0)",
                   "set inter.broker.protocol.version=3.9 on every broker and roll them")
    print(line)


def test_a_stopped_broker_named_by_partitions_is_refused(cluster, topic, tmp_path, capsys):
    cluster.stop("kafka-5")
    line = refused(capsys, cluster, playbook(cluster, tmp_path), "assigned_brokers",
                   # the 10 partitions of __consumer_offsets (RF 3 on 3 brokers) and the topic's 3 name it
                   "partitions __consumer_offsets-0, __consumer_offsets-1, __consumer_offsets-2, __consumer_offsets-3, "
                   "__consumer_offsets-4 and 8 more name broker 5, not live", "WAIT_FOR_BROKERS",
                   "start broker 5 or reassign those partitions to live brokers (1, 2)")
    print(line)
