"""The life of each partition a ``kmigrate partitions`` run must change (pure; times are passed in).

As Cruise Control's ``ExecutionTask``, a partition's state is explicit, with its legal
transitions: :class:`PartitionState` and :func:`advance_partition`. :class:`PartitionTasks` holds
every partition of a run by topic, each a :class:`PartitionTask` (its planned move and its state),
and remembers in which order partitions began to move and were cancelled (the order the runner
looks at them and names them in).

    pending --> held       ISR short at the last look: not submitted until it recovers
    pending --> foreign    someone else's reassignment (another target) is in flight: waited for
    pending --> moving     our reassignment submitted, or one to our target adopted
    pending --> done       already on its target
    held    --> pending | foreign | moving | done   (as pending, once looked at again)
    foreign --> pending    that reassignment ended: planned again from where it left the partition
                           (or dropped from the run when it left it on its target)
    moving  --> done       on its target, no longer listed
    moving  --> cancelled  reverted: ``--cancel``, from outside, or ``--on-stall cancel``
    done    --> pending    the topic's check found it off target after all: moved again
    pending | held | foreign | moving --> gone   its topic was deleted meanwhile

``cancelled`` and ``gone`` are final; ``done`` is, but for the check above.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterator

from migrate.core.partitions.moves import InFlight, PartitionMove

Key = tuple[str, int]  # (topic, partition)


class PartitionState(str, enum.Enum):
    """Where one partition of the run stands (see the module docstring)."""

    pending = "pending"  # planned, not in flight: the scheduler may submit it
    held = "held"  # ISR short at the last look: not submitted until it recovers
    foreign = "foreign"  # someone else's reassignment to another target is in flight: waited for
    moving = "moving"  # our reassignment is in flight (submitted or adopted)
    done = "done"  # on its target, looked at
    cancelled = "cancelled"  # reverted to its old replicas, left there
    gone = "gone"  # its topic was deleted meanwhile


_S = PartitionState
_LEGAL: dict[PartitionState, frozenset[PartitionState]] = {
    _S.pending: frozenset({_S.held, _S.foreign, _S.moving, _S.done, _S.gone}),
    _S.held: frozenset({_S.pending, _S.foreign, _S.moving, _S.done, _S.gone}),
    _S.foreign: frozenset({_S.pending, _S.gone}),
    _S.moving: frozenset({_S.done, _S.cancelled, _S.gone}),
    _S.done: frozenset({_S.pending}),
    _S.cancelled: frozenset(),
    _S.gone: frozenset(),
}

FINISHED = frozenset({_S.done, _S.cancelled})
"""States of a partition whose move is over (its topic can be recorded or called cancelled)."""


def advance_partition(state: PartitionState, to: PartitionState) -> PartitionState:
    """``to`` when the transition is legal (staying put is), else ``ValueError``.

    >>> advance_partition(PartitionState.pending, PartitionState.moving)
    <PartitionState.moving: 'moving'>
    >>> advance_partition(PartitionState.cancelled, PartitionState.moving)
    Traceback (most recent call last):
    ValueError: illegal partition transition cancelled -> moving
    """
    if to == state or to in _LEGAL[state]:
        return to
    raise ValueError(f"illegal partition transition {state.value} -> {to.value}")


@dataclass
class PartitionTask:
    """One partition the run must change: its planned ``move`` and its ``state``, with what the state
    holds: ``flight`` while moving (the move as submitted or adopted: its lane, the replicas it came
    from), ``foreign`` while waiting for someone else's reassignment, ``unlisted_since`` while moving
    but neither listed nor on target (since when: cancelled outside the run once it lasts)."""

    move: PartitionMove
    state: PartitionState = PartitionState.pending
    flight: PartitionMove | None = None
    foreign: InFlight | None = None
    unlisted_since: float | None = None

    @property
    def key(self) -> Key:
        return self.move.key


class PartitionTasks:
    """Every partition of a run that must change, by topic (each topic's in the order planned), with
    its state. Every change of state goes through :meth:`to` (or the named helpers), which refuses an
    illegal one; partitions in a state are listed in the order they entered it."""

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[int, PartitionTask]] = {}
        self._entered: dict[PartitionState, dict[Key, None]] = {s: {} for s in PartitionState}

    # ---------------------------------------------------------------- planning
    def plan(self, move: PartitionMove) -> PartitionTask:
        """A new partition to move, pending (``ValueError`` if the run has it already)."""
        tasks = self._by_topic.setdefault(move.topic, {})
        if move.partition in tasks:
            raise ValueError(f"{move.topic}-{move.partition} is planned already")
        task = tasks[move.partition] = PartitionTask(move)
        self._entered[task.state][task.key] = None
        return task

    def replan(self, key: Key, move: PartitionMove) -> None:
        """Someone else's reassignment ended: the partition moves again, to ``move`` (pending)."""
        self.to(key, PartitionState.pending)
        self._by_topic[key[0]][key[1]].move = move

    def drop(self, key: Key) -> None:
        """Someone else's reassignment left the partition on its target: the run no longer moves it."""
        task = self.task(key)
        if task is None or task.state != PartitionState.foreign:
            raise ValueError(f"{key[0]}-{key[1]}: only a partition waited for is dropped")
        self._entered[task.state].pop(key, None)
        del self._by_topic[key[0]][key[1]]

    # ------------------------------------------------------------- transitions
    def to(self, key: Key, state: PartitionState) -> PartitionTask:
        """Move the partition ``key`` to ``state`` (``ValueError`` if illegal); what the old state held goes."""
        task = self._by_topic[key[0]][key[1]]
        old = task.state
        task.state = advance_partition(old, state)
        if old != state:
            self._entered[old].pop(key, None)
            self._entered[state][key] = None
            task.flight = task.flight if state == PartitionState.moving else None
            task.foreign = task.foreign if state == PartitionState.foreign else None
            task.unlisted_since = task.unlisted_since if state == PartitionState.moving else None
        return task

    def start_moving(self, flight: PartitionMove) -> None:
        """``flight`` (submitted or adopted, ours) is in flight."""
        self.to(flight.key, PartitionState.moving).flight = flight

    def wait_for(self, key: Key, foreign: InFlight) -> None:
        """Someone else's reassignment of ``key`` (to another target) is in flight: waited for."""
        self.to(key, PartitionState.foreign).foreign = foreign

    # ----------------------------------------------------------------- looking
    def task(self, key: Key) -> PartitionTask | None:
        return self._by_topic.get(key[0], {}).get(key[1])

    def state(self, key: Key) -> PartitionState | None:
        task = self.task(key)
        return None if task is None else task.state

    def of_topic(self, topic: str) -> dict[int, PartitionTask]:
        """The topic's partitions to change, partition -> task, in the order planned."""
        return self._by_topic.get(topic, {})

    def moves(self, topic: str) -> dict[int, PartitionMove]:
        """The topic's planned moves, partition -> move, in the order planned."""
        return {p: t.move for p, t in self.of_topic(topic).items()}

    def in_state(self, state: PartitionState) -> list[PartitionTask]:
        """The partitions in ``state``, in the order they entered it."""
        return [self._by_topic[t][p] for t, p in self._entered[state]]

    def keys(self, state: PartitionState) -> list[Key]:
        """The keys of the partitions in ``state``, in the order they entered it."""
        return list(self._entered[state])

    def count(self, state: PartitionState) -> int:
        return len(self._entered[state])

    def flying(self, topic: str | None = None) -> list[PartitionMove]:
        """Our moves in flight (of ``topic``, or all), as submitted or adopted, in the order they began."""
        return [t.flight for t in self.in_state(PartitionState.moving)
                if t.flight is not None and (topic is None or t.move.topic == topic)]

    def __iter__(self) -> Iterator[PartitionTask]:
        for tasks in self._by_topic.values():
            yield from tasks.values()
