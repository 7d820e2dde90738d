"""One partition move (core/moves.py): targets from the planner, bytes copied, the brokers a move loads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.model import Broker, Partition, Topic
from migrate.core.partitions.moves import PartitionMove, copied, plan_targets

MAPPING = {1: 4, 2: 5, 3: 6}
BROKERS = [Broker(i, f"h{i}", 9092, f"AD-{(pos - 1) % 3 + 1}/FD-{(pos - 1) // 3 + 1}")
           for pos, i in enumerate((1, 2, 3, 4, 5, 6), start=1)]


def _topic(name, assignment):
    return Topic(name, partitions=tuple(Partition(p, tuple(r), tuple(r), r[0]) for p, r in enumerate(assignment)))


def test_plan_targets_replaces_old_ids_and_keeps_sets():
    topics = [_topic("a", [(1, 2, 3), (2, 3, 1), (3, 1, 2)]), _topic("b", [(1,), (2,)])]
    targets, _warnings = plan_targets(topics, BROKERS, MAPPING)
    assert sorted(targets[("a", 0)]) == [4, 5, 6]
    assert set(targets[("b", 0)]) == {4} and set(targets[("b", 1)]) == {5}


def test_plan_targets_keeps_unmapped_ids_with_a_warning():
    topics = [_topic("half", [(4, 2)])]
    targets, warnings = plan_targets(topics, BROKERS, MAPPING)
    assert set(targets[("half", 0)]) == {4, 5}
    assert any("4" in w for w in warnings)


def test_plan_targets_skips_partitions_on_target():
    targets, _ = plan_targets([_topic("done", [(4, 5)])], BROKERS, MAPPING)
    assert targets == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.permutations([1, 2, 3]).map(lambda p: tuple(p)), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=3))
def test_plan_targets_invariants(assignments, rf):
    topic = _topic("t", [a[:rf] for a in assignments])
    targets, _ = plan_targets([topic], BROKERS, MAPPING)
    for p in topic.partitions:
        target = targets.get(("t", p.partition), p.replicas)
        assert len(target) == len(p.replicas)  # replication factor kept
        assert len(set(target)) == len(target)  # distinct brokers
        assert not set(target) & set(MAPPING)  # nothing left on a retiring broker


def _move(topic, p, current=(1, 2, 3), target=(4, 5, 6), size=100):
    return PartitionMove(topic, p, tuple(current), tuple(target), size)


def test_copied_bytes_are_capped_at_the_source_size():
    m = _move("t", 0, (1, 2), (4, 5), size=1000)
    assert copied(m, {("t", 0, 4): 1500, ("t", 0, 5): 200}, finished=False).copied_bytes == 1200
    assert copied(m, {}, finished=True).copied_bytes == 2000


def test_a_move_counts_on_its_source_and_new_replicas_like_cruise_control():
    m = PartitionMove("t", 0, (1, 2, 3), (4, 2, 6))
    assert m.brokers == frozenset({1, 4, 6})  # leader 1 sends, 4 and 6 receive; 2 and 3 do no copying
    assert PartitionMove("t", 0, (1, 2), (2, 1)).brokers == frozenset()  # a reorder copies nothing


def test_a_plan_row_and_a_move_are_the_same_thing():
    row = ("t", 3, (1, 2, 3), (4, 2, 6), 2000)
    m = PartitionMove.from_row(row)
    assert (m.size_bytes, m.bytes_to_move, m.bytes_to_copy, m.adding, m.removing) == (1000, 2000, 2000, (4, 6), (1, 3))
    assert m.row == row
    unknown = PartitionMove.from_row(("t", 0, (1,), (4,), None))
    assert unknown.bytes_to_move is None and unknown.bytes_to_copy == 0 and unknown.row == ("t", 0, (1,), (4,), None)
    assert PartitionMove.from_row(("t", 0, (1, 2), (2, 1), 0)).row == ("t", 0, (1, 2), (2, 1), 0)


def test_leader_not_preferred_and_partition_of():
    from migrate.core.partitions.moves import leader_not_preferred, partition_of

    t = _topic("t", [(1, 2), (2, 1)])
    assert partition_of(t, 1).replicas == (2, 1) and partition_of(t, 7) is None and partition_of(None, 0) is None
    assert not leader_not_preferred(Partition(0, (1, 2), (1, 2), 1))
    assert leader_not_preferred(Partition(0, (1, 2), (1, 2), 2)) and leader_not_preferred(Partition(0, (1, 2), (1, 2), None))
    assert not leader_not_preferred(Partition(0, (), (), None))
