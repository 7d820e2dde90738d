"""Issue 30: the native KRaft sandbox (``kmigrate sandbox up --kraft``) the controller moves are tested on, on real
Kafka processes with no ZooKeeper.

One module-scoped cluster started through the CLI: Kafka 3.9.2, a dynamic quorum (KIP-853) of controllers 3000,
3001, 3002 formatted with ``--initial-controllers``, spare controllers 3003 and 3004 (``-N``, observers), brokers 101,
205 and spare broker 312 (empty). Every later command reads the sandbox from its directory. Its last tests move two
controllers with ``kmigrate controllers`` on 3.9, where each old controller is stopped *before* its removal (no
pre-vote, KIP-996): a follower, then the leader, under the canary. Then one small static-quorum cluster on the newest
Kafka 4 (4.4.0, log4j2 jars).
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

from migrate.adapters.kafka import voters as kv
from migrate.runner.canary import Canary
from migrate.sandbox import Sandbox
from migrate.sandbox.kraft_cluster import KraftCluster, read_properties
from migrate.sandbox.testing import free_ip_prefix, running_sandbox, unique_topic

from cli_support import run, run_json
from test_controllers import _events as events_of
from test_controllers import address, stop_command

pytestmark = pytest.mark.integration

VOTERS = [3000, 3001, 3002]
SPARE_CONTROLLER = 3003
SECOND_SPARE = 3004  # joins when the leader leaves (test_move_on_3_9_stops_each_old_controller_before_its_removal)
SPARES = (SPARE_CONTROLLER, SECOND_SPARE)
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
                     "--spare-controller-ids", ",".join(map(str, SPARES)), "--broker-ids", ",".join(map(str, BROKERS)),
                     "--spare-broker-ids", str(SPARE_BROKER), "--kafka-version", "3.9.2",
                     "--ip-prefix", free_ip_prefix(len(VOTERS) + len(SPARES)), "--dir", str(directory), "--output", "json")
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
    for c in VOTERS + list(SPARES):
        meta = read_properties(Path(sandbox.node(f"controller-{c}").dir) / "metadata" / "meta.properties")
        assert view.replica(c).directory_id == meta["directory.id"] == kraft.directory_id(c)
        assert meta["node.id"] == str(c) and meta["cluster.id"] == kraft.cluster_id()
    assert view.role(SPARE_CONTROLLER) == view.role(SECOND_SPARE) == "observer"
    assert {*SPARES, *BROKERS, SPARE_BROKER} <= set(view.observer_ids)
    roles = {n["name"]: n["role"] for n in info["nodes"]}
    assert [roles[f"controller-{c}"] for c in SPARES] == ["controller (observer)"] * 2
    assert sorted(r for n, r in roles.items() if n in {f"controller-{c}" for c in VOTERS}) \
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


# ------------------------------------------------- kmigrate controllers on 3.9: stop each old controller first
def _quorum(sandbox: Sandbox):
    return kv.read_quorum([address(sandbox, i) for i in (*VOTERS, *SPARES)])[1]


def _move(sandbox: Sandbox, add: str, remove: str, *extra: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``kmigrate controllers`` as an operator of the 3.9 cluster runs it (JSON lines), the sandbox stopping each old
    controller (``--stop-command``); bounded waits, so that a hang fails here rather than at the module's timeout."""
    began = time.monotonic()
    r = _kmigrate("controllers", "--add", add, "--remove", remove, "--bootstrap-controller",
                  ",".join(address(sandbox, i) for i in VOTERS), "--stop-command", stop_command(sandbox),
                  "--catch-up-timeout", "60", "--stop-timeout", "60", *extra, "-O", "json")
    events = events_of(r.stdout)
    steps = events[-1].get("steps") if events else None
    print(f"kmigrate controllers --add {add} --remove {remove} {' '.join(extra)}: exit {r.returncode} in "
          f"{time.monotonic() - began:.1f} s, steps {steps}")
    return r, events


def _changes(events: list[dict]) -> list[tuple[str, int]]:
    """The steps that change the cluster, in the order kmigrate took them (each ``step`` event is emitted before
    the step is performed, and a step is performed only once the one before it is confirmed)."""
    return [(e["step"], e["controller"]) for e in events if e["event"] == "step" and e["step"] in ("add", "stop", "remove")]


def test_without_kafka_version_the_dry_run_stops_a_controller_before_its_removal(cluster):
    """The controllers' release unknown (no --kafka-version): the safe order, stop first, whatever the release."""
    sandbox, _ = cluster
    q = _quorum(sandbox)
    follower = min(set(VOTERS) - {q.leader_id})
    r, events = _move(sandbox, str(SPARE_CONTROLLER), str(follower), "--dry-run")
    assert r.returncode == 0, r.stderr[-2000:]
    done = events[-1]
    assert done["event"] == "done" and done["dry_run"] and "release is unknown" in done["stop_order"], done
    planned = done["planned"]
    stop = next(i for i, s in enumerate(planned) if s.startswith(f"stop controller {follower} before its removal"))
    remove = next(i for i, s in enumerate(planned) if s.startswith(f"remove controller {follower} "))
    add = next(i for i, s in enumerate(planned) if s.startswith(f"add controller {SPARE_CONTROLLER} "))
    assert add < stop < remove and planned[-1].startswith("done"), planned
    assert _quorum(sandbox).voter_ids == tuple(VOTERS) and not _changes(events)


def test_move_on_3_9_stops_each_old_controller_before_its_removal(cluster):
    """A follower, then the leader, each replaced by a spare with ``--kafka-version 3.9``, under the canary: each
    old controller stopped (its listener silent) before RemoveRaftVoter; the stopped leader's place taken by an
    election; the voters read back; nothing lost; a rerun of the whole change changes nothing."""
    sandbox, _ = cluster
    before = _quorum(sandbox)
    assert before.voter_ids == tuple(VOTERS) and before.leader_id in VOTERS, before
    follower = min(set(VOTERS) - {before.leader_id})
    canary = Canary(sandbox.client_settings(sandbox.bootstrap_servers(spare=False)), topic=unique_topic("controllers-39"),
                    rate_per_s=50).start()
    try:
        deadline = time.monotonic() + 60
        while canary.report().acknowledged < 20 and time.monotonic() < deadline:
            time.sleep(0.2)

        # a follower
        r, events = _move(sandbox, str(SPARE_CONTROLLER), str(follower), "--kafka-version", "3.9")
        assert r.returncode == 0, r.stderr[-3000:]
        assert events[0]["event"] == "quorum" and "Kafka 3.9 has no pre-vote" in events[0]["stop_order"], events[0]
        assert _changes(events) == [("add", SPARE_CONTROLLER), ("stop", follower), ("remove", follower)], events
        assert [e["event"] for e in events if e.get("controller") == follower] == ["step", "stop", "step"], events
        assert "before its removal" in next(e for e in events if e["event"] == "stop")["message"]
        left = tuple(sorted(set(VOTERS) - {follower} | {SPARE_CONTROLLER}))
        middle = _quorum(sandbox)
        assert events[-1]["voters_after"] == list(left) and middle.voter_ids == left, (events[-1], middle)

        # the leader
        leader = middle.leader_id
        assert leader in VOTERS, middle
        r, events = _move(sandbox, str(SECOND_SPARE), str(leader), "--kafka-version", "3.9")
        assert r.returncode == 0, r.stderr[-3000:]
        assert _changes(events) == [("add", SECOND_SPARE), ("stop", leader), ("remove", leader)], events
        said = {e["step"]: e["message"] for e in events if e["event"] == "step"}
        assert said["stop"].startswith(f"stop controller {leader} (the leader: the other voters elect a new one) "
                                       "before its removal"), said
        assert said["remove"].startswith(f"remove controller {leader} (stopped)"), said
        after = _quorum(sandbox)
        final = tuple(sorted(set(left) - {leader} | {SECOND_SPARE}))
        assert events[-1]["voters_after"] == list(final) and after.voter_ids == final, (events[-1], after)
        assert after.leader_id in final and after.leader_epoch > middle.leader_epoch, (middle, after)
        assert events[-1]["leader_after"] == after.leader_id
    finally:
        report = canary.stop(drain_timeout_s=60)
    on_disk = Sandbox(sandbox.dir)  # the pids as the sandbox commands left them
    for gone in (follower, leader):
        assert not on_disk.is_alive(f"controller-{gone}")
        assert kv.controller_features(address(sandbox, gone), timeout_s=2.0) is None, f"controller {gone} answers"
    figures = report.to_dict()
    print("canary across the two controller moves on 3.9:", {k: figures[k] for k in ("sent", "acknowledged", "lost",
                                                                                       "produce_stall_s")})
    assert report.sent >= 20 and report.lost == 0 and report.acknowledged == report.sent, figures

    # run again, the whole change at once: nothing to do
    r, events = _move(sandbox, ",".join(map(str, SPARES)), f"{follower},{leader}", "--kafka-version", "3.9")
    assert r.returncode == 0, r.stderr[-3000:]
    assert not [e for e in events if e["event"] in ("step", "stop")], events
    assert events[-1]["already_done"] and events[-1]["voters_after"] == list(final), events[-1]
    assert _quorum(sandbox).voter_ids == final


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
