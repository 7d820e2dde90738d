"""Issue 3: inspect -> plan against a real sandbox cluster, every audit rule it can break, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.core.model import parse_rack, snapshot_from_json
from migrate.core.plan.document import plan_from_json
from cluster_waits import wait_for

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6))

PLAYBOOK = """
kafka:
  bootstrap_servers: "{bootstrap}"
zookeeper:
  connect: "{zk}"
  add:
    - {{id: 4, host: {p}.4}}
    - {{id: 5, host: {p}.5}}
  remove: [1, 2, 3]
brokers:
  mapping: {mapping}
  new:
    4: {{availability_domain: AD-1, fault_domain: FD-2}}
    5: {{availability_domain: AD-2, fault_domain: FD-2}}
    6: {{availability_domain: AD-3, fault_domain: FD-2}}
migration:
  throttle: 50MB/s
"""


def kmigrate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=os.environ.copy())


def write_playbook(tmp: Path, cluster, mapping: str = "{1: 4, 2: 5, 3: 6}", name: str = "pb.yaml", **edits) -> Path:
    p = cluster.spec.ip_prefix
    text = PLAYBOOK.format(bootstrap=cluster.bootstrap_servers(spare=False), zk=cluster.spec.zookeeper_connect(),
                           p=p, mapping=mapping)
    for old, new in edits.items():
        text = text.replace(old.replace("_", " "), new)
    path = tmp / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def work(cluster, tmp_path_factory):
    """22 topics of replication factor 1 to 3 (one with unclean election, one with min.insync.replicas > RF), with data."""
    tmp = tmp_path_factory.mktemp("plan")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers(spare=False)})
    old = [1, 2, 3]
    topics = []
    for i in range(20):
        rf = 1 + i % 3
        parts = 1 + i % 6
        # Explicit assignment on the old brokers: the spares are running and must stay empty here.
        assignment = [[old[(p + r + i) % 3] for r in range(rf)] for p in range(parts)]
        configs = {"min.insync.replicas": "2"} if rf == 3 else {}
        topics.append(NewTopic(f"mixed-{i:02d}", num_partitions=parts, replica_assignment=assignment, config=configs))
    topics.append(NewTopic("unclean", num_partitions=2, replica_assignment=[[1, 2, 3], [2, 3, 1]],
                           config={"unclean.leader.election.enable": "true", "min.insync.replicas": "2"}))
    topics.append(NewTopic("misr-above-rf", num_partitions=1, replica_assignment=[[3, 1]],
                           config={"min.insync.replicas": "3"}))
    for name, fut in admin.create_topics(topics, operation_timeout=60).items():
        fut.result(timeout=120)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers(spare=False), "acks": "1", "linger.ms": 20})
    for i in range(30_000):
        producer.produce(f"mixed-{i % 20:02d}", value=os.urandom(100))
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    names = [t.topic for t in topics]

    def in_sync() -> bool:  # the plan's durability audit reads the ISR: no partition may still be catching up
        md = admin.list_topics(timeout=10)
        return all(n in md.topics and md.topics[n].partitions and all(
            p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in md.topics[n].partitions.values())
            for n in names)

    wait_for(in_sync, what="every partition of the 22 topics led and fully in sync", timeout_s=60)
    return tmp


def test_inspect_then_plan_offline_moves_everything_off_the_old_brokers(cluster, work):
    pb = write_playbook(work, cluster)
    proc = kmigrate("inspect", "--playbook", str(pb), "-o", str(work / "cluster.json"), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    snapshot = snapshot_from_json((work / "cluster.json").read_text())
    assert {b.id for b in snapshot.brokers} == {1, 2, 3, 4, 5, 6}
    assert snapshot.zookeeper.config_version is not None and snapshot.zookeeper.reconfig_enabled is True
    assert snapshot.zookeeper.participants == (1, 2, 3)
    assert {snapshot.zookeeper.server_versions[i] for i in (1, 2, 3)} == {"3.8.6"}
    assert sorted(snapshot.zookeeper.server_modes.values()).count("leader") == 1
    names = {t.name for t in snapshot.topics}
    assert {f"mixed-{i:02d}" for i in range(20)} <= names
    sized = [p.size_bytes for t in snapshot.topics if t.name.startswith("mixed-") for p in t.partitions]
    assert sum(s or 0 for s in sized) > 30_000 * 100  # describe_log_dirs sizes were read
    assert all(b.zookeeper_connect and b.zookeeper_connect.startswith(cluster.spec.ip_prefix) for b in snapshot.brokers)

    proc = kmigrate("plan", "--playbook", str(pb), "--cluster-file", str(work / "cluster.json"),
                    "-o", str(work / "plan.json"), "--reassignment-json", str(work / "reassign.json"))
    # misr-above-rf is an error that blocks: the plan is written, exit 1 says so.
    assert proc.returncode == 1, proc.stderr
    assert "durability.min_insync_above_rf" in proc.stdout or "min.insync" in proc.stderr
    plan = plan_from_json((work / "plan.json").read_text())
    racks = {b.id: parse_rack(b.rack)[0] for b in snapshot.brokers}
    by_key = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    assert len(plan.moves) == sum(len(t.partitions) for t in snapshot.topics)
    for move in plan.moves:
        assert not set(move.target) & {1, 2, 3}, move
        assert len(move.target) == len(by_key[(move.topic, move.partition)].replicas)  # RF kept
        assert len({racks[b] for b in move.target}) == len(move.target)  # distinct ADs (3 ADs >= RF)
    leaders = [m.target[0] for m in plan.moves]
    counts = [leaders.count(b) for b in (4, 5, 6)]
    assert max(counts) - min(counts) <= 1
    reassign = json.loads((work / "reassign.json").read_text())
    assert reassign["version"] == 1 and len(reassign["partitions"]) == len(plan.moves)

    # Deterministic: the same inputs give the same bytes; planning live gives the same plan id.
    for sub in ("a", "b"):  # same relative -o name: the runbook names the plan file
        (work / sub).mkdir()
        kmigrate("plan", "--playbook", str(pb), "--cluster-file", str(work / "cluster.json"), "-o", "plan.json", cwd=work / sub)
    assert (work / "a" / "plan.json").read_bytes() == (work / "b" / "plan.json").read_bytes()
    assert plan_from_json((work / "a" / "plan.json").read_text()).plan_id == plan.plan_id
    live = kmigrate("plan", "--playbook", str(pb), "--output", "json")
    assert live.returncode == 1, live.stderr
    assert json.loads(live.stdout)["plan_id"] == plan.plan_id


def _codes(proc: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    doc = json.loads(proc.stdout)
    out: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def test_durability_rules_fire_on_the_topics_built_to_break_them(cluster, work):
    pb = write_playbook(work, cluster)
    codes = _codes(kmigrate("plan", "--playbook", str(pb), "--output", "json"))
    subjects = lambda code: {f["subject"] for f in codes.get(code, [])}  # noqa: E731
    assert "topic mixed-00" in subjects("durability.replication_factor")  # RF 1
    assert "topic mixed-01" in subjects("durability.min_insync_low")  # RF 2, min.insync 1
    assert "topic unclean" in subjects("durability.unclean_election")
    assert "topic misr-above-rf" in subjects("durability.min_insync_above_rf")
    assert codes["durability.min_insync_above_rf"][0]["severity"] == "error"
    assert "zookeeper.voters" in codes  # 2 voters after the change
    assert "zookeeper.broker_connect" in codes  # brokers still point at the old servers only


@pytest.mark.parametrize("mapping, code", [
    ("{1: 4, 2: 5}", "mapping.unmapped_broker"),
    ("{1: 2, 2: 5, 3: 6}", "mapping.target_is_old"),
    ("{1: 4, 2: 4, 3: 6}", "mapping.shared_target"),
    ("{1: 4, 2: 5, 3: 9}", "mapping.new_broker_missing"),
])
def test_mapping_rules(cluster, work, mapping, code):
    pb = write_playbook(work, cluster, mapping=mapping, name=f"pb-{code}.yaml")
    proc = kmigrate("plan", "--playbook", str(pb), "--output", "json")
    assert proc.returncode == 1, proc.stderr
    codes = _codes(proc)
    assert code in codes and codes[code][0]["severity"] == "error"


def test_zookeeper_rules(cluster, work):
    p = cluster.spec.ip_prefix
    joiners = f"- {{id: 4, host: {p}.4}}\n    - {{id: 5, host: {p}.5}}"
    # A joiner id that does not increase: 2 is a current voter.
    pb = write_playbook(work, cluster, name="pb-zk1.yaml")
    pb.write_text(pb.read_text().replace(joiners, f"- {{id: 2, host: {p}.9}}").replace("remove: [1, 2, 3]", "remove: [1, 3]"))
    proc = kmigrate("plan", "--playbook", str(pb), "--output", "json")
    assert proc.returncode == 1, proc.stderr
    codes = _codes(proc)
    assert {"zookeeper.joiner_id_not_greater", "zookeeper.joiner_is_participant"} & set(codes), sorted(codes)
    # One voter left: an error (forceable), with the failure tolerance spelled out.
    pb = write_playbook(work, cluster, name="pb-zk2.yaml")
    pb.write_text(pb.read_text().replace(joiners, f"- {{id: 4, host: {p}.4}}"))
    codes = _codes(kmigrate("plan", "--playbook", str(pb), "--output", "json"))
    voters = codes["zookeeper.voters"][0]
    assert voters["severity"] == "error" and voters["forceable"] and "tolerate" in voters["message"]


def test_topics_create_keeps_off_retiring_brokers(cluster, topic_name):
    proc = kmigrate("topics", "create", topic_name, "--partitions", "6", "--replication-factor", "3",
                    "--exclude-brokers", "1,2,3", "--bootstrap-server", cluster.bootstrap_servers(), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    # the broker this client asks may learn of the topic a moment later
    def listed():
        t = admin.list_topics(topic_name, timeout=10).topics[topic_name]
        return t if len(t.partitions) >= 6 else None

    md = wait_for(listed, what=f"6 partitions of {topic_name} in the metadata", timeout_s=30, interval_s=0.2)
    actual = [list(md.partitions[i].replicas) for i in range(6)]
    assert actual == doc["assignments"]
    racks = {b: cluster.broker_properties(b)["broker.rack"].split("/")[0] for b in (4, 5, 6)}
    for replicas in actual:
        assert set(replicas) == {4, 5, 6} and len({racks[b] for b in replicas}) == 3
    again = kmigrate("topics", "create", topic_name, "--partitions", "1", "--replication-factor", "1",
                     "--bootstrap-server", cluster.bootstrap_servers())
    assert again.returncode == 2 and "already exists" in again.stderr


def test_bad_input_is_one_line_exit_2_nothing_written(cluster, work):
    out = work / "never.json"
    bad_yaml = work / "bad.yaml"
    bad_yaml.write_text("kafka: [unclosed\n")
    cases = [
        ("plan", "--playbook", str(bad_yaml), "-o", str(out)),
        ("plan", "--playbook", str(write_playbook(work, cluster, name="typo.yaml").rename(work / "typo.yaml")), "-o", str(out)),
        ("plan", "--playbook", str(work / "pb.yaml"), "--cluster-file", str(work / "old-format.json"), "-o", str(out)),
        ("inspect", "--bootstrap-server", "127.0.0.1:1", "--zookeeper", cluster.spec.zookeeper_connect(), "-o", str(out)),
        ("inspect", "--bootstrap-server", cluster.bootstrap_servers(), "--zookeeper", "127.0.0.1:1", "-o", str(out)),
    ]
    (work / "typo.yaml").write_text((work / "typo.yaml").read_text().replace("bootstrap_servers", "bootstrap_server"))
    doc = json.loads((work / "cluster.json").read_text()) if (work / "cluster.json").exists() else {"kind": "kmigrate.cluster-snapshot"}
    doc["format_version"] = 99
    (work / "old-format.json").write_text(json.dumps(doc))
    for args in cases:
        started = time.monotonic()
        proc = kmigrate(*args)
        assert proc.returncode == 2, (args, proc.stdout[-500:], proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kmigrate: error:"), (args, proc.stderr)
        assert time.monotonic() - started < 120
        assert not out.exists()


def test_degraded_cluster_is_an_error_not_forceable(cluster, work):
    """Last in the module: kills broker 3 (offline RF-1 partitions, under-replicated others)."""
    pb = write_playbook(work, cluster)
    cluster.kill("kafka-3")
    try:
        # the controller notices the dead broker once its ZooKeeper session expires
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})

        def noticed() -> bool:
            md = admin.list_topics(timeout=10)
            return 3 not in md.brokers and all(p.leader != 3 for t in md.topics.values() for p in t.partitions.values())

        wait_for(noticed, what="the controller to drop dead broker 3 (no longer listed, leading nothing)", timeout_s=90)
        proc = kmigrate("plan", "--playbook", str(pb), "--force", "--output", "json")
        assert proc.returncode == 1
        codes = _codes(proc)
        assert "durability.under_replicated" in codes and "durability.offline" in codes, sorted(codes)
        assert all(not f["forceable"] for f in codes["durability.offline"])
    finally:
        cluster.start("kafka-3")
