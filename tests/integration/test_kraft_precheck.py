"""``kmigrate kraft precheck`` on a real ZooKeeper-mode cluster (Kafka 3.9, one ZooKeeper server, brokers 1, 2 and 5
under the chroot /kafka): a clean pass, then each refusal produced for real, each exit 2 with one line naming the
problem and its fix, and nothing changed in ZooKeeper (the brokers registered, every topic's assignment and
reassignment state, no /migration, no /admin/reassign_partitions, the controller):

- ``controller_ids``: a controller id that is a broker id (the playbook's kraft.controllers);
- ``dedicated_controllers``: a controller planned at a broker's own listener (combined mode);
- ``reassignments``: a reassignment in flight (a replica of a ~320 KB topic added on broker 2, held back by a 1 KB/s
  throttle seen in force on both brokers before it starts, the data in one-record batches and 16 KB segments since a
  replica fetch copies from one segment; still in flight after the refusal, then cancelled and unthrottled);
- ``versions``: a broker restarted with ``inter.broker.protocol.version=3.5-IV2`` (the line names the 3.9 rule
  and metadata.version 3.6-IV1, the lowest a 3.9 controller migrates at);
- ``assigned_brokers``: a broker stopped while partitions name it (the cause of a migration stuck in
  WAIT_FOR_BROKERS);
- ``broker_ids``: that broker's process started again with no ``broker.id`` and an empty log dir: it registers
  with a generated id (1001, from /brokers/seqid);
- ``versions``: a separate one-broker sandbox on Kafka 2.8.2 is told to upgrade to 3.9 first, and ``kmigrate plan``
  prints that upgrade.

The ``zookeeper_security`` refusals are produced for real in ``test_zookeeper_auth.py`` (a SASL owner of the
brokers' znodes) and by the unit tests of ``migrate.core.kraft.prechecks``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import javaproperties
import pytest

from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.adapters.kafka.client import admin_client
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.adapters.zookeeper.client import ZooKeeper
from migrate.files import client_settings
from migrate.sandbox.testing import produce_waiting, running_sandbox
from cli_support import run, run_json
from cluster_waits import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 5), chroot="/kafka")
TOPIC = "kraft-precheck"
ASSIGNMENT = [[1, 2, 5], [2, 5, 1], [5, 1, 2]]
MOVING = "kraft-precheck-moving"
THROTTLE_RATE = "1024"  # bytes/s: a 16 KB segment per ~16 s at most, the ~320 KB topic takes minutes to copy


def playbook(cluster, tmp_path: Path, controller_ids=(3001, 3002, 3003), addresses=None) -> Path:
    spare = f"{cluster.spec.ip_prefix}.9"  # no controller runs: the pre-check only plans them
    addresses = addresses or [(spare, 9093 + i) for i in range(len(controller_ids))]
    controllers = ", ".join(f"{{id: {c}, host: {h}, port: {p}}}" for c, (h, p) in zip(controller_ids, addresses))
    path = tmp_path / f"kraft-{'-'.join(map(str, controller_ids))}-{addresses[0][0]}-{addresses[0][1]}.yaml"
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
    root = cluster.spec.chroot
    with ZooKeeper.connect(cluster.zookeeper_connect()) as zk:
        topics = sorted(zk.children(f"{root}/brokers/topics") or [])
        return {"ids": sorted(zk.children(f"{root}/brokers/ids") or []),
                # each topic's znode: its assignment, and adding/removing replicas while a reassignment is in flight
                "topics": {t: json.loads(zk.read(f"{root}/brokers/topics/{t}")) for t in topics},
                "migration": zk.read(f"{root}/migration"),
                "reassignment": zk.read(f"{root}/admin/reassign_partitions"),
                "controller": json.loads(zk.read(f"{root}/controller") or b"{}").get("brokerid")}


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


def test_a_controller_at_a_brokers_own_listener_is_combined_mode_and_refused(cluster, topic, tmp_path, capsys):
    b2 = next(b for b in cluster.spec.brokers if b.id == 2)
    spare = f"{cluster.spec.ip_prefix}.9"
    book = playbook(cluster, tmp_path, addresses=[(spare, 9093), (b2.host, b2.port), (spare, 9095)])
    line = refused(capsys, cluster, book, "dedicated_controllers",
                   f"controller 3002 is planned at {b2.host}:{b2.port}, the listener of broker 2",
                   "run each controller as its own process (process.roles=controller) on a port of its own",
                   "combined mode is not supported by the migration")
    print(line)


def _write_properties(cluster, broker_id: int, props: dict) -> None:
    with open(Path(cluster.node(f"kafka-{broker_id}").dir) / "server.properties", "w") as f:
        javaproperties.dump(props, f, timestamp=False, sort_keys=True)


def _produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    from confluent_kafka import Producer

    # one record per batch: a segment holds whole batches, and librdkafka's default batch (1 MB) would put the whole
    # topic in one batch that one replica fetch copies at once, throttle or not
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(count):
        produce_waiting(producer, topic, str(i).encode(), bytes(j % 256 for j in range(size)))
    assert producer.flush(30) == 0


def test_a_reassignment_in_flight_is_refused(cluster, topic, tmp_path, capsys):
    admin = ReassignmentAdmin(client_settings(cluster.bootstrap_servers()))
    key = (MOVING, 0)
    rates = {1: {"leader.replication.throttled.rate": THROTTLE_RATE}, 2: {"follower.replication.throttled.rate": THROTTLE_RATE}}
    try:
        # one replica on broker 1, ~320 KB in 16 KB segments (a replica fetch reads from one segment)
        admin.create_topic(MOVING, [[1]], {"segment.bytes": "16384"})
        _produce(cluster.bootstrap_servers(), MOVING, count=320, size=1024)
        # A broker applies dynamic configs from ZooKeeper's change notifications, in order and some time later: the
        # topic's throttled replicas first, then the rates, and once each broker shows its rate both are in force
        # (else the copy may run unthrottled and finish before the pre-check looks).
        admin.alter_topic_configs({MOVING: [("leader.replication.throttled.replicas", "set", "0:1"),
                                            ("follower.replication.throttled.replicas", "set", "0:2")]})
        assert not admin.set_brokers_configs(rates)
        wait_for(lambda: admin.broker_dynamic_configs([1, 2], tuple(n for r in rates.values() for n in r)) == rates,
                 what="the throttle rates in force on brokers 1 and 2")
        assert admin.alter_reassignments({key: (1, 2)}) == {key: None}
        wait_for(lambda: key in admin.list_reassignments(), what=f"{MOVING}-0 in flight")
        line = refused(capsys, cluster, playbook(cluster, tmp_path), "reassignments",
                       f"a reassignment is in flight for {MOVING}-0: let it finish or cancel it with the tool that "
                       "started it (kmigrate partitions --resume or --cancel; kafka-reassign-partitions.sh --verify or "
                       "--cancel")
        print(line)
        assert admin.list_reassignments()[key].adding == (2,)  # still held back: the refusal was seen mid-copy
    finally:  # the later tests want a cluster with nothing in flight and no throttle
        if key in admin.list_reassignments():
            assert admin.alter_reassignments({key: None}) == {key: None}
        wait_for(lambda: key not in admin.list_reassignments(), what=f"{MOVING}-0 cancelled")
        admin.alter_topic_configs({MOVING: [("leader.replication.throttled.replicas", "delete", None),
                                            ("follower.replication.throttled.replicas", "delete", None)]})
        assert not admin.set_brokers_configs({1: {"leader.replication.throttled.rate": None},
                                              2: {"follower.replication.throttled.rate": None}})
        admin.close()


def test_a_broker_below_protocol_3_9_is_refused_naming_the_metadata_version_rule(cluster, topic, tmp_path, capsys):
    props = cluster.broker_properties(5)
    props["inter.broker.protocol.version"] = "3.5-IV2"
    _write_properties(cluster, 5, props)
    cluster.restart("kafka-5", health_timeout_s=120)
    line = refused(capsys, cluster, playbook(cluster, tmp_path), "versions",
                   "inter.broker.protocol.version is below 3.9 on broker 5 (3.5-IV2), below metadata.version 3.6-IV1, "
                   "the lowest a 3.9 controller starts a migration at (KAFKA-17457",
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


def test_a_generated_broker_id_is_refused(cluster, topic, tmp_path, capsys):
    # broker 5's process again (stopped above), with no broker.id and an empty log dir (no meta.properties to keep
    # its id): Kafka generates one above reserved.broker.max.id (1000), from /brokers/seqid
    props = cluster.broker_properties(5)
    del props["broker.id"]
    props.pop("inter.broker.protocol.version", None)
    log_dir = Path(props["log.dirs"])
    shutil.rmtree(log_dir)
    log_dir.mkdir()
    _write_properties(cluster, 5, props)
    cluster.start("kafka-5", wait=False)  # the sandbox would wait for id 5
    address = next(b.address for b in cluster.spec.brokers if b.id == 5)
    admin = ReassignmentAdmin(client_settings(cluster.bootstrap_servers()))
    try:
        generated = wait_for(lambda: [i for i in zk_state(cluster)["ids"] if int(i) > 1000], what="a generated id",
                             timeout_s=120)
        assert generated == ["1001"], generated
        wait_for(lambda: admin.broker_releases({1001: address}), what="broker 1001 answering ApiVersions", timeout_s=60)
    finally:
        admin.close()
    line = refused(capsys, cluster, playbook(cluster, tmp_path), "broker_ids",
                   "broker 1001 has a generated id (above reserved.broker.max.id, with broker.id.generation.enable=true)",
                   "set broker.id=1001 and broker.id.generation.enable=false in its server.properties and restart it")
    print(line)


def test_a_cluster_on_kafka_2_8_is_told_to_upgrade_to_3_9_first(tmp_path, capsys):
    with running_sandbox(dict(zookeeper_ids=(1,), broker_ids=(1,), kafka_version="2.8.2")) as old:
        book = playbook(old, tmp_path)
        line = refused(capsys, old, book, "versions",
                       "broker 1 runs Kafka 2.8: upgrade every broker to 3.9 first (a rolling restart onto 3.9.x with "
                       "inter.broker.protocol.version=2.8, then one with inter.broker.protocol.version=3.9; "
                       "kmigrate plan prints both)")
        with capsys.disabled():
            print(line)
        code, out, err = run(capsys, "plan", "--playbook", str(book), "-o", str(tmp_path / "plan.json"))
        assert code in (0, 1), (code, out, err)  # 1: the audit's findings on a one-broker cluster
        print(out)
        # the upgrade as its own two rolling restarts, right after the audit, before the pre-check
        upgrade = out.index("2. operator: rolling upgrade of the brokers to Kafka 3.9.x, inter.broker.protocol.version=2.8")
        assert "broker 1 runs 2.8" in out[upgrade:], out
        roll = out.index("3. operator: rolling restart of the brokers with inter.broker.protocol.version=3.9")
        assert upgrade < roll < out.index("4. kmigrate: kmigrate kraft precheck --playbook"), out
