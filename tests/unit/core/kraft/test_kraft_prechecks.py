"""Phase 0 of ``kmigrate kraft``: each refusal, one line naming the problem and the fix, and a clean pass."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migrate.core.kraft.prechecks import (
    CHECKS, PrecheckInputs, ZooKeeperLogin, first_refusal, run_prechecks,
)
from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble

BROKERS = (1, 2, 3)
CONTROLLERS = (3001, 3002, 3003)


def cluster(brokers=BROKERS, *, version="3.9", ibp="3.9-IV0", dead=(), topics=None, reassigning=None) -> ClusterSnapshot:
    topics = topics if topics is not None else {"orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)]}
    return ClusterSnapshot(
        cluster_id="q1Sh-9_ISia_zwGINzRvyQ", controller_id=min(brokers),
        zookeeper=ZkEnsemble(connect="z1:2181/kafka"),
        brokers=tuple(Broker(b, f"b{b}", 9092, version=version, protocol_version=ibp, alive=b not in dead) for b in brokers),
        topics=tuple(Topic(name, partitions=tuple(Partition(i, r, r, r[0]) for i, r in enumerate(reps)))
                     for name, reps in topics.items()),
        ongoing_reassignments=reassigning or {},
    )


def broker_conf(b: int, **extra: str | None) -> dict[str, str | None]:
    return {"broker.id": str(b), "zookeeper.connect": "z1:2181/kafka", **extra}


def controller_conf(c: int, **extra: str) -> dict[str, str]:
    return {"process.roles": "controller", "node.id": str(c), "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": "z1:2181/kafka", **extra}


def inputs(snapshot=None, *, brokers=None, controllers=CONTROLLERS, controller_confs=None, future=(),
           login=ZooKeeperLogin()) -> PrecheckInputs:
    snapshot = snapshot or cluster()
    return PrecheckInputs(
        snapshot=snapshot,
        broker_configs=brokers if brokers is not None else {b.id: broker_conf(b.id) for b in snapshot.brokers if b.alive},
        controller_ids=tuple(controllers),
        controller_configs=controller_confs if controller_confs is not None else {c: controller_conf(c) for c in controllers},
        future_broker_ids=tuple(future),
        zookeeper_login=login,
    )


def refused(ins: PrecheckInputs, name: str, *needles: str) -> str:
    checks = run_prechecks(ins)
    assert [c.name for c in checks] == list(CHECKS)
    first = first_refusal(checks)
    assert first is not None and first.name == name, checks
    assert "\n" not in first.message
    for needle in needles:
        assert needle in first.message, first.message
    return first.message


def test_a_clean_cluster_passes_every_check():
    checks = run_prechecks(inputs(future=(4, 5, 6)))
    assert all(c.ok for c in checks), checks
    assert first_refusal(checks) is None
    by = {c.name: c.message for c in checks}
    assert by["versions"] == "every broker (1, 2, 3) runs Kafka 3.9 with inter.broker.protocol.version 3.9"
    assert by["controller_ids"] == "controller ids 3001, 3002, 3003 are distinct from every broker id (1, 2, 3, 4, 5, 6)"
    one = {c.name: c.message for c in run_prechecks(inputs(controllers=(3001,)))}
    assert one["controller_ids"] == "controller id 3001 is distinct from every broker id (1, 2, 3)"
    assert one["dedicated_controllers"] == "controller 3001 is dedicated (process.roles=controller)"
    assert by["zookeeper_security"] == "the brokers use no ZooKeeper ACL or TLS settings"


def test_a_release_before_3_9_is_told_to_upgrade_first():
    snap = cluster()
    snap = replace(snap, brokers=(replace(snap.brokers[0], version="3.7", protocol_version="3.7-IV4"),
                                  *(replace(b, version="3.8", protocol_version="3.8-IV0") for b in snap.brokers[1:])))
    msg = refused(inputs(snap), "versions", "brokers 1 (3.7), 2 (3.8), 3 (3.8) run Kafka 3.7, 3.8",
                  "upgrade every broker to 3.9 first", "inter.broker.protocol.version=3.7")


def test_3_9_brokers_with_an_older_protocol_version_are_told_to_raise_it():
    refused(inputs(cluster(ibp="3.8-IV0")), "versions",
            "inter.broker.protocol.version is below 3.9 on brokers 1 (3.8-IV0), 2 (3.8-IV0), 3 (3.8-IV0)",
            "set inter.broker.protocol.version=3.9 on every broker and roll them")


def test_a_protocol_version_below_metadata_version_3_6_iv1_names_the_controllers_rule():
    msg = refused(inputs(cluster(ibp="3.5-IV2")), "versions",
                  "inter.broker.protocol.version is below 3.9 on brokers 1 (3.5-IV2), 2 (3.5-IV2), 3 (3.5-IV2), "
                  "below metadata.version 3.6-IV1, the lowest a 3.9 controller starts a migration at (KAFKA-17457",
                  "set inter.broker.protocol.version=3.9 on every broker and roll them")
    snap = cluster()
    snap = replace(snap, brokers=(replace(snap.brokers[0], protocol_version="3.6-IV0"), *snap.brokers[1:]))
    assert "metadata.version 3.6-IV1" in refused(inputs(snap), "versions", "on broker 1 (3.6-IV0), below")
    # 3.6-IV1 and later carry metadata transactions: the 3.9 rule alone
    for ibp in ("3.6-IV1", "3.6", "3.8-IV0"):
        assert "metadata.version" not in refused(inputs(cluster(ibp=ibp)), "versions", f"(1 ({ibp})"[1:]), ibp
    assert msg.count("\n") == 0


def test_a_generated_broker_id_is_refused():
    snap = cluster(brokers=(1, 2, 1001), topics={"orders": [(1, 2, 1001)]})
    assert refused(inputs(snap), "broker_ids") == (
        "broker 1001 has a generated id (above reserved.broker.max.id, with broker.id.generation.enable=true): set "
        "broker.id=1001 and broker.id.generation.enable=false in its server.properties and restart it (kmigrate health "
        "--wait after), then run the pre-check again; a KRaft node.id is fixed, and Kafka refuses the migration flag "
        "with a generated id")
    two = cluster(brokers=(1, 1001, 1002), topics={"orders": [(1, 1001, 1002)]})
    refused(inputs(two), "broker_ids", "brokers 1001, 1002 have generated ids",
            "set each one's broker.id to the id it has now (broker.id=1001, broker.id=1002) and "
            "broker.id.generation.enable=false in their server.properties and roll them (health gate after each)")
    # an id above 1000 given explicitly (generation off, or a higher reserved.broker.max.id) is fixed
    confs = {1: broker_conf(1), 2: broker_conf(2), 1001: broker_conf(1001, **{"reserved.broker.max.id": "2000"})}
    assert all(c.ok for c in run_prechecks(inputs(snap, brokers=confs)))


def test_a_dead_broker_in_an_assignment_is_named_with_its_partitions():
    snap = cluster(dead=(3,), topics={"orders": [(1, 2, 3), (1, 2)], "events": [(3, 1)]})
    refused(inputs(snap), "assigned_brokers", "partitions events-0, orders-0 name broker 3, not live",
            "WAIT_FOR_BROKERS", "start broker 3 or reassign those partitions to live brokers (1, 2)")


def test_a_broker_only_in_an_assignment_is_named_too():
    snap = cluster(topics={"orders": [(1, 2, 7)]})  # broker 7 was never registered
    refused(inputs(snap), "assigned_brokers", "partition orders-0 names broker 7, not live")


def test_a_controller_id_that_is_a_broker_id_is_refused():
    refused(inputs(controllers=(2, 3001, 3002)), "controller_ids", "controller id 2 is also a broker id (brokers 1, 2, 3)",
            "e.g. from 3003 up")


def test_a_controller_id_of_a_new_broker_of_the_playbook_is_refused():
    refused(inputs(controllers=(3001, 5), future=(4, 5, 6)), "controller_ids", "controller id 5 is also a broker id",
            "brokers 1, 2, 3, 4, 5, 6")


def test_a_reassignment_in_flight_is_refused():
    snap = cluster(reassigning={("orders", 0): ((1, 2, 3), ())})
    refused(inputs(snap), "reassignments", "a reassignment is in flight for orders-0", "let it finish",
            "cancel it with the tool that started it (kmigrate partitions --resume or --cancel; "
            "kafka-reassign-partitions.sh --verify or --cancel")


def test_zookeeper_acl_and_tls_must_be_in_every_controller_config():
    zk = {"zookeeper.set.acl": "true", "zookeeper.ssl.client.enable": "true",
          "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
          "zookeeper.ssl.truststore.location": "/etc/kafka/zk-trust.jks", "zookeeper.ssl.truststore.password": None}
    brokers = {b: broker_conf(b, **zk) for b in BROKERS}
    carried = {k: v for k, v in zk.items() if v is not None}
    ok = {c: controller_conf(c, **carried) for c in CONTROLLERS}
    checks = run_prechecks(inputs(brokers=brokers, controller_confs=ok))
    assert all(c.ok for c in checks), checks
    assert "copy zookeeper.ssl.truststore.password yourself" in checks[5].message
    lacking = {**ok, 3002: controller_conf(3002, **{k: v for k, v in carried.items() if k != "zookeeper.set.acl"})}
    refused(inputs(brokers=brokers, controller_confs=lacking), "zookeeper_security",
            "controller 3002's config lacks zookeeper.set.acl", "NoAuthException")
    other = {**ok, 3001: controller_conf(3001, **{**carried, "zookeeper.ssl.truststore.location": "/x.jks"})}
    refused(inputs(brokers=brokers, controller_confs=other), "zookeeper_security",
            "controller 3001's config has zookeeper.ssl.truststore.location=/x.jks, the brokers "
            "zookeeper.ssl.truststore.location=/etc/kafka/zk-trust.jks")


def test_brokers_that_disagree_on_zookeeper_security_are_refused():
    brokers = {1: broker_conf(1, **{"zookeeper.set.acl": "true"}), 2: broker_conf(2, **{"zookeeper.set.acl": "true"}),
               3: broker_conf(3, **{"zookeeper.set.acl": "false"})}
    refused(inputs(brokers=brokers), "zookeeper_security", "the brokers disagree on zookeeper.set.acl (1: true, 2: true, 3: unset)")


def test_a_sasl_owner_of_the_broker_znodes_needs_that_login():
    refused(inputs(login=ZooKeeperLogin(owners=("kafka",))), "zookeeper_security",
            "belong to the ZooKeeper SASL identity kafka and kmigrate was given no SASL login", "--zk-jaas-file")
    refused(inputs(login=ZooKeeperLogin(owners=("kafka",), login="admin")), "zookeeper_security", "logged in as 'admin'")
    checks = run_prechecks(inputs(login=ZooKeeperLogin(owners=("kafka",), login="kafka")))
    assert all(c.ok for c in checks) and "SASL login 'kafka' owns the brokers' znodes" in checks[5].message


@pytest.mark.parametrize("roles", ["broker,controller", "controller,broker", ""])
def test_combined_controllers_are_refused(roles):
    confs = {c: controller_conf(c) for c in CONTROLLERS}
    confs[3003] = dict(confs[3003], **{"process.roles": roles})
    refused(inputs(controller_confs=confs), "dedicated_controllers", "controller 3003 has process.roles=",
            "dedicated controllers (process.roles=controller)")


def test_a_controller_on_a_brokers_own_listener_is_combined_mode():
    ins = replace(inputs(), controller_addresses={3001: ("c1", 9093), 3002: ("b2", 9092)})
    refused(ins, "dedicated_controllers", "controller 3002 is planned at b2:9092, the listener of broker 2")
    assert all(c.ok for c in run_prechecks(replace(ins, controller_addresses={3002: ("b2", 9093)})))


def test_configs_that_could_not_be_rendered_fail_the_checks_that_read_them():
    checks = run_prechecks(replace(inputs(controllers=(2, 3001)), controller_configs=None,
                                   not_rendered="controller id 2 is also a broker id"))
    assert [c.name for c in checks if not c.ok] == ["controller_ids", "zookeeper_security", "dedicated_controllers"]
    assert checks[-1].message.startswith("the controllers' config could not be rendered (controller id 2 is also")


def test_no_live_broker_is_a_refusal_not_a_pass():
    refused(inputs(cluster(dead=BROKERS), brokers={}), "versions", "no live broker found")
