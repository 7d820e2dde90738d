"""Issue 29, ZooKeeper to KRaft (KIP-866) on real Kafka 3.9.2 processes: the configs ``kmigrate kraft`` renders,
applied by the sandbox's restarts, and the phases ``kmigrate kraft status`` reads on the way.

One sandbox (1 ZooKeeper server, brokers 101, 205, 310 under the chroot /kafka, one KRaft controller 3000), a
topic with RF 3 and min.insync.replicas 2 holding a few hundred records, a consumer group with committed offsets.
The tests run in order, each one a step of the migration: controllers up (the controller waits for every broker,
named), roll 1 (dual-write, /migration's offset advancing), ``kraft rollback`` from dual-write under a canary (the
operator's steps done by the sandbox, kmigrate SIGKILLed once at a seeded random moment and run again) back to ZooKeeper
mode, the controllers formatted again and roll 1 again (the second attempt), roll 2 (every broker KRaft, /brokers/ids
empty, records and offsets all there), finalize, and the rollback refused once finalized.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.kafka.quorum import describe_quorum
from migrate.core.kraft.phases import parse_json_znode
from migrate.runner.canary import Canary
from migrate.sandbox.kraft import KraftSandbox
from migrate.sandbox.probes import zookeeper
from migrate.sandbox.testing import running_sandbox

from cli_support import run, run_json
from cluster_waits import settled, wait_for

pytestmark = pytest.mark.integration

BROKERS = (101, 205, 310)
SANDBOX = dict(zookeeper_ids=(1,), broker_ids=BROKERS, chroot="/kafka")
TOPIC = "kraft-orders"
GROUP = "kraft-billing"
RECORDS = 300
COMMITTED = {0: 40, 1: 50, 2: 60}
SEED = int(os.environ.get("KMIGRATE_KRAFT_SEED", "29"))


@pytest.fixture(scope="module")
def cluster():
    with running_sandbox(SANDBOX) as sandbox:
        kraft = KraftSandbox(sandbox)
        kraft.add_controllers((3000,))
        yield sandbox, kraft


@pytest.fixture(scope="module")
def data(cluster):
    sandbox, _ = cluster
    bs = sandbox.bootstrap_servers()
    admin = AdminClient({"bootstrap.servers": bs})  # kept: a collected client fails its futures
    admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(timeout=60)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True})
    for i in range(RECORDS):
        p.produce(TOPIC, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 3)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, part, off) for part, off in COMMITTED.items()], asynchronous=False)
    c.close()
    return bs


def _status(capsys, sandbox, controller: bool = True) -> dict:
    asked = ["--bootstrap-controller", ",".join(c.address for c in KraftSandbox(sandbox).controller_nodes())] if controller else []
    code, doc, err = run_json(capsys, "kraft", "status", "--zookeeper", sandbox.zookeeper_connect(chroot=True),
                              "--bootstrap-server", sandbox.bootstrap_servers(), "--broker-list", ",".join(map(str, BROKERS)),
                              *asked)
    assert code == 0, err
    return doc


def _status_until(capsys, sandbox, phase: str, timeout_s: float = 60) -> dict:
    return wait_for(lambda: (lambda d: d if d["phase"] == phase else None)(_status(capsys, sandbox)),
                    what=f"kraft status {phase}", timeout_s=timeout_s, interval_s=1)


def _gate(capsys, sandbox, gate: str, *extra: str) -> tuple[int, dict, str]:
    """``kraft status --wait-for GATE`` (the gates, issue 29) on the sandbox's controllers."""
    controllers = ",".join(c.address for c in KraftSandbox(sandbox).controller_nodes())
    return run_json(capsys, "kraft", "status", "--zookeeper", sandbox.zookeeper_connect(chroot=True), "--bootstrap-server",
                    sandbox.bootstrap_servers(), "--broker-list", ",".join(map(str, BROKERS)), "--bootstrap-controller",
                    controllers, "--wait-for", gate, "--interval", "0.5s", *extra)


def _finalize(capsys, sandbox, kraft) -> tuple[int, dict, str]:
    node = kraft.controller_nodes()[0]
    return run_json(capsys, "kraft", "controller-config", str(node.id), "--finalize", "--zookeeper",
                    sandbox.zookeeper_connect(chroot=True), "--bootstrap-server", sandbox.bootstrap_servers(),
                    "--controller-quorum-voters", node.voter, "--metadata-log-dir", node.log_dir)


def test_controller_config_is_what_the_sandbox_controller_runs(cluster, capsys):
    sandbox, kraft = cluster
    voters = f"3000@{kraft.controllers[0].host}:9093"
    code, doc, err = run_json(capsys, "kraft", "controller-config", "3000", "--zookeeper", sandbox.zookeeper_connect(chroot=True),
                              "--bootstrap-server", sandbox.bootstrap_servers(), "--controller-quorum-voters", voters,
                              "--metadata-log-dir", kraft.controller_nodes()[0].log_dir)
    assert code == 0, err
    with open(f"{kraft.controllers[0].dir}/server.properties") as f:
        assert [ln for ln in f.read().splitlines() if ln] == doc["lines"]
    assert doc["config"]["zookeeper.connect"].endswith("/kafka")
    assert doc["format_command"][1:3] == ["format", f"--cluster-id={kraft.cluster_id()}"]


def test_controllers_up_the_controller_waits_for_every_broker(cluster, data, capsys):
    sandbox, _ = cluster
    doc = _status(capsys, sandbox)
    assert doc["phase"] == "controllers-ready", doc
    assert doc["waiting_for"] == list(BROKERS)
    assert doc["quorum"]["leader_id"] == 3000 and doc["quorum"]["voters"] == [3000]
    assert doc["zookeeper"]["migration_offset"] == -1  # the controller wrote /migration at its start: nothing copied yet
    assert doc["zookeeper"]["kraft_controller_epoch"] is None  # a ZooKeeper-mode broker is the controller (epoch -1)
    assert _status(capsys, sandbox, controller=False)["phase"] == "zookeeper"  # no ZooKeeper-mode broker forwards DescribeQuorum


def test_gates_before_roll_1_controllers_ready_passes_dual_write_times_out_naming_the_brokers(cluster, data, capsys):
    sandbox, kraft = cluster
    code, doc, err = _gate(capsys, sandbox, "controllers-ready", "--timeout", "30s")
    assert code == 0 and doc["gate"]["passed"] and doc["gate"]["consecutive"] == 3, (doc, err)
    assert "reading 3 (" in err and "gate controllers-ready passed" in err  # progress on stderr
    code, doc, err = _gate(capsys, sandbox, "dual-write", "--timeout", "2s")
    assert code == 1 and not doc["gate"]["passed"], (doc, err)
    waiting = doc["gate"]["waiting_for"]
    assert waiting[0].startswith("/controller has no kraftControllerEpoch") and "/migration's metadata offset is -1" in waiting[1]
    assert waiting[2].startswith("brokers 101, 205, 310 not registered with KRaft: in ZooKeeper mode") and len(waiting) == 3
    assert doc["waiting_reasons"]["205"].startswith("in ZooKeeper mode, not registered with KRaft")
    code, _, err = _finalize(capsys, sandbox, kraft)
    assert code == 2 and "refusing to finalize" in err and "brokers 101, 205, 310 in ZooKeeper mode" in err, err


def test_roll_1_names_the_brokers_left_then_dual_write_advances(cluster, data, capsys):
    sandbox, kraft = cluster
    kraft.restart_broker(BROKERS[0], "migration", health_timeout_s=120)
    doc = _status(capsys, sandbox)
    assert doc["phase"] == "waiting-for-brokers", doc
    assert doc["waiting_for"] == list(BROKERS[1:]) and doc["quorum"]["leader_id"] == 3000
    # without --bootstrap-controller: the controllers named by the controller.quorum.voters broker 101 now runs with
    # (DescribeQuorum's listeners are broker and controller, not zkBroker: a migrating broker does not forward it)
    found = _status(capsys, sandbox, controller=False)
    assert found["phase"] == "waiting-for-brokers" and found["quorum"]["leader_id"] == 3000
    for b in BROKERS[1:]:
        kraft.restart_broker(b, "migration", health_timeout_s=120)
    doc = _status_until(capsys, sandbox, "dual-write")
    assert doc["zookeeper"]["kraft_controller_epoch"] is not None and doc["zookeeper"]["controller"]["brokerid"] == 3000
    first = doc["zookeeper"]["migration_offset"]
    later = wait_for(lambda: (lambda d: d if d["zookeeper"]["migration_offset"] > first else None)(_status(capsys, sandbox)),
                     what="/migration's offset to advance", timeout_s=30, interval_s=1)
    assert later["phase"] == "dual-write" and set(later["brokers"].values()) == {"migration"}
    assert describe_quorum(sandbox.client_settings()) is None  # no ZooKeeper-mode broker answers DescribeQuorum


def test_gate_dual_write_after_roll_1(cluster, data, capsys):
    sandbox, _ = cluster
    code, doc, err = _gate(capsys, sandbox, "dual-write", "--timeout", "60s")
    assert code == 0 and doc["gate"]["passed"] and doc["phase"] == "dual-write", (doc, err)
    assert doc["zookeeper"]["migration_offset"] >= 0 and doc["zookeeper"]["kraft_controller_epoch"] is not None


def _finalize_refused_mid_roll_2(capsys, sandbox, kraft, kraft_brokers: tuple[int, ...]) -> None:
    """KAFKA-20960: Kafka lets the controllers finalize before every broker re-registered; kmigrate refuses."""
    code, doc, err = _finalize(capsys, sandbox, kraft)
    left = [b for b in BROKERS if b not in kraft_brokers]
    assert code == 2 and doc == {} and len(err.strip().splitlines()) == 1, (code, err)
    assert f"brokers {', '.join(map(str, left))} in migration mode (roll 1's config), still in /brokers/ids" in err, err


def _rollback_command(sandbox, *extra: str) -> list[str]:
    controllers = ",".join(c.address for c in KraftSandbox(sandbox).controller_nodes())
    return [sys.executable, "-m", "migrate", "kraft", "rollback", "--zookeeper", sandbox.zookeeper_connect(chroot=True),
            "--bootstrap-server", sandbox.bootstrap_servers(), "--broker-list", ",".join(map(str, BROKERS)),
            "--bootstrap-controller", controllers, *extra]


def _start_rollback(sandbox, tmp_path: Path, name: str) -> tuple[subprocess.Popen, Path, Path]:
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(_rollback_command(sandbox, "--timeout", "240", "--output", "json"), stdout=o, stderr=e, env=env)
    return proc, out, err


def _znodes(sandbox) -> dict:
    chroot = sandbox.spec.chroot
    with zookeeper(sandbox.zookeeper_connect(), timeout_s=30) as zk:
        return {"ids": sorted(int(i) for i in zk.children(f"{chroot}/brokers/ids") or []),
                "controller": parse_json_znode(zk.read(f"{chroot}/controller")),
                "controller_epoch": zk.read(f"{chroot}/controller_epoch"), "migration": zk.read(f"{chroot}/migration")}


def _records_and_offsets_intact(bs: str, reader_group: str = "kraft-rollback-reader", exact: bool = False) -> None:
    """The committed offsets of GROUP as set, and every record written there to read (``exact``: nothing else)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "enable.auto.commit": False})
    committed = c.committed([TopicPartition(TOPIC, p) for p in COMMITTED], timeout=30)
    assert {tp.partition: tp.offset for tp in committed} == COMMITTED
    c.close()
    reader = Consumer({"bootstrap.servers": bs, "group.id": reader_group, "auto.offset.reset": "earliest",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < RECORDS and time.monotonic() < deadline:
        m = reader.poll(1)
        if m is not None and not m.error():
            seen.add(m.key())
    reader.close()
    if exact:
        assert seen == {str(i).encode() for i in range(RECORDS)}
    else:
        assert {str(i).encode() for i in range(RECORDS)} <= seen


def test_rollback_dry_run_changes_nothing(cluster, data, capsys):
    sandbox, _ = cluster
    before = _znodes(sandbox)
    code, doc, err = run_json(capsys, *_rollback_command(sandbox, "--dry-run")[3:])
    assert code == 0, err
    assert doc["dry_run"] and doc["step"] == "stop-controllers" and not doc["actions"]
    assert [s["step"] for s in doc["plan"]] == ["stop-controllers", "delete-znodes", "brokers-to-zookeeper"]
    after = _znodes(sandbox)  # /migration's offset moves on by itself: dual-write
    assert after["migration"] is not None and before["controller"]["brokerid"] == 3000
    assert {k: v for k, v in after.items() if k != "migration"} == {k: v for k, v in before.items() if k != "migration"}


def test_rollback_transaction_raises_the_controller_epoch_kafka_20488(cluster):
    """KAFKA-20488 on the sandbox's real ZooKeeper, under a scratch chroot: a KRaft controller epoch (7) not below
    /controller_epoch (5) is raised to 8 in the transaction that deletes /controller and /migration; a znode changed
    since it was read makes the transaction write nothing; run again once done, it writes nothing."""
    from migrate.adapters.zookeeper.client import rollback_migration_znodes
    from migrate.core.kraft.rollback import RollbackView
    from migrate.runner.kraft.rollback import RollbackRun, _delete_znodes

    sandbox, _ = cluster
    hosts, chroot = sandbox.zookeeper_connect(), "/kraft-20488"
    kraft = b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":7}'
    migration = b'{"version":0,"kraft_metadata_offset":240,"kraft_controller_id":3000,"kraft_controller_epoch":7}'
    with zookeeper(hosts, timeout_s=30) as zk:
        for path, data in (("/controller", kraft), ("/controller_epoch", b"5"), ("/migration", migration)):
            zk.write(chroot + path, data)
        assert not rollback_migration_znodes(hosts, chroot, None, controller_version=3, migration_version=0, epoch=None)
        assert zk.read(chroot + "/controller") == kraft  # a stale version: nothing written
    run, said = RollbackRun(), []
    view = RollbackView((101,), (101,), None, None, None)
    _delete_znodes(f"{hosts}{chroot}", None, view, run, said.append)
    with zookeeper(hosts, timeout_s=30) as zk:
        assert zk.read(chroot + "/controller_epoch") == b"8"
        assert zk.read(chroot + "/controller") is None and zk.read(chroot + "/migration") is None
        assert run.controller_epoch == {"from": 5, "to": 8} and run.migration["kraft_metadata_offset"] == 240
        assert any("KAFKA-20488" in line for line in said), said
        _delete_znodes(f"{hosts}{chroot}", None, view, RollbackRun(), said.append)  # done: nothing to write
        assert zk.read(chroot + "/controller_epoch") == b"8"
        zk.delete(chroot)


def test_rollback_from_dual_write_under_the_canary_killed_once(cluster, data, tmp_path):
    """Kafka's documented rollback from dual-write, kmigrate naming each step: the sandbox stops the controller and
    rolls the brokers back; kmigrate is SIGKILLed once at a seeded random moment and run again."""
    sandbox, kraft = cluster
    canary = Canary(sandbox.client_settings(), topic="kraft-canary", rate_per_s=50).start()
    try:
        wait_for(lambda: canary.report().acknowledged >= 100, what="the canary's first 100 records", timeout_s=60,
                 interval_s=0.2)
        first, _, err1 = _start_rollback(sandbox, tmp_path, "first")
        wait_for(lambda: "stop the KRaft controller 3000 now" in err1.read_text(), what="the rollback naming the "
                 "controller to stop", timeout_s=60, interval_s=0.2)
        kraft.stop_controllers()
        time.sleep(random.Random(SEED).uniform(0.0, 6.0))  # first run: waiting, mid-transaction, or done with it
        first.kill()
        first.wait(10)
        print("first run, killed:", err1.read_text())
        second, out2, err2 = _start_rollback(sandbox, tmp_path, "second")
        wait_for(lambda: _znodes(sandbox)["migration"] is None, what="/migration deleted", timeout_s=60, interval_s=0.2)
        wait_for(lambda: "ZooKeeper-mode config" in err2.read_text(), what="the broker roll named", timeout_s=30,
                 interval_s=0.2)
        for b in BROKERS:
            kraft.restart_broker(b, "zookeeper", health_timeout_s=120)
        assert second.wait(120) == 0, err2.read_text()
        doc = json.loads(out2.read_text())
        print("second run:", err2.read_text())
    finally:
        report = canary.stop(drain_timeout_s=120)
    assert doc["done"] and doc["step"] == "done", doc
    # /migration's content was printed by whichever run deleted it
    assert "/migration was: {" in err1.read_text() + err2.read_text()
    assert (doc["migration"] is not None) == ("/migration was:" in err2.read_text())
    zk = _znodes(sandbox)
    assert zk["ids"] == list(BROKERS) and zk["migration"] is None
    assert zk["controller"]["brokerid"] in BROKERS and zk["controller"].get("kraftControllerEpoch", -1) == -1
    for b in BROKERS:
        assert "zookeeper.metadata.migration.enable" not in sandbox.broker_properties(b)
    _records_and_offsets_intact(sandbox.bootstrap_servers())
    figures = report.to_dict()
    print("canary across the rollback:", {k: figures[k] for k in ("sent", "acknowledged", "lost", "produce_stall_s")})
    assert report.sent > 100 and report.lost == 0 and report.acknowledged == report.sent, figures


def test_rollback_run_again_when_done_changes_nothing(cluster, capsys):
    sandbox, _ = cluster
    before = _znodes(sandbox)
    code, doc, err = run_json(capsys, *_rollback_command(sandbox, "--timeout", "60")[3:])
    assert code == 0, err
    assert doc["done"] and doc["actions"] == [] and _znodes(sandbox) == before


def test_second_attempt_controllers_formatted_again_and_roll_1_again(cluster, data, capsys):
    sandbox, kraft = cluster
    kraft.reformat_controllers()
    for b in BROKERS:
        kraft.restart_broker(b, "migration", health_timeout_s=120)
    doc = _status_until(capsys, sandbox, "dual-write", timeout_s=90)
    assert doc["zookeeper"]["controller"]["brokerid"] == 3000 and set(doc["brokers"].values()) == {"migration"}


def test_roll_2_every_broker_kraft_and_nothing_lost(cluster, data, capsys):
    sandbox, kraft = cluster
    for i, b in enumerate(BROKERS):
        kraft.restart_broker(b, "kraft", health_timeout_s=120)
        doc = _status(capsys, sandbox)
        assert doc["phase"] == "brokers-kraft", doc
        assert [int(x) for x, m in doc["brokers"].items() if m == "kraft"] == list(BROKERS[:i + 1])
        if i == 0:
            _finalize_refused_mid_roll_2(capsys, sandbox, kraft, BROKERS[:1])
    assert doc["zookeeper"]["brokers_ids"] == []
    assert describe_quorum(sandbox.client_settings())["topics"][0]["partitions"][0]["leader_id"] == 3000  # KRaft brokers forward it
    bs = sandbox.bootstrap_servers()
    _records_and_offsets_intact(bs, reader_group="kraft-reader", exact=True)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})  # min.insync.replicas 2 still met: the ISR is whole
    p.produce(TOPIC, key=b"after", value=b"kraft", partition=0)
    assert p.flush(30) == 0


def test_broker_config_kraft_matches_the_running_broker(cluster, capsys):
    sandbox, kraft = cluster
    running = kraft.sandbox.broker_properties(BROKERS[1])
    assert running["process.roles"] == "broker" and running["node.id"] == str(BROKERS[1])
    assert not [k for k in running if k.startswith("zookeeper.")]


def test_gate_brokers_kraft_then_finalize_allowed(cluster, capsys):
    sandbox, kraft = cluster
    code, doc, err = _gate(capsys, sandbox, "brokers-kraft", "--timeout", "60s")
    assert code == 0 and doc["gate"]["passed"] and doc["zookeeper"]["brokers_ids"] == [], (doc, err)
    code, doc, err = _finalize(capsys, sandbox, kraft)
    assert code == 0, err
    assert "zookeeper.connect" not in doc["config"] and "zookeeper.metadata.migration.enable" not in doc["config"]


def test_finalize(cluster, capsys):
    sandbox, kraft = cluster
    kraft.restart_controller(3000, finalize=True)
    with open(f"{kraft.controllers[0].dir}/server.properties") as f:
        text = f.read()
    assert "zookeeper" not in text
    doc = _status_until(capsys, sandbox, "finalized", timeout_s=90)
    assert doc["controllers_migration_flag"] == {"3000": False}
    # the restarted controller sees each broker again once it fetches (until then its mode reads "unknown")
    doc = wait_for(lambda: (lambda d: d if set(d["brokers"].values()) == {"kraft"} else None)(_status(capsys, sandbox)),
                   what="every broker seen by the finalized quorum", timeout_s=60, interval_s=1)
    assert doc["phase"] == "finalized"
    p = Producer({"bootstrap.servers": sandbox.bootstrap_servers(), "acks": "all"})
    p.produce(TOPIC, key=b"final", value=b"kraft", partition=1)
    assert p.flush(30) == 0
    assert json.dumps(doc)


def test_gate_finalized_and_the_finalized_config_is_what_the_controller_runs(cluster, capsys):
    sandbox, kraft = cluster
    code, doc, err = _gate(capsys, sandbox, "finalized", "--timeout", "60s")
    assert code == 0 and doc["gate"]["passed"] and doc["controllers_migration_flag"] == {"3000": False}, (doc, err)
    code, doc, err = _finalize(capsys, sandbox, kraft)
    assert code == 0, err
    with open(f"{kraft.controllers[0].dir}/server.properties") as f:
        assert [ln for ln in f.read().splitlines() if ln] == doc["lines"]


def test_rollback_refused_once_finalized(cluster, capsys):
    sandbox, _ = cluster
    before = _znodes(sandbox)
    code, out, err = run(capsys, *_rollback_command(sandbox, "--timeout", "30")[3:])
    assert code == 2, (out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "finalized" in lines[0] and "nothing was changed" in lines[0], err
    assert _znodes(sandbox) == before


def test_zookeeper_retired_kraft_status_finalized_and_health_without_it(cluster, capsys):
    """The runbook's last check: ZooKeeper stopped, ``kraft status`` (the controllers found through a KRaft broker)
    and its finalized gate pass, saying ZooKeeper was not reachable and is needed no more; ``health`` is clean."""
    sandbox, _ = cluster
    sandbox.stop("zookeeper-1")
    bs, zk = sandbox.bootstrap_servers(), sandbox.zookeeper_connect(chroot=True)
    started = time.monotonic()
    code, doc, err = run_json(capsys, "kraft", "status", "--zookeeper", zk, "--bootstrap-server", bs)
    assert code == 0 and doc["phase"] == "finalized" and doc["zookeeper"] is None, (doc, err)
    assert doc["zookeeper_not_read"] == {"reason": "not reachable", "connect": zk, "needed": False}
    assert doc["brokers"] == {str(b): "kraft" for b in BROKERS} and doc["controllers_migration_flag"] == {"3000": False}
    assert doc["cluster_id"] and doc["quorum"]["leader_id"] == 3000  # the cluster id from the brokers, not /cluster/id
    code, out, err = run(capsys, "kraft", "status", "--zookeeper", zk, "--bootstrap-server", bs, "--wait-for",
                         "finalized", "--interval", "0.5s", "--timeout", "60s")
    assert code == 0, (out, err)
    assert out.startswith("phase: finalized: every broker is KRaft") and f"ZooKeeper not read (not reachable at {zk})" in out
    assert "gate finalized: passed" in out
    code, out, err = run(capsys, "health", "--bootstrap-server", bs)
    assert code == 0, (out, err)
    assert time.monotonic() - started < 60


MOVED = "kraft-moved"


def test_kraft_cluster_without_zookeeper_inspect_plan_partitions_status(cluster, capsys, tmp_path):
    """After the migration, with ZooKeeper stopped (the test above): ``inspect`` and ``plan`` from a playbook with no
    zookeeper: section read the cluster through the admin API alone; ``partitions`` moves a topic off broker 310 with
    the reassignment API and its throttles (kmigrate's own removed after); ``status`` and ``health`` are clean."""
    from confluent_kafka.admin import ConfigResource

    sandbox, _ = cluster
    bs = sandbox.bootstrap_servers()
    code, doc, err = run_json(capsys, "inspect", "--bootstrap-server", bs, "--no-sizes")
    assert code == 0, err
    assert doc["zookeeper"]["servers"] == [] and not doc["zookeeper"]["connect"]
    assert doc["cluster_id"] and doc["controller_id"] is None
    assert {b["id"]: b["alive"] for b in doc["brokers"]} == {b: True for b in BROKERS}
    book = tmp_path / "kraft-cluster.yaml"
    book.write_text(f'kafka:\n  bootstrap_servers: "{bs}"\nbrokers:\n  keep: [{", ".join(map(str, BROKERS))}]\n')
    code, doc, err = run_json(capsys, "plan", "--playbook", str(book), "-o", str(tmp_path / "plan.json"))
    assert code == 0, err
    assert doc["zookeeper"] is None and doc["moves"] == [] and not [s for s in doc["runbook"] if "zookeeper" in s["command"]]

    admin = AdminClient({"bootstrap.servers": bs})  # kept: a collected client fails its futures
    admin.create_topics([NewTopic(MOVED, 2, replica_assignment=[[310], [310]])])[MOVED].result(timeout=60)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(400):
        p.produce(MOVED, key=str(i).encode(), value=b"x" * 200, partition=i % 2)
    assert p.flush(60) == 0
    code, out, err = run(capsys, "partitions", "--bootstrap-server", bs, "--mapping", "310:205", "--topics", MOVED,
                         "--throttle", "20MB/s")
    assert code == 0, err + out
    md = admin.list_topics(timeout=30)
    assert {p.id: list(p.replicas) for p in md.topics[MOVED].partitions.values()} == {0: [205], 1: [205]}
    def rates() -> dict[int, str | None]:  # absent once deleted
        out = {}
        for b in BROKERS:
            conf = next(iter(admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))]).values())).result(timeout=30)
            rate = conf.get("leader.replication.throttled.rate")
            out[b] = (rate.value or None) if rate is not None else None
        return out

    # kmigrate's throttles removed: each broker answers for its own configs from the metadata it has applied,
    # which may trail the controller's commit of the deletion by a moment (seen once: 20 MB/s still on 205)
    assert settled(rates, {b: None for b in BROKERS}, timeout_s=15) == {b: None for b in BROKERS}
    c = Consumer({"bootstrap.servers": bs, "group.id": "kraft-moved-reader", "enable.auto.commit": False})
    assert sum(c.get_watermark_offsets(TopicPartition(MOVED, p), timeout=30)[1] for p in range(2)) == 400
    c.close()
    code, doc, err = run_json(capsys, "status", "--bootstrap-server", bs, "--mapping", "310:205")
    assert code == 0, err
    assert doc["reassignments_in_flight"] == 0, doc
    code, out, err = run(capsys, "zookeeper", "--playbook", str(book))
    assert code == 2 and "no zookeeper: section" in err and len(err.strip().splitlines()) == 1, err
