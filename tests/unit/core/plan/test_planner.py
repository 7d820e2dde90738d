"""The planner: the procedure's replacement, repairs, even leadership, determinism, formats."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.errors import BadInput
from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, parse_rack
from migrate.core.plan.placement import Domains, DomainRules, round_robin
from migrate.core.plan.document import PartitionMove, Plan, plan_from_json, plan_to_dict, plan_to_json
from migrate.core.plan.planner import build_plan, plan_from_reassignment_json, reassignment_json
from migrate.core.playbook import (
    BrokerSettings,
    KafkaSettings,
    MigrationSettings,
    NewBroker,
    Playbook,
    ZooKeeperSettings,
)



def final_assignments(snap: ClusterSnapshot, plan: Plan) -> dict[tuple[str, int], tuple[int, ...]]:
    out = {(t.name, p.partition): p.replicas for t in snap.topics for p in t.partitions}
    for m in plan.moves:
        out[(m.topic, m.partition)] = m.target
    return out


# --------------------------------------------------------------------------- the procedure


def test_procedure_replacement_keeps_layout_and_spreads_leaders(kb):
    topics = {
        "orders": round_robin([1, 2, 3], 6, 3, start_broker=1),
        "payments": round_robin([1, 2, 3], 6, 3, start_broker=2),
        "__consumer_offsets": round_robin([1, 2, 3], 6, 3, start_broker=3),
    }
    snap = kb.snapshot(topics)
    plan = build_plan(snap, kb.playbook())
    assert len(plan.moves) == 18
    mapping = {1: 4, 2: 5, 3: 6}
    for m in plan.moves:
        assert m.target == tuple(mapping[b] for b in m.current)  # already even: layout and order kept
        assert m.bytes_to_move == 3 * 1000 * (m.partition + 1)
    leaders = {b.broker: b.leaders_after for b in plan.broker_totals}
    assert leaders == {1: 0, 2: 0, 3: 0, 4: 6, 5: 6, 6: 6}
    assert {b.broker: b.replicas_after for b in plan.broker_totals} == {1: 0, 2: 0, 3: 0, 4: 18, 5: 18, 6: 18}
    assert plan.total_bytes == sum(m.bytes_to_move for m in plan.moves) == 3 * 3 * 1000 * 21
    assert plan.warnings == ()
    assert not plan.errors()
    assert plan.estimated_seconds == 1  # 63 KB into the busiest broker at 50 MB/s, rounded up
    assert [t.topic for t in plan.topic_totals] == ["__consumer_offsets", "orders", "payments"]


def test_runbook_order_and_zookeeper_steps(kb):
    plan = build_plan(kb.snapshot(), kb.playbook())
    steps = plan.runbook
    assert [s.actor for s in steps] == [
        "kmigrate", "operator", "operator", "kmigrate", "operator", "operator", "kmigrate", "kmigrate", "kmigrate", "kmigrate",
        "operator",
    ]
    assert [s.number for s in steps] == list(range(1, 12))
    assert steps[0].command == "kmigrate plan --playbook test.yaml -o plan.json"
    assert "as joiners" in steps[1].command
    assert steps[2].command == (
        "rolling restart of the brokers with zookeeper.connect="
        "127.0.0.1:2181,127.0.0.2:2181,127.0.0.3:2181,127.0.0.4:2181,127.0.0.5:2181,127.0.0.6:2181"
    )
    assert steps[3].command == "kmigrate zookeeper --playbook test.yaml --add 4,5,6 --remove 1,2,3"
    assert steps[4].command.endswith("zookeeper.connect=127.0.0.4:2181,127.0.0.5:2181,127.0.0.6:2181")
    assert steps[5].command == "start the new broker(s) 4, 5, 6"
    assert steps[6].command == steps[0].command  # the plan again, once the new brokers are registered
    assert steps[7].command.startswith("kmigrate verify snapshot")
    assert steps[8].command.startswith("kmigrate partitions")
    assert steps[9].command.startswith("kmigrate verify compare")
    assert steps[10].command == "decommission brokers 1, 2, 3 and ZooKeeper servers 1, 2, 3"
    assert all(s.check and s.description for s in steps)
    zk = plan.zookeeper
    assert zk is not None
    assert zk.reconfig_command == (
        "reconfig -v 100000000 -remove 1,2,3 -add "
        "server.4=127.0.0.4:2888:3888:participant;127.0.0.4:2181,"
        "server.5=127.0.0.5:2888:3888:participant;127.0.0.5:2181,"
        "server.6=127.0.0.6:2888:3888:participant;127.0.0.6:2181"
    )
    assert zk.joiner_config[-1] == "server.6=127.0.0.6:2888:3888:observer;127.0.0.6:2181"
    assert zk.joiner_config[0] == "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181"
    assert zk.voters_before == (1, 2, 3) and zk.voters_after == (4, 5, 6)
    assert zk.from_config == 0x100000000 and not zk.already_done


def test_chroot_is_kept_in_connect_strings(kb):
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace('127.0.0.3:2181"', '127.0.0.3:2181/kafka"'))
    zk = build_plan(kb.snapshot(), pb).zookeeper
    assert zk.connect_during.endswith(",127.0.0.6:2181/kafka")
    assert zk.connect_after == "127.0.0.4:2181,127.0.0.5:2181,127.0.0.6:2181/kafka"


def test_zookeeper_already_done_is_skipped(kb):
    snap = kb.snapshot(zookeeper=kb.zk([4, 5, 6]))
    plan = build_plan(snap, kb.playbook())
    assert plan.zookeeper.already_done
    assert not any(s.command.startswith("kmigrate zookeeper") for s in plan.runbook)
    assert not [f for f in plan.findings if f.code.startswith("zookeeper.")]


def test_no_zookeeper_change_and_no_mapping(kb):
    snap = kb.snapshot()
    pb = kb.playbook('kafka: {bootstrap_servers: "h:1"}\nzookeeper: {connect: "z:2181"}\n')
    plan = build_plan(snap, pb)
    assert plan.zookeeper is None and len(plan.moves) == 0
    assert [s.command for s in plan.runbook] == ["kmigrate plan --playbook test.yaml -o plan.json"]


def test_a_kraft_cluster_plans_without_zookeeper(kb):
    """No zookeeper: section and a snapshot with no ensemble (a KRaft cluster): no ZooKeeper step; the new broker is
    formatted with the cluster id and registers with the controllers; the old one is unregistered after."""
    from migrate.core.model import ZkEnsemble

    snap = kb.snapshot({"t": [(1, 2, 3)]}, zookeeper=ZkEnsemble(connect=""), broker_connect=None)
    pb = kb.playbook('kafka: {bootstrap_servers: "h:1"}\nbrokers:\n  mapping: {3: 4}\n  keep: [1, 2]\n'
                     '  new: {4: {availability_domain: AD-3}}\n')
    assert pb.zookeeper is None
    plan = build_plan(snap, pb)
    assert plan.zookeeper is None and not plan.errors()
    commands = [s.command for s in plan.runbook]
    assert commands[1] == "start the new broker(s) 4" and commands[-2] == "stop brokers 3"
    assert commands[-1] == ("kmigrate brokers unregister --broker-list 3 --bootstrap-server "  # brokers that stay
                            "10.0.0.1:9092,10.0.0.2:9092,10.0.0.4:9092 --bootstrap-controller CONTROLLERS")
    assert not [c for c in commands if "zookeeper" in c]
    start, last = plan.runbook[1], plan.runbook[-1]
    assert "process.roles=broker" in start.description and "kafka-storage.sh format --cluster-id=test-cluster -c server.properties" in start.description
    assert last.actor == "kmigrate" and "UnregisterBroker" in last.description and "KAFKA-20295" in last.description
    assert "ZooKeeper" not in last.check
    zk_mode = build_plan(kb.snapshot({"t": [(1, 2, 3)]}), pb)  # the same playbook on a ZooKeeper-mode snapshot
    assert zk_mode.runbook[-1].command == "decommission brokers 3" and "unregister" not in zk_mode.runbook[-1].description


KRAFT_MOVE = ('kafka: {bootstrap_servers: "h:1"}\nbrokers:\n  mapping: {3: 4}\n  keep: [1, 2]\n'
              '  new: {4: {availability_domain: AD-3}}\n'
              'controllers:\n  voters: [{id: 11, host: c1}, {id: 12, host: c2}, {id: 13, host: c3}]\n'
              '  add: [{id: 17, host: c7}, {id: 18, host: c8}, {id: 19, host: c9, port: 9094}]\n  remove: [11, 12, 13]\n')


def test_a_kraft_cluster_move_runbook_controllers_then_brokers(kb):
    """A controllers: section: the new controllers started as observers, the brokers rolled to old+new bootstrap
    servers, the voter change, the brokers rolled to new only, then the brokers' move, their stop and unregistration
    at the new controllers."""
    from migrate.core.model import ZkEnsemble

    snap = kb.snapshot({"t": [(1, 2, 3)]}, zookeeper=ZkEnsemble(connect=""), broker_connect=None)
    plan = build_plan(snap, kb.playbook(KRAFT_MOVE))
    assert not plan.errors()
    commands = [s.command for s in plan.runbook]
    assert [s.number for s in plan.runbook] == list(range(1, len(commands) + 1))
    old_new = "c1:9093,c2:9093,c3:9093,c7:9093,c8:9093,c9:9094"
    assert commands[:8] == [
        "kmigrate plan --playbook test.yaml -o plan.json",
        "start the new KRaft controller 17 on c7:9093 as an observer",
        "start the new KRaft controller 18 on c8:9093 as an observer",
        "start the new KRaft controller 19 on c9:9094 as an observer",
        f"rolling restart of the brokers with controller.quorum.bootstrap.servers={old_new}",
        f"kmigrate controllers --add 17,18,19 --remove 11,12,13 --bootstrap-controller {old_new} --bootstrap-server h:1 "
        "--kafka-version 3.9.0",
        "rolling restart of the brokers with controller.quorum.bootstrap.servers=c7:9093,c8:9093,c9:9094",
        "start the new broker(s) 4",
    ]
    assert "kmigrate controllers controller-config 19 --host c9 --port 9094 --bootstrap-controller " \
           "c1:9093,c2:9093,c3:9093" in plan.runbook[3].description
    assert "--no-initial-controllers" in plan.runbook[1].description
    assert "replica.fetch.backoff.ms" in plan.runbook[4].description  # the first roll names the stall settings
    assert "replica.fetch.backoff.ms" not in plan.runbook[6].description
    assert "kmigrate partitions --playbook test.yaml --plan plan.json" in commands
    assert commands.index("kmigrate partitions --playbook test.yaml --plan plan.json") < commands.index("stop brokers 3")
    assert commands[-2:] == ["stop brokers 3", "kmigrate brokers unregister --broker-list 3 --bootstrap-server "
                             "10.0.0.1:9092,10.0.0.2:9092,10.0.0.4:9092 --bootstrap-controller c7:9093,c8:9093,c9:9094"]
    assert not [c for c in commands if "zookeeper" in c]


def test_a_static_quorum_is_made_dynamic_first_on_4_1_and_an_error_on_3_9(kb):
    """kraft.version 0 read from the cluster: on 4.1+ the upgrade is the first controller step, before any new
    controller starts; on 3.9 (and 4.0) the audit's error blocks the controller move (not the brokers')."""
    from dataclasses import replace

    from migrate.core.model import ZkEnsemble

    snap = kb.snapshot({"t": [(1, 2, 3)]}, zookeeper=ZkEnsemble(connect=""), broker_connect=None)
    on_41 = replace(snap, brokers=tuple(replace(b, version="4.1.2") for b in snap.brokers))
    plan = build_plan(on_41, kb.playbook(KRAFT_MOVE), kraft_version=0)
    assert not plan.errors()
    commands = [s.command for s in plan.runbook]
    assert commands[1] == ("kmigrate controllers upgrade-kraft-version --bootstrap-controller c1:9093,c2:9093,c3:9093 "
                           "--bootstrap-server h:1")
    assert commands[2] == "start the new KRaft controller 17 on c7:9093 as an observer"
    assert "before starting any new controller" in plan.runbook[1].description
    assert build_plan(on_41, kb.playbook(KRAFT_MOVE), kraft_version=1).runbook[1].command == commands[2]
    assert build_plan(on_41, kb.playbook(KRAFT_MOVE)).runbook[1].command == commands[2]  # not read: as before

    on_39 = build_plan(snap, kb.playbook(KRAFT_MOVE), kraft_version=0)
    (error,) = on_39.errors()
    assert error.code == "controllers.static_quorum" and "Kafka 3.9 cannot make it dynamic" in error.message
    assert not on_39.errors(step="partitions") and on_39.errors(step="controllers")


def test_controller_steps_only_what_the_section_changes():
    from migrate.core.plan.kraft_cluster import controller_steps
    from migrate.core.playbook import parse_playbook

    pb = parse_playbook('kafka: {bootstrap_servers: "h:1"}\ncontrollers:\n  voters: [{id: 1, host: a}, {id: 2, host: b}, '
                        '{id: 3, host: c}]\n  remove: [3]\n')
    steps = controller_steps(pb.controllers, bootstrap="h:1", command_config="client.properties", kafka_version="4.1")
    assert [s[1] for s in steps] == [
        "rolling restart of the brokers with controller.quorum.bootstrap.servers=a:9093,b:9093,c:9093",
        "kmigrate controllers --remove 3 --bootstrap-controller a:9093,b:9093,c:9093 --bootstrap-server h:1 "
        "--command-config client.properties --kafka-version 4.1",
        "rolling restart of the brokers with controller.quorum.bootstrap.servers=a:9093,b:9093"]
    none = parse_playbook('kafka: {bootstrap_servers: "h:1"}\ncontrollers: {voters: [{id: 1, host: a}]}\n')
    assert controller_steps(none.controllers) == ()


# --------------------------------------------------------------------------- repairs and warnings


def test_duplicate_after_mapping_is_replaced_in_an_unused_ad(kb):
    snap = kb.snapshot({"t": [(1, 4, 5)]})
    plan = build_plan(snap, kb.playbook())
    (move,) = plan.moves
    assert sorted(move.target) == [4, 5, 6]  # 1 -> 4 would repeat 4: broker 6 (AD-3) joins
    assert move.bytes_to_move == 1000  # one new replica (6)
    assert any("two replicas on one broker" in w and "topic t" in w for w in plan.warnings)


def test_domain_conflict_after_mapping_is_repaired(kb):
    # old brokers 1 and 2 map to 4 and 7, both in AD-1: the partition would lose AD-2.
    racks = dict(kb.PROCEDURE_RACKS)
    racks[7] = "AD-1/FD-3"
    snap = kb.snapshot({"t": [(1, 2, 3)]}, racks=racks)
    pb = kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 4, 2: 7, 3: 6}"))
    plan = build_plan(snap, pb)
    (move,) = plan.moves
    assert {parse_rack(racks[b])[0] for b in move.target} == {"AD-1", "AD-2", "AD-3"}
    assert move.target[0] == 4 or 4 in move.target
    assert any("availability or fault domain" in w for w in plan.warnings)


def test_unmapped_ids_keep_their_value_and_warn(kb):
    racks = dict(kb.PROCEDURE_RACKS)
    racks[7] = "AD-1/FD-3"
    snap = kb.snapshot({"t": [(1, 2, 7)], "done": [(4, 5, 6)]}, racks=racks)
    plan = build_plan(snap, kb.playbook())
    moves = {m.topic: m for m in plan.moves}
    assert set(moves) == {"t"}
    # 7 is not mapped and stays; 4 (AD-1 like 7) would repeat AD-1: 6 (AD-3) is taken instead
    assert sorted(moves["t"].target) == [5, 6, 7]
    assert any(w.startswith("broker 7 is not in brokers.mapping") for w in plan.warnings)
    assert any(w.startswith("broker 4 already holds replicas") and "done" in w for w in plan.warnings)
    assert any(f.code == "mapping.unmapped_broker" and f.subject == "broker 7" for f in plan.findings)


def test_kept_brokers_do_not_warn(kb):
    racks = dict(kb.PROCEDURE_RACKS)
    racks[7] = "AD-1/FD-3"
    snap = kb.snapshot({"t": [(1, 2, 7)]}, racks=racks)
    plan = build_plan(snap, kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 4, 2: 5, 3: 6}\n  keep: [7]")))
    assert not [w for w in plan.warnings if "broker 7" in w]
    assert not [f for f in plan.findings if f.code == "mapping.unmapped_broker"]


def test_leaders_are_rebalanced_when_the_old_layout_was_not(kb):
    snap = kb.snapshot({"t": [(1, 2, 3)] * 6})  # broker 1 led everything
    plan = build_plan(snap, kb.playbook())
    assert Counter(m.target[0] for m in plan.moves) == {4: 2, 5: 2, 6: 2}
    assert all(sorted(m.target) == [4, 5, 6] for m in plan.moves)


# --------------------------------------------------------------------------- determinism and formats


def test_plan_json_round_trip_and_determinism(kb):
    snap = kb.snapshot({"b": round_robin([1, 2, 3], 4, 2), "a": round_robin([1, 2, 3], 3, 3)})
    text = plan_to_json(build_plan(snap, kb.playbook()))
    assert text == plan_to_json(build_plan(snap, kb.playbook()))
    plan = plan_from_json(text, "plan.json")
    assert plan_to_json(plan) == text
    assert json.loads(text) == plan_to_dict(plan)
    assert '{"bytes": 4000, "current": [2, 3], "partition": 1, "target": [5, 6], "topic": "b"}' in text
    assert plan.moves[0] == PartitionMove(*json.loads(text)["moves"][0].values()) or plan.moves[0].topic == "a"
    assert isinstance(plan.moves[0], PartitionMove) and plan.moves[0].topic == "a"
    assert len(plan.moves[1:]) == len(plan.moves) - 1


def test_plan_id_ignores_sizes_but_not_targets(kb):
    a = build_plan(kb.snapshot(size=1000), kb.playbook())
    b = build_plan(kb.snapshot(size=5000), kb.playbook())
    assert a.plan_id == b.plan_id and a.total_bytes != b.total_bytes
    c = build_plan(kb.snapshot(), kb.playbook(kb.PROCEDURE_PLAYBOOK.replace("mapping: {1: 4, 2: 5, 3: 6}", "mapping: {1: 5, 2: 4, 3: 6}")))
    assert c.plan_id != a.plan_id
    assert len(a.plan_id) == 16 and int(a.plan_id, 16) >= 0


def test_plan_from_json_refuses_foreign_old_and_edited_files(kb):
    text = plan_to_json(build_plan(kb.snapshot(), kb.playbook()))
    doc = json.loads(text)
    with pytest.raises(BadInput, match="is not a kmigrate plan"):
        plan_from_json('{"version": 1, "partitions": []}', "r.json")
    with pytest.raises(BadInput, match="is not JSON"):
        plan_from_json("{", "r.json")
    old = dict(doc, format_version=0)
    with pytest.raises(BadInput, match="has format_version 0; this kmigrate reads 1: re-run kmigrate plan"):
        plan_from_json(json.dumps(old), "p.json")
    edited = json.loads(text)
    edited["moves"][0]["target"] = [6, 5, 4]
    with pytest.raises(BadInput, match="was changed after kmigrate plan wrote it"):
        plan_from_json(json.dumps(edited), "p.json")
    broken = json.loads(text)
    del broken["moves"][0]["target"]
    with pytest.raises(BadInput, match="is damaged"):
        plan_from_json(json.dumps(broken), "p.json")


def test_reassignment_json_format(kb):
    plan = build_plan(kb.snapshot({"t": [(1, 2, 3)]}), kb.playbook())
    assert reassignment_json(plan) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]}'
    )


def test_import_reassignment_json(kb):
    snap = kb.snapshot({"t": [(1, 2, 3), (2, 3, 1)]})
    text = '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[5,6,4],"log_dirs":["any","any","any"]},' \
           '{"topic":"t","partition":0,"replicas":[1,2,3]}]}'
    plan = plan_from_reassignment_json(text, snap)
    assert [(m.topic, m.partition, m.target) for m in plan.moves] == [("t", 1, (5, 6, 4))]
    assert plan.moves[0].bytes_to_move == 3 * 2000
    assert plan.mapping == {} and plan.zookeeper is None
    assert reassignment_json(plan) == '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[5,6,4],"log_dirs":["any","any","any"]}]}'
    assert plan_from_json(plan_to_json(plan)) == plan


@pytest.mark.parametrize("text, needle", [
    ("nope", "is not JSON"),
    ("{}", 'has no "partitions" list'),
    ('{"version":2,"partitions":[]}', "version 2"),
    ('{"partitions":[{"topic":"x","partition":0,"replicas":[4]}]}', "topic 'x' does not exist"),
    ('{"partitions":[{"topic":"t","partition":9,"replicas":[4]}]}', "has no partition 9"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[4,99]}]}', "broker(s) 99 are not registered"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "non-empty list of broker ids"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[4,4]}]}', "broker listed twice"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[4,5],"log_dirs":["any"]}]}', "one entry per replica"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[4]},{"topic":"t","partition":0,"replicas":[5]}]}', "t-0 is listed twice"),
    ('{"partitions":[{"topic":"t","partition":"0","replicas":[4]}]}', "expected a partition number"),
])
def test_import_reassignment_json_errors(kb, text, needle):
    with pytest.raises(BadInput) as exc:
        plan_from_reassignment_json(text, kb.snapshot({"t": [(1, 2, 3)]}), source="r.json")
    assert needle in exc.value.message and "\n" not in exc.value.message
    assert exc.value.message.startswith("reassignment file r.json")


# --------------------------------------------------------------------------- invariants (hypothesis)


def _max_flow_feasible(sets: list[tuple[int, ...]], caps: dict[int, int], need: int) -> bool:
    """Can ``need`` of the partitions be matched to one of their brokers within ``caps``?"""
    match: dict[int, list[int]] = {b: [] for b in caps}

    def augment(i: int, seen: set[int]) -> bool:
        for b in sets[i]:
            if b in seen or caps.get(b, 0) <= 0:
                continue
            seen.add(b)
            if len(match[b]) < caps[b]:
                match[b].append(i)
                return True
            for j in list(match[b]):
                if augment(j, seen):
                    match[b].remove(j)
                    match[b].append(i)
                    return True
        return False

    got = 0
    for i in range(len(sets)):
        if augment(i, set()):
            got += 1
    return got >= need


def optimal_leader_bounds(sets: list[tuple[int, ...]], fixed: Counter, brokers: set[int]) -> tuple[int, int]:
    """(smallest possible max, largest possible min) leader count, by max-flow."""
    total = len(sets) + sum(fixed.values())
    best_max = next(
        m for m in range(0, total + 1)
        if all(fixed[b] <= m for b in brokers)
        and _max_flow_feasible(sets, {b: m - fixed[b] for b in brokers}, len(sets))
    )
    best_min = 0
    for m in range(1, total + 1):
        demand = {b: max(0, m - fixed[b]) for b in brokers}
        if not _max_flow_feasible(sets, demand, sum(demand.values())):
            break
        best_min = m
    return best_max, best_min


@st.composite
def clusters(draw):
    n_old = draw(st.integers(3, 7))
    ids = draw(st.lists(st.integers(0, 400), min_size=2 * n_old, max_size=2 * n_old, unique=True))
    old, new = ids[:n_old], ids[n_old:]
    n_ads = draw(st.integers(1, 4))
    n_fds = draw(st.integers(1, 3))
    rack = st.tuples(st.integers(1, n_ads), st.integers(1, n_fds)).map(lambda x: f"AD-{x[0]}/FD-{x[1]}")
    racks = {b: draw(rack) for b in ids}
    registered_new = draw(st.sets(st.sampled_from(new)))
    topics = {}
    for t in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(4, n_old)))
        parts = [tuple(draw(st.permutations(old))[:rf]) for _ in range(draw(st.integers(1, 8)))]
        topics[f"topic-{draw(st.integers(0, 99))}-{t}"] = parts
    mapping = dict(zip(old, draw(st.permutations(new))))
    return topics, racks, old, new, registered_new, mapping


def _cluster(kb, raw):
    topics, racks, old, new, registered_new, mapping = raw
    snap = kb.snapshot(topics, racks={b: racks[b] for b in old + sorted(registered_new)})
    pb = Playbook(
        source="h.yaml",
        kafka=KafkaSettings("h:9092"),
        zookeeper=ZooKeeperSettings("127.0.0.1:2181"),
        brokers=BrokerSettings(
            mapping=mapping,
            new={b: NewBroker(*parse_rack(racks[b])) for b in new},
        ),
        migration=MigrationSettings(),
    )
    return snap, pb, racks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=clusters())
def test_plan_invariants(kb, raw):
    snap, pb, racks = _cluster(kb, raw)
    plan = build_plan(snap, pb)
    retiring = set(pb.brokers.mapping)
    new = set(pb.brokers.mapping.values())
    domains = Domains.from_racks(racks)
    rules = DomainRules(domains, new)
    final = final_assignments(snap, plan)
    current = {(t.name, p.partition): p.replicas for t in snap.topics for p in t.partitions}
    for key, reps in final.items():
        assert len(reps) == len(current[key])  # RF kept
        assert len(set(reps)) == len(reps)
        assert not set(reps) & retiring  # nothing left on a retiring broker
        if rules.n_ads >= len(reps):
            assert len({domains.ad[b] for b in reps}) == len(reps)  # distinct ADs
        assert rules.satisfied(reps)  # distinct fault domains too whenever there are enough
    for m in plan.moves:
        assert m.target != m.current
        assert m.bytes_to_move == snap_size(snap, m.topic, m.partition) * len(set(m.target) - set(m.current))
    # leaders: optimal, hence within one of even whenever that can be done
    fixed = Counter(reps[0] for key, reps in current.items() if key not in {(m.topic, m.partition) for m in plan.moves})
    sets = [m.target for m in plan.moves]
    brokers = {b for reps in final.values() for b in reps}
    leaders = Counter(reps[0] for reps in final.values())
    counts = [leaders[b] for b in brokers]
    best_max, best_min = optimal_leader_bounds(sets, fixed, brokers)
    assert max(counts) == best_max
    assert min(counts) == best_min
    if best_max - best_min <= 1:
        assert max(counts) - min(counts) <= 1
    # figures agree
    assert plan.total_bytes == sum(m.bytes_to_move for m in plan.moves)
    assert plan.total_bytes == sum(b.bytes_in for b in plan.broker_totals) == sum(b.bytes_out for b in plan.broker_totals)
    assert {b.broker: b.leaders_after for b in plan.broker_totals if b.leaders_after} == {b: c for b, c in leaders.items() if c}
    # deterministic, and independent of the input order of topics and partitions
    text = plan_to_json(plan)
    again = build_plan(snap, pb)
    assert plan_to_json(again) == text and again.plan_id == plan.plan_id
    shuffled = ClusterSnapshot(
        cluster_id=snap.cluster_id, controller_id=snap.controller_id, zookeeper=snap.zookeeper,
        brokers=tuple(reversed(snap.brokers)),
        topics=tuple(Topic(t.name, t.internal, t.configs, tuple(reversed(t.partitions))) for t in reversed(snap.topics)),
    )
    assert plan_to_json(build_plan(shuffled, pb)) == text
    assert plan_from_json(text) == plan


def snap_size(snap: ClusterSnapshot, topic: str, partition: int) -> int:
    for t in snap.topics:
        if t.name == topic:
            return next(p.size_bytes for p in t.partitions if p.partition == partition)
    raise KeyError(topic)


@settings(max_examples=60, deadline=None)
@given(
    n_old=st.integers(3, 9),
    topics=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(0, 50)), min_size=1, max_size=6),
    base=st.sampled_from([1, 101, 205]),
)
def test_balanced_cluster_gets_leaders_within_one_of_even(kb, n_old, topics, base):
    """Kafka-style round-robin topics (partitions a multiple of the broker count), mapped one
    to one: every new broker leads within one of the even share."""
    old = [base + i for i in range(n_old)]
    new = [1000 + i for i in range(n_old)]
    racks = {b: f"AD-{i % 3 + 1}/FD-1" for i, b in enumerate(old)}
    racks.update({b: f"AD-{i % 3 + 1}/FD-2" for i, b in enumerate(new)})
    assignments = {}
    for k, (rf, mult, start) in enumerate(topics):
        assignments[f"t{k}"] = round_robin(old, n_old * mult, min(rf, n_old), start_broker=old[start % n_old])
    snap = kb.snapshot(assignments, racks=racks)
    pb = Playbook("b.yaml", KafkaSettings("h:9092"), ZooKeeperSettings("z:2181"),
                  BrokerSettings(mapping=dict(zip(old, new))), MigrationSettings())
    plan = build_plan(snap, pb)
    leaders = Counter(m.target[0] for m in plan.moves)
    total = sum(leaders.values())
    assert total == sum(len(a) for a in assignments.values())
    assert all(total // n_old <= leaders[b] <= -(-total // n_old) for b in new)


def test_large_plan_is_linear_enough(kb):
    """A quick scale check (the full figure is in tests/bench/bench_plan.py)."""
    old = list(range(1, 31))
    racks = {b: f"AD-{b % 3 + 1}/FD-1" for b in old}
    racks.update({b + 100: f"AD-{b % 3 + 1}/FD-2" for b in old})
    topics = tuple(
        Topic(f"t{t}", False, {}, tuple(Partition(p, r, r, r[0], 10) for p, r in enumerate(round_robin(old, 300, 3, start_broker=old[t % 30]))))
        for t in range(20)
    )
    snap = ClusterSnapshot(zookeeper=kb.zk(), brokers=tuple(Broker(b, "h", 1, racks[b]) for b in sorted(racks)), topics=topics)
    pb = Playbook("b.yaml", KafkaSettings("h:9092"), ZooKeeperSettings("z:2181"),
                  BrokerSettings(mapping={b: b + 100 for b in old}), MigrationSettings())
    plan = build_plan(snap, pb)
    assert len(plan.moves) == 6000
    counts = Counter(m.target[0] for m in plan.moves)
    assert max(counts.values()) - min(counts.values()) <= 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=clusters())
def test_cache_limit_does_not_change_the_plan(kb, raw):
    """Beyond the cache of distinct replica tuples, partitions are counted one by one: same plan."""
    import migrate.core.plan.targets as targets_module

    snap, pb, _racks = _cluster(kb, raw)
    text = plan_to_json(build_plan(snap, pb))
    saved = targets_module._CACHE_LIMIT
    try:
        targets_module._CACHE_LIMIT = 1
        assert plan_to_json(build_plan(snap, pb)) == text
    finally:
        targets_module._CACHE_LIMIT = saved


def test_cache_limit_with_repairs_unmapped_and_unknown_sizes(kb):
    import migrate.core.plan.targets as targets_module

    racks = {**kb.PROCEDURE_RACKS, 7: "AD-1/FD-3"}
    snap = kb.snapshot({"t": [(1, 4, 5), (1, 2, 7), (4, 5, 6), (1, 2, 3), (2, 3, 1)]}, racks=racks)
    snap = ClusterSnapshot(
        cluster_id=snap.cluster_id, controller_id=1, zookeeper=snap.zookeeper, brokers=snap.brokers,
        topics=tuple(Topic(t.name, t.internal, t.configs, tuple(
            Partition(p.partition, p.replicas, p.isr, p.replicas[-1] if p.partition == 4 else p.leader,
                      None if p.partition == 3 else p.size_bytes)
            for p in t.partitions)) for t in snap.topics),
    )
    normal = build_plan(snap, kb.playbook())
    saved = targets_module._CACHE_LIMIT
    try:
        targets_module._CACHE_LIMIT = 0
        assert plan_to_json(build_plan(snap, kb.playbook())) == plan_to_json(normal)
    finally:
        targets_module._CACHE_LIMIT = saved
    assert [t.unknown_sizes for t in normal.topic_totals] == [1]
    assert any(f.code == "size.unknown" for f in normal.findings)
    # partition 4 is led by its last replica (1): it sends the bytes
    assert normal.total_bytes == sum(b.bytes_out for b in normal.broker_totals)
