"""Issue 30, the brokers of a KRaft cluster: a retired broker's partitions moved with ``kmigrate partitions``, the
broker stopped, then ``kmigrate brokers unregister`` removes its registration (UnregisterBroker at the active
controller), on real Kafka 4.4.0 processes with no ZooKeeper.

One small sandbox: controllers 3000 and 3001 (a dynamic quorum), brokers 1 and 2, spare broker 3 (empty).
Refusals first (one line, exit 2, the registrations unchanged): a running broker, a fenced broker whose process still
runs (frozen), a stopped broker still hosting replicas, a controller's id. Then the move, the stop, the
unregistration, read back in DescribeCluster with fenced brokers (v2), and a rerun that finds it already done;
`verify compare` against the snapshot taken before the move finds every record. Last,
the follower controller removed from the voters and stopped: Kafka 4.4.0 keeps its registration, and the report
names it.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.kraft.registrations import broker_registrations
from migrate.sandbox.testing import running_sandbox

from cli_support import run, run_json

pytestmark = pytest.mark.integration

KAFKA = "4.4.0"
TOPIC = "retiring"
SPEC = dict(zookeeper_ids=(), controller_ids=(3000, 3001), broker_ids=(1, 2), spare_broker_ids=(3,), kafka_version=KAFKA)


@pytest.fixture(scope="module")
def cluster():
    with running_sandbox(SPEC) as sandbox:
        bs = sandbox.bootstrap_servers(spare=None)
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(TOPIC, 2, replica_assignment=[[1, 2], [2, 1]])])[TOPIC].result(timeout=60)
        p = Producer({"bootstrap.servers": bs, "acks": "all"})
        for i in range(200):
            p.produce(TOPIC, key=str(i).encode(), value=b"x" * 100, partition=i % 2)
        assert p.flush(60) == 0
        yield sandbox, admin


def _args(sandbox, *ids: int) -> list[str]:
    return ["brokers", "unregister", "--broker-list", ",".join(map(str, ids)),
            "--bootstrap-server", sandbox.spec.bootstrap_servers(spare=True),
            "--bootstrap-controller", sandbox.spec.bootstrap_controllers(spare=False)]


def _registrations(sandbox) -> dict[int, bool]:
    regs, complete = broker_registrations(sandbox.spec.bootstrap_servers(spare=True).split(","))
    assert complete  # Kafka 4: DescribeCluster v2 lists the fenced brokers
    return {b: r.fenced for b, r in regs.items()}


def _refused(capsys, sandbox, ids, words) -> None:
    before = _registrations(sandbox)
    code, out, err = run(capsys, *_args(sandbox, *ids))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and all(w in lines[0] for w in words), (code, out, err)
    assert "nothing was unregistered" in lines[0]
    assert _registrations(sandbox) == before


def test_refusals_change_nothing(cluster, capsys):
    sandbox, _ = cluster
    assert _registrations(sandbox) == {1: False, 2: False, 3: False}
    _refused(capsys, sandbox, (1,), ("broker 1 is running",))
    _refused(capsys, sandbox, (3000,), ("controller", "kmigrate controllers --remove 3000"))


def _wait_fenced(sandbox, broker: int, fenced: bool, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while _registrations(sandbox).get(broker) != fenced and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _registrations(sandbox).get(broker) == fenced


def test_a_fenced_broker_whose_process_still_runs_is_refused(cluster, capsys):
    """Broker 2 frozen (SIGSTOP): no heartbeat, so the controller fences it after broker.session.timeout.ms, yet its
    listener still accepts connections: it runs, and is refused."""
    import os
    import signal

    sandbox, _ = cluster
    pid = sandbox.node("kafka-2").pid
    os.kill(pid, signal.SIGSTOP)
    try:
        _wait_fenced(sandbox, 2, True)
        _refused(capsys, sandbox, (2,), ("broker 2 is fenced but still answers",))
    finally:
        os.kill(pid, signal.SIGCONT)
    _wait_fenced(sandbox, 2, False)


def test_a_stopped_broker_still_hosting_replicas_is_refused(cluster, capsys):
    sandbox, admin = cluster
    sandbox.stop("kafka-2")
    deadline = time.monotonic() + 30
    while not _registrations(sandbox).get(2) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _registrations(sandbox) == {1: False, 2: True, 3: False}  # stopped: fenced, still registered
    _refused(capsys, sandbox, (2,), ("broker 2 still hosts", "replica(s)", "kmigrate partitions"))
    sandbox.start("kafka-2")


def test_moved_stopped_unregistered_and_gone(cluster, capsys, tmp_path):
    sandbox, admin = cluster
    bs = sandbox.bootstrap_servers(spare=None)
    code, out, err = run(capsys, "health", "--bootstrap-server", bs, "--wait", "--timeout", "60s")
    assert code == 0, out + err
    before = tmp_path / "before.json"  # kmigrate verify on a KRaft cluster: snapshot now, compare at the end
    code, out, err = run(capsys, "verify", "snapshot", "--bootstrap-server", bs, "--topic", TOPIC, "-o", str(before),
                         "--master", "local[2]")
    assert code == 0, err
    code, out, err = run(capsys, "partitions", "--bootstrap-server", bs, "--mapping", "2:3", "--throttle", "20MB/s")
    assert code == 0, err + out  # every topic: __consumer_offsets has replicas on broker 2 too
    md = admin.list_topics(timeout=30)
    assert {p.id: sorted(p.replicas) for p in md.topics[TOPIC].partitions.values()} == {0: [1, 3], 1: [1, 3]}
    assert not [(t.topic, p.id) for t in md.topics.values() for p in t.partitions.values() if 2 in p.replicas]
    sandbox.stop("kafka-2")
    started = time.monotonic()
    code, doc, err = run_json(capsys, *_args(sandbox, 2))
    assert code == 0, err
    assert doc["unregistered"] == [2] and doc["registered_after"] == [] and doc["fenced_brokers_listed"], doc
    assert 2 not in _registrations(sandbox)
    assert time.monotonic() - started < 30
    code, doc, err = run_json(capsys, *_args(sandbox, 2))  # resumable: already done
    assert code == 0 and doc["unregistered"] == [] and doc["already_gone"] == [2], (doc, err)
    assert _registrations(sandbox) == {1: False, 3: False}
    code, out, err = run(capsys, "health", "--bootstrap-server", sandbox.spec.bootstrap_servers(spare=True))
    assert code == 0, out + err
    code, out, err = run(capsys, "verify", "compare", str(before), "--bootstrap-server",
                         sandbox.spec.bootstrap_servers(spare=True), "--master", "local[2]", "--output", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["summary"]["partitions"] == 2, (report, err)
    assert report["summary"]["differing_partitions"] == 0 and sum(p["after"]["records"] for p in report["partitions"]) == 200


def test_a_removed_controller_still_registered_is_reported(cluster, capsys):
    from migrate.adapters.kafka.voters import controller_features, describe_cluster_controllers, read_quorum, remove_voter
    from migrate.sandbox.kraft_cluster import KraftCluster

    sandbox, _ = cluster
    controllers = sandbox.spec.bootstrap_controllers(spare=False).split(",")
    _leader, quorum = read_quorum(controllers)
    follower = next(v.id for v in quorum.voters if v.id != quorum.leader_id)
    remove_voter(controllers, follower, KraftCluster(sandbox).directory_id(follower))
    sandbox.stop(f"controller-{follower}")
    remaining = [a for a in controllers if not a.startswith(sandbox.spec.host(1 if follower == 3000 else 2) + ":")]
    leader, quorum = read_quorum(remaining)
    assert [v.id for v in quorum.voters] == [quorum.leader_id] != follower
    registered = set(describe_cluster_controllers(leader)["controllers"])
    code, doc, err = run_json(capsys, "brokers", "unregister", "--broker-list", "2", "--bootstrap-server",
                              sandbox.spec.bootstrap_servers(spare=True), "--bootstrap-controller", ",".join(remaining))
    assert code == 0 and doc["already_gone"] == [2], (doc, err)
    mv = controller_features(leader)["finalized"].get("metadata.version")
    print(f"Kafka {KAFKA} (metadata.version level {mv}): controllers registered after removing {follower}: "
          f"{sorted(registered)}")
    assert doc["ghost_controllers"] == sorted(registered - {quorum.leader_id}), (doc, registered)
    assert follower in registered  # Kafka 4.4.0 keeps it (KAFKA-20295): the report names it
    assert "KAFKA-20295" in doc["notes"][0] and str(follower) in doc["notes"][0]
