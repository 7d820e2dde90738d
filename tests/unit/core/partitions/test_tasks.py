"""Each partition's state in a partitions run and its legal transitions (core/partitions/tasks.py)."""

from __future__ import annotations

import pytest

from migrate.core.partitions.moves import InFlight, PartitionMove
from migrate.core.partitions.tasks import FINISHED, PartitionState, PartitionTasks, advance_partition

S = PartitionState


def _move(topic: str = "t", partition: int = 0, size: int = 10) -> PartitionMove:
    return PartitionMove(topic, partition, (1, 2), (4, 5), size)


def test_legal_transitions():
    assert advance_partition(S.pending, S.moving) == S.moving
    assert advance_partition(S.pending, S.held) == S.held
    assert advance_partition(S.held, S.pending) == S.pending  # its ISR recovered
    assert advance_partition(S.held, S.moving) == S.moving  # adopted
    assert advance_partition(S.pending, S.foreign) == S.foreign
    assert advance_partition(S.foreign, S.pending) == S.pending  # planned again
    assert advance_partition(S.moving, S.done) == S.done
    assert advance_partition(S.moving, S.cancelled) == S.cancelled
    assert advance_partition(S.done, S.pending) == S.pending  # found off target when its topic is verified
    assert advance_partition(S.moving, S.gone) == S.gone
    assert advance_partition(S.done, S.done) == S.done  # staying put is legal


@pytest.mark.parametrize("bad", [
    (S.cancelled, S.moving), (S.cancelled, S.pending), (S.gone, S.pending), (S.done, S.moving),
    (S.moving, S.pending), (S.foreign, S.moving), (S.pending, S.cancelled), (S.done, S.cancelled),
])
def test_an_illegal_transition_is_refused(bad):
    with pytest.raises(ValueError, match="illegal partition transition"):
        advance_partition(*bad)


def test_the_table_refuses_an_illegal_transition_and_keeps_the_state():
    tasks = PartitionTasks()
    tasks.plan(_move())
    tasks.start_moving(_move())
    tasks.to(("t", 0), S.cancelled)
    with pytest.raises(ValueError):
        tasks.to(("t", 0), S.moving)
    assert tasks.state(("t", 0)) == S.cancelled
    assert tasks.keys(S.cancelled) == [("t", 0)] and tasks.keys(S.moving) == []


def test_partitions_in_a_state_come_in_the_order_they_entered_it():
    tasks = PartitionTasks()
    for t, p in [("b", 0), ("a", 1), ("a", 0)]:
        tasks.plan(_move(t, p))
    tasks.start_moving(_move("a", 1))
    tasks.start_moving(_move("b", 0))
    tasks.start_moving(_move("a", 0))
    assert [m.key for m in tasks.flying()] == [("a", 1), ("b", 0), ("a", 0)]
    assert [m.key for m in tasks.flying("a")] == [("a", 1), ("a", 0)]
    tasks.to(("a", 0), S.cancelled)
    tasks.to(("b", 0), S.cancelled)
    assert tasks.keys(S.cancelled) == [("a", 0), ("b", 0)]
    assert list(tasks.of_topic("a")) == [1, 0]  # in the order planned
    assert tasks.count(S.moving) == 1


def test_what_a_state_holds_goes_with_it():
    tasks = PartitionTasks()
    tasks.plan(_move())
    flight = InFlight((1, 2, 6, 7), (6, 7), (1, 2))
    tasks.wait_for(("t", 0), flight)
    assert tasks.task(("t", 0)).foreign == flight
    tasks.replan(("t", 0), PartitionMove("t", 0, (6, 7), (4, 5), 10))
    task = tasks.task(("t", 0))
    assert task.state == S.pending and task.foreign is None and task.move.current == (6, 7)
    adopted = PartitionMove("t", 0, (6, 7), (4, 5), 10, lane="small")
    tasks.start_moving(adopted)
    task.unlisted_since = 3.0
    assert tasks.flying() == [adopted]
    tasks.to(("t", 0), S.done)
    assert task.flight is None and task.unlisted_since is None and tasks.flying() == []
    assert S.done in FINISHED and S.cancelled in FINISHED and S.moving not in FINISHED


def test_a_partition_is_planned_once_and_dropped_only_while_waited_for():
    tasks = PartitionTasks()
    tasks.plan(_move())
    with pytest.raises(ValueError):
        tasks.plan(_move())
    with pytest.raises(ValueError):
        tasks.drop(("t", 0))  # pending: not dropped
    tasks.wait_for(("t", 0), InFlight((4, 5), (4, 5), ()))
    tasks.drop(("t", 0))
    assert tasks.task(("t", 0)) is None and tasks.moves("t") == {} and tasks.keys(S.foreign) == []
