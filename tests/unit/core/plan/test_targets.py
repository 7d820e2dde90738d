"""Where every partition's replicas go (core/plan/targets.py): leaders balanced around fixed ones, and the
same targets as the plan's for the partitions runner (``plan_targets``), which calls the rule directly."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble
from migrate.core.partitions.moves import plan_targets
from migrate.core.plan.planner import build_plan
from migrate.core.plan.targets import balance_leaders, replica_targets
from migrate.core.playbook import BrokerSettings, KafkaSettings, Playbook, ZooKeeperSettings


def test_balance_leaders_respects_fixed_leaders():
    leaders = balance_leaders([(1, 2), (1, 2), (1, 2)], fixed_leaders={1: 2})
    assert Counter(leaders) + Counter({1: 2}) == Counter({1: 3, 2: 2}) or Counter(leaders)[2] == 3
    assert max((Counter(leaders) + Counter({1: 2})).values()) == 3


def _through_a_plan(topics, brokers, mapping, keep=()):
    """What ``plan_targets`` returned when it built a plan of a throwaway playbook (before the targets rule
    was its own function): the plan's moves and warnings."""
    snapshot = ClusterSnapshot(zookeeper=ZkEnsemble(connect="localhost:2181"), brokers=tuple(brokers),
                               topics=tuple(topics))
    playbook = Playbook(
        source="kmigrate partitions",
        kafka=KafkaSettings(bootstrap_servers="localhost:9092"),
        zookeeper=ZooKeeperSettings(connect="localhost:2181"),
        brokers=BrokerSettings(mapping=dict(mapping), keep=tuple(sorted(set(keep)))),
    )
    plan = build_plan(snapshot, playbook, allow_merge=True)
    return {(m.topic, m.partition): tuple(m.target) for m in plan.moves}, list(plan.warnings), plan


@st.composite
def fleets(draw):
    """Brokers 1..9 with racks (some unknown, some dead), a mapping, kept brokers, and topics whose replicas
    name mapped, kept, new, unknown and repeated-after-mapping brokers (repairs, warnings)."""
    ids = list(range(1, 10))
    racks = {b: draw(st.sampled_from([None, "AD-1", "AD-2", "AD-1/FD-1", "AD-2/FD-2", "AD-3/FD-1"])) for b in ids}
    brokers = [Broker(b, "h", 9092, racks[b], alive=draw(st.booleans()) or b > 6) for b in ids]
    old = draw(st.lists(st.sampled_from(ids), unique=True, max_size=4))
    new = [b for b in ids if b not in old]
    mapping = {o: draw(st.sampled_from(new)) for o in old}
    keep = draw(st.lists(st.sampled_from(new), unique=True, max_size=2))
    topics = []
    for t in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, 3))
        parts = [tuple(draw(st.permutations(ids + [10]))[:rf]) for _ in range(draw(st.integers(1, 6)))]
        topics.append(Topic(f"t{t}", partitions=tuple(
            Partition(i, r, r, r[0], draw(st.sampled_from([None, 0, 100]))) for i, r in enumerate(parts))))
    return topics, brokers, mapping, keep


@settings(max_examples=150, deadline=None)
@given(fleets())
def test_plan_targets_are_the_plan_s_moves(case):
    topics, brokers, mapping, keep = case
    targets, warnings, plan = _through_a_plan(topics, brokers, mapping, keep)
    assert plan_targets(topics, brokers, mapping, keep) == (targets, warnings)
    rule = replica_targets(topics, {b.id: b.rack for b in brokers}, {b.id for b in brokers if b.alive}, mapping, keep)
    assert rule.rows == plan.moves.rows and rule.warnings == plan.warnings
