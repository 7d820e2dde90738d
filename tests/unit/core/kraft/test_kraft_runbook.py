"""The KRaft runbook ``kmigrate plan`` prints for a playbook with ``kraft:``: every phase in Kafka's order, each with its
gate, the upgrade to 3.9 first when the cluster needs it, the point of no return right before finalize."""

from __future__ import annotations

from dataclasses import replace

from migrate.core.kraft.runbook import KRAFT_COMMANDS, POINT_OF_NO_RETURN
from migrate.core.plan.document import plan_from_json, plan_to_json
from migrate.core.plan.planner import build_plan

from tests.unit.conftest import PROCEDURE_PLAYBOOK, playbook, snapshot

KRAFT = """
kraft:
  controllers: [{id: 3001, host: c1}, {id: 3002, host: c2}, {id: 3003, host: c3}]
"""
LEAVE_ONLY = """
kafka: {bootstrap_servers: "b1:9092"}
zookeeper: {connect: "z1:2181,z2:2181/kafka"}
""" + KRAFT


def cluster(version="3.9", ibp="3.9-IV0", ids=(1, 2, 3)):
    s = snapshot(racks={b: f"AD-{b}" for b in ids})
    return replace(s, cluster_id="q1Sh-9_ISia_zwGINzRvyQ",
                   brokers=tuple(replace(b, version=version, protocol_version=ibp) for b in s.brokers))


def commands(plan):
    return [(s.number, s.actor, s.command) for s in plan.runbook]


def test_leaving_zookeeper_only_gives_every_phase_in_order_with_its_gate():
    plan = build_plan(cluster(), playbook(LEAVE_ONLY))
    steps = plan.runbook
    assert [s.number for s in steps] == list(range(1, len(steps) + 1))
    pb = "test.yaml"
    gate = lambda g: KRAFT_COMMANDS["gate"].format(gate=g, playbook=pb)  # noqa: E731
    assert [s.command for s in steps] == [
        f"kmigrate plan --playbook {pb} -o plan.json",
        f"kmigrate kraft precheck --playbook {pb}",
        "kmigrate verify snapshot -o before-kraft.json --bootstrap-server b1:9092",
        "start KRaft controller 3001 on c1:9093",
        "start KRaft controller 3002 on c2:9093",
        "start KRaft controller 3003 on c3:9093",
        gate("controllers-ready"),
        "rolling restart of the brokers with the migration settings (roll 1)",
        gate("dual-write"),
        "rolling restart of the brokers as KRaft brokers (roll 2)",
        gate("brokers-kraft"),
        "kmigrate verify compare before-kraft.json",
        POINT_OF_NO_RETURN,
        "rolling restart of the controllers with the finalized config (finalize)",
        "retire ZooKeeper servers 1, 2, 3",
    ]
    first = steps[3].description
    assert f"kmigrate kraft controller-config 3001 --playbook {pb} --config-file controller-3001.properties" in first
    assert "bin/kafka-storage.sh format --cluster-id=q1Sh-9_ISia_zwGINzRvyQ -c controller-3001.properties" in first
    assert "controller.quorum.voters=3001@c1:9093,3002@c2:9093,3003@c3:9093" in first
    assert "metadata in /var/lib/kafka/kraft-metadata" in first
    assert f"kmigrate kraft broker-config N --phase migration --playbook {pb}" in steps[7].description
    assert f"kmigrate kraft broker-config N --phase kraft --playbook {pb}" in steps[9].description
    for roll in (steps[7], steps[9]):  # a health gate after every broker restart
        assert "kmigrate health --bootstrap-server b1:9092 --wait" in roll.description
    assert "phase dual-write" in steps[8].check and "phase controllers-ready" in steps[6].check
    rollback = "kmigrate kraft rollback --playbook "
    assert [s.number for s in steps if rollback in s.description] == [12]  # offered during the soak, before the point
    assert "no way back" in steps[12].description and "no rollback is possible" in steps[12].description
    assert f"kmigrate kraft controller-config C --finalize --playbook {pb}`" in steps[13].description
    assert "refused unless every broker is a KRaft broker and healthy" in steps[13].description


def test_a_cluster_before_3_9_upgrades_first_as_its_own_rolling_restarts():
    plan = build_plan(cluster(version="3.7", ibp="3.7-IV4"), playbook(LEAVE_ONLY))
    steps = plan.runbook
    assert steps[1].command == "rolling upgrade of the brokers to Kafka 3.9.x, inter.broker.protocol.version=3.7"
    assert "brokers 1, 2, 3 run 3.7" in steps[1].description
    assert "kmigrate health --bootstrap-server b1:9092 --wait" in steps[1].description
    assert steps[2].command == "rolling restart of the brokers with inter.broker.protocol.version=3.9"
    assert steps[3].command == "kmigrate kraft precheck --playbook test.yaml"
    assert [s.number for s in steps] == list(range(1, len(steps) + 1))
    snap = cluster()  # one broker left behind: named in the singular
    snap = replace(snap, brokers=(replace(snap.brokers[0], version="2.8", protocol_version="2.8-IV1"), *snap.brokers[1:]))
    steps = build_plan(snap, playbook(LEAVE_ONLY)).runbook
    assert steps[1].command == "rolling upgrade of the brokers to Kafka 3.9.x, inter.broker.protocol.version=2.8"
    assert "on every broker; broker 1 runs 2.8. Set" in steps[1].description


def test_3_9_brokers_with_an_older_protocol_need_only_the_protocol_roll():
    steps = build_plan(cluster(ibp="3.8-IV0"), playbook(LEAVE_ONLY)).runbook
    assert [s.command for s in steps[1:3]] == ["rolling restart of the brokers with inter.broker.protocol.version=3.9",
                                               "kmigrate kraft precheck --playbook test.yaml"]


def test_moving_the_brokers_comes_before_leaving_zookeeper_and_the_swap_is_warned_about():
    without = build_plan(cluster(), playbook())
    plan = build_plan(cluster(), playbook(PROCEDURE_PLAYBOOK + KRAFT))
    n = len(without.runbook)
    assert [(s.actor, s.command) for s in plan.runbook[:n]] == [(s.actor, s.command) for s in without.runbook]
    assert plan.runbook[n].command == "kmigrate kraft precheck --playbook test.yaml"
    assert plan.runbook[-1].command == "retire ZooKeeper servers 1, 2, 3"
    assert any("zookeeper.add" in w and "kraft:" in w for w in plan.warnings)
    assert not any("kraft:" in w for w in without.warnings)
    assert plan.plan_id == without.plan_id  # the runbook is not part of what decides the migration


def test_the_kraft_runbook_survives_the_plan_file():
    plan = build_plan(cluster(), playbook(LEAVE_ONLY))
    assert plan_from_json(plan_to_json(plan)).runbook == plan.runbook


def test_a_playbook_without_kraft_keeps_its_runbook():
    assert not any("kraft" in s.command for s in build_plan(cluster(), playbook()).runbook)


def test_the_command_config_reaches_the_commands_given_no_playbook():
    text = LEAVE_ONLY.replace('kafka: {bootstrap_servers: "b1:9092"}', 'kafka: {bootstrap_servers: "b1:9092", command_config: c.properties}')
    steps = build_plan(cluster(), playbook(text)).runbook
    assert steps[2].command == "kmigrate verify snapshot -o before-kraft.json --bootstrap-server b1:9092 --command-config c.properties"
    assert "kmigrate canary --bootstrap-server b1:9092 --duration 24h --command-config c.properties" in steps[2].description
